"""The PostgreSQL store: rows, keyword candidates and sentence vectors (pgvector) in one
database, for corpora past one machine's folder and for several serving processes.

Location: ``postgresql://user:password@host:port/dbname?schema=NAME`` (or ``postgres://``);
``schema`` (default ``sleuth``) names the PostgreSQL schema that holds the index, so one
database holds several indexes. Every other parameter goes to libpq unchanged.

Tables of one index schema::

    manifest      one row: the same JSON as the embedded store's manifest.json
    documents     doc_id, title, type, path, hash, metadata (jsonb), text, n_chunks,
                  collection, groups (text[], sorted; empty: open to the whole collection)
    chunks        id, chunk_id, doc_id, position, start, end, n_tokens, n_words, text,
                  tokens (the lowercased ``\\w+`` runs in order, GIN-indexed), has_long
    sentences     id, doc_id, chunk, start, end, embedding vector(dim)
    summaries     doc_id, text, vector
    terms         every distinct token ever stored: the vocabulary substring keywords expand on
    ann, ann_parts  the approximate index of the sentence vectors (:mod:`sleuth.store.postgres.ann`)

Sharding (Citus): ``documents``, ``chunks``, ``sentences`` and ``summaries`` each carry
``doc_id``, every unique key and foreign key between them includes it, and none of them
has a key without it, so each can be distributed by ``doc_id`` and co-located (a document's
rows on one node); the small tables (``manifest``, ``generation``, ``terms``, ``ann``,
``ann_parts``, the ``graph_*`` tables, ``sessions``) become reference tables. The calls are
in docs/postgres.md. Indexes created before the keys existed gain ``sentences.doc_id`` at
their next build (:meth:`PostgresStore.begin_build`) but keep their older keys.

Identifiers (``doc_id``, ``chunk_id``, ``term``) use the ``C`` collation, so SQL orders them
as Python does. Rows cascade from documents to chunks, sentences and summaries; every
``write`` and ``delete`` is one transaction (chunks and sentences bulk-loaded with COPY).

Keyword search: a whole-word keyword that is one token is counted in SQL from the chunk's
token array (its whole-word matches are exactly the tokens equal to it). Phrases, substrings
and keywords with punctuation take candidates from the GIN index (all of a phrase's tokens;
for substrings, tokens of the vocabulary that contain each keyword token) and are counted
exactly in the chunk text, so the result equals :func:`keyword.brute_force`. Tokens are
stored cut to ``MAX_TOKEN_CHARS`` (a GIN key must fit in a page); chunks holding a longer
token are flagged ``has_long`` and always rescored for substrings.

Semantic search takes candidates from an approximate index chosen by
``postgres.vector_search``: by default the embedded store's faiss inverted file, kept in
the database and memory-mapped from one copy per host (:mod:`sleuth.store.postgres.ann`),
whose candidates' chunks, and the sentences written since it was built, are scored exactly
in SQL, asking for more candidates until they span ``top_k`` chunks; or pgvector's IVFFlat
index inside the engine, the visible sentences of the lists nearest to the query scored
exactly in one statement (:mod:`sleuth.store.postgres.engine_ann`). Searches within
documents, restrictions leaving few sentences visible (faiss) and indexes below
``vectors.ann_min_sentences`` are exact scans of the visible sentences. pgvector's HNSW
index is not used (bench/pg_engine.py: its recall on these vectors falls below 0.8 at 100k
chunks).

Access control: every read joins its rows to ``documents`` and filters on the collection
and the groups overlap (``&&``) inside the query, before anything is ranked or counted.

What stays here rather than in :mod:`sleuth.store.ranking`: the work PostgreSQL should do
where the rows are: counting single-token keywords and BM25 statistics from the token
arrays, candidate selection over the GIN index, exact vector scores, and the access filter, so
no more rows than a page of hits leave the server. The scoring of candidates' text, the
idf, the best-sentence ranking and the hits are the shared ones. Each of those is one SQL
statement with its explanation, kept by its part: :mod:`~sleuth.store.postgres.schema` (the
tables, the location, the vector adapters), :mod:`~sleuth.store.postgres.writes`,
:mod:`~sleuth.store.postgres.reads` (and the access filter) and
:mod:`~sleuth.store.postgres.search`; this module keeps the opening, the builds and the side
tables.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg.types import TypeInfo
from psycopg.types.json import Jsonb

from sleuth._version import __version__
from sleuth.errors import IndexNotFound, ReadOnlyIndex, StoreError
from sleuth.settings import PostgresSettings, VectorSettings
from sleuth.store.base import (
    GraphTables,
    check_embedder,
    check_manifest,
    data_folder,
    new_manifest,
    now,
)
from sleuth.store.postgres import ann as pg_ann
from sleuth.store.postgres import engine_ann
from sleuth.store.postgres.integrity import _Integrity
from sleuth.store.postgres.pool import POOL_SIZE, Pool, connect_options
from sleuth.store.postgres.reads import CHUNK_COLUMNS, PAGE, VISIBLE_CHUNKS
from sleuth.store.postgres.schema import (
    BUMP,
    DEFAULT_SCHEMA,
    GENERATION,
    MAX_TOKEN_CHARS,
    TABLES,
    Connection,
    _extension_schema,
    _redacted,
    _VectorDumper,
    _VectorLoader,
    _VectorTextLoader,
    parse_location,
)
from sleuth.store.postgres.search import MAX_EXPANSION, PER_CHUNK, _Search
from sleuth.store.postgres.writes import _Writes
from sleuth.store.sessions import SessionStore

__all__ = [
    "BUMP", "CHUNK_COLUMNS", "DEFAULT_SCHEMA", "GENERATION", "MAX_EXPANSION",
    "MAX_TOKEN_CHARS", "PAGE", "PER_CHUNK", "POOL_SIZE", "TABLES", "VISIBLE_CHUNKS",
    "Connection", "PostgresStore", "Replication", "parse_location",
]

log = logging.getLogger(__name__)

# One statement for a primary and a standby alike. The lag is 0 when the standby has replayed
# all the WAL it received (nothing it holds is newer), else the age of the last transaction
# it replayed; NULL when it replayed none since it started.
REPLICATION = """
SELECT pg_is_in_recovery(),
       CASE WHEN pg_is_in_recovery() THEN pg_get_wal_replay_pause_state() END,
       CASE WHEN NOT pg_is_in_recovery() THEN NULL
            WHEN pg_last_wal_receive_lsn() IS NULL
              OR pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN 0
            ELSE extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())
       END,
       CASE WHEN pg_is_in_recovery() THEN (SELECT status FROM pg_stat_wal_receiver) END
