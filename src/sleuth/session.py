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

import json
import re
import secrets
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

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
_ID = re.compile(r"[\w.-]{1,64}")


class SessionStore(Protocol):
    """Where the sessions of one index are saved. ``owner`` None: the shared (admin)
    sessions; a name: the sessions of that tenant API key, apart from every other key's
    (the same id under two owners is two sessions)."""

    def where(self, owner: str | None, session_id: str | None = None) -> str:
        """``owner``'s sessions (or one of them), for messages."""
        ...

    def exists(self, owner: str | None, session_id: str) -> bool: ...

    def load(self, owner: str | None, session_id: str) -> dict[str, Any] | None:
        """The saved session object, None when there is none; ConfigError when unreadable."""
        ...

    def save(self, owner: str | None, session_id: str, data: dict[str, Any]) -> None:
        """Create or replace the session, atomically."""
        ...

    def list(self, owner: str | None) -> list[dict[str, Any]]:
        """``owner``'s sessions: id, agent, turns, first question, last update."""
        ...

    def delete(self, owner: str | None, session_id: str) -> bool:
        """Delete the session; False when there was none."""
        ...

    def owners(self) -> tuple[str | None, ...]:
        """Whose sessions are saved: None (shared) first, then the key names."""
        ...


def check_session_id(session_id: str) -> str:
    """``session_id`` when it is a valid session id (it names a file), else ConfigError."""
    if not _ID.fullmatch(session_id):
        raise ConfigError(f"invalid session id {session_id!r}: use letters, digits, '.', "
                          "'-' and '_' (at most 64)")
    return session_id


def sessions_folder(index: Index, owner: str | None = None) -> Path:
    """Where a folder index saves sessions: ``sessions/`` of the index, or
    ``sessions/keys/<owner>/`` for the sessions of one tenant API key (so no other key can
    open or overwrite them)."""
    folder = index.folder / "sessions"
    return folder if owner is None else folder / "keys" / owner


def session_store(index: Index) -> SessionStore:
    """The sessions of ``index``: rows of its schema for a PostgreSQL store (or of the
    store ``settings.sessions_store`` names), else files."""
    store = index.sessions_store() or index.store
    postgres = sys.modules.get("sleuth.store.postgres")  # loaded whenever one is open
    if postgres is not None and isinstance(store, postgres.PostgresStore):
        from sleuth.store.pg_sessions import PostgresSessions

        return PostgresSessions(store)
    return FileSessions(index)


class FileSessions:
    """Sessions as JSON files under the index folder (see :func:`sessions_folder`)."""

    def __init__(self, index: Index) -> None:
        self.index = index

    def path(self, owner: str | None, session_id: str) -> Path:
        return sessions_folder(self.index, owner) / f"{check_session_id(session_id)}.json"

    def where(self, owner: str | None, session_id: str | None = None) -> str:
        if session_id is None:
            return str(sessions_folder(self.index, owner))
        return str(self.path(owner, session_id))

    def exists(self, owner: str | None, session_id: str) -> bool:
        return self.path(owner, session_id).is_file()

    def load(self, owner: str | None, session_id: str) -> dict[str, Any] | None:
        path = self.path(owner, session_id)
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"session file {path} is unreadable ({exc}); delete it "
                              "or start a new session") from None
        return data if isinstance(data, dict) else {}

    def save(self, owner: str | None, session_id: str, data: dict[str, Any]) -> None:
        path = self.path(owner, session_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)

    def list(self, owner: str | None) -> list[dict[str, Any]]:
        out = []
        for path in sorted(sessions_folder(self.index, owner).glob("*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue
            if not isinstance(data, dict):
                continue
            turns = data.get("turns") or []
            out.append({"id": path.stem, "agent": data.get("agent"), "turns": len(turns),
                        "first_question": turns[0]["question"] if turns else "",
                        "updated": data.get("updated")})
        return out

    def delete(self, owner: str | None, session_id: str) -> bool:
        try:
            self.path(owner, session_id).unlink()
        except FileNotFoundError:
            return False
        return True

    def owners(self) -> tuple[str | None, ...]:
        keys = sessions_folder(self.index) / "keys"
        names = sorted(p.name for p in keys.iterdir() if p.is_dir()) if keys.is_dir() else []
        return (None, *names)


class Session:
    """A conversation with one agent over one index."""

    def __init__(self, index: Index, *, agent: str = "docs", settings: Settings | None = None,
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
        self.created = _now()
        self._llm = llm

    # -- persistence -------------------------------------------------------------------

    @classmethod
    def open(cls, index: Index, session_id: str, *, create: bool = False,
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
        return session

    @staticmethod
    def exists(index: Index, session_id: str, owner: str | None = None) -> bool:
        """Whether ``owner`` has a saved session ``session_id`` in ``index``."""
        return session_store(index).exists(owner, check_session_id(session_id))

    @staticmethod
    def saved(index: Index, owner: str | None = None) -> list[dict[str, Any]]:
        """Saved sessions of ``index`` (of ``owner``): id, agent, turns, first question, last
        update."""
        return session_store(index).list(owner)

    @staticmethod
    def delete(index: Index, session_id: str, owner: str | None = None) -> bool:
        """Delete ``owner``'s session ``session_id``; False when there was none."""
        return session_store(index).delete(owner, check_session_id(session_id))

    def save(self) -> None:
        if not self.persist:
            return
        data = {"format": FORMAT, "format_version": FORMAT_VERSION, "id": self.id,
                "agent": self.agent_name, "created": self.created, "updated": _now(),
                "tracker": self.tracker.to_dict(), "messages": self.messages,
                "turns": self.turns}
        self.store.save(self.owner, self.id, data)

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
