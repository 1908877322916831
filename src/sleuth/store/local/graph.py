"""The folder backend's knowledge-graph tables: ``graph.db`` (SQLite) beside the index's own
files; the tables, their rows and :class:`~sleuth.store.graphs.GraphBackend` are
:mod:`sleuth.store.graphs`, their queries :mod:`sleuth.store.graphsql`.

Entities are keyed by a normalised name (:func:`~sleuth.store.graphs.norm`: case, accents,
punctuation and a leading article folded), so spelling variants merge; ``aliases`` maps
further variant keys (acronyms such as "IBM" for "International Business Machines") to an
entity. Mentions and relations keep their provenance (chunk id and character span);
``extracted`` records which chunks were processed by which extractor, so a re-build only
processes new or changed chunks and drops what came from chunks that are gone. Alias merging
(:mod:`sleuth.graph.aliases`) adds further aliases, remembers in ``checked`` which names it
has paired, and caches name embeddings in ``name_vectors`` (float32 blobs; the embedder's
name is in ``meta``). ``proposals`` holds the triples proposed for review
(:mod:`sleuth.graph.review`), created on first use.

:class:`GraphStore` is the SQLite :class:`~sleuth.store.graphs.GraphBackend`,
:class:`sleuth.store.postgres.graph.PostgresGraphStore` keeps the same tables in the schema of
a PostgreSQL index; both answer through :class:`~sleuth.store.graphsql.SqlGraphTables`. An
index's store backend says which it uses: its ``graph_tables()`` (:class:`FolderGraph` for a
folder) opens, finds and drops the graph.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sleuth.store.graphs import FORMAT_VERSION, PROPOSALS_SCHEMA, SCHEMA
from sleuth.store.graphsql import Dialect, SqlGraphTables

GRAPH_DB = "graph.db"
SQLITE = Dialect(family="sqlite", mark="?", prefix="", rowid="rowid", bytewise="",
                 in_batch=900)  # below SQLite's oldest bound on a statement's parameters


class FolderGraph:
    """The graph capability of a store with a folder: ``graph.db`` in it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def exists(self) -> bool:
        return (self.folder / GRAPH_DB).is_file()

    def open(self) -> GraphStore:
        return GraphStore(self.folder)

    def drop(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            (self.folder / f"{GRAPH_DB}{suffix}").unlink(missing_ok=True)


class GraphStore(SqlGraphTables):
    """Read and write access to ``graph.db``: one connection, shared by the process's
    threads; writers take turns on :attr:`lock`, other processes on SQLite's file lock."""

    dialect = SQLITE

    def __init__(self, folder: str | Path) -> None:
        super().__init__()
        self.folder = Path(folder)
        self.path = self.folder / GRAPH_DB
        self._proposals_ready = False
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        version = self.db.execute("SELECT value FROM meta WHERE key='format_version'").fetchone()
        if version is None:
            self.db.execute("INSERT INTO meta VALUES ('format_version', ?)", (FORMAT_VERSION,))
        elif int(version[0]) != FORMAT_VERSION:
            from sleuth.errors import StoreError

            raise StoreError(f"{self.path} is graph format {version[0]}, this Sleuth reads "
                             f"{FORMAT_VERSION}; rebuild it with `sleuth graph build --rebuild`")

    def close(self) -> None:
        self.db.close()

    def version(self) -> int:
        return int(self.db.execute("PRAGMA data_version").fetchone()[0])

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All writes inside commit together, or none (nestable: the outer one counts)."""
        with self.lock:
            if self.db.in_transaction:
                yield
                return
            self.db.execute("BEGIN")
            try:
                yield
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    # -- the primitives of SqlGraphTables ---------------------------------------------------

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.db.execute(sql, params)

    def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.db.execute(sql, params).fetchall()

    def _executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.db.executemany(sql, rows)

    def _stream(self, sql: str) -> Iterator[tuple[Any, ...]]:
        yield from self.db.execute(sql)

    def _insert_id(self, sql: str, params: Sequence[Any]) -> int | None:
        cursor = self.db.execute(sql, params)
        return int(cursor.lastrowid or 0) if cursor.rowcount else None

    def _ensure_proposals(self) -> None:
        if not self._proposals_ready:
            with self.lock:
                self.db.executescript(PROPOSALS_SCHEMA)
            self._proposals_ready = True

    def _has_proposals(self) -> bool:
        """Whether the proposals table exists (reading never creates it)."""
        return self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'proposals'").fetchone() is not None
