"""Multi-turn sessions: follow-up questions see what earlier turns retrieved.

A :class:`Session` keeps the dialogue (messages, tool output included) and the tracker
(reference ids, chunks read) across questions, so reference ids like ``turn1search3`` stay
valid and a follow-up can open a document found earlier instead of searching again. Sessions
are saved after every turn and ``Session.open`` resumes one. Where they live follows the
index's store (:func:`session_store`): JSON files in the index folder
(``sessions/<id>.json``, written atomically) for a folder index, the ``sessions`` table of
the index schema for a PostgreSQL index (so every server of the index sees them). The CLI's
``search``/``find``/``open`` commands share the session ``cli`` so their reference ids
survive between invocations.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from sleuth.agent.loop import StepCallback
from sleuth.errors import ConfigError
from sleuth.index.read import ReadIndex, session_store
from sleuth.llm import LLM
from sleuth.settings import Settings
from sleuth.store.sessions import SessionStore as SessionStore  # re-exported: its earlier home
from sleuth.store.sessions import check_session_id
from sleuth.tools import TOOLS, ToolContext, ToolResult
from sleuth.tools.tracker import Tracker
from sleuth.types import Answer

FORMAT = "sleuth-session"
FORMAT_VERSION = 1
TITLE_CHARS = 80  # a session without a title is listed under its first question, cut here


def session_title(title: str | None, first_question: str) -> str:
    """What a session is listed as: its title, else its first question on one line, cut at
    a word to about :data:`TITLE_CHARS` characters ("" before the first question)."""
    if title:
        return title
    line = " ".join(first_question.split())
    if len(line) <= TITLE_CHARS:
        return line
    cut = line[: TITLE_CHARS - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


class Session:
    """A conversation with one agent over one index."""

    def __init__(self, index: ReadIndex, *, agent: str = "docs", settings: Settings | None = None,
                 llm: LLM | None = None, session_id: str | None = None,
                 persist: bool = True, owner: str | None = None) -> None:
        self.index = index
        self.owner = owner
        self.store = session_store(index)
        self.settings = settings or index.settings
        self.agent_name = agent
        self.id = check_session_id(session_id or datetime.now(UTC).strftime(
            "%Y%m%d-%H%M%S-") + secrets.token_hex(2))
        self.persist = persist
        self.tracker = Tracker()
        self.messages: list[dict[str, Any]] = []
        self.turns: list[dict[str, Any]] = []
        self.title: str | None = None  # named by its user (None: listed by first question)
        self.created = _now()
        self._llm = llm

    # -- persistence -------------------------------------------------------------------

    @classmethod
    def open(cls, index: ReadIndex, session_id: str, *, create: bool = False,
             agent: str | None = None, settings: Settings | None = None,
             llm: LLM | None = None, owner: str | None = None) -> Session:
        """Resume session ``session_id`` of ``index`` (a new one when ``create``); ``owner``
        picks a tenant key's own sessions (see :class:`SessionStore`)."""
        session = cls(index, agent=agent or "docs", settings=settings, llm=llm,
                      session_id=session_id, owner=owner)
        data = session.store.load(owner, session.id)
        if data is None:
            if create:
                return session
            raise ConfigError(f"no session {session_id!r} in {session.store.where(owner)}; "
                              "list them with `sleuth chat --list`")
        if data.get("format") != FORMAT or data.get("format_version") != FORMAT_VERSION:
            raise ConfigError(f"{session.store.where(owner, session.id)} is not a session "
                              f"this Sleuth reads (format {data.get('format')!r} "
                              f"v{data.get('format_version')!r})")
        session.agent_name = agent or data.get("agent") or "docs"
        session.tracker = Tracker.from_dict(data.get("tracker") or {})
        session.messages = list(data.get("messages") or [])
        session.turns = list(data.get("turns") or [])
        session.created = data.get("created") or session.created
        session.title = data.get("title") or None
        return session

    @staticmethod
    def exists(index: ReadIndex, session_id: str, owner: str | None = None) -> bool:
        """Whether ``owner`` has a saved session ``session_id`` in ``index``."""
        return session_store(index).exists(owner, check_session_id(session_id))

    @staticmethod
    def saved(index: ReadIndex, owner: str | None = None) -> list[dict[str, Any]]:
        """Saved sessions of ``index`` (of ``owner``): id, agent, turns, first question,
        title (:func:`session_title`), last update."""
        return [{**listed, "title": session_title(listed.get("title"),
                                                  listed.get("first_question") or "")}
                for listed in session_store(index).list(owner)]

    @staticmethod
    def delete(index: ReadIndex, session_id: str, owner: str | None = None) -> bool:
        """Delete ``owner``'s session ``session_id``; False when there was none."""
        return session_store(index).delete(owner, check_session_id(session_id))

    def save(self) -> None:
        if not self.persist:
            return
        data = {"format": FORMAT, "format_version": FORMAT_VERSION, "id": self.id,
                "agent": self.agent_name, "created": self.created, "updated": _now(),
                **({"title": self.title} if self.title else {}),
                "tracker": self.tracker.to_dict(), "messages": self.messages,
                "turns": self.turns}
        self.store.save(self.owner, self.id, data)

    # -- use ---------------------------------------------------------------------------

    @property
    def llm(self) -> LLM:
        if self._llm is None:
            from sleuth.llm.factory import llm_from_settings

            self._llm = llm_from_settings(self.settings)
        return self._llm

    def ask(self, question: str, *, on_step: StepCallback | None = None) -> Answer:
        """Answer ``question`` in this conversation; earlier turns' evidence stays visible."""
        from sleuth.agent.variants import build_agent

        agent = build_agent(self.agent_name, self.index, self.llm, self.settings)
        self.tracker.turn = len(self.turns) + 1
        answer = agent.run(question, on_step=on_step, tracker=self.tracker,
                           history=self.messages)
        if answer.messages:
            self.messages = answer.messages
        self.turns.append({"question": question, "answer": answer.answer,
                           "citations": [c.to_dict() for c in answer.citations],
                           "agent": answer.agent, "loops": answer.loops,
                           "at": _now()})
        self.save()
        return answer

    @property
    def shown_title(self) -> str:
        """The title it is listed under (:func:`session_title`)."""
        return session_title(self.title, self.turns[0]["question"] if self.turns else "")

    def run_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a retrieval tool by hand in this session (reference ids are remembered)."""
        tool = TOOLS.get(name)
        if tool is None:
            raise ConfigError(f"unknown tool {name!r}; choose one of: {', '.join(TOOLS)}")
        self.tracker.turn = max(1, len(self.turns) + 1)
        result = tool.run(ToolContext(self.index, self.tracker), arguments)
        self.save()
        return result


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
