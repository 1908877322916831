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
    ann, ann_parts  the approximate index of the sentence vectors (:mod:`sleuth.store.pg_ann`)

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

Semantic search takes candidates from the approximate index (the embedded store's faiss
inverted file, kept in the database and loaded by each process: :mod:`sleuth.store.pg_ann`),
scores every sentence of the candidates' chunks, and those written since the index was
built, exactly in SQL, and asks for more candidates until they span ``top_k`` chunks.
Searches within documents, restrictions leaving few sentences visible and indexes below
``vectors.ann_min_sentences`` are exact scans of the visible sentences. pgvector's HNSW
index is not used (measured in BENCHMARKS §12: recall 0.5 at 1M chunks).

Access control: every read joins its rows to ``documents`` and filters on the collection
and the groups overlap (``&&``) inside the query, before anything is ranked or counted.

What stays here rather than in :mod:`sleuth.store.ranking`: the work PostgreSQL should do
where the rows are: counting single-token keywords and BM25 statistics from the token
arrays, candidate selection over the GIN index, exact vector scores, and the access filter, so
no more rows than a page of hits leave the server. The scoring of candidates' text, the
idf, the best-sentence ranking and the hits are the shared ones. Long because each of those
is one SQL statement with its explanation.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import numpy as np
import psycopg
from psycopg.abc import Buffer
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from sleuth._version import __version__
from sleuth.access import Access, restricted
from sleuth.errors import IndexNotFound, StoreError
from sleuth.settings import VectorSettings
from sleuth.store import keyword as kw
from sleuth.store import pg_ann, ranking
from sleuth.store.base import (
    DocumentInfo,
    GraphTables,
    PreparedDocument,
    Problem,
    RepairReport,
    StoreStats,
    check_embedder,
    check_manifest,
    check_vectors,
    data_folder,
    new_manifest,
    now,
)
from sleuth.store.ranking import K1, B, top_chunks_by_best_sentence
from sleuth.store.sessions import SessionStore
from sleuth.types import Chunk, Document, Hit, Sentence

log = logging.getLogger(__name__)

DEFAULT_SCHEMA = "sleuth"
MAX_TOKEN_CHARS = 256  # stored tokens are cut to this length (GIN keys must fit a page)
MAX_EXPANSION = 5000  # vocabulary terms per substring token before falling back to a scan
PER_CHUNK = 3  # snippets of a semantic hit: the chunk's best sentences
POOL_SIZE = 8  # connections shared by concurrent readers and writers
PAGE = 500  # chunks per query of iter_chunks
_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")

TABLES = """
CREATE TABLE manifest (id boolean PRIMARY KEY DEFAULT true CHECK (id), data jsonb NOT NULL);
CREATE TABLE documents (
    doc_id text COLLATE "C" PRIMARY KEY, title text NOT NULL, type text NOT NULL, path text,
    hash text NOT NULL, metadata jsonb NOT NULL, text text NOT NULL, n_chunks int NOT NULL,
    collection text NOT NULL DEFAULT 'default', groups text[] NOT NULL DEFAULT '{{}}');
CREATE INDEX documents_collection ON documents (collection);
CREATE INDEX documents_groups ON documents USING gin (groups);
CREATE TABLE chunks (
    id bigserial NOT NULL, chunk_id text COLLATE "C" NOT NULL,
    doc_id text COLLATE "C" NOT NULL REFERENCES documents ON DELETE CASCADE,
    position int NOT NULL, start int NOT NULL, "end" int NOT NULL, n_tokens int NOT NULL,
    n_words int NOT NULL, text text NOT NULL, tokens text[] NOT NULL, has_long bool NOT NULL,
    PRIMARY KEY (doc_id, id), UNIQUE (doc_id, chunk_id));
CREATE INDEX chunks_id ON chunks (id);
CREATE INDEX chunks_chunk_id ON chunks (chunk_id);
CREATE INDEX chunks_doc ON chunks (doc_id, position);
CREATE INDEX chunks_tokens ON chunks USING gin (tokens);
CREATE INDEX chunks_long ON chunks (id) WHERE has_long;
CREATE TABLE sentences (
    id bigserial NOT NULL,
    doc_id text COLLATE "C" NOT NULL REFERENCES documents ON DELETE CASCADE,
    chunk bigint NOT NULL, start int NOT NULL, "end" int NOT NULL,
    embedding vector({dim}) NOT NULL);
CREATE INDEX sentences_id ON sentences (id);
CREATE INDEX sentences_chunk ON sentences (chunk);
CREATE TABLE summaries (
    doc_id text COLLATE "C" PRIMARY KEY REFERENCES documents ON DELETE CASCADE,
    text text NOT NULL, vector vector({dim}) NOT NULL);
CREATE TABLE terms (term text COLLATE "C" PRIMARY KEY);
CREATE TABLE generation (id boolean PRIMARY KEY DEFAULT true CHECK (id), value bigint NOT NULL);
"""
GENERATION = ("CREATE TABLE IF NOT EXISTS generation (id boolean PRIMARY KEY DEFAULT true "
              "CHECK (id), value bigint NOT NULL)")
