"""Saved sessions of a PostgreSQL index: one row per session in the index schema.

Every serving process of the index reads and writes the same rows, so a conversation
continues on whichever host its next request reaches. The table is created on first use
(``CREATE TABLE IF NOT EXISTS``), so indexes built before it existed need no migration::

    sessions      owner ('' for admin/shared sessions, else the tenant key's name), id,
                  data (jsonb: the same object as a session file), updated
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

import psycopg
from psycopg.types.json import Jsonb

from sleuth.errors import StoreError

TABLE = """
CREATE TABLE IF NOT EXISTS sessions (
    owner text NOT NULL DEFAULT '', id text NOT NULL, data jsonb NOT NULL,
    updated timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (owner, id))
"""
_T = TypeVar("_T")
_READY: weakref.WeakSet[Any] = weakref.WeakSet()  # databases whose table is known to exist


class Database(Protocol):
    """What the sessions need of a PostgreSQL store: pooled connections whose search path
    starts at the index schema, and a description for messages."""

    where: str

    def connection(self) -> AbstractContextManager[psycopg.Connection[tuple[Any, ...]]]: ...


class PostgresSessions:
    """Sessions in the ``sessions`` table of the index schema (see the module docstring)."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def where(self, owner: str | None, session_id: str | None = None) -> str:
        place = f"the sessions table of {self.database.where}"
        if owner is not None:
            place += f" (key {owner!r})"
        return place if session_id is None else f"session {session_id!r} in {place}"

    def exists(self, owner: str | None, session_id: str) -> bool:
        return self._run(lambda conn: conn.execute(
            "SELECT 1 FROM sessions WHERE owner = %s AND id = %s",
            (owner or "", session_id)).fetchone() is not None)

    def load(self, owner: str | None, session_id: str) -> dict[str, Any] | None:
        row = self._run(lambda conn: conn.execute(
            "SELECT data FROM sessions WHERE owner = %s AND id = %s",
            (owner or "", session_id)).fetchone())
        if row is None:
            return None
        if not isinstance(row[0], dict):
            return {}  # not a session object: the caller reports the foreign format
        return row[0]

    def save(self, owner: str | None, session_id: str, data: dict[str, Any]) -> None:
        """Insert or replace the session (one statement, so atomic)."""
        self._run(lambda conn: conn.execute(
            "INSERT INTO sessions (owner, id, data) VALUES (%s, %s, %s) "
            "ON CONFLICT (owner, id) DO UPDATE SET data = EXCLUDED.data, updated = now()",
            (owner or "", session_id, Jsonb(data))), write=True)

    def list(self, owner: str | None) -> list[dict[str, Any]]:
        """Summaries of ``owner``'s sessions by id, read without loading the dialogues."""
        rows = self._run(lambda conn: conn.execute(
            "SELECT id, data->'agent', CASE jsonb_typeof(data->'turns') WHEN 'array' THEN "
            "jsonb_array_length(data->'turns') ELSE 0 END, data->'turns'->0->'question', "
            "data->'title', data->'updated' FROM sessions WHERE owner = %s "
            "ORDER BY id COLLATE \"C\"", (owner or "",)).fetchall())
        return [{"id": sid, "agent": agent, "turns": turns, "first_question": first or "",
                 "title": title, "updated": updated}
                for sid, agent, turns, first, title, updated in rows]

    def delete(self, owner: str | None, session_id: str) -> bool:
        return self._run(lambda conn: conn.execute(
            "DELETE FROM sessions WHERE owner = %s AND id = %s",
            (owner or "", session_id)).rowcount > 0, write=True)

    def owners(self) -> tuple[str | None, ...]:
        """None (the shared sessions) first, then every key name with sessions."""
        rows = self._run(lambda conn: conn.execute(
            'SELECT DISTINCT owner COLLATE "C" FROM sessions WHERE owner <> \'\' '
            "ORDER BY 1").fetchall())
        return (None, *(str(r[0]) for r in rows))

    def _run(self, work: Callable[[psycopg.Connection[tuple[Any, ...]]], _T], *,
             write: bool = False) -> _T:
        """``work`` on a pooled connection (committed after), the table created first when
        this process has not seen it yet; database failures become StoreError."""
        try:
            with self.database.connection() as conn:
                if self.database not in _READY:
                    self._create(conn)
                return work(conn)
        except psycopg.Error as exc:
            action = "save sessions in" if write else "read sessions from"
            raise StoreError(f"cannot {action} {self.database.where}: "
                             f"{str(exc).strip()}") from None

    def _create(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        """The sessions table, unless it exists (checked first, so a read-only replica can
        read the sessions its primary holds); another process creating it at the same time
        is fine."""
        found = conn.execute("SELECT to_regclass('sessions')").fetchone()
        if found is None or found[0] is None:
            try:
                with conn.transaction():
                    conn.execute(TABLE)
            except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable):
                pass  # created by another server between the check and the CREATE
        conn.commit()
        _READY.add(self.database)
