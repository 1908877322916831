"""One-call helpers: ``sleuth.ask`` and ``sleuth.index_paths``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sleuth.agent.loop import StepCallback
from sleuth.agent.run import nothing_indexed
from sleuth.agent.variants import build_agent
from sleuth.index.write import AddReport, Index
from sleuth.llm import LLM
from sleuth.llm.factory import llm_from_settings
from sleuth.settings import DEFAULT_AGENT, Settings
from sleuth.types import Answer


def ask(question: str, *, index: Index | str | Path | None = None, agent: str = DEFAULT_AGENT,
        settings: Settings | None = None, llm: LLM | None = None,
        on_step: StepCallback | None = None, **overrides: Any) -> Answer:
    """Answer ``question`` with the named agent over ``index`` (default: settings.index).
    An index that holds no documents is answered that it holds none, with no model
    (:func:`~sleuth.agent.run.nothing_indexed`).

    ``overrides`` are settings sections, e.g. ``llm={"model": "gpt-4o-mini"}``.
    """
    settings = settings or Settings.load(**overrides)
    opened = index if isinstance(index, Index) else Index.open(index, settings=settings)
    try:
        empty = nothing_indexed(opened, question, agent, on_step)
        if empty is not None:
            return empty
        client = llm or llm_from_settings(settings)
        return build_agent(agent, opened, client, settings).run(question, on_step=on_step)
    finally:
        if opened is not index:
            opened.close()


def index_paths(paths: Sequence[str | Path], *, index: str | Path | None = None,
                settings: Settings | None = None, **options: Any) -> AddReport:
    """Build or update the index at ``index`` from ``paths``; returns what changed."""
    settings = settings or Settings.load()
    with Index.open(index, settings=settings, create=True) as opened:
        return opened.add(paths, **options)
