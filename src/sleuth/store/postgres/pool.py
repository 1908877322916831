"""The connection pool of a PostgreSQL index, held to timeouts so that a database that goes
away is answered fast and one that returns is used again within seconds.

Without limits a request waited psycopg-pool's 30 s for a connection while the database was
down, and the pool's reconnection attempts backed off to pauses of tens of seconds, so
service resumed up to half a minute after the database did. Here (settings ``postgres.*``):

- ``connect_timeout`` bounds each connection attempt (libpq's parameter);
- ``pool_timeout`` bounds the wait for a pooled connection; past it the request fails with
  :class:`~sleuth.errors.DatabaseUnavailable` (a server answers 503 with ``Retry-After``),
  or with :class:`~sleuth.errors.Busy` when the database answers and every connection is
  in use;
- every connection is checked (an empty query) as it leaves the pool, so one broken while
  the database was away is replaced, never handed to a request;
- ``reconnect_timeout`` bounds the pool's retries of a lost connection: it gives up after
  it, and the next request starts a fresh attempt, so no pause between attempts outlasts it;
- ``max_lifetime`` replaces old connections (a failover's new address is taken up).

A connection that breaks during a request (the server stopped under it) fails that request
with :class:`~sleuth.errors.DatabaseUnavailable` too; other database errors pass unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from sleuth.errors import Busy, DatabaseUnavailable, redact
from sleuth.settings import PostgresSettings
from sleuth.store.postgres.schema import Connection

POOL_SIZE = 8  # connections shared by concurrent readers and writers


def connect_options(conninfo: str, settings: PostgresSettings) -> dict[str, Any]:
    """libpq options added to ``conninfo``: ``connect_timeout`` unless it names one."""
    if settings.connect_timeout and "connect_timeout" not in conninfo_to_dict(conninfo):
        return {"connect_timeout": settings.connect_timeout}
    return {}


class Pool(ConnectionPool[Connection]):
    """A :class:`psycopg_pool.ConnectionPool` whose failures to reach the database are
    :class:`~sleuth.errors.DatabaseUnavailable` naming ``where`` (no password)."""

    def __init__(self, conninfo: str, where: str, settings: PostgresSettings,
                 configure: Callable[[Connection], None], name: str) -> None:
        self.where = where
        self.settings = settings
        self._target = conninfo
        self.retry_after = max(1, math.ceil(settings.reconnect_timeout))
        super().__init__(
            conninfo, min_size=1, max_size=POOL_SIZE, configure=configure, open=True,
            name=name, kwargs=connect_options(conninfo, settings),
            timeout=settings.pool_timeout, check=ConnectionPool.check_connection,
            reconnect_timeout=settings.reconnect_timeout,
            max_lifetime=settings.max_lifetime)

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[Connection]:
        """A pooled connection; the database out of reach raises DatabaseUnavailable."""
        conn: Connection | None = None
        try:
            with super().connection(timeout) as conn:
                yield conn
        except PoolTimeout:
            raise self._timed_out() from None
        except psycopg.OperationalError as exc:
            if conn is None or not conn.broken:
                raise
            raise self.unavailable(str(exc)) from None

    def unavailable(self, reason: str) -> DatabaseUnavailable:
        """The error of a database out of reach, with libpq's ``reason`` (redacted)."""
        said = redact(reason.strip().splitlines()[0] if reason.strip() else "no answer")
        return DatabaseUnavailable(
            f"the index's database cannot be reached ({self.where}: {said}); try again in "
            f"{self.retry_after} s", self.retry_after)

    def _timed_out(self) -> Busy:
        """Why no connection came within the pool's timeout: one fresh attempt tells a
        database out of reach (DatabaseUnavailable) from a pool whose connections are all
        in use (Busy)."""
        try:
            with psycopg.connect(self._target, **connect_options(self._target,
                                                                  self.settings)):
                pass
        except psycopg.Error as exc:
            return self.unavailable(str(exc))
        return Busy(f"all {POOL_SIZE} connections to the index's database are busy; try again "
                    f"in {self.retry_after} s", self.retry_after)
