"""The knowledge graph of a PostgreSQL index: the tables of ``graph.db`` in the index schema.

:class:`PostgresGraphStore` answers as :class:`~sleuth.graph.store.GraphStore` does, over
the same tables prefixed ``graph_`` (``graph_entities``, ``graph_mentions``, ...,
``graph_proposals``) beside the index's own. They are created on first open when missing
(``CREATE TABLE IF NOT EXISTS``), so an index built before the graph needs no migration and
a replica that has them only reads. Text keys use the
``C`` collation, and rows come back in SQLite's order (mentions and aliases carry a ``rid``
standing for SQLite's rowid), so both stores give the same answers. Entity and proposal ids
are allocated as SQLite allocates them (one more than the largest), which gives the same ids
for the same history of writes.

Every write is one transaction holding an advisory lock on the index schema's graph, so
writers in several processes take turns as SQLite's writers do; a build stores a batch of
chunks with one lookup of its names, ``executemany`` and ``COPY``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sleuth.errors import StoreError
from sleuth.graph.extract import Extraction
from sleuth.graph.store import (
    _TYPE_RANK,
    COPY_BY_KEY,
    COPY_TABLES,
    FORMAT_VERSION,
    PROPOSAL_COLUMNS,
    Entity,
    Reviewed,
    acronym,
    copy_columns,
    norm,
)

if TYPE_CHECKING:
    from psycopg import Connection

    from sleuth.store.pg_sessions import Database

TABLES = ("graph_meta", "graph_entities", "graph_aliases", "graph_mentions",
          "graph_relations", "graph_extracted", "graph_checked", "graph_name_vectors",
          "graph_proposals")
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
_COPY_ORDER = {"aliases": "rid", "mentions": "rid"}  # SQLite's rowid; else id
_RELATION_COLUMNS = 'subject, relation, object, qualifiers, chunk_id, start, "end", source'


def _quoted(column: str) -> str:
    return f'"{column}"' if column == "end" else column


_PROPOSALS = ", ".join(map(_quoted, PROPOSAL_COLUMNS))

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


class _Names:
    """Entity resolution for one batch of writes, as :meth:`GraphStore._entity` resolves
    one name at a time: the batch's keys are looked up once, new entities, aliases and type
    upgrades are kept here and written by :meth:`flush`."""

    def __init__(self, conn: Connection, names: Iterable[str]) -> None:
        keys = sorted({k for k in map(norm, names) if len(k) >= 2})
        self.rows = {r[0]: (int(r[1]), r[2]) for r in conn.execute(
            "SELECT norm, id, type FROM graph_entities WHERE norm = ANY(%s)", (keys,))}
        self.aliases = {r[0]: int(r[1]) for r in conn.execute(
            "SELECT alias, entity FROM graph_aliases WHERE alias = ANY(%s)", (keys,))}
        row = conn.execute("SELECT coalesce(max(id), 0) FROM graph_entities").fetchone()
        self.next_id = int(row[0] if row else 0) + 1
        self.cache: dict[str, int] = {}
        self.new_entities: list[tuple[int, str, str, str]] = []
        self.new_aliases: list[tuple[str, int]] = []
        self.retyped: list[tuple[str, int]] = []

    def entity(self, name: str, kind: str) -> int | None:
        key = norm(name)
        if not key or len(key) < 2:
            return None
        if key in self.cache:
            return self.cache[key]
        row = self.rows.get(key)
        if row is None:
            if key in self.aliases:
                self.cache[key] = self.aliases[key]
                return self.cache[key]
            entity, self.next_id = self.next_id, self.next_id + 1
            self.new_entities.append((entity, key, name.strip(), kind))
            short = acronym(name)
            if short and short != key and short not in self.aliases:
                self.aliases[short] = entity
                self.new_aliases.append((short, entity))
        else:
            entity = row[0]
            if _TYPE_RANK.get(row[1], 5) > _TYPE_RANK.get(kind, 5):
                self.retyped.append((kind, entity))
        self.cache[key] = entity
        return entity

    def flush(self, conn: Connection) -> None:
        with conn.cursor() as cur:
            if self.new_entities:
                cur.executemany("INSERT INTO graph_entities (id, norm, name, type) "
                                "VALUES (%s, %s, %s, %s)", self.new_entities)
            if self.new_aliases:
                cur.executemany("INSERT INTO graph_aliases (alias, entity) VALUES (%s, %s) "
                                "ON CONFLICT (alias) DO NOTHING", self.new_aliases)
            if self.retyped:
                cur.executemany("UPDATE graph_entities SET type=%s WHERE id=%s", self.retyped)


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


class PostgresGraphStore:
    """Read and write access to the graph tables of a PostgreSQL index."""

    def __init__(self, store: Database, folder: Path) -> None:
        self._store = store
        self._folder = folder
        self.where = store.where
        self.lock = threading.RLock()
        self._local = threading.local()
        version = self._version()
        if version is None:  # tables missing: create them (a replica only reads)
            with self._write() as conn:
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
        with self._conn() as conn:
            row = conn.execute(
                "SELECT value FROM graph_meta WHERE key='generation'").fetchone()
        return int(row[0]) if row else 0

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

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        with self.transaction(), self._conn() as conn:
            yield conn

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._conn() as conn:
            return conn.execute(sql, params).fetchall()

    # -- writing -----------------------------------------------------------------------

    def reset(self) -> None:
        """Forget everything extracted (a full rebuild follows); reviewed proposals stay."""
        with self._write() as conn:
            conn.execute("TRUNCATE graph_entities, graph_aliases, graph_mentions, "
                         "graph_relations, graph_extracted, graph_checked")

    def extracted(self) -> dict[str, tuple[str, str]]:
        return {r[0]: (r[1], r[2]) for r in self._rows(
            "SELECT chunk_id, extractor, digest FROM graph_extracted")}

    def forget(self, chunk_ids: Sequence[str]) -> None:
        """Drop mentions, relations and bookkeeping of chunks (changed or deleted)."""
        with self._write() as conn:
            for table in ("graph_mentions", "graph_relations", "graph_extracted"):
                conn.execute(f"DELETE FROM {table} WHERE chunk_id = ANY(%s)", (list(chunk_ids),))
            conn.execute("DELETE FROM graph_entities e WHERE NOT EXISTS "
                         "(SELECT 1 FROM graph_mentions m WHERE m.entity = e.id)")
            conn.execute("DELETE FROM graph_aliases a WHERE NOT EXISTS "
                         "(SELECT 1 FROM graph_entities e WHERE e.id = a.entity)")
            conn.execute("DELETE FROM graph_checked c WHERE NOT EXISTS "
                         "(SELECT 1 FROM graph_entities e WHERE e.norm = c.norm)")

    def add(self, results: Iterable[tuple[str, str, Extraction]], extractor: str,
            source: str = "extracted") -> None:
        """Store ``(chunk_id, digest, extraction)`` results in one transaction."""
        results = list(results)
        with self._write() as conn:
            names = _Names(conn, [n for _, _, found in results for n in (
                *(m.name for m in found.mentions),
                *(n for t in found.triples for n in (t.subject, t.object)))])
            mentions: list[tuple[int, str, int, int]] = []
            relations: list[tuple[Any, ...]] = []
            for _, _, found in results:
                for m in found.mentions:
                    entity = names.entity(m.name, m.type)
                    if entity is not None:
                        mentions.append((entity, m.chunk_id, m.start, m.end))
                for t in found.triples:
                    subject = names.entity(t.subject, t.subject_type)
                    obj = names.entity(t.object, t.object_type)
                    if subject is None or obj is None or subject == obj:
                        continue
                    relations.append((subject, t.relation, obj, json.dumps(t.qualifiers),
                                      t.chunk_id, t.start, t.end, source))
            names.flush(conn)
            with conn.cursor() as cur:
                with cur.copy('COPY graph_mentions (entity, chunk_id, start, "end") '
                              "FROM STDIN") as copy:
                    for mention in mentions:
                        copy.write_row(mention)
                with cur.copy(f"COPY graph_relations ({_RELATION_COLUMNS}) FROM STDIN") as copy:
                    for relation in relations:
                        copy.write_row(relation)
                cur.executemany(
                    "INSERT INTO graph_extracted VALUES (%s, %s, %s) ON CONFLICT (chunk_id) "
                    "DO UPDATE SET extractor = excluded.extractor, digest = excluded.digest",
                    [(chunk_id, extractor, digest) for chunk_id, digest, _ in results])

    def add_reviewed(self, triple: Reviewed) -> bool:
        """Insert an approved triple (see :class:`~sleuth.graph.store.Reviewed`); False when
        its subject and object are not two distinct entities (nothing is written then)."""
        with self._write() as conn:
            names = _Names(conn, [triple.subject, triple.object])
            subject = names.entity(triple.subject, triple.kind)
            obj = names.entity(triple.object, triple.kind)
            if subject is None or obj is None or subject == obj:
                return False
            names.flush(conn)
            conn.execute(
                f"INSERT INTO graph_relations ({_RELATION_COLUMNS}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (subject, triple.relation, obj, json.dumps(triple.qualifiers),
                 triple.chunk_id, triple.start, triple.end, triple.source))
            for entity, (start, end) in ((subject, triple.subject_span),
                                         (obj, triple.object_span)):
                conn.execute(
                    'INSERT INTO graph_mentions (entity, chunk_id, start, "end") '
                    "SELECT %s, %s, %s, %s WHERE NOT EXISTS (SELECT 1 FROM graph_mentions "
                    "WHERE entity=%s AND chunk_id=%s)",
                    (entity, triple.chunk_id, start, end, entity, triple.chunk_id))
        return True

    def merge(self, merges: dict[int, int]) -> None:
        """Fold each entity ``drop`` into ``keep`` (``{drop: keep}``, ``keep`` never itself
        dropped) in one transaction: mentions, relations and aliases move over, the dropped
        name becomes an alias, a better type is kept, and self-loops go."""
        if not merges:
            return
        pairs = [(keep, drop) for drop, keep in merges.items()]
        with self._write() as conn, conn.cursor() as cur:
            cur.executemany("UPDATE graph_mentions SET entity=%s WHERE entity=%s", pairs)
            cur.executemany("UPDATE graph_relations SET subject=%s WHERE subject=%s", pairs)
            cur.executemany("UPDATE graph_relations SET object=%s WHERE object=%s", pairs)
            cur.executemany("UPDATE graph_aliases SET entity=%s WHERE entity=%s", pairs)
            # SQLite's INSERT OR REPLACE: the replaced alias row goes, a new one comes last
            cur.executemany("DELETE FROM graph_aliases WHERE alias = "
                            "(SELECT norm FROM graph_entities WHERE id=%s)",
                            [(drop,) for _, drop in pairs])
            cur.executemany("INSERT INTO graph_aliases (alias, entity) "
                            "SELECT norm, %s FROM graph_entities WHERE id=%s", pairs)
            types = {int(r[0]): r[1] for r in cur.execute(
                "SELECT id, type FROM graph_entities").fetchall()}
            retyped = []
            for keep, drop in pairs:
                if _TYPE_RANK.get(types[keep], 5) > _TYPE_RANK.get(types[drop], 5):
                    types[keep] = types[drop]
                    retyped.append((types[keep], keep))
            cur.executemany("UPDATE graph_entities SET type=%s WHERE id=%s", retyped)
            cur.execute("DELETE FROM graph_entities WHERE id = ANY(%s)", (list(merges),))
            cur.execute("DELETE FROM graph_relations WHERE subject=object")

    def unchecked_entities(self) -> set[int]:
        """Entities alias merging has not paired yet."""
        return {int(r[0]) for r in self._rows(
            "SELECT id FROM graph_entities e WHERE NOT EXISTS "
            "(SELECT 1 FROM graph_checked c WHERE c.norm = e.norm)")}

    def mark_checked(self) -> None:
        with self._write() as conn:
            conn.execute("INSERT INTO graph_checked SELECT norm FROM graph_entities "
                         "ON CONFLICT DO NOTHING")

    def _vectors_of(self) -> str | None:
        rows = self._rows("SELECT value FROM graph_meta WHERE key='name_vectors'")
        return str(rows[0][0]) if rows else None

    def _set_vectors_of(self, conn: Connection, embedder: str) -> None:
        conn.execute("INSERT INTO graph_meta VALUES ('name_vectors', %s) ON CONFLICT (key) "
                     "DO UPDATE SET value = excluded.value", (embedder,))

    def name_vectors(self, texts: Sequence[str], embedder: str) -> dict[str, np.ndarray]:
        """Cached unit vectors of ``texts`` made by ``embedder`` (others are forgotten)."""
        if self._vectors_of() != embedder:
            with self._write() as conn:
                conn.execute("DELETE FROM graph_name_vectors")
                self._set_vectors_of(conn, embedder)
            return {}
        return {r[0]: np.frombuffer(r[1], dtype=np.float32) for r in self._rows(
            "SELECT text, vector FROM graph_name_vectors WHERE text = ANY(%s)",
            (list(texts),))}

    def all_name_vectors(self, embedder: str) -> dict[str, np.ndarray]:
        """Every cached name vector made by ``embedder``."""
        if self._vectors_of() != embedder:
            return {}
        return {r[0]: np.frombuffer(r[1], dtype=np.float32)
                for r in self._rows("SELECT text, vector FROM graph_name_vectors")}

    def add_name_vectors(self, vectors: dict[str, np.ndarray], embedder: str) -> None:
        with self._write() as conn:
            self._set_vectors_of(conn, embedder)
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO graph_name_vectors VALUES (%s, %s) ON CONFLICT (text) "
                    "DO UPDATE SET vector = excluded.vector",
                    [(t, np.asarray(v, dtype=np.float32).tobytes())
                     for t, v in vectors.items()])

    # -- reading -----------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        row = self._rows(
            "SELECT (SELECT count(*) FROM graph_entities), (SELECT count(*) FROM "
            "graph_relations), (SELECT count(*) FROM graph_mentions), "
            "(SELECT count(*) FROM graph_extracted)")[0]
        return dict(zip(("entities", "relations", "mentions", "extracted"), map(int, row),
                        strict=True))

    def entity(self, entity_id: int) -> Entity | None:
        rows = self._rows("SELECT id, name, type FROM graph_entities WHERE id=%s",
                          (entity_id,))
        return Entity(int(rows[0][0]), rows[0][1], rows[0][2]) if rows else None

    def by_key(self, key: str) -> Entity | None:
        rows = self._rows(
            "SELECT id, name, type, 0 AS alias FROM graph_entities WHERE norm=%s UNION ALL "
            "SELECT e.id, e.name, e.type, 1 FROM graph_aliases a JOIN graph_entities e "
            "ON e.id=a.entity WHERE a.alias=%s ORDER BY alias LIMIT 1", (key, key))
        return Entity(int(rows[0][0]), rows[0][1], rows[0][2]) if rows else None

    def entities(self) -> list[tuple[int, str, str, str]]:
        return [(int(r[0]), r[1], r[2], r[3]) for r in
                self._rows("SELECT id, norm, name, type FROM graph_entities ORDER BY id")]

    def edges(self) -> list[tuple[int, int]]:
        return [(int(r[0]), int(r[1])) for r in
                self._rows("SELECT subject, object FROM graph_relations ORDER BY id")]

    def mention_rows(self) -> list[tuple[int, str]]:
        """(entity id, chunk id) of every mention of a stored entity."""
        return [(int(r[0]), r[1]) for r in self._rows(
            "SELECT m.entity, m.chunk_id FROM graph_mentions m JOIN graph_entities e "
            "ON e.id=m.entity ORDER BY m.rid")]

    def relation_rows(self) -> list[tuple[int, int, str, str]]:
        """(subject id, object id, label, chunk id) of every relation between stored
        entities."""
        return [(int(r[0]), int(r[1]), r[2], r[3]) for r in self._rows(
            "SELECT r.subject, r.object, r.relation, r.chunk_id FROM graph_relations r "
            "JOIN graph_entities s ON s.id=r.subject JOIN graph_entities o ON o.id=r.object "
            "ORDER BY r.id")]

    def extracted_chunks(self) -> list[str]:
        return [r[0] for r in self._rows(
            "SELECT chunk_id FROM graph_extracted ORDER BY chunk_id")]

    def relations_of(self, entity_id: int) -> list[dict[str, Any]]:
        rows = self._rows(
            'SELECT r.subject, r.relation, r.object, r.qualifiers, r.chunk_id, r.start, r."end", '
            "s.name, o.name, s.type, o.type FROM graph_relations r JOIN graph_entities s "
            "ON s.id=r.subject JOIN graph_entities o ON o.id=r.object "
            "WHERE r.subject=%s OR r.object=%s ORDER BY r.subject <> %s, r.id",
            (entity_id, entity_id, entity_id))
        return [{"subject_id": int(r[0]), "relation": r[1], "object_id": int(r[2]),
                 "qualifiers": json.loads(r[3]), "chunk_id": r[4], "start": r[5], "end": r[6],
                 "subject": r[7], "object": r[8], "subject_type": r[9], "object_type": r[10]}
                for r in rows]

    def aliases(self) -> dict[str, int]:
        """Alias key → entity id."""
        return {r[0]: int(r[1]) for r in
                self._rows("SELECT alias, entity FROM graph_aliases ORDER BY rid")}

    def mention_counts(self) -> dict[int, int]:
        return {int(r[0]): int(r[1]) for r in self._rows(
            "SELECT entity, count(*) FROM graph_mentions GROUP BY entity ORDER BY entity")}

    def relation_labels(self) -> dict[str, int]:
        """Each distinct relation label and how many relations carry it."""
        return {r[0]: int(r[1]) for r in self._rows(
            "SELECT relation, count(*) FROM graph_relations GROUP BY relation "
            "ORDER BY relation")}

    def mentions_by_entity(self) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for entity, chunk_id in self._rows(
                "SELECT entity, chunk_id FROM graph_mentions GROUP BY entity, chunk_id "
                "ORDER BY entity, min(rid)"):
            out.setdefault(int(entity), []).append(chunk_id)
        return out

    def mentions_of(self, entity_ids: Sequence[int]) -> list[tuple[int, str]]:
        """Distinct (entity id, chunk id) mentions of ``entity_ids``, by entity."""
        return [(int(r[0]), r[1]) for r in self._rows(
            "SELECT entity, chunk_id FROM graph_mentions WHERE entity = ANY(%s) "
            "GROUP BY entity, chunk_id ORDER BY entity, min(rid)", (list(entity_ids),))]

    def mention_tallies(self, entity_ids: Sequence[int]) -> list[tuple[int, str, int]]:
        """(entity id, chunk id, mentions) of ``entity_ids``, by entity and chunk id."""
        return [(int(r[0]), r[1], int(r[2])) for r in self._rows(
            "SELECT entity, chunk_id, count(*) FROM graph_mentions WHERE entity = ANY(%s) "
            "GROUP BY entity, chunk_id ORDER BY entity, chunk_id", (list(entity_ids),))]

    def relation_qualifiers(self, source: str) -> list[dict[str, Any]]:
        """The qualifiers of the relations from ``source``."""
        return [json.loads(r[0]) for r in self._rows(
            "SELECT qualifiers FROM graph_relations WHERE source=%s ORDER BY id", (source,))]

    # -- review proposals --------------------------------------------------------------

    def add_proposal(self, row: dict[str, Any]) -> int | None:
        """Store a pending proposal (``row``: its columns but id, status and decided);
        its id, or None when one with the same key exists."""
        names = [*PROPOSAL_COLUMNS[1:-3], "key", "created"]
        with self._write() as conn:
            added = conn.execute(
                f"INSERT INTO graph_proposals (id, {', '.join(_quoted(n) for n in names)}) "
                "SELECT coalesce(max(id), 0) + 1, "
                f"{', '.join(['%s'] * len(names))} FROM graph_proposals "
                "ON CONFLICT (key) DO NOTHING RETURNING id", [row[n] for n in names]).fetchone()
        return None if added is None else int(added[0])

    def proposal_rows(self, *, status: str | None = None,
                      ids: Sequence[int] | None = None) -> list[tuple[Any, ...]]:
        """Proposals (:data:`~sleuth.graph.store.PROPOSAL_COLUMNS`) with ``status`` (by id)
        or ``ids``."""
        if ids is None:
            return self._rows(f"SELECT {_PROPOSALS} FROM graph_proposals WHERE status=%s "
                              "ORDER BY id", (status,))
        return self._rows(f"SELECT {_PROPOSALS} FROM graph_proposals WHERE id = ANY(%s)",
                          (list(ids),))

    def set_proposal_status(self, proposal_id: int, status: str, decided: str) -> None:
        with self._write() as conn:
            conn.execute("UPDATE graph_proposals SET status=%s, decided=%s WHERE id=%s",
                         (status, decided, proposal_id))

    # -- copying -------------------------------------------------------------------------

    def table_rows(self, table: str) -> Iterator[tuple[Any, ...]]:
        """The rows of one of :data:`~sleuth.graph.store.COPY_TABLES` in SQLite's order (by
        id, by ``rid`` for aliases and mentions, bytewise by key), streamed."""
        order = f'{COPY_TABLES[table][0]} COLLATE "C"' if table in COPY_BY_KEY else \
            _COPY_ORDER.get(table, "id")
        where = " WHERE key <> 'generation'" if table == "meta" else ""
        with self._conn() as conn:
            yield from conn.cursor().stream(
                f"SELECT {copy_columns(table)} FROM graph_{table}{where} ORDER BY {order}")

    def replace_tables(self, rows: Callable[[str], Iterable[tuple[Any, ...]]]) -> None:
        """Replace every table's rows in one transaction (COPY), relation ids continuing
        after the largest copied one."""
        with self._write() as conn:
            conn.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY")
            with conn.cursor() as cur:
                for table in COPY_TABLES:
                    with cur.copy(f"COPY graph_{table} ({copy_columns(table)}) "
                                  "FROM STDIN") as copy:
                        for row in rows(table):
                            copy.write_row(row)
            conn.execute("SELECT setval(pg_get_serial_sequence('graph_relations', 'id'), "
                         "coalesce(max(id), 0) + 1, false) FROM graph_relations")
