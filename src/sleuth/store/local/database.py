"""The index's database, ``sleuth.db``: its tables, this process's connections, read
snapshots, write transactions and the generation that readers compare.

:class:`_Database` is the base every part of :class:`~sleuth.store.local.store.LocalStore`
builds on: a public read is wrapped in :func:`_reads` (one snapshot, retried when a
concurrent compaction removed a file under it), a write is one :meth:`_Database._transaction`
that bumps the generation when it changes what a read returns. :class:`_PerGeneration`
keeps values computed in a snapshot for as long as the generation stays.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar

from sleuth.errors import (
    IndexDamaged,
    OutOfFiles,
    StoreError,
    descriptors_exhausted,
    out_of_files,
)

MANIFEST = "manifest.json"
DB = "sleuth.db"
VECTORS = "vectors"
SEGMENT_FILES = (".npy", ".ids.npy", ".chunks.npy")  # vectors, sentence ids, chunk rowids
MAX_TOKEN_CHARS = 4096  # index and query tokens are cut to this length alike
BUSY_SECONDS = 300.0  # how long a connection waits for another process's write to commit
READ_ATTEMPTS = 5  # snapshots a read tries when files vanish under it (concurrent compaction)

SCHEMA = """
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, next INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, title TEXT NOT NULL, type TEXT NOT NULL, path TEXT,
    hash TEXT NOT NULL, metadata TEXT NOT NULL, text TEXT NOT NULL, n_chunks INTEGER NOT NULL,
    collection TEXT NOT NULL DEFAULT 'default', groups TEXT NOT NULL DEFAULT '[]');
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE, doc_id TEXT NOT NULL,
    position INTEGER NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL,
    n_tokens INTEGER NOT NULL, text TEXT NOT NULL, n_words INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_id, position);
