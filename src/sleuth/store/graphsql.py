"""The knowledge graph's tables in SQL, written once for every SQL backend.

:class:`SqlGraphTables` answers each query of :class:`~sleuth.store.graphs.GraphBackend` with
one statement, spelled for a backend by its :class:`Dialect`, and leaves to a subclass the
few primitives that differ in kind rather than spelling: running a statement, fetching,
bulk-loading and streaming rows, and taking a write transaction.
:class:`~sleuth.store.local.graph.GraphStore` (SQLite, ``graph.db``) and
:class:`~sleuth.store.postgres.graph.PostgresGraphStore` (the ``graph_*`` tables of an index
schema) are those subclasses; connections, schema creation and the change counter stay theirs.

Both answer alike because the statements say the order SQLite would return rows in (by id,
by insertion for aliases and mentions, bytewise by key) instead of leaning on SQLite's rowid
scans, and because ids are allocated as SQLite allocates them (one more than the largest).
A write resolves its batch's names with one lookup (:class:`_Names`), not one per name.

Statements name tables ``@entities``, ``@mentions``, ... and parameters ``?``;
:meth:`Dialect.sql` turns them into the backend's table names and placeholders.
"""

from __future__ import annotations

import json
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Literal

import numpy as np

from sleuth.store.graphs import (
    COPY_BY_KEY,
    COPY_TABLES,
    PROPOSAL_COLUMNS,
    TYPE_RANK,
    Entity,
    Extraction,
    Reviewed,
    acronym,
    copy_columns,
    norm,
)

_TABLE = re.compile(r"@(\w+)")
MENTION_COLUMNS = ("entity", "chunk_id", "start", "end")
RELATION_COLUMNS = ("subject", "relation", "object", "qualifiers", "chunk_id", "start", "end",
                    "source")
# what reset() forgets: everything extracted, not meta, name vectors or proposals
EXTRACTED_TABLES = ("entities", "aliases", "mentions", "relations", "extracted", "checked")


def quoted(columns: Iterable[str]) -> str:
    """Column names for SQL, each quoted (``end`` is a keyword in both backends)."""
    return ", ".join(f'"{column}"' for column in columns)


def marks(count: int) -> str:
    return ", ".join("?" * count)


@lru_cache(maxsize=512)
def _translate(text: str, prefix: str, mark: str) -> str:
    return _TABLE.sub(lambda m: prefix + m.group(1), text).replace("?", mark)


@dataclass(frozen=True)
class Dialect:
    """How one backend spells what the shared statements leave open."""

    family: Literal["sqlite", "postgresql"]  # picks the upsert and clearing spellings
    mark: str  # a parameter's placeholder
    prefix: str  # before every graph table's name
    rowid: str  # the column that keeps aliases' and mentions' insertion order
    bytewise: str  # after a text key to order it bytewise
    in_batch: int | None  # values per ``IN (...)`` list; None: one array (``= ANY(?)``)
    write_lock: str | None = None  # run first in every write transaction
    after_copy: tuple[str, ...] = ()  # run after replace_tables has loaded the rows

    def sql(self, text: str) -> str:
        """``text`` with ``@table`` names and ``?`` placeholders in this dialect."""
        return _translate(text, self.prefix, self.mark)

    def within(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, list[Any]]]:
        """``column`` among ``values``: (condition, parameters) per statement it takes
        (several where the backend bounds a statement's parameters)."""
        if self.in_batch is None:
            yield f"{column} = ANY(?)", [list(values)]
            return
        for start in range(0, len(values), self.in_batch):
            part = list(values[start : start + self.in_batch])
            yield f"{column} IN ({','.join('?' * len(part))})", part

    def ignore(self, insert: str, key: str = "") -> str:
        """``insert`` (an ``INSERT INTO``) skipping rows whose ``key`` is taken."""
        if self.family == "sqlite":
            return insert.replace("INSERT INTO", "INSERT OR IGNORE INTO", 1)
        return f"{insert} ON CONFLICT {f'({key}) ' if key else ''}DO NOTHING"

    def upsert(self, table: str, columns: Sequence[str], key: str) -> str:
        """Insert a row of ``columns``, replacing the one with the same ``key``. SQLite's
        ``OR REPLACE`` moves the row to the end of the rowid order; the tables written this
        way are read by key or as lookups, so PostgreSQL's update in place answers alike."""
        insert = f"INTO @{table} ({quoted(columns)}) VALUES ({marks(len(columns))})"
        if self.family == "sqlite":
            return f"INSERT OR REPLACE {insert}"
        updates = ", ".join(f'"{c}" = excluded."{c}"' for c in columns if c != key)
        return f'INSERT {insert} ON CONFLICT ("{key}") DO UPDATE SET {updates}'

    def clear(self, tables: Iterable[str], *, restart: bool) -> list[str]:
        """Statements that empty ``tables`` (``restart``: and start their serials over)."""
        names = [self.prefix + table for table in tables]
        if self.family == "sqlite":  # rowids restart by themselves
            return [f"DELETE FROM {name}" for name in names]
        return [f"TRUNCATE {', '.join(names)}{' RESTART IDENTITY' if restart else ''}"]