"""


@dataclass(frozen=True)
class Replication:
    """Whether the index is read from a standby (a server in recovery), and how far behind
    its primary it is: ``lag_seconds`` is 0 when it has applied all it received, else the
    age of the last change it applied (None: unknown, or not a standby); ``paused`` when its
    replay is paused; ``streaming`` whether it receives from a primary now (None: not
    known to this role)."""

    standby: bool
    lag_seconds: float | None = None
    paused: bool = False
    streaming: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record of ``/v1/status`` and ``sleuth status --json`` (``stale``: what a
        reader is told, None when up to date)."""
        return {"standby": self.standby, "lag_seconds": self.lag_seconds,
                "paused": self.paused, "streaming": self.streaming, "stale": self.stale()}

    def stale(self) -> str | None:
        """``stale by 12.3 s`` while a standby has not applied the primary's latest
        changes (searches answer from the state it holds); None when it is up to date."""
        if not self.standby:
            return None
        if self.lag_seconds is None:
            return "stale by an unknown time (replay has not started)"
        if self.lag_seconds <= 0:
            return None
        said = f"stale by {self.lag_seconds:.1f} s"
        return said + (" (replay paused)" if self.paused else "")


class PostgresStore(_Integrity, _Writes, _Search):
    """One index in one schema of a PostgreSQL database with the pgvector extension."""

    def __init__(self, location: str, *, create: bool, embedder: Mapping[str, Any] | None,
                 chunk_tokens: int | None = None, repair: bool = False) -> None:
        self.location = location
        self.conninfo, self.schema = parse_location(location)
        self.where = f"schema {self.schema} of {_redacted(location)}"
        self._connections = PostgresSettings()
        try:
            with psycopg.connect(self.conninfo, autocommit=True,
                                 **connect_options(self.conninfo, self._connections)) as conn:
                self.manifest = self._open_or_create(conn, create, embedder, chunk_tokens)
                self._vector_schema = _extension_schema(conn)
        except psycopg.OperationalError as exc:
            raise StoreError(f"cannot connect to {_redacted(location)}: "
                             f"{str(exc).strip()}") from None
        self._vector_settings = VectorSettings()
        self._ann = pg_ann.DatabaseAnn(self.connection, self._dim())
        self._engine = engine_ann.EngineSearch(self.schema)
        self._pool = self._open_pool()

    def _open_pool(self) -> Pool:
        return Pool(self.conninfo, _redacted(self.location), self._connections,
                    self._configure, f"sleuth-{self.schema}")

    def configure_connections(self, settings: PostgresSettings) -> None:
        """Hold the connections to ``settings`` (timeouts: :mod:`sleuth.store.postgres.pool`);
        the pool is opened again when they differ from those it was opened with."""
        if settings != self._connections:
            self._connections = settings
            old, self._pool = self._pool, self._open_pool()
            old.close()

    # -- bookkeeping -------------------------------------------------------------------

    def _open_or_create(self, conn: Connection, create: bool,
                        embedder: Mapping[str, Any] | None,
                        chunk_tokens: int | None) -> dict[str, Any]:
        """The manifest of the index schema, creating schema and tables when asked."""
        table = conn.execute("SELECT to_regclass(%s)", (f'"{self.schema}".manifest',)).fetchone()
        if table is not None and table[0] is not None:
            row = conn.execute(f'SELECT data FROM "{self.schema}".manifest').fetchone()
            if row is None or not isinstance(row[0], dict):
                raise StoreError(f"{self.where} has no index manifest")
            manifest: dict[str, Any] = row[0]
            check_manifest(manifest, self.where)
            check_embedder(manifest, embedder, self.where)
            missing = conn.execute("SELECT to_regclass(%s)",
                                   (f'"{self.schema}".generation',)).fetchone()
            if missing is None or missing[0] is None:  # an index of an earlier version
                with contextlib.suppress(psycopg.errors.ReadOnlySqlTransaction):
                    conn.execute(GENERATION.replace("generation", f'"{self.schema}".generation',
                                                    1))
            pg_ann.ensure_tables(conn, self.schema)  # earlier versions had none
            return manifest
        if not create:
            raise IndexNotFound(f"no Sleuth index in {self.where}; build one with "
                                f"`sleuth index PATH --index '{_redacted(self.location)}'`")
        if embedder is None:
            raise StoreError("an embedder is needed to create an index")
        self._check_writable(conn)
        taken = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s", (self.schema,)).fetchone()
        if taken and taken[0]:
            raise StoreError(f"{self.where} exists and is not a Sleuth index; choose another "
                             "schema with ?schema=NAME")
        manifest = new_manifest(embedder, chunk_tokens or 1000)
        with conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            conn.execute(f"SET LOCAL search_path TO \"{self.schema}\", "
                         f"\"{_extension_schema(conn)}\"")
            conn.execute(TABLES.format(dim=int(embedder["dim"])))
            conn.execute(pg_ann.TABLES)
            conn.execute("INSERT INTO manifest (data) VALUES (%s)", (Jsonb(manifest),))
        return manifest

    def _configure(self, conn: Connection) -> None:
        """A new pool connection: the index schema first on the path, vectors as numpy."""
        conn.execute(f'SET search_path TO "{self.schema}", "{self._vector_schema}"')
        info = TypeInfo.fetch(conn, "vector")
        if info is None:
            raise StoreError(f"the pgvector extension is missing from {self.where}")
        info.register(conn)
        conn.adapters.register_dumper(
            np.ndarray, type("VectorDumper", (_VectorDumper,), {"oid": info.oid}))
        conn.adapters.register_loader(info.oid, _VectorLoader)
        conn.adapters.register_loader(info.oid, _VectorTextLoader)
        if self._connections.statement_timeout:
            conn.execute("SELECT set_config('statement_timeout', %s, false)",
                         (f"{round(self._connections.statement_timeout * 1000)}ms",))
        conn.commit()

    def warm(self) -> None:
        """Load the approximate index (1.5 GB per 1M chunks: ~20 s here)."""
        if self._vector_settings.ann != "off" and self._connections.vector_search == "faiss":
            with self._pool.connection() as conn:
                self._ann.current(conn)

    def configure_ann(self, settings: VectorSettings) -> None:
        """Build and search the approximate index by ``settings`` (``ann``,
        ``ann_min_sentences``, ``nlist``, ``nprobe``, ``ef_search``: as the embedded store)."""
        self._vector_settings = settings

    def _save_manifest(self) -> None:
        with self._pool.connection() as conn:
            conn.execute("UPDATE manifest SET data = %s", (Jsonb(self.manifest),))

    def _check_writable(self, conn: Connection) -> None:
        """Refuse a write to a hot standby (or a read-only role or transaction) up front,
        saying where writes go, rather than failing at its first statement. Asked at each
        write, not once: a standby promoted to primary takes writes at the same address."""
        row = conn.execute("SELECT pg_is_in_recovery(), "
                           "current_setting('transaction_read_only') = 'on'").fetchone()
        if row is not None and row[0]:
            raise ReadOnlyIndex(f"{self.where} is a read-only hot standby (in recovery): index "
                             "and delete documents on its primary; searches work here")
        if row is not None and row[1]:
            raise ReadOnlyIndex(f"{self.where} is read-only (default_transaction_read_only): "
                             "index and delete documents on a writable server")

    def delete(self, doc_ids: Sequence[str]) -> None:
        """Delete documents with their rows (:meth:`_Writes.delete`), on a writable
        database only."""
        if doc_ids:
            with self._pool.connection() as conn:
                self._check_writable(conn)
        super().delete(doc_ids)

    def begin_build(self, command: str = "") -> None:
        """Mark a build as running (``command`` resumes it); an index of an earlier version
        gains ``sentences.doc_id`` first (one transaction). Refused on a standby."""
        with self._pool.connection() as conn:
            self._check_writable(conn)
            if not conn.execute("SELECT 1 FROM information_schema.columns WHERE table_schema "
                                "= %s AND table_name = 'sentences' AND column_name = 'doc_id'",
                                (self.schema,)).fetchone():
                log.warning("adding sentences.doc_id to %s (an index of an earlier version); "
                            "this rewrites the sentences table once", self.where)
                with conn.transaction():
                    conn.execute('ALTER TABLE sentences ADD COLUMN doc_id text COLLATE "C"')
                    conn.execute("UPDATE sentences s SET doc_id = c.doc_id FROM chunks c "
                                 "WHERE c.id = s.chunk")
                    conn.execute("ALTER TABLE sentences ALTER COLUMN doc_id SET NOT NULL")
                    conn.execute("CREATE INDEX IF NOT EXISTS sentences_id ON sentences (id)")
        self.manifest["build"] = {"state": "building", "started": now(),
                                  "command": command or "sleuth index PATH"}
        self._save_manifest()

    def stop_build(self) -> None:
        """A failed build stays marked ``building`` (its command resumes it)."""

    def finish_build(self) -> None:
        """Bring the approximate index up to date (:mod:`sleuth.store.postgres.ann`), refresh the
        planner's statistics and mark the index consistent."""
        with self._pool.connection() as conn:
            self._update_vector_index(conn)
            # earlier versions' HNSW index: unused now, and slow to insert into
            conn.execute("DROP INDEX IF EXISTS sentences_embedding")
            # merge the GIN index's pending list: left unmerged, the planner costs the index
            # above a sequential scan and keyword search reads every chunk
            conn.execute("SELECT gin_clean_pending_list('chunks_tokens'::regclass)")
            for table in ("documents", "chunks", "sentences", "summaries", "terms"):
                conn.execute(f"ANALYZE {table}")
        self.manifest["build"] = {"state": "complete", "finished": now()}
        self.manifest["sleuth_version"] = __version__
        self._save_manifest()

    def _update_vector_index(self, conn: Connection) -> None:
        """The approximate index of ``postgres.vector_search``: the engine's IVFFlat index
        (the faiss record then removed: no process loads it) or the faiss inverted file
        (the engine's index then dropped: it would slow every insert)."""
        if self._connections.vector_search == "engine":
            engine_ann.update(conn, self.schema, self._vector_settings, self._connections)
            with conn.transaction():
                conn.execute("DELETE FROM ann")
                conn.execute("DELETE FROM ann_parts")
        else:
            self._ann.update(conn, self._vector_settings)
            engine_ann.drop(conn)

    def generation(self) -> int:
        with self._pool.connection() as conn:
            try:
                row = conn.execute("SELECT value FROM generation").fetchone()
            except psycopg.errors.UndefinedTable:  # a replica of a primary not yet upgraded
                conn.rollback()
                return 0
        return int(row[0]) if row else 0

    def replication(self) -> Replication:
        """Whether this index is read from a hot standby and its replay lag
        (``pg_is_in_recovery()``, ``pg_last_xact_replay_timestamp()``): ``/v1/status`` and
        ``sleuth status`` show it, so a lagging replica says it is stale."""
        with self._pool.connection() as conn:
            row = conn.execute(REPLICATION).fetchone()
        if row is None or not row[0]:
            return Replication(standby=False)
        state, lag, receiver = row[1], row[2], row[3]
        return Replication(standby=True, lag_seconds=None if lag is None else float(lag),
                           paused=state not in (None, "not paused"),
                           streaming=None if receiver is None else receiver == "streaming")

    def build_status(self) -> dict[str, Any]:
        """The manifest's build record: ``building`` from a build's start to its end (a
        database store keeps no leases, so a build whose process died also reads
        ``building``); ``command`` resumes it."""
        build = dict(self.manifest.get("build") or {"state": "empty"})
        return {**build, "running": [], "interrupted": []}

    # -- side files, the graph and the sessions ----------------------------------------

    @property
    def folder(self) -> Path:
        """The side folder: one under ``$XDG_DATA_HOME`` named after the index."""
        return data_folder(self.where)

    def graph_tables(self) -> GraphTables:
        from sleuth.store.postgres.graph import PostgresGraphTables

        return PostgresGraphTables(self, self.folder)

    def sessions(self) -> SessionStore:
        from sleuth.store.postgres.sessions import PostgresSessions

        return PostgresSessions(self)

    def connection(self) -> AbstractContextManager[Connection]:
        """A pooled connection, its search path on the index schema (side tables: sessions)."""
        return self._pool.connection()

    def close(self) -> None:
        self._pool.close()
