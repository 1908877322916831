"""The agent: a ReAct loop over the retrieval tools."""

from sleuth.agent.loop import Agent, prompt
from sleuth.agent.tracker import Tracker
from sleuth.agent.variants import (
           VARIANTS,
           Variant,
           build_agent,
           llm_from_settings,
           register_variant,
)

__all__ = ["VARIANTS", "Agent", "Tracker", "Variant", "build_agent", "llm_from_settings",
           "prompt", "register_variant"]