# the last statement of every transaction that changes a read (readers compare the value)
BUMP = ("INSERT INTO generation (value) VALUES (1) "
        "ON CONFLICT (id) DO UPDATE SET value = generation.value + 1")

CHUNK_COLUMNS = (
    'c.chunk_id, c.doc_id, c.position, c.start, c."end", c.n_tokens, c.text, '
    "ARRAY(SELECT s.start FROM sentences s WHERE s.chunk = c.id ORDER BY s.id), "
    'ARRAY(SELECT s."end" FROM sentences s WHERE s.chunk = c.id ORDER BY s.id), '
    "(SELECT p.chunk_id FROM chunks p WHERE p.doc_id = c.doc_id "
    "AND p.position = c.position - 1), "
    "(SELECT n.chunk_id FROM chunks n WHERE n.doc_id = c.doc_id "
    "AND n.position = c.position + 1)"
)
VISIBLE_CHUNKS = "chunks c JOIN documents d ON d.doc_id = c.doc_id"

Connection = psycopg.Connection[tuple[Any, ...]]


class _VectorDumper(Dumper):
    """A float32 numpy row as pgvector's binary ``vector`` (the oid is set per database)."""

    format = Format.BINARY

    def dump(self, obj: Any) -> Buffer:
        row = np.asarray(obj, dtype=">f4").ravel()
        return struct.pack(">HH", len(row), 0) + row.tobytes()


class _VectorLoader(Loader):
    """pgvector's binary ``vector`` as a float32 numpy row."""

    format = Format.BINARY

    def load(self, data: Buffer) -> np.ndarray:
        return np.frombuffer(bytes(data), dtype=">f4", offset=4).astype(np.float32)


class _VectorTextLoader(Loader):
    """pgvector's text ``vector`` (``[0.1,0.2]``) as a float32 numpy row."""

    format = Format.TEXT

    def load(self, data: Buffer) -> np.ndarray:
        return np.array(bytes(data)[1:-1].split(b","), dtype=np.float32)