class SqlGraphTables(ABC):
    """The graph tables over a SQL backend: every :class:`~sleuth.store.graphs.GraphBackend`
    query, in terms of :attr:`dialect` and the primitives a subclass supplies."""

    dialect: ClassVar[Dialect]

    def __init__(self) -> None:
        self.lock = threading.RLock()  # one writer per process at a time

    # -- primitives (statements come already in the dialect) -------------------------------

    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]:
        """All writes inside commit together, or none (nestable: the outer one counts)."""

    @abstractmethod
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> None: ...

    @abstractmethod
    def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def _executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    @abstractmethod
    def _stream(self, sql: str) -> Iterator[tuple[Any, ...]]:
        """The rows of a query, fetched as they are consumed."""

    @abstractmethod
    def _insert_id(self, sql: str, params: Sequence[Any]) -> int | None:
        """Run an insert of one row into a table with an ``id``: that id, None if the
        insert skipped the row."""

    def _load(self, table: str, columns: Sequence[str],
              rows: Iterable[Sequence[Any]]) -> None:
        """Append many rows to a table (a backend may have a faster way than this)."""
        self._executemany(self.dialect.sql(
            f"INSERT INTO @{table} ({quoted(columns)}) VALUES ({marks(len(columns))})"), rows)

    def _ensure_proposals(self) -> None:
        """Create the proposals table where it is made on first use."""
        return None

    def _has_proposals(self) -> bool:
        return True

    # -- statements in the shared spelling -------------------------------------------------

    def _rows(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._fetchall(self.dialect.sql(text), params)

    def _rows_in(self, text: str, column: str, values: Sequence[Any]
                 ) -> list[tuple[Any, ...]]:
        """The rows of ``text`` (its ``{}`` a condition) with ``column`` among ``values``."""
        out: list[tuple[Any, ...]] = []
        for condition, params in self.dialect.within(column, values):
            out += self._rows(text.format(condition), params)
        return out

    def _run(self, text: str, params: Sequence[Any] = ()) -> None:
        self._execute(self.dialect.sql(text), params)

    def _run_many(self, text: str, rows: Iterable[Sequence[Any]]) -> None:
        self._executemany(self.dialect.sql(text), rows)

    # -- writing ---------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget everything extracted (a full rebuild follows); reviewed proposals stay."""
        with self.transaction():
            for statement in self.dialect.clear(EXTRACTED_TABLES, restart=False):
                self._execute(statement)

    def extracted(self) -> dict[str, tuple[str, str]]:
        return {r[0]: (r[1], r[2]) for r in self._rows(
            "SELECT chunk_id, extractor, digest FROM @extracted")}

    def forget(self, chunk_ids: Sequence[str]) -> None:
        """Drop mentions, relations and bookkeeping of chunks (changed or deleted)."""
        with self.transaction():
            for table in ("mentions", "relations", "extracted"):
                for condition, params in self.dialect.within("chunk_id", chunk_ids):
                    self._run(f"DELETE FROM @{table} WHERE {condition}", params)
            self._run("DELETE FROM @entities WHERE NOT EXISTS "
                      "(SELECT 1 FROM @mentions m WHERE m.entity = @entities.id)")
            self._run("DELETE FROM @aliases WHERE NOT EXISTS "
                      "(SELECT 1 FROM @entities e WHERE e.id = @aliases.entity)")
            self._run("DELETE FROM @checked WHERE NOT EXISTS "
                      "(SELECT 1 FROM @entities e WHERE e.norm = @checked.norm)")

    def add(self, results: Iterable[tuple[str, str, Extraction]], extractor: str,
            source: str = "extracted") -> None:
        """Store ``(chunk_id, digest, extraction)`` results in one transaction."""
        results = list(results)
        with self.transaction():
            names = _Names(self, [n for _, _, found in results for n in (
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
            names.flush()
            self._load("mentions", MENTION_COLUMNS, mentions)
            self._load("relations", RELATION_COLUMNS, relations)
            self._run_many(self.dialect.upsert("extracted", COPY_TABLES["extracted"],
                                               "chunk_id"),
                           [(chunk_id, extractor, digest) for chunk_id, digest, _ in results])

    def add_reviewed(self, triple: Reviewed) -> bool:
        """Insert an approved triple (see :class:`~sleuth.store.graphs.Reviewed`); False when
        its subject and object are not two distinct entities (nothing is written then)."""
        with self.transaction():
            names = _Names(self, [triple.subject, triple.object])
            subject = names.entity(triple.subject, triple.kind)
            obj = names.entity(triple.object, triple.kind)
            if subject is None or obj is None or subject == obj:
                return False
            names.flush()
            self._run(f"INSERT INTO @relations ({quoted(RELATION_COLUMNS)}) "
                      f"VALUES ({marks(len(RELATION_COLUMNS))})",
                      (subject, triple.relation, obj, json.dumps(triple.qualifiers),
                       triple.chunk_id, triple.start, triple.end, triple.source))
            for entity, (start, end) in ((subject, triple.subject_span),
                                         (obj, triple.object_span)):
                self._run(f"INSERT INTO @mentions ({quoted(MENTION_COLUMNS)}) "
                          "SELECT ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM @mentions "
                          "WHERE entity=? AND chunk_id=?)",
                          (entity, triple.chunk_id, start, end, entity, triple.chunk_id))
        return True

    def merge(self, merges: dict[int, int]) -> None:
        """Fold each entity ``drop`` into ``keep`` (``{drop: keep}``, ``keep`` never itself
        dropped) in one transaction: mentions, relations and aliases move over, the dropped
        name becomes an alias, a better type is kept, and self-loops go."""
        if not merges:
            return
        pairs = [(keep, drop) for drop, keep in merges.items()]
        with self.transaction():
            self._run_many("UPDATE @mentions SET entity=? WHERE entity=?", pairs)
            self._run_many("UPDATE @relations SET subject=? WHERE subject=?", pairs)
            self._run_many("UPDATE @relations SET object=? WHERE object=?", pairs)
            self._run_many("UPDATE @aliases SET entity=? WHERE entity=?", pairs)
            # the dropped name becomes an alias, replacing any and coming last (as SQLite's
            # INSERT OR REPLACE does)
            self._run_many("DELETE FROM @aliases WHERE alias = "
                           "(SELECT norm FROM @entities WHERE id=?)",
                           [(drop,) for _, drop in pairs])
            self._run_many("INSERT INTO @aliases (alias, entity) "
                           "SELECT norm, ? FROM @entities WHERE id=?", pairs)
            self._run_many("UPDATE @entities SET type=? WHERE id=?", self._retyped(pairs))
            for condition, params in self.dialect.within("id", list(merges)):
                self._run(f"DELETE FROM @entities WHERE {condition}", params)
            self._run("DELETE FROM @relations WHERE subject=object")

    def _retyped(self, pairs: Sequence[tuple[int, int]]) -> list[tuple[str, int]]:
        """(type, keep) for each kept entity whose dropped one had a better type."""
        types = {int(r[0]): r[1] for r in self._rows("SELECT id, type FROM @entities")}
        retyped = []
        for keep, drop in pairs:
            if TYPE_RANK.get(types[keep], 5) > TYPE_RANK.get(types[drop], 5):
                types[keep] = types[drop]
                retyped.append((types[keep], keep))
        return retyped

    def unchecked_entities(self) -> set[int]:
        """Entities alias merging has not paired yet."""
        return {int(r[0]) for r in self._rows(
            "SELECT id FROM @entities e WHERE NOT EXISTS "
            "(SELECT 1 FROM @checked c WHERE c.norm = e.norm)")}

    def mark_checked(self) -> None:
        with self.transaction():
            self._run(self.dialect.ignore("INSERT INTO @checked SELECT norm FROM @entities"))

    def _vectors_of(self) -> str | None:
        """The embedder the cached name vectors were made by."""
        rows = self._rows("SELECT value FROM @meta WHERE key='name_vectors'")
        return str(rows[0][0]) if rows else None

    def _set_vectors_of(self, embedder: str) -> None:
        self._run(self.dialect.upsert("meta", ("key", "value"), "key"),
                  ("name_vectors", embedder))

    def name_vectors(self, texts: Sequence[str], embedder: str) -> dict[str, np.ndarray]:
        """Cached unit vectors of ``texts`` made by ``embedder`` (others are forgotten)."""
        if self._vectors_of() != embedder:
            with self.transaction():
                self._run("DELETE FROM @name_vectors")
                self._set_vectors_of(embedder)
            return {}
        return {r[0]: np.frombuffer(r[1], dtype=np.float32) for r in self._rows_in(
            "SELECT text, vector FROM @name_vectors WHERE {}", "text", list(texts))}

    def all_name_vectors(self, embedder: str) -> dict[str, np.ndarray]:
        """Every cached name vector made by ``embedder``."""
        if self._vectors_of() != embedder:
            return {}
        return {r[0]: np.frombuffer(r[1], dtype=np.float32)
                for r in self._rows("SELECT text, vector FROM @name_vectors")}

    def add_name_vectors(self, vectors: dict[str, np.ndarray], embedder: str) -> None:
        with self.transaction():
            self._set_vectors_of(embedder)
            self._run_many(self.dialect.upsert("name_vectors", ("text", "vector"), "text"),
                           [(t, np.asarray(v, dtype=np.float32).tobytes())
                            for t, v in vectors.items()])

    # -- reading ---------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        row = self._rows(
            "SELECT (SELECT count(*) FROM @entities), (SELECT count(*) FROM @relations), "
            "(SELECT count(*) FROM @mentions), (SELECT count(*) FROM @extracted)")[0]
        return dict(zip(("entities", "relations", "mentions", "extracted"), map(int, row),
                        strict=True))

    def entity(self, entity_id: int) -> Entity | None:
        rows = self._rows("SELECT id, name, type FROM @entities WHERE id=?", (entity_id,))
        return Entity(int(rows[0][0]), rows[0][1], rows[0][2]) if rows else None

    def by_key(self, key: str) -> Entity | None:
        """The entity named ``key`` (a :func:`~sleuth.store.graphs.norm`), else the one it
        is an alias of."""
        rows = self._rows(
            "SELECT id, name, type, 0 AS by_alias FROM @entities WHERE norm=? UNION ALL "
            "SELECT e.id, e.name, e.type, 1 FROM @aliases a JOIN @entities e "
            "ON e.id=a.entity WHERE a.alias=? ORDER BY by_alias LIMIT 1", (key, key))
        return Entity(int(rows[0][0]), rows[0][1], rows[0][2]) if rows else None

    def entities(self) -> list[tuple[int, str, str, str]]:
        return [(int(r[0]), r[1], r[2], r[3]) for r in
                self._rows("SELECT id, norm, name, type FROM @entities ORDER BY id")]

    def edges(self) -> list[tuple[int, int]]:
        return [(int(r[0]), int(r[1])) for r in
                self._rows("SELECT subject, object FROM @relations ORDER BY id")]

    def mention_rows(self) -> list[tuple[int, str]]:
        """(entity id, chunk id) of every mention of a stored entity."""
        return [(int(r[0]), r[1]) for r in self._rows(
            "SELECT m.entity, m.chunk_id FROM @mentions m JOIN @entities e "
            f"ON e.id=m.entity ORDER BY m.{self.dialect.rowid}")]

    def relation_rows(self) -> list[tuple[int, int, str, str]]:
        """(subject id, object id, label, chunk id) of every relation between stored
        entities."""
        return [(int(r[0]), int(r[1]), r[2], r[3]) for r in self._rows(
            "SELECT r.subject, r.object, r.relation, r.chunk_id FROM @relations r "
            "JOIN @entities s ON s.id=r.subject JOIN @entities o ON o.id=r.object "
            "ORDER BY r.id")]

    def extracted_chunks(self) -> list[str]:
        return [r[0] for r in self._rows(
            f"SELECT chunk_id FROM @extracted ORDER BY chunk_id{self.dialect.bytewise}")]

    def relations_of(self, entity_id: int) -> list[dict[str, Any]]:
        """The relations of an entity: those it is the subject of, then the object of."""
        rows = self._rows(
            'SELECT r.subject, r.relation, r.object, r.qualifiers, r.chunk_id, r.start, r."end", '
            "s.name, o.name, s.type, o.type FROM @relations r JOIN @entities s "
            "ON s.id=r.subject JOIN @entities o ON o.id=r.object "
            "WHERE r.subject=? OR r.object=? ORDER BY r.subject <> ?, r.id",
            (entity_id, entity_id, entity_id))
        return [{"subject_id": int(r[0]), "relation": r[1], "object_id": int(r[2]),
                 "qualifiers": json.loads(r[3]), "chunk_id": r[4], "start": r[5], "end": r[6],
                 "subject": r[7], "object": r[8], "subject_type": r[9], "object_type": r[10]}
                for r in rows]

    def aliases(self) -> dict[str, int]:
        """Alias key → entity id."""
        return {r[0]: int(r[1]) for r in self._rows(
            f"SELECT alias, entity FROM @aliases ORDER BY {self.dialect.rowid}")}

    def mention_counts(self) -> dict[int, int]:
        return {int(r[0]): int(r[1]) for r in self._rows(
            "SELECT entity, count(*) FROM @mentions GROUP BY entity ORDER BY entity")}

    def relation_labels(self) -> dict[str, int]:
        """Each distinct relation label and how many relations carry it."""
        return {r[0]: int(r[1]) for r in self._rows(
            "SELECT relation, count(*) FROM @relations GROUP BY relation "
            f"ORDER BY relation{self.dialect.bytewise}")}

    def mentions_by_entity(self) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for entity, chunk_id in self._rows(
                "SELECT entity, chunk_id FROM @mentions GROUP BY entity, chunk_id "
                f"ORDER BY entity, min({self.dialect.rowid})"):
            out.setdefault(int(entity), []).append(chunk_id)
        return out

    def mentions_of(self, entity_ids: Sequence[int]) -> list[tuple[int, str]]:
        """Distinct (entity id, chunk id) mentions of ``entity_ids``, by entity."""
        return [(int(r[0]), r[1]) for r in self._rows_in(
            "SELECT entity, chunk_id FROM @mentions WHERE {} GROUP BY entity, chunk_id "
            f"ORDER BY entity, min({self.dialect.rowid})", "entity", entity_ids)]

    def mention_tallies(self, entity_ids: Sequence[int]) -> list[tuple[int, str, int]]:
        """(entity id, chunk id, mentions) of ``entity_ids``, by entity and chunk id."""
        return [(int(r[0]), r[1], int(r[2])) for r in self._rows_in(
            "SELECT entity, chunk_id, count(*) FROM @mentions WHERE {} "
            f"GROUP BY entity, chunk_id ORDER BY entity, chunk_id{self.dialect.bytewise}",
            "entity", entity_ids)]

    def relation_qualifiers(self, source: str) -> list[dict[str, Any]]:
        """The qualifiers of the relations from ``source``."""
        return [json.loads(r[0]) for r in self._rows(
            "SELECT qualifiers FROM @relations WHERE source=? ORDER BY id", (source,))]

    # -- review proposals ------------------------------------------------------------------

    def add_proposal(self, row: dict[str, Any]) -> int | None:
        """Store a pending proposal (``row``: its columns but id, status and decided);
        its id, or None when one with the same key exists."""
        self._ensure_proposals()
        names = [*PROPOSAL_COLUMNS[1:-3], "key", "created"]
        insert = self.dialect.ignore(
            f"INSERT INTO @proposals (id, {quoted(names)}) SELECT coalesce(max(id), 0) + 1, "
            f"{marks(len(names))} FROM @proposals", "key")
        with self.transaction():
            return self._insert_id(self.dialect.sql(insert), [row[n] for n in names])

    def proposal_rows(self, *, status: str | None = None,
                      ids: Sequence[int] | None = None) -> list[tuple[Any, ...]]:
        """Proposals (:data:`~sleuth.store.graphs.PROPOSAL_COLUMNS`) with ``status`` or
        ``ids``, by id."""
        self._ensure_proposals()
        select = f"SELECT {quoted(PROPOSAL_COLUMNS)} FROM @proposals WHERE"
        if ids is None:
            return self._rows(f"{select} status=? ORDER BY id", (status,))
        return self._rows_in(f"{select} {{}} ORDER BY id", "id", ids)

    def set_proposal_status(self, proposal_id: int, status: str, decided: str) -> None:
        self._ensure_proposals()
        with self.transaction():
            self._run("UPDATE @proposals SET status=?, decided=? WHERE id=?",
                      (status, decided, proposal_id))

    # -- copying ---------------------------------------------------------------------------

    def table_rows(self, table: str) -> Iterator[tuple[Any, ...]]:
        """The rows of one of :data:`~sleuth.store.graphs.COPY_TABLES` in SQLite's order (by
        id, by insertion for aliases and mentions, bytewise by key), streamed; none for a
        proposals table never created. The change counter in ``meta`` stays behind."""
        if table == "proposals" and not self._has_proposals():
            return
        if table in COPY_BY_KEY:
            order = f"{COPY_TABLES[table][0]}{self.dialect.bytewise}"
        else:
            order = self.dialect.rowid if table in ("aliases", "mentions") else "id"
        where = " WHERE key <> 'generation'" if table == "meta" else ""
        yield from self._stream(self.dialect.sql(
            f"SELECT {copy_columns(table)} FROM @{table}{where} ORDER BY {order}"))

    def replace_tables(self, rows: Callable[[str], Iterable[tuple[Any, ...]]]) -> None:
        """Replace every table's rows in one transaction (see
        :meth:`~sleuth.store.graphs.GraphBackend.replace_tables`)."""
        self._ensure_proposals()
        with self.transaction():
            for statement in self.dialect.clear(COPY_TABLES, restart=True):
                self._execute(statement)
            for table, columns in COPY_TABLES.items():
                self._load(table, columns, rows(table))
            for statement in self.dialect.after_copy:
                self._execute(statement)


class _Names:
    """Entity resolution for one batch of writes: the batch's keys are looked up once; new
    entities (ids as SQLite allocates them), their acronym aliases and type upgrades are
    kept here and written by :meth:`flush`. A name resolves as it would one at a time: to
    the entity of its key, else to the entity its key is an alias of, else to a new one."""

    def __init__(self, tables: SqlGraphTables, names: Iterable[str]) -> None:
        self.tables = tables
        keys = sorted({k for k in map(norm, names) if len(k) >= 2})
        self.rows = {r[0]: (int(r[1]), r[2]) for r in tables._rows_in(
            "SELECT norm, id, type FROM @entities WHERE {}", "norm", keys)}
        self.aliases = {r[0]: int(r[1]) for r in tables._rows_in(
            "SELECT alias, entity FROM @aliases WHERE {}", "alias", keys)}
        self.next_id = int(tables._rows("SELECT coalesce(max(id), 0) FROM @entities")[0][0]) + 1
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
            if TYPE_RANK.get(row[1], 5) > TYPE_RANK.get(kind, 5):
                self.retyped.append((kind, entity))
        self.cache[key] = entity
        return entity

    def flush(self) -> None:
        tables = self.tables
        if self.new_entities:
            tables._run_many("INSERT INTO @entities (id, norm, name, type) "
                             "VALUES (?, ?, ?, ?)", self.new_entities)
        if self.new_aliases:
            tables._run_many(tables.dialect.ignore(
                "INSERT INTO @aliases (alias, entity) VALUES (?, ?)", "alias"),
                self.new_aliases)
        if self.retyped:
            tables._run_many("UPDATE @entities SET type=? WHERE id=?", self.retyped)
