"""The agents: runners that answer a question with cited sources, and the registry of named
variants (``--agent NAME``)."""

from sleuth.agent.loop import Agent, prompt
from sleuth.agent.run import ModelRunner, Run, Runner, StepCallback
from sleuth.agent.variants import VARIANTS, Setup, Variant, build_agent, register_variant
from sleuth.llm.factory import llm_from_settings
from sleuth.tools.tracker import Tracker

__all__ = ["VARIANTS", "Agent", "ModelRunner", "Run", "Runner", "Setup", "StepCallback",
           "Tracker", "Variant", "build_agent", "llm_from_settings", "prompt",
           "register_variant"]