class PostgresStore:
    """One index in one schema of a PostgreSQL database with the pgvector extension."""

    def __init__(self, location: str, *, create: bool, embedder: Mapping[str, Any] | None,
                 chunk_tokens: int | None = None, repair: bool = False) -> None:
        self.location = location
        self.conninfo, self.schema = parse_location(location)
        self.where = f"schema {self.schema} of {_redacted(location)}"
        try:
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                self.manifest = self._open_or_create(conn, create, embedder, chunk_tokens)
                self._vector_schema = _extension_schema(conn)
        except psycopg.OperationalError as exc:
            raise StoreError(f"cannot connect to {_redacted(location)}: "
                             f"{str(exc).strip()}") from None
        self._vector_settings = VectorSettings()
        self._ann = pg_ann.DatabaseAnn(self.connection, self._dim())
        self._pool: ConnectionPool[Connection] = ConnectionPool(
            self.conninfo, min_size=1, max_size=POOL_SIZE, configure=self._configure,
            open=True, name=f"sleuth-{self.schema}")

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
        conn.commit()

    def warm(self) -> None:
        """Load the approximate index (1.5 GB per 1M chunks: ~20 s here)."""
        if self._vector_settings.ann != "off":
            with self._pool.connection() as conn:
                self._ann.current(conn)

    def configure_ann(self, settings: VectorSettings) -> None:
        """Build and search the approximate index by ``settings`` (``ann``,
        ``ann_min_sentences``, ``nlist``, ``nprobe``, ``ef_search``: as the embedded store)."""
        self._vector_settings = settings

    def _save_manifest(self) -> None:
        with self._pool.connection() as conn:
            conn.execute("UPDATE manifest SET data = %s", (Jsonb(self.manifest),))

    def stats(self, access: Access | None = None) -> StoreStats:
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            docs = conn.execute(f"SELECT count(*) FROM documents d WHERE {where}",
                                params).fetchone()
            chunks = conn.execute(f"SELECT count(*) FROM {VISIBLE_CHUNKS} WHERE {where}",
                                  params).fetchone()
            sentences = conn.execute(
                f"SELECT count(*) FROM sentences s JOIN {VISIBLE_CHUNKS} ON c.id = s.chunk "
                f"WHERE {where}", params).fetchone()
        return StoreStats(documents=_first(docs), chunks=_first(chunks),
                          sentences=_first(sentences), manifest=dict(self.manifest))

    def document_hashes(self) -> dict[str, str]:
        with self._pool.connection() as conn:
            return dict(conn.execute("SELECT doc_id, hash FROM documents").fetchall())

    def document_sources(self) -> dict[str, str | None]:
        with self._pool.connection() as conn:
            return dict(conn.execute("SELECT doc_id, path FROM documents").fetchall())

    def document_access(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        with self._pool.connection() as conn:
            return {doc_id: (collection, tuple(groups)) for doc_id, collection, groups
                    in conn.execute("SELECT doc_id, collection, groups FROM documents")}

    def visible_documents(self, access: Access | None) -> frozenset[str] | None:
        if restricted(access) is None:
            return None
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            return frozenset(r[0] for r in conn.execute(
                f"SELECT d.doc_id FROM documents d WHERE {where}", params))

    def begin_build(self, command: str = "") -> None:
        """Mark a build as running (``command`` resumes it); an index of an earlier version
        gains ``sentences.doc_id`` first (one transaction)."""
        with self._pool.connection() as conn:
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
        """Bring the approximate index up to date (:mod:`sleuth.store.pg_ann`), refresh the
        planner's statistics and mark the index consistent."""
        with self._pool.connection() as conn:
            self._ann.update(conn, self._vector_settings)
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

    # -- writing -----------------------------------------------------------------------

    def write(self, docs: Sequence[PreparedDocument]) -> None:
        if not docs:
            return
        check_vectors(docs)
        n_chunks = sum(len(d.chunks) for d in docs)
        opening = [d for d in docs if d.opens]
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("DELETE FROM documents WHERE doc_id = ANY(%s)",
                         ([d.document.doc_id for d in opening],))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO documents (doc_id, title, type, path, hash, metadata, text, "
                    "n_chunks, collection, groups) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, "
                    "%s::text[])",
                    [(d.document.doc_id, _text(d.document.title), d.document.type,
                      d.document.path, d.stored_hash,
                      Jsonb(dict(d.document.metadata), dumps=_dumps),
                      _text(d.document.text), len(d.chunks), d.collection, sorted(d.groups))
                     for d in opening])
            for d in docs:  # later parts of long documents
                if not d.opens and not conn.execute(
                        "UPDATE documents SET n_chunks = n_chunks + %s, hash = %s "
                        "WHERE doc_id = %s",
                        (len(d.chunks), d.stored_hash, d.document.doc_id)).rowcount:
                    raise StoreError(f"{d.document.doc_id}: a later part of a document whose "
                                     "first part is not stored")
            ids = [r[0] for r in conn.execute(
                "SELECT nextval(pg_get_serial_sequence('chunks', 'id')) "
                "FROM generate_series(1, %s)", (n_chunks,))]
            terms = self._copy_rows(conn, docs, ids)
            conn.execute("INSERT INTO terms (term) SELECT unnest(%s::text[]) "
                         "ON CONFLICT DO NOTHING", (sorted(terms),))
            self._upsert_summaries(conn, [(d.document.doc_id, _text(d.summary),
                                           d.summary_vector)
                                          for d in docs if d.summary_vector is not None])
            conn.execute(BUMP)

    def _copy_rows(self, conn: Connection, docs: Sequence[PreparedDocument],
                   ids: list[int]) -> set[str]:
        """Bulk-load the chunks and sentences of ``docs``; the tokens met, for the vocabulary."""
        terms: set[str] = set()
        rows = iter(ids)
        with conn.cursor() as cur:
            sentences: list[tuple[str, int, int, int, np.ndarray]] = []
            with cur.copy('COPY chunks (id, chunk_id, doc_id, position, start, "end", n_tokens, '
                          "n_words, text, tokens, has_long) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["int8", "text", "text", "int4", "int4", "int4", "int4", "int4",
                                "text", "text[]", "bool"])
                for d in docs:
                    vectors = iter(np.asarray(d.vectors, dtype=np.float32))
                    for c in d.chunks:
                        row = next(rows)
                        words = kw.tokenize(c.text.lower())
                        tokens = [t[:MAX_TOKEN_CHARS] for t in words]
                        terms.update(tokens)
                        copy.write_row((row, c.chunk_id, c.doc_id, c.position, c.start, c.end,
                                        c.n_tokens, len(words), _text(c.text), tokens,
                                        any(len(t) > MAX_TOKEN_CHARS for t in words)))
                        sentences += [(c.doc_id, row, s.start, s.end, next(vectors))
                                      for s in c.sentences]
            with cur.copy('COPY sentences (doc_id, chunk, start, "end", embedding) '
                          "FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["text", "int8", "int4", "int4", "vector"])
                for sentence in sentences:
                    copy.write_row(sentence)
        return terms

    def delete(self, doc_ids: Sequence[str]) -> None:
        if not doc_ids:
            return
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("DELETE FROM documents WHERE doc_id = ANY(%s)", (list(doc_ids),))
            conn.execute(BUMP)

    def write_summaries(self, rows: Sequence[tuple[str, str, np.ndarray]]) -> None:
        with self._pool.connection() as conn, conn.transaction():
            self._upsert_summaries(conn, rows)
            conn.execute(BUMP)

    def generation(self) -> int:
        with self._pool.connection() as conn:
            try:
                row = conn.execute("SELECT value FROM generation").fetchone()
            except psycopg.errors.UndefinedTable:  # a replica of a primary not yet upgraded
                conn.rollback()
                return 0
        return int(row[0]) if row else 0

    def build_status(self) -> dict[str, Any]:
        """The manifest's build record: ``building`` from a build's start to its end (a
        database store keeps no leases, so a build whose process died also reads
        ``building``); ``command`` resumes it."""
        build = dict(self.manifest.get("build") or {"state": "empty"})
        return {**build, "running": [], "interrupted": []}

    def check(self, full: bool = True) -> list[Problem]:
        """Nothing to check outside PostgreSQL's own guarantees: rows and vectors change
        together in its transactions."""
        return []

    def repair(self, embed: Callable[[list[tuple[str, str]]], np.ndarray],
               on_progress: Callable[[int, int], None] | None = None) -> RepairReport:
        return RepairReport()

    def _upsert_summaries(self, conn: Connection,
                          rows: Sequence[tuple[str, str, np.ndarray | None]]) -> None:
        """Insert or replace summaries of stored documents (others are ignored)."""
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO summaries (doc_id, text, vector) SELECT %s, %s, %b "
                "WHERE EXISTS (SELECT 1 FROM documents WHERE doc_id = %s) "
                "ON CONFLICT (doc_id) DO UPDATE SET text = excluded.text, "
                "vector = excluded.vector",
                [(doc_id, text, np.asarray(vector, dtype=np.float32), doc_id)
                 for doc_id, text, vector in rows if vector is not None])

    # -- reading -----------------------------------------------------------------------

    def keyword_search(self, keywords: Sequence[str], top_k: int,
                       mode: kw.KeywordMode = "word",
                       access: Access | None = None) -> list[Hit]:
        parsed = kw.parse_keywords(keywords, mode)
        if not parsed or top_k <= 0:
            return []
        where, params = _access_sql(access)
        counted, rescored = ranking.split_keywords(parsed, MAX_TOKEN_CHARS)
        scores: dict[str, float] = {}
        with self._pool.connection() as conn:
            if counted:
                terms = [k.text for k in counted]
                for chunk_id, score in conn.execute(
                    "SELECT c.chunk_id, (SELECT sum(cardinality(array_positions(c.tokens, k.t))"
                    " * k.w) FROM unnest(%s::text[], %s::int[]) AS k(t, w)) "
                    f"FROM {VISIBLE_CHUNKS} WHERE c.tokens && %s::text[] AND {where}",
                    [terms, [k.weight for k in counted], terms, *params],
                ):
                    scores[chunk_id] = float(score)
            if rescored:
                clause, cparams = self._candidates(conn, rescored)
                ranking.rescore(conn.execute(
                    f"SELECT c.chunk_id, c.text FROM {VISIBLE_CHUNKS} "
                    f"WHERE ({clause}) AND {where}", [*cparams, *params]), rescored, scores)
        ranked = kw.rank(scores.items(), top_k)
        chunks = self.get_chunks([chunk_id for chunk_id, _ in ranked])
        return ranking.keyword_hits(ranked, chunks,
                                    self._titles({c.doc_id for c in chunks.values()}), parsed)

    def _candidates(self, conn: Connection,
                    keywords: Sequence[kw.Keyword]) -> tuple[str, list[Any]]:
        """A condition on chunks ``c`` true for every chunk that may match a keyword."""
        clauses: list[str] = []
        params: list[Any] = []
        for k in keywords:
            tokens = [t[:MAX_TOKEN_CHARS] for t in k.tokens]
            if not tokens:
                return "TRUE", []
            if not k.substring:  # every token of a whole-word match is a whole text token
                clauses.append("c.tokens @> %s::text[]")
                params.append(tokens)
                continue
            clauses.append("c.has_long")  # a cut token may hide any substring
            expansions = []
            for token in k.tokens:
                terms = [] if len(token) > MAX_TOKEN_CHARS else [r[0] for r in conn.execute(
                    "SELECT term FROM terms WHERE strpos(term, %s) > 0 LIMIT %s",
                    (token, MAX_EXPANSION + 1))]
                if len(terms) > MAX_EXPANSION:
                    return "TRUE", []
                if not terms:
                    break
                expansions.append(terms)
            else:
                clauses.append("(" + " AND ".join(["c.tokens && %s::text[]"] * len(expansions))
                               + ")")
                params += expansions
        return " OR ".join(clauses), params

    def semantic_search(self, query: np.ndarray, top_k: int,
                        doc_ids: Sequence[str] | None = None,
                        access: Access | None = None) -> list[Hit]:
        if top_k <= 0 or (doc_ids is not None and not doc_ids):
            return []
        vector = np.asarray(query, dtype=np.float32)
        where, params = _access_sql(access)
        if doc_ids is not None:
            where += " AND c.doc_id = ANY(%s)"
            params.append(list(dict.fromkeys(doc_ids)))
        pool = max(64, top_k * 16)
        with self._pool.connection() as conn:
            exact = doc_ids is not None or self._vector_settings.ann == "off"
            loaded = None if exact else self._ann.current(conn)
            selector = None
            if loaded is not None and where != "TRUE":
                key = restricted(access).key  # type: ignore[union-attr]
                generation = _first(conn.execute("SELECT value FROM generation").fetchone())
                selector = self._ann.filter(
                    loaded, key, generation, lambda: self._visible_chunks(conn, where, params))
                if selector is None:  # few visible sentences: scanning them is cheaper
                    loaded = None
            if loaded is None:  # exact: every visible sentence
                rows = self._exact(conn, vector, where, params, pool)
                ranked = _ranked(rows, top_k)
            else:
                rows, ranked = self._approximate(conn, loaded, vector, where, params, pool,
                                                 top_k, selector)
            meta = {r[0]: r[1:] for r in conn.execute(
                'SELECT c.id, c.chunk_id, c.doc_id, d.title, c.text, c.start '
                f"FROM {VISIBLE_CHUNKS} WHERE c.id = ANY(%s)", ([key for key, _, _ in ranked],))}
        return ranking.semantic_hits(ranked, meta, lambda i: (rows[i][2], rows[i][3]))

    def _approximate(self, conn: Connection, loaded: pg_ann.Loaded, vector: np.ndarray,
                     where: str, params: list[Any], pool: int, top_k: int, selector: Any
                     ) -> tuple[list[tuple[int, float, int, int]],
                                list[tuple[int, float, list[int]]]]:
        """The best ``pool`` sentences of the chunks the approximate index proposes (every
        sentence of a candidate's chunk scored exactly, with the sentences written since
        it was built), asking it for more until they span ``top_k`` chunks."""
        settings = self._vector_settings
        k = max(top_k * 16, settings.ef_search)
        while True:
            labels = loaded.index.search(vector, k, settings.nprobe, selector)
            rows = self._rescored(conn, vector, where, params, labels, loaded.covered, pool)
            ranked = _ranked(rows, top_k)
            if len(ranked) >= top_k:
                return rows, ranked
            if k >= loaded.index.size:
                break
            k *= 4
        # fewer than top_k chunks among the candidates: only an exact scan can say why
        rows = self._exact(conn, vector, where, params, pool)
        return rows, _ranked(rows, top_k)

    def _rescored(self, conn: Connection, vector: np.ndarray, where: str, params: list[Any],
                  labels: np.ndarray, covered: int, limit: int
                  ) -> list[tuple[int, float, int, int]]:
        """(chunk key, cosine, start, end) of the ``limit`` best visible sentences of the
        chunks ``labels`` and of the sentences with ``id > covered``."""
        source = f"sentences s JOIN {VISIBLE_CHUNKS} ON c.id = s.chunk"
        columns = 's.chunk, -(s.embedding <#> %b) AS score, s.start, s."end", s.id'
        rows = conn.execute(  # driven by the candidates, whatever the filter's estimate
            "WITH found AS MATERIALIZED (SELECT unnest(%s::bigint[]) AS chunk) "
            f"SELECT {columns} FROM found JOIN {source} ON s.chunk = found.chunk "
            f"WHERE {where} UNION ALL SELECT {columns} FROM {source} "
            f"WHERE s.id > %s AND {where} ORDER BY score DESC, id LIMIT %s",
            [np.unique(labels).tolist(), vector, *params, vector, covered, *params,
             limit]).fetchall()
        conn.commit()
        return [(int(r[0]), float(r[1]), int(r[2]), int(r[3])) for r in rows]

    def _exact(self, conn: Connection, vector: np.ndarray, where: str, params: list[Any],
               limit: int) -> list[tuple[int, float, int, int]]:
        """(chunk key, cosine, start, end) of the ``limit`` visible sentences nearest to
        ``vector``, best first, by a scan."""
        source = "sentences s" if where == "TRUE" else \
            f"sentences s JOIN {VISIBLE_CHUNKS} ON c.id = s.chunk"
        rows = conn.execute(
            f'SELECT s.chunk, -(s.embedding <#> %b), s.start, s."end" FROM {source} '
            f"WHERE {where} ORDER BY (s.embedding <#> %b) + 0, s.id LIMIT %s",
            [vector, *params, vector, limit]).fetchall()
        conn.commit()
        return [(int(r[0]), float(r[1]), int(r[2]), int(r[3])) for r in rows]

    def _visible_chunks(self, conn: Connection, where: str, params: list[Any]) -> np.ndarray:
        ids = conn.execute(f"SELECT c.id FROM {VISIBLE_CHUNKS} WHERE {where}",
                           params).fetchall()
        return np.array([r[0] for r in ids], dtype=np.int64)

    def bm25_search(self, terms: Sequence[str], top_k: int,
                    doc_ids: Sequence[str] | None = None,
                    access: Access | None = None) -> list[Hit]:
        """BM25 (k1 1.2, b 0.75) over the visible chunks: N, document frequencies and the
        average length counted on them; term counts from the token arrays."""
        tokens = ranking.query_tokens(terms, MAX_TOKEN_CHARS)
        if not tokens or top_k <= 0 or (doc_ids is not None and not doc_ids):
            return []
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            total, words = conn.execute(
                f"SELECT count(*), coalesce(sum(c.n_words), 0) FROM {VISIBLE_CHUNKS} "
                f"WHERE {where}", params).fetchone() or (0, 0)
            if not total:
                return []
            idf = {}
            for token, df in conn.execute(
                f"SELECT t, (SELECT count(*) FROM {VISIBLE_CHUNKS} WHERE c.tokens @> ARRAY[t] "
                f"AND {where}) FROM unnest(%s::text[]) AS t", [*params, tokens],
            ):
                if df:
                    idf[token] = ranking.bm25_idf(total, df)
            if not idf:
                return []
            within = ""
            if doc_ids is not None:
                within = " AND c.doc_id = ANY(%s)"
                params = [*params, list(dict.fromkeys(doc_ids))]
            ranked = conn.execute(
                "SELECT c.chunk_id, (SELECT sum(q.idf * q.tf * %s / (q.tf + %s * (%s + %s * "
                "c.n_words / %s))) FROM (SELECT u.idf, cardinality(array_positions(c.tokens, "
                "u.t)) AS tf FROM unnest(%s::text[], %s::float8[]) AS u(t, idf)) q "
                f"WHERE q.tf > 0) AS score FROM {VISIBLE_CHUNKS} "
                f"WHERE c.tokens && %s::text[] AND {where}{within} "
                "ORDER BY score DESC, c.chunk_id LIMIT %s",
                [K1 + 1, K1, 1 - B, B, float(words) / total or 1.0, list(idf),
                 list(idf.values()), list(idf), *params, top_k]).fetchall()
        chunks = self.get_chunks([r[0] for r in ranked])
        return ranking.bm25_hits(ranked, chunks, self._titles({c.doc_id for c in chunks.values()}),
                                 tokens)

    def _titles(self, doc_ids: set[str]) -> dict[str, str]:
        if not doc_ids:
            return {}
        with self._pool.connection() as conn:
            return dict(conn.execute("SELECT doc_id, title FROM documents "
                                     "WHERE doc_id = ANY(%s)", (sorted(doc_ids),)).fetchall())

    def document_titles(self, access: Access | None = None) -> dict[str, str]:
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            return dict(conn.execute(f"SELECT d.doc_id, d.title FROM documents d WHERE {where}",
                                     params).fetchall())

    def document_list(self, access: Access | None = None,
                      doc_ids: Sequence[str] | None = None) -> list[DocumentInfo]:
        where, params = _access_sql(access)
        if doc_ids is not None:
            where, params = f"{where} AND d.doc_id = ANY(%s::text[])", [*params, list(doc_ids)]
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT d.doc_id, d.title, d.type, d.path, d.collection, d.groups, d.n_chunks, "
                "CASE jsonb_typeof(d.metadata->'pages') WHEN 'array' THEN "
                "jsonb_array_length(d.metadata->'pages') END FROM documents d "
                f"WHERE {where} ORDER BY d.doc_id", params).fetchall()
        return [DocumentInfo(doc_id, title, kind, path, collection, tuple(groups), chunks, pages)
                for doc_id, title, kind, path, collection, groups, chunks, pages in rows]

    def chunk_spans(self, doc_id: str,
                    access: Access | None = None) -> list[tuple[str, int, int]]:
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            return [(r[0], r[1], r[2]) for r in conn.execute(
                f'SELECT c.chunk_id, c.start, c."end" FROM {VISIBLE_CHUNKS} '
                f"WHERE c.doc_id = %s AND {where} ORDER BY c.position", [doc_id, *params])]

    def get_chunks(self, chunk_ids: Sequence[str],
                   access: Access | None = None) -> dict[str, Chunk]:
        if not chunk_ids:
            return {}
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {CHUNK_COLUMNS} FROM {VISIBLE_CHUNKS} "
                f"WHERE c.chunk_id = ANY(%s) AND {where}",
                [list(dict.fromkeys(chunk_ids)), *params]).fetchall()
        return {row[0]: _chunk(row) for row in rows}

    def summaries(self, access: Access | None = None
                  ) -> tuple[list[str], list[str], np.ndarray]:
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT s.doc_id, s.text, s.vector FROM summaries s JOIN documents d "
                f"ON d.doc_id = s.doc_id WHERE {where} ORDER BY s.doc_id", params,
                binary=True).fetchall()
        matrix = np.stack([r[2] for r in rows]) if rows else np.zeros((0, self._dim()),
                                                                      dtype=np.float32)
        return [r[0] for r in rows], [r[1] for r in rows], matrix

    def document_vectors(self, doc_id: str) -> np.ndarray:
        """The sentence vectors of a document, one row per sentence in document order (the
        rows of its :class:`PreparedDocument`); empty for an unknown document."""
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT s.embedding FROM sentences s JOIN chunks c ON c.id = s.chunk "
                "WHERE c.doc_id = %s ORDER BY c.position, s.id", (doc_id,),
                binary=True).fetchall()
        return np.stack([r[0] for r in rows]) if rows else np.zeros((0, self._dim()),
                                                                    dtype=np.float32)

    def get_document(self, doc_id: str, access: Access | None = None) -> Document | None:
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT d.doc_id, d.title, d.text, d.type, d.path, d.metadata FROM documents d "
                f"WHERE d.doc_id = %s AND {where}", [doc_id, *params]).fetchone()
        if row is None:
            return None
        return Document(row[0], row[1], row[2], row[3], row[4], row[5])

    def iter_chunks(self) -> Iterator[Chunk]:
        """Every chunk in (doc_id, position) order, read a page at a time."""
        after: tuple[str, int] = ("", -1)
        while True:
            with self._pool.connection() as conn:
                rows = conn.execute(
                    f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE (c.doc_id, c.position) > "
                    "(%s, %s) ORDER BY c.doc_id, c.position LIMIT %s", [*after, PAGE]).fetchall()
            yield from (_chunk(row) for row in rows)
            if len(rows) < PAGE:
                return
            after = (rows[-1][1], rows[-1][2])

    def _dim(self) -> int:
        return int((self.manifest.get("embedder") or {}).get("dim") or 0)

    # -- side files, the graph and the sessions ----------------------------------------

    @property
    def folder(self) -> Path:
        """The side folder: one under ``$XDG_DATA_HOME`` named after the index."""
        return data_folder(self.where)

    def graph_tables(self) -> GraphTables:
        from sleuth.graph.pgstore import PostgresGraphTables

        return PostgresGraphTables(self, self.folder)

    def sessions(self) -> SessionStore:
        from sleuth.store.pg_sessions import PostgresSessions

        return PostgresSessions(self)

    def connection(self) -> AbstractContextManager[Connection]:
        """A pooled connection, its search path on the index schema (side tables: sessions)."""
        return self._pool.connection()

    def close(self) -> None:
        self._pool.close()


