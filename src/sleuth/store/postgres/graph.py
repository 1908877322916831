"""The knowledge graph of a PostgreSQL index: the tables of ``graph.db`` in the index schema.

:class:`PostgresGraphStore` answers as :class:`~sleuth.store.local.graph.GraphStore` does, with
the same statements (:class:`~sleuth.store.graphsql.SqlGraphTables`), over the same tables
prefixed ``graph_`` (``graph_entities``, ``graph_mentions``, ..., ``graph_proposals``) beside
the index's own. They are created on first open when missing (``CREATE TABLE IF NOT
EXISTS``), so an index built before the graph needs no migration and a replica that has them
only reads. Text keys use the ``C`` collation, and rows come back in SQLite's order (mentions
and aliases carry a ``rid`` standing for SQLite's rowid), so both stores give the same
answers. Entity and proposal ids are allocated as SQLite allocates them (one more than the
largest), which gives the same ids for the same history of writes.

Every write is one transaction holding an advisory lock on the index schema's graph, so
writers in several processes take turns as SQLite's writers do; a build stores a batch of
chunks with one lookup of its names, ``executemany`` and ``COPY``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sleuth.errors import StoreError
from sleuth.store.graphs import COPY_TABLES, FORMAT_VERSION
from sleuth.store.graphsql import Dialect, SqlGraphTables, quoted

if TYPE_CHECKING:
    from psycopg import Connection

    from sleuth.store.postgres.sessions import Database

TABLES = tuple(f"graph_{table}" for table in COPY_TABLES)
SCHEMA = """
CREATE TABLE IF NOT EXISTS graph_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS graph_entities (
    id bigint PRIMARY KEY, norm text COLLATE "C" NOT NULL UNIQUE, name text NOT NULL,
    type text NOT NULL);
CREATE TABLE IF NOT EXISTS graph_aliases (
    alias text COLLATE "C" PRIMARY KEY, entity bigint NOT NULL, rid bigserial NOT NULL);
CREATE TABLE IF NOT EXISTS graph_mentions (
    rid bigserial PRIMARY KEY, entity bigint NOT NULL, chunk_id text COLLATE "C" NOT NULL,
    start integer NOT NULL, "end" integer NOT NULL);
CREATE INDEX IF NOT EXISTS graph_mentions_entity ON graph_mentions (entity);
CREATE INDEX IF NOT EXISTS graph_mentions_chunk ON graph_mentions (chunk_id);
CREATE TABLE IF NOT EXISTS graph_relations (
    id bigserial PRIMARY KEY, subject bigint NOT NULL, relation text COLLATE "C" NOT NULL,
    object bigint NOT NULL, qualifiers text NOT NULL, chunk_id text COLLATE "C" NOT NULL,
    start integer NOT NULL, "end" integer NOT NULL, source text NOT NULL);
CREATE INDEX IF NOT EXISTS graph_relations_subject ON graph_relations (subject);
CREATE INDEX IF NOT EXISTS graph_relations_object ON graph_relations (object);
CREATE INDEX IF NOT EXISTS graph_relations_chunk ON graph_relations (chunk_id);
CREATE TABLE IF NOT EXISTS graph_extracted (
    chunk_id text COLLATE "C" PRIMARY KEY, extractor text NOT NULL, digest text NOT NULL);
CREATE TABLE IF NOT EXISTS graph_checked (norm text COLLATE "C" PRIMARY KEY);
CREATE TABLE IF NOT EXISTS graph_name_vectors (
    text text COLLATE "C" PRIMARY KEY, vector bytea NOT NULL);
CREATE TABLE IF NOT EXISTS graph_proposals (
    id bigint PRIMARY KEY, key text COLLATE "C" NOT NULL UNIQUE, subject text NOT NULL,
    relation text NOT NULL, object text NOT NULL, chunk_id text NOT NULL,
    start integer NOT NULL, "end" integer NOT NULL, sentence text NOT NULL,
    question text NOT NULL, answer text NOT NULL, status text NOT NULL DEFAULT 'pending',
    created text NOT NULL, decided text);
