"""Multi-turn sessions: follow-up questions see what earlier turns retrieved.

A :class:`Session` keeps the dialogue (messages, tool output included) and the tracker
(reference ids, chunks read) across questions, so reference ids like ``turn1search3`` stay
valid and a follow-up can open a document found earlier instead of searching again. Sessions
persist as JSON in the index folder (``sessions/<id>.json``), written atomically after
every turn; ``Session.open`` resumes one. The CLI's ``search``/``find``/``open`` commands
share the session ``cli`` so their reference ids survive between invocations.
"""

from __future__ import annotations

import json
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sleuth.agent.loop import StepCallback
from sleuth.agent.tracker import Tracker
from sleuth.errors import ConfigError
from sleuth.index import Index
from sleuth.llm import LLM
from sleuth.settings import Settings
from sleuth.tools import TOOLS, ToolContext, ToolResult
from sleuth.types import Answer

FORMAT = "sleuth-session"
FORMAT_VERSION = 1
_ID = re.compile(r"^[\w.-]{1,64}$")


def sessions_folder(index: Index, owner: str | None = None) -> Path:
    """Where sessions are saved: ``sessions/`` of the index, or ``sessions/keys/<owner>/``
    for the sessions of one tenant API key (so no other key can open or overwrite them)."""
    folder = index.folder / "sessions"
    return folder if owner is None else folder / "keys" / owner


class Session:
    """A conversation with one agent over one index."""

    def __init__(self, index: Index, *, agent: str = "docs", settings: Settings | None = None,
                 llm: LLM | None = None, session_id: str | None = None,
                 persist: bool = True, owner: str | None = None) -> None:
        self.index = index
        self.folder = sessions_folder(index, owner)
        self.settings = settings or index.settings
        self.agent_name = agent
        self.id = session_id or datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + \
            secrets.token_hex(2)
        if not _ID.match(self.id):
            raise ConfigError(f"invalid session id {self.id!r}: use letters, digits, '.', "
                              "'-' and '_' (at most 64)")
        self.persist = persist
        self.tracker = Tracker()
        self.messages: list[dict[str, Any]] = []
        self.turns: list[dict[str, Any]] = []
        self.created = _now()
        self._llm = llm

    # -- persistence -------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self.folder / f"{self.id}.json"

    @classmethod
    def open(cls, index: Index, session_id: str, *, create: bool = False,
             agent: str | None = None, settings: Settings | None = None,
             llm: LLM | None = None, owner: str | None = None) -> Session:
        """Resume session ``session_id`` of ``index`` (a new one when ``create``); ``owner``
        picks a tenant key's own sessions (see :func:`sessions_folder`)."""
        session = cls(index, agent=agent or "docs", settings=settings, llm=llm,
                      session_id=session_id, owner=owner)
        if not session.path.is_file():
            if create:
                return session
            raise ConfigError(f"no session {session_id!r} in {session.folder}; "
                              "list them with `sleuth chat --list`")
        try:
            data = json.loads(session.path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"session file {session.path} is unreadable ({exc}); delete it "
                              "or start a new session") from None
        if data.get("format") != FORMAT or data.get("format_version") != FORMAT_VERSION:
            raise ConfigError(f"{session.path} is not a session this Sleuth reads (format "
                              f"{data.get('format')!r} v{data.get('format_version')!r})")
        session.agent_name = agent or data.get("agent") or "docs"
        session.tracker = Tracker.from_dict(data.get("tracker") or {})
        session.messages = list(data.get("messages") or [])
        session.turns = list(data.get("turns") or [])
        session.created = data.get("created") or session.created
        return session

    @staticmethod
    def saved(index: Index, owner: str | None = None) -> list[dict[str, Any]]:
        """Saved sessions of ``index`` (of ``owner``): id, agent, turns, first question, last
        update."""
        out = []
        for path in sorted(sessions_folder(index, owner).glob("*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue
            turns = data.get("turns") or []
            out.append({"id": path.stem, "agent": data.get("agent"), "turns": len(turns),
                        "first_question": turns[0]["question"] if turns else "",
                        "updated": data.get("updated")})
        return out

    def save(self) -> None:
        if not self.persist:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        data = {"format": FORMAT, "format_version": FORMAT_VERSION, "id": self.id,
                "agent": self.agent_name, "created": self.created, "updated": _now(),
                "tracker": self.tracker.to_dict(), "messages": self.messages,
                "turns": self.turns}
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        tmp.replace(self.path)

    # -- use ---------------------------------------------------------------------------

    @property
    def llm(self) -> LLM:
        if self._llm is None:
            from sleuth.agent.variants import llm_from_settings

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