def parse_location(location: str) -> tuple[str, str]:
    """``(libpq conninfo, schema)`` of a ``postgresql://…[?schema=NAME]`` location."""
    parts = urlsplit(location)
    schema, rest = DEFAULT_SCHEMA, []
    for item in filter(None, parts.query.split("&")):  # the rest goes to libpq as written
        key, _, value = item.partition("=")
        if unquote(key) == "schema":
            schema = unquote(value)
        else:
            rest.append(item)
    if not _SCHEMA_NAME.match(schema):
        raise StoreError(f"invalid schema name {schema!r} in the index location: use letters, "
                         "digits and '_' (at most 63, not starting with a digit)")
    return urlunsplit(("postgresql", parts.netloc, parts.path, "&".join(rest),
                       parts.fragment)), schema


def _access_sql(access: Access | None) -> tuple[str, list[Any]]:
    """A condition on documents ``d`` true exactly for those ``access`` allows (see
    :meth:`Access.allows`), and its parameters."""
    limited = restricted(access)
    if limited is None:
        return "TRUE", []
    clauses: list[str] = []
    params: list[Any] = []
    if limited.collections is not None:
        clauses.append("d.collection = ANY(%s::text[])")
        params.append(sorted(limited.collections))
    if limited.groups is not None:
        clauses.append("(cardinality(d.groups) = 0 OR d.groups && %s::text[])")
        params.append(sorted(limited.groups))
    return " AND ".join(clauses), params