CREATE INDEX IF NOT EXISTS graph_proposals_status ON graph_proposals (status);
"""
_LOCK = "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.sleuth-graph'))"
POSTGRESQL = Dialect(
    family="postgresql", mark="%s", prefix="graph_", rowid="rid", bytewise=' COLLATE "C"',
    in_batch=None, write_lock=_LOCK,
    after_copy=("SELECT setval(pg_get_serial_sequence('graph_relations', 'id'), "
                "coalesce(max(id), 0) + 1, false) FROM graph_relations",))


def has_tables(store: Database) -> bool:
    """Whether the index schema holds a graph (its tables, possibly empty)."""
    with store.connection() as conn:
        row = conn.execute("SELECT to_regclass(quote_ident(current_schema()) || "
                           "'.graph_entities')").fetchone()
    return row is not None and row[0] is not None


def drop_tables(store: Database) -> None:
    """Drop every graph table of the index schema (reviewed proposals included)."""
    with store.connection() as conn, conn.transaction():
        conn.execute(_LOCK)
        conn.execute(f"DROP TABLE IF EXISTS {', '.join(TABLES)}")


class PostgresGraphTables:
    """The graph capability of a PostgreSQL store: the ``graph_*`` tables of its schema;
    ``folder`` keeps the graph's side files (the LLM extraction cache)."""

    def __init__(self, database: Database, folder: Path) -> None:
        self._database = database
        self._folder = folder

    def exists(self) -> bool:
        return has_tables(self._database)

    def open(self) -> PostgresGraphStore:
        return PostgresGraphStore(self._database, self._folder)

    def drop(self) -> None:
        drop_tables(self._database)


class PostgresGraphStore(SqlGraphTables):
    """Read and write access to the graph tables of a PostgreSQL index. Reads take a pooled
    connection each; a write transaction keeps one for its thread (:meth:`_conn`)."""

    dialect = POSTGRESQL

    def __init__(self, store: Database, folder: Path) -> None:
        super().__init__()
        self._store = store
        self._folder = folder
        self.where = store.where
        self._local = threading.local()
        version = self._version()
        if version is None:  # tables missing: create them (a replica only reads)
            with self.transaction(), self._conn() as conn:
                conn.execute(SCHEMA)
                conn.execute("INSERT INTO graph_meta VALUES ('format_version', %s) "
                             "ON CONFLICT (key) DO NOTHING", (str(FORMAT_VERSION),))
            version = self._version()
        if version is not None and int(version) != FORMAT_VERSION:
            raise StoreError(f"the graph in {self.where} is format {version}, this Sleuth "
                             f"reads {FORMAT_VERSION}; rebuild it with "
                             "`sleuth graph build --rebuild`")

    def _version(self) -> str | None:
        """The stored format version; None unless every graph table exists."""
        with self._conn() as conn:
            row = conn.execute(
                "SELECT count(to_regclass(quote_ident(current_schema()) || '.' || t)) "
                "FROM unnest(%s::text[]) t", (list(TABLES),)).fetchone()
            if row is None or row[0] != len(TABLES):
                return None
            version = conn.execute(
                "SELECT value FROM graph_meta WHERE key='format_version'").fetchone()
        return None if version is None else str(version[0])

    @property
    def folder(self) -> Path:
        """The local folder for side files (the LLM extraction cache), created on use."""
        self._folder.mkdir(parents=True, exist_ok=True)
        return self._folder

    def close(self) -> None:
        """Nothing to close: the connections are the index store's."""

    def version(self) -> int:
        """The id of the last write transaction (``graph_meta`` key ``generation``, set by
        every write; not copied between stores)."""
        rows = self._fetchall("SELECT value FROM graph_meta WHERE key='generation'")
        return int(rows[0][0]) if rows else 0

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All writes inside commit together, or none (nestable: the outer one counts)."""
        if getattr(self._local, "conn", None) is not None:
            yield
            return
        with self.lock, self._store.connection() as conn, conn.transaction():
            conn.execute(_LOCK)
            self._local.conn = conn
            try:
                yield
            finally:
                self._local.conn = None
            conn.execute("INSERT INTO graph_meta VALUES ('generation', txid_current()::text) "
                         "ON CONFLICT (key) DO UPDATE SET value = excluded.value")

    @contextmanager
    def _conn(self) -> Iterator[Connection]:
        """The connection of this thread's transaction, else a pooled one."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
        else:
            with self._store.connection() as pooled:
                yield pooled

    # -- the primitives of SqlGraphTables ---------------------------------------------------

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        with self._conn() as conn:
            conn.execute(sql, params)

    def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._conn() as conn:
            return conn.execute(sql, params).fetchall()

    def _executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self._conn() as conn, conn.cursor() as cur:
            cur.executemany(sql, rows)

    def _stream(self, sql: str) -> Iterator[tuple[Any, ...]]:
        with self._conn() as conn:
            yield from conn.cursor().stream(sql)

    def _insert_id(self, sql: str, params: Sequence[Any]) -> int | None:
        with self._conn() as conn:
            added = conn.execute(f"{sql} RETURNING id", params).fetchone()
        return None if added is None else int(added[0])

    def _load(self, table: str, columns: Sequence[str],
              rows: Iterable[Sequence[Any]]) -> None:
        """Append rows with ``COPY``, the fastest way in."""
        with self._conn() as conn, conn.cursor() as cur, cur.copy(
                f"COPY graph_{table} ({quoted(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
