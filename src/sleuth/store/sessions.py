"""Where the sessions of an index are saved: the :class:`SessionStore` capability of a
store backend (a folder index keeps them as files, :mod:`sleuth.store.local.sessions`;
:mod:`sleuth.store.postgres.sessions` keeps them as rows)."""

from __future__ import annotations

import re
from typing import Any, Protocol

from sleuth.errors import ConfigError

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
        """``owner``'s sessions: id, agent, turns, first question, title (None when never
        named), last update."""
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