def _chunk(row: tuple[Any, ...]) -> Chunk:
    chunk_id, doc_id, position, start, end, n_tokens, text, starts, ends, prev, nxt = row
    sentences = tuple(Sentence(text[s - start : e - start], s, e)
                      for s, e in zip(starts, ends, strict=True))
    return Chunk(chunk_id, doc_id, position, text, start, end, n_tokens, sentences, prev, nxt)


def _extension_schema(conn: Connection) -> str:
    """The schema holding pgvector's types and operators (``public`` before it exists)."""
    row = conn.execute("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
                       "ON n.oid = e.extnamespace WHERE e.extname = 'vector'").fetchone()
    return str(row[0]) if row else "public"


def _ranked(rows: list[tuple[int, float, int, int]], top_k: int
            ) -> list[tuple[int, float, list[int]]]:
    """The ``top_k`` chunks of sentence ``rows`` (chunk key, score, ...) by their best
    sentence, with the rows of their best PER_CHUNK sentences."""
    if not rows:
        return []
    return top_chunks_by_best_sentence(np.array([r[1] for r in rows], dtype=np.float64),
                                       np.array([r[0] for r in rows], dtype=np.int64),
                                       top_k, PER_CHUNK)


def _first(row: tuple[Any, ...] | None) -> int:
    return int(row[0]) if row else 0


def _dumps(value: Any) -> str:
    return json.dumps(_clean(value), default=str)


def _clean(value: Any) -> Any:
    """``value`` with :func:`_text` applied to every string in it (jsonb refuses NUL too)."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, Mapping):
        return {_text(str(k)): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _text(value: str) -> str:
    """``value`` storable in PostgreSQL, whose text cannot hold NUL: each NUL (PDF text
    extraction leaves some) becomes U+FFFD, one character for one, so offsets stay."""
    return value.replace("\x00", "\ufffd")


def _redacted(location: str) -> str:
    """The location without its password, for messages."""
    parts = urlsplit(location)
    if parts.password is None:
        return location
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))