CREATE TABLE IF NOT EXISTS sentences (
    id INTEGER PRIMARY KEY, chunk INTEGER NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS sentences_chunk ON sentences (chunk);
CREATE TABLE IF NOT EXISTS segments (seg INTEGER PRIMARY KEY, rows INTEGER NOT NULL,
    checksum TEXT);
CREATE VIRTUAL TABLE IF NOT EXISTS keyword USING fts5 (
    tokens, content='', tokenize="ascii tokenchars '_'", detail=full);
CREATE VIRTUAL TABLE IF NOT EXISTS keyword_postings USING fts5vocab (keyword, instance);
CREATE VIRTUAL TABLE IF NOT EXISTS keyword_terms USING fts5vocab (keyword, row);
CREATE TABLE IF NOT EXISTS summaries (
    doc_id TEXT PRIMARY KEY, text TEXT NOT NULL, vector BLOB NOT NULL);
"""

# Format 3: several processes on one index (see :mod:`sleuth.store.local.store`).
SCHEMA_3 = """
CREATE TABLE IF NOT EXISTS pending (seg INTEGER PRIMARY KEY, owner TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dead_chunks (chunk INTEGER PRIMARY KEY, generation INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS builds (
    id INTEGER PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
    command TEXT NOT NULL, started TEXT NOT NULL, finished TEXT);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
TABLES = ("counters", "documents", "chunks", "sentences", "segments", "keyword", "summaries",
          "pending", "dead_chunks", "builds", "meta")

P = ParamSpec("P")
R = TypeVar("R")
V = TypeVar("V")
S = TypeVar("S", bound="_Database")


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";\n") if s.strip()]


class _Broken(Exception):
    """A registered file is missing or does not match what was written. ``retry``: it is
    missing, which a compaction committed since the read's snapshot explains (the read is
    retried in a fresh snapshot; missing again at the same generation, it is damage)."""

    def __init__(self, part: str, problem: str, *, retry: bool = False) -> None:
        super().__init__(f"{part} {problem}")
        self.part, self.problem, self.retry = part, problem, retry


class _Database:
    """This process's connections to ``sleuth.db``: one read connection per thread (its
    snapshot shared by the reads of one public call) and one writer, one write at a time."""

    root: Path
    manifest: dict[str, Any]
    _lock: threading.RLock  # this process's writes, one at a time
    _tls: threading.local  # per thread: its read connection, its snapshot
    _connections: list[sqlite3.Connection]
    _writer: sqlite3.Connection | None

    def _damaged(self, problem: str, repair: str | None = "re-embeds the vectors from the "
                 "stored text") -> IndexDamaged | OutOfFiles:
        """The one error for a damaged part: what is wrong and how to repair it. A part that
        cannot be opened while the process has no file descriptor left is not damaged: that
        is :class:`OutOfFiles` (HTTP 503), whatever the failure said."""
        if descriptors_exhausted():
            return OutOfFiles()
        if repair is None:
            return IndexDamaged(f"index {self.root} is damaged: {problem}; its documents must "
                                "be indexed again (move the folder away and run `sleuth index "
                                "PATH` into a new one)")
        return IndexDamaged(f"index {self.root} is damaged: {problem}; `sleuth index --repair "
                            f"--index {self.root}` {repair}")

    def _db_error(self, exc: sqlite3.DatabaseError) -> StoreError | OutOfFiles:
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and "locked" in text:
            return StoreError(f"{self.root / DB} is locked by another process ({text}); try "
                              "again")
        return self._damaged(f"{DB} cannot be read ({text})", repair=None)

    def _connect(self, *, readonly: bool = False) -> sqlite3.Connection:
        """A connection to ``sleuth.db``. A read-only one never writes the database: it
        neither checkpoints nor recovers a write-ahead log into it (SQLite may leave its
        empty ``-wal``/``-shm`` files beside it)."""
        path = (self.root / DB).resolve()
        target = f"{path.as_uri()}?mode=ro" if readonly else str(path)
        try:
            db = sqlite3.connect(target, uri=readonly, check_same_thread=False,
                                 isolation_level=None, timeout=BUSY_SECONDS)
        except sqlite3.Error as exc:  # no descriptor left: the server is busy, not broken
            busy = out_of_files(exc)
            if busy is None:
                raise
            raise busy from None
        if not readonly:
            db.execute("PRAGMA synchronous=NORMAL")
        return db

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's read connection (reads of one public call share its snapshot)."""
        db: sqlite3.Connection | None = self._tls.__dict__.get("db")
        if db is None:
            db = self._tls.db = self._connect(readonly=True)
            with self._lock:
                self._connections.append(db)
        return db

    @contextmanager
    def _snapshot(self) -> Iterator[int]:
        """One read transaction on this thread's connection; yields its generation."""
        db = self.db
        try:
            db.execute("BEGIN")
            generation = self._tls.generation = self._read_generation(db)
            try:
                yield generation
            finally:
                self._tls.generation = None
                db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise self._db_error(exc) from None

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: it waits for other writers)."""
        with self._lock:
            if self._writer is None:
                self._writer = self._connect()
            w = self._writer
            w.execute("BEGIN IMMEDIATE")
            try:
                yield w
                w.execute("COMMIT")
            except BaseException:
                w.execute("ROLLBACK")
                raise

    @staticmethod
    def _read_generation(db: sqlite3.Connection) -> int:
        row = db.execute("SELECT next FROM counters WHERE name='generation'").fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _bump(w: sqlite3.Connection) -> int:
        """Inside a write transaction: the next generation (what readers compare)."""
        w.execute("INSERT INTO counters VALUES ('generation', 1) "
                  "ON CONFLICT(name) DO UPDATE SET next = next + 1")
        return int(w.execute("SELECT next FROM counters WHERE name='generation'").fetchone()[0])

    def generation(self) -> int:
        """The index's generation: it changes with every commit that changes a read."""
        generation: int | None = self._tls.__dict__.get("generation")
        if generation is not None:
            return generation
        try:
            return self._read_generation(self.db)
        except sqlite3.DatabaseError as exc:
            raise self._db_error(exc) from None

    def _meta(self, name: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE name=?", (name,)).fetchone()
        return None if row is None else str(row[0])


def _reads(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Run a public read in one snapshot of the database (nested reads share it)."""

    @functools.wraps(method)
    def read(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        if self._tls.__dict__.get("generation") is not None:
            return method(self, *args, **kwargs)
        last: int | None = None
        for _ in range(READ_ATTEMPTS):
            generation: int | None = None
            try:
                with self._snapshot() as generation:
                    return method(self, *args, **kwargs)
            except _Broken as broken:
                if not broken.retry or generation == last:  # not a concurrent compaction
                    raise self._damaged(f"{broken.part} {broken.problem}") from None
                last = generation
        raise StoreError(f"{self.root} kept changing under a read ({READ_ATTEMPTS} tries); "
                         "try again")

    return read


class _PerGeneration(Generic[V]):
    """Values computed inside a read snapshot, kept while the index stays at the generation
    they were computed at (a newer one drops them all); an older snapshot's values are
    computed and not kept."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self._values: dict[str, V] = {}
        self._generation = -1

    def get(self, generation: int, key: str, compute: Callable[[], V],
            keep: Callable[[V, Iterable[V]], bool] | None = None) -> V:
        """The value of ``key`` at ``generation``, computed (outside the lock) when missing
        and kept when ``keep(value, values held)`` allows."""
        with self._lock:
            if self._generation != generation:
                if generation < self._generation:
                    return compute()
                self._values, self._generation = {}, generation
            found = self._values.get(key)
        if found is not None:
            return found
        value = compute()
        with self._lock:
            if self._generation == generation and (
                    keep is None or keep(value, list(self._values.values()))):
                self._values[key] = value
        return value


def _batches(items: Sequence[Any], size: int = 900) -> Iterator[list[Any]]:
    """``items`` in lists of at most ``size`` (SQLite's bound-parameter limit)."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _short(exc: BaseException) -> str:
    """An exception as a short phrase for a one-line message."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]
