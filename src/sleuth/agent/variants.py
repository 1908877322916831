"""Named agents (``--agent NAME``): a registry of factories, and the one-call builder.

A :class:`Variant` names a factory that builds a :class:`~sleuth.agent.run.Runner` from a
:class:`Setup` (the index, the model, the settings and the variant itself). Built-ins are
registered through :mod:`sleuth.plugins` (:mod:`sleuth.agent.builtin`, entry ``core`` of
``sleuth.agents``), as an installed package's are; in-process::

    register_variant(Variant("echo", "answers with the question", lambda s: Echo(s.llm)))

after which ``sleuth ask --agent echo``, ``sleuth.ask(..., agent="echo")``, the servers
and ``sleuth eval run`` all reach it. ``auto`` (the router over two other variants) and
``--verify`` wrap what the registry builds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sleuth.agent.loop import BASE_CHECKS, Agent
from sleuth.agent.router import AUTO, DESCRIPTION, Router
from sleuth.agent.run import Runner
from sleuth.agent.verify import Verified
from sleuth.errors import ConfigError
from sleuth.index.read import ReadIndex
from sleuth.llm import LLM
from sleuth.plugins import AGENTS, Registry
from sleuth.prompts import prompt
from sleuth.settings import DEFAULT_AGENT, Settings
from sleuth.tools import TOOLS

log = logging.getLogger("sleuth")


@dataclass(frozen=True)
class Setup:
    """What a factory builds a runner from."""

    variant: Variant
    index: ReadIndex
    llm: LLM
    settings: Settings

    def fields(self) -> dict[str, Any]:
        """The :class:`~sleuth.agent.run.ModelRunner` fields the variant implies: its
        tools and prompt, the agent settings, the prices, its name, the model profile."""
        return {"index": self.index, "llm": self.llm,
                "tools": [TOOLS[t] for t in self.variant.tools],
                "system_prompt": prompt(self.variant.prompt), "settings": self.settings.agent,
                "prices": self.settings.llm.prices or None, "name": self.variant.name,
                "profile": self.settings.profile().name}


Factory = Callable[[Setup], Runner]


@dataclass(frozen=True)
class Variant:
    """A named agent: how it is built, the tools it offers, the prompt it starts from."""

    name: str
    description: str
    factory: Factory
    tools: tuple[str, ...] = ()
    prompt: str = "full"
    checked: bool = False  # it runs Triple-Check itself: ``--verify`` leaves it alone
    # what a person choosing an agent reads (the app's selector): a plain name, and one line
    # on what it does; ``name`` is the research name, shown smaller
    label: str = ""
    summary: str = ""


def register_variant(variant: Variant) -> Variant:
    """Make ``variant`` available by its name (a later registration replaces an earlier)."""
    VARIANTS.load()  # the plugins first, so this registration wins over theirs
    VARIANTS[variant.name] = variant
    return variant


# filled on first use: the built-in agents, then installed packages'
VARIANTS: Registry[Variant] = Registry(AGENTS, register_variant)


PROFILE = None  # a variant's checks: the model profile's (``tool_loop(checks=PROFILE)``)


def tool_loop(*, also_first: tuple[str, ...] | None = (),
              checks: tuple[str, ...] | None = BASE_CHECKS, **options: Any) -> Factory:
    """The ReAct loop over the variant's tools, with ``options`` for the
    :class:`~sleuth.agent.loop.Agent`'s fields (``retrieve_first`` chunks retrieved by
    ``first_tool`` before the first call, ``answer_first`` ...); ``also_first`` names the
    tools called after the first retrieval where they apply to the question (None: every
    registered tool that reads its arguments from a question, ``Tool.from_question``, such
    as the facts pack's); ``checks`` the answer checks it runs by default, in order
    (:data:`PROFILE`: the model profile's, ``Settings.profile``). ``agent.checks``, where
    set, replaces either: the one switch of each check."""
    def build(setup: Setup) -> Runner:
        first = also_first if also_first is not None else tuple(
            name for name, t in TOOLS.items() if t.from_question is not None)
        chosen = setup.settings.profile().checks if checks is PROFILE else checks
        return Agent(**setup.fields(), also_first=first, checks=chosen, **options)

    return build


# ``auto`` as a person choosing an agent reads it
AUTO_LABEL = "Choose by question"
AUTO_SUMMARY = "simple questions get plain search then answer, others the default agent"


def agent_list() -> list[dict[str, Any]]:
    """Every agent as a person chooses one: ``name`` (the research name ``--agent`` takes),
    ``label`` (a plain name), ``summary`` (one line), ``description`` and ``default``; the
    default agent (:data:`~sleuth.settings.DEFAULT_AGENT`) first, ``auto`` last."""
    rows = [{"name": v.name, "label": v.label or v.name, "summary": v.summary or v.description,
             "description": v.description, "default": v.name == DEFAULT_AGENT}
            for v in VARIANTS.values()]
    rows.sort(key=lambda row: not row["default"])
    rows.append({"name": AUTO, "label": AUTO_LABEL, "summary": AUTO_SUMMARY,
                 "description": DESCRIPTION,
                 "default": AUTO == DEFAULT_AGENT})
    return rows


def build_agent(name: str, index: ReadIndex, llm: LLM, settings: Settings) -> Runner:
    """The agent called ``name`` over ``index``; wrapped with Triple-Check and bounded
    retries when ``settings.a2rag.verify`` (``--verify``)."""
    runner = _build(name, index, llm, settings)
    variant = VARIANTS.get(name)
    if settings.a2rag.verify and not (variant and variant.checked):
        return Verified(runner, index, llm, settings.a2rag, settings.llm.prices or None)
    return runner


def _build(name: str, index: ReadIndex, llm: LLM, settings: Settings) -> Runner:
    if name == AUTO:
        return _router(index, llm, settings)
    variant = VARIANTS.get(name)
    if variant is None:
        raise ConfigError(f"unknown agent {name!r}; choose one of: "
                          f"{', '.join(sorted([*VARIANTS, AUTO]))}")
    return variant.factory(Setup(variant, index, llm, settings))


def _router(index: ReadIndex, llm: LLM, settings: Settings) -> Router:
    """``auto``: the router over the two agents named in ``settings.router``."""
    cfg = settings.router
    if AUTO in (cfg.simple_agent, cfg.complex_agent):
        raise ConfigError("router.simple_agent and router.complex_agent must name agents other "
                          "than 'auto'")
    return Router(_build(cfg.simple_agent, index, llm, settings),
                  _build(cfg.complex_agent, index, llm, settings), llm, cfg.use_llm,
                  prompt("router"), settings.llm.prices or None)
