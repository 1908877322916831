"""The knowledge graph of one index: ``graph.db`` (SQLite) beside the index's own files.

Entities are keyed by a normalised name (:func:`norm`: case, accents, punctuation and a
leading article folded), so spelling variants merge; ``aliases`` maps further variant keys
(acronyms such as "IBM" for "International Business Machines") to an entity. Mentions and
relations keep their provenance (chunk id and character span); ``extracted`` records which
chunks were processed by which extractor, so a re-build only processes new or changed
chunks and drops what came from chunks that are gone. Alias merging
(:mod:`sleuth.graph.aliases`) adds further aliases, remembers in ``checked`` which names it
has paired, and caches name embeddings in ``name_vectors`` (float32 blobs; the embedder's
name is in ``meta``). ``proposals`` holds the triples proposed for review
(:mod:`sleuth.graph.review`), created on first use.

:class:`GraphBackend` is what the graph needs of its storage; :class:`GraphStore` is the
SQLite one, :class:`sleuth.graph.pgstore.PostgresGraphStore` keeps the same tables in the
schema of a PostgreSQL index. An index's store backend says which it uses: its
``graph_tables()`` (:class:`FolderGraph` for a folder) opens, finds and drops the graph.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from sleuth.graph.extract import Extraction

GRAPH_DB = "graph.db"
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entities (
    id INTEGER PRIMARY KEY, norm TEXT NOT NULL UNIQUE, name TEXT NOT NULL, type TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS aliases (alias TEXT PRIMARY KEY, entity INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS mentions (
    entity INTEGER NOT NULL, chunk_id TEXT NOT NULL, start INTEGER NOT NULL,
    end INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS mentions_entity ON mentions (entity);
CREATE INDEX IF NOT EXISTS mentions_chunk ON mentions (chunk_id);
CREATE TABLE IF NOT EXISTS relations (
    id INTEGER PRIMARY KEY, subject INTEGER NOT NULL, relation TEXT NOT NULL,
    object INTEGER NOT NULL, qualifiers TEXT NOT NULL, chunk_id TEXT NOT NULL,
    start INTEGER NOT NULL, end INTEGER NOT NULL, source TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS relations_subject ON relations (subject);
CREATE INDEX IF NOT EXISTS relations_object ON relations (object);
CREATE INDEX IF NOT EXISTS relations_chunk ON relations (chunk_id);
CREATE TABLE IF NOT EXISTS extracted (
    chunk_id TEXT PRIMARY KEY, extractor TEXT NOT NULL, digest TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS checked (norm TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS name_vectors (text TEXT PRIMARY KEY, vector BLOB NOT NULL);
"""
PROPOSALS_SCHEMA = """
CREATE TABLE IF NOT EXISTS proposals (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, subject TEXT NOT NULL,
    relation TEXT NOT NULL, object TEXT NOT NULL, chunk_id TEXT NOT NULL,
    start INTEGER NOT NULL, end INTEGER NOT NULL, sentence TEXT NOT NULL,
    question TEXT NOT NULL, answer TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending',
    created TEXT NOT NULL, decided TEXT);
CREATE INDEX IF NOT EXISTS proposals_status ON proposals (status);
"""
PROPOSAL_COLUMNS = ("id", "subject", "relation", "object", "chunk_id", "start", "end",
                    "sentence", "question", "answer", "status", "created", "decided")
FORMAT_VERSION = 1
# Every table of a graph with its columns, as a copy between backends moves them
# (:meth:`GraphBackend.table_rows`, :meth:`GraphBackend.replace_tables`): rows by id or in
# insertion order (so entity ids, alias and mention order and the next ids come out the
# same), those of the tables in COPY_BY_KEY by their text key (bytewise).
COPY_TABLES: dict[str, tuple[str, ...]] = {
    "meta": ("key", "value"),
    "entities": ("id", "norm", "name", "type"),
    "aliases": ("alias", "entity"),
    "mentions": ("entity", "chunk_id", "start", "end"),
    "relations": ("id", "subject", "relation", "object", "qualifiers", "chunk_id", "start",
                  "end", "source"),
    "extracted": ("chunk_id", "extractor", "digest"),
    "checked": ("norm",),
    "name_vectors": ("text", "vector"),
    "proposals": ("id", "key", *PROPOSAL_COLUMNS[1:]),
}
COPY_BY_KEY = frozenset({"meta", "extracted", "checked", "name_vectors"})


def copy_columns(table: str) -> str:
    """The columns of one of :data:`COPY_TABLES`, quoted for SQL (``end`` is a keyword)."""
    return ", ".join(f'"{column}"' for column in COPY_TABLES[table])


_ARTICLE = re.compile(r"^(?:the|a|an)\s+")
_PUNCT = re.compile(r"[^\w\s]")
_TYPE_RANK = {"TITLE": 0, "PROPN": 9}  # a real NER type beats these when names merge


def norm(name: str) -> str:
    """The key entities merge on: lowercase, no accents, no punctuation, no article."""
    text = unicodedata.normalize("NFKD", name)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = _PUNCT.sub(" ", text)
    text = " ".join(text.split())
    return _ARTICLE.sub("", text)


def acronym(name: str) -> str | None:
    """"International Business Machines" → "ibm" (for names of 2+ capitalised words)."""
    words = [w for w in re.findall(r"[A-Za-z][\w'-]*", name) if w[0].isupper()]
    return "".join(w[0] for w in words).lower() if len(words) >= 2 else None


@dataclass(frozen=True)
class Entity:
    id: int
    name: str
    type: str


@dataclass(frozen=True)
class Reviewed:
    """An approved triple to insert (:meth:`GraphBackend.add_reviewed`): the relation and,
    where the chunk does not mention them yet, mentions of its two entities at
    ``subject_span`` and ``object_span``."""

    subject: str
    relation: str
    object: str
    qualifiers: dict[str, str]
    chunk_id: str
    start: int
    end: int
    source: str
    kind: str  # the type of an entity the triple introduces
    subject_span: tuple[int, int]
    object_span: tuple[int, int]


class GraphBackend(Protocol):
    """What the knowledge graph needs of its storage. Rows come back in the order SQLite
    returns them (by id, then insertion), so every backend answers every query alike."""

    @property
    def folder(self) -> Path:
        """The local folder for side files (the LLM extraction cache)."""

    def close(self) -> None: ...
    def version(self) -> int:
        """A number that changes when another process commits to the graph."""
    def transaction(self) -> AbstractContextManager[None]:
        """All writes inside commit together, or none (nestable: the outer one counts)."""
    def reset(self) -> None: ...
    def extracted(self) -> dict[str, tuple[str, str]]: ...
    def forget(self, chunk_ids: Sequence[str]) -> None: ...
    def add(self, results: Iterable[tuple[str, str, Extraction]], extractor: str,
            source: str = "extracted") -> None: ...
    def add_reviewed(self, triple: Reviewed) -> bool: ...
    def merge(self, merges: dict[int, int]) -> None: ...
    def unchecked_entities(self) -> set[int]: ...
    def mark_checked(self) -> None: ...
    def name_vectors(self, texts: Sequence[str], embedder: str) -> dict[str, np.ndarray]: ...
    def all_name_vectors(self, embedder: str) -> dict[str, np.ndarray]: ...
    def add_name_vectors(self, vectors: dict[str, np.ndarray], embedder: str) -> None: ...
    def counts(self) -> dict[str, int]: ...
    def entity(self, entity_id: int) -> Entity | None: ...
    def by_key(self, key: str) -> Entity | None: ...
    def entities(self) -> list[tuple[int, str, str, str]]: ...
    def edges(self) -> list[tuple[int, int]]: ...
    def mention_rows(self) -> list[tuple[int, str]]: ...
    def relation_rows(self) -> list[tuple[int, int, str, str]]: ...
    def extracted_chunks(self) -> list[str]: ...
    def relations_of(self, entity_id: int) -> list[dict[str, Any]]: ...
    def aliases(self) -> dict[str, int]: ...
    def mention_counts(self) -> dict[int, int]: ...
    def relation_labels(self) -> dict[str, int]: ...
    def mentions_by_entity(self) -> dict[int, list[str]]: ...
    def mentions_of(self, entity_ids: Sequence[int]) -> list[tuple[int, str]]: ...
    def mention_tallies(self, entity_ids: Sequence[int]) -> list[tuple[int, str, int]]: ...
    def relation_qualifiers(self, source: str) -> list[dict[str, Any]]: ...
    def add_proposal(self, row: dict[str, Any]) -> int | None: ...
    def proposal_rows(self, *, status: str | None = None,
                      ids: Sequence[int] | None = None) -> list[tuple[Any, ...]]: ...
    def set_proposal_status(self, proposal_id: int, status: str, decided: str) -> None: ...
    def table_rows(self, table: str) -> Iterator[tuple[Any, ...]]:
        """The rows of one of :data:`COPY_TABLES` (its columns), in the order that list
        describes."""
    def replace_tables(self, rows: Callable[[str], Iterable[tuple[Any, ...]]]) -> None:
        """Replace the whole graph, reviewed proposals included, in one transaction: each
        of :data:`COPY_TABLES` gets the rows ``rows(table)`` yields, in that order."""


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


class GraphStore:
    """Read and write access to ``graph.db``."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / GRAPH_DB
        self._proposals_ready = False
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        self.lock = threading.RLock()
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

    # -- writing -----------------------------------------------------------------------

    def reset(self) -> None:
        """Forget everything extracted (a full rebuild follows); reviewed proposals stay."""
        with self.lock:
            self.db.execute("BEGIN")
            for table in ("entities", "aliases", "mentions", "relations", "extracted",
                          "checked"):
                self.db.execute(f"DELETE FROM {table}")
            self.db.execute("COMMIT")

    def extracted(self) -> dict[str, tuple[str, str]]:
        return {r[0]: (r[1], r[2]) for r in self.db.execute("SELECT * FROM extracted")}

    def forget(self, chunk_ids: Sequence[str]) -> None:
        """Drop mentions, relations and bookkeeping of chunks (changed or deleted)."""
        with self.lock:
            self.db.execute("BEGIN")
            for start in range(0, len(chunk_ids), 900):
                part = list(chunk_ids[start : start + 900])
                marks = ",".join("?" * len(part))
                for table in ("mentions", "relations", "extracted"):
                    self.db.execute(f"DELETE FROM {table} WHERE chunk_id IN ({marks})", part)
            self.db.execute("DELETE FROM entities WHERE id NOT IN (SELECT entity FROM mentions)")
            self.db.execute("DELETE FROM aliases WHERE entity NOT IN (SELECT id FROM entities)")
            self.db.execute("DELETE FROM checked WHERE norm NOT IN (SELECT norm FROM entities)")
            self.db.execute("COMMIT")

    def add(self, results: Iterable[tuple[str, str, Extraction]], extractor: str,
            source: str = "extracted") -> None:
        """Store ``(chunk_id, digest, extraction)`` results in one transaction."""
        with self.lock:
            self.db.execute("BEGIN")
            cache: dict[str, int] = {}
            for chunk_id, digest, found in results:
                for m in found.mentions:
                    entity = self._entity(m.name, m.type, cache)
                    if entity is not None:
                        self.db.execute("INSERT INTO mentions VALUES (?, ?, ?, ?)",
                                        (entity, m.chunk_id, m.start, m.end))
                for t in found.triples:
                    subject = self._entity(t.subject, t.subject_type, cache)
                    obj = self._entity(t.object, t.object_type, cache)
                    if subject is None or obj is None or subject == obj:
                        continue
                    self.db.execute(
                        "INSERT INTO relations (subject, relation, object, qualifiers, "
                        "chunk_id, start, end, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (subject, t.relation, obj, json.dumps(t.qualifiers), t.chunk_id,
                         t.start, t.end, source))
                self.db.execute("INSERT OR REPLACE INTO extracted VALUES (?, ?, ?)",
                                (chunk_id, extractor, digest))
            self.db.execute("COMMIT")

    def _entity(self, name: str, kind: str, cache: dict[str, int]) -> int | None:
        key = norm(name)
        if not key or len(key) < 2:
            return None
        if key in cache:
            return cache[key]
        row = self.db.execute("SELECT id, type FROM entities WHERE norm=?", (key,)).fetchone()
        if row is None:
            alias = self.db.execute("SELECT entity FROM aliases WHERE alias=?",
                                    (key,)).fetchone()
            if alias is not None:
                cache[key] = int(alias[0])
                return cache[key]
            entity = int(self.db.execute(
                "INSERT INTO entities (norm, name, type) VALUES (?, ?, ?)",
                (key, name.strip(), kind)).lastrowid or 0)
            short = acronym(name)
            if short and short != key:
                self.db.execute("INSERT OR IGNORE INTO aliases VALUES (?, ?)", (short, entity))
        else:
            entity = int(row[0])
            if _TYPE_RANK.get(row[1], 5) > _TYPE_RANK.get(kind, 5):
                self.db.execute("UPDATE entities SET type=? WHERE id=?", (kind, entity))
        cache[key] = entity
        return entity

    def add_reviewed(self, triple: Reviewed) -> bool:
        """Insert an approved triple (see :class:`Reviewed`); False when its subject and
        object are not two distinct entities (nothing is written then)."""
        cache: dict[str, int] = {}
        with self.transaction():
            subject = self._entity(triple.subject, triple.kind, cache)
            obj = self._entity(triple.object, triple.kind, cache)
            if subject is None or obj is None or subject == obj:
                return False
            self.db.execute(
                "INSERT INTO relations (subject, relation, object, qualifiers, chunk_id, start, "
                "end, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (subject, triple.relation, obj, json.dumps(triple.qualifiers), triple.chunk_id,
                 triple.start, triple.end, triple.source))
            for entity, (start, end) in ((subject, triple.subject_span),
                                         (obj, triple.object_span)):
                if self.db.execute("SELECT 1 FROM mentions WHERE entity=? AND chunk_id=?",
                                   (entity, triple.chunk_id)).fetchone() is None:
                    self.db.execute("INSERT INTO mentions VALUES (?, ?, ?, ?)",
                                    (entity, triple.chunk_id, start, end))
        return True

    def merge(self, merges: dict[int, int]) -> None:
        """Fold each entity ``drop`` into ``keep`` (``{drop: keep}``, ``keep`` never itself
        dropped) in one transaction: mentions, relations and aliases move over, the dropped
        name becomes an alias, a better type is kept, and self-loops go."""
        if not merges:
            return
        pairs = [(keep, drop) for drop, keep in merges.items()]
        with self.lock:
            self.db.execute("BEGIN")
            self.db.executemany("UPDATE mentions SET entity=? WHERE entity=?", pairs)
            self.db.executemany("UPDATE relations SET subject=? WHERE subject=?", pairs)
            self.db.executemany("UPDATE relations SET object=? WHERE object=?", pairs)
            self.db.executemany("UPDATE aliases SET entity=? WHERE entity=?", pairs)
            self.db.executemany(
                "INSERT OR REPLACE INTO aliases SELECT norm, ? FROM entities WHERE id=?", pairs)
            types = dict(self.db.execute("SELECT id, type FROM entities").fetchall())
            for keep, drop in pairs:
                if _TYPE_RANK.get(types[keep], 5) > _TYPE_RANK.get(types[drop], 5):
                    types[keep] = types[drop]
                    self.db.execute("UPDATE entities SET type=? WHERE id=?", (types[keep], keep))
            self.db.executemany("DELETE FROM entities WHERE id=?", [(d,) for d in merges])
            self.db.execute("DELETE FROM relations WHERE subject=object")
            self.db.execute("COMMIT")

    def unchecked_entities(self) -> set[int]:
        """Entities alias merging has not paired yet."""
        return {int(r[0]) for r in self.db.execute(
            "SELECT id FROM entities WHERE norm NOT IN (SELECT norm FROM checked)")}

    def mark_checked(self) -> None:
        with self.lock:
            self.db.execute("INSERT OR IGNORE INTO checked SELECT norm FROM entities")

    def name_vectors(self, texts: Sequence[str], embedder: str) -> dict[str, np.ndarray]:
        """Cached unit vectors of ``texts`` made by ``embedder`` (others are forgotten)."""
        row = self.db.execute("SELECT value FROM meta WHERE key='name_vectors'").fetchone()
        if row is None or row[0] != embedder:
            with self.lock:
                self.db.execute("DELETE FROM name_vectors")
                self.db.execute("INSERT OR REPLACE INTO meta VALUES ('name_vectors', ?)",
                                (embedder,))
            return {}
        out: dict[str, np.ndarray] = {}
        texts = list(texts)
        for start in range(0, len(texts), 900):
            part = texts[start : start + 900]
            for text, blob in self.db.execute(
                    "SELECT text, vector FROM name_vectors WHERE text IN "
                    f"({','.join('?' * len(part))})", part):
                out[text] = np.frombuffer(blob, dtype=np.float32)
        return out

    def all_name_vectors(self, embedder: str) -> dict[str, np.ndarray]:
        """Every cached name vector made by ``embedder``."""
        row = self.db.execute("SELECT value FROM meta WHERE key='name_vectors'").fetchone()
        if row is None or row[0] != embedder:
            return {}
        return {text: np.frombuffer(blob, dtype=np.float32)
                for text, blob in self.db.execute("SELECT text, vector FROM name_vectors")}

    def add_name_vectors(self, vectors: dict[str, np.ndarray], embedder: str) -> None:
        with self.lock:
            self.db.execute("BEGIN")
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('name_vectors', ?)",
                            (embedder,))
            self.db.executemany(
                "INSERT OR REPLACE INTO name_vectors VALUES (?, ?)",
                [(t, np.asarray(v, dtype=np.float32).tobytes()) for t, v in vectors.items()])
            self.db.execute("COMMIT")

    # -- reading -----------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        return {table: self.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("entities", "relations", "mentions", "extracted")}

    def entity(self, entity_id: int) -> Entity | None:
        row = self.db.execute("SELECT id, name, type FROM entities WHERE id=?",
                              (entity_id,)).fetchone()
        return Entity(*row) if row else None

    def by_key(self, key: str) -> Entity | None:
        row = self.db.execute("SELECT id, name, type FROM entities WHERE norm=?",
                              (key,)).fetchone()
        if row is None:
            alias = self.db.execute(
                "SELECT e.id, e.name, e.type FROM aliases a JOIN entities e ON e.id=a.entity "
                "WHERE a.alias=?", (key,)).fetchone()
            return Entity(*alias) if alias else None
        return Entity(*row)

    def entities(self) -> list[tuple[int, str, str, str]]:
        return [(r[0], r[1], r[2], r[3]) for r in
                self.db.execute("SELECT id, norm, name, type FROM entities")]

    def edges(self) -> list[tuple[int, int]]:
        return [(r[0], r[1]) for r in self.db.execute("SELECT subject, object FROM relations")]

    def mention_rows(self) -> list[tuple[int, str]]:
        """(entity id, chunk id) of every mention of a stored entity."""
        return [(r[0], r[1]) for r in self.db.execute(
            "SELECT m.entity, m.chunk_id FROM mentions m JOIN entities e ON e.id=m.entity")]

    def relation_rows(self) -> list[tuple[int, int, str, str]]:
        """(subject id, object id, label, chunk id) of every relation between stored
        entities."""
        return [(r[0], r[1], r[2], r[3]) for r in self.db.execute(
            "SELECT r.subject, r.object, r.relation, r.chunk_id FROM relations r "
            "JOIN entities s ON s.id=r.subject JOIN entities o ON o.id=r.object")]

    def extracted_chunks(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT chunk_id FROM extracted")]

    def relations_of(self, entity_id: int) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT r.subject, r.relation, r.object, r.qualifiers, r.chunk_id, r.start, r.end, "
            "s.name, o.name, s.type, o.type FROM relations r JOIN entities s ON s.id=r.subject "
            "JOIN entities o ON o.id=r.object WHERE r.subject=? OR r.object=?",
            (entity_id, entity_id)).fetchall()
        return [{"subject_id": r[0], "relation": r[1], "object_id": r[2],
                 "qualifiers": json.loads(r[3]), "chunk_id": r[4], "start": r[5], "end": r[6],
                 "subject": r[7], "object": r[8], "subject_type": r[9], "object_type": r[10]}
                for r in rows]

    def aliases(self) -> dict[str, int]:
        """Alias key → entity id."""
        return {r[0]: int(r[1]) for r in self.db.execute("SELECT alias, entity FROM aliases")}

    def mention_counts(self) -> dict[int, int]:
        return {int(r[0]): int(r[1]) for r in self.db.execute(
            "SELECT entity, count(*) FROM mentions GROUP BY entity")}

    def relation_labels(self) -> dict[str, int]:
        """Each distinct relation label and how many relations carry it."""
        return {r[0]: int(r[1]) for r in self.db.execute(
            "SELECT relation, count(*) FROM relations GROUP BY relation")}

    def mentions_by_entity(self) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for entity, chunk_id in self.db.execute(
                "SELECT DISTINCT entity, chunk_id FROM mentions"):
            out.setdefault(entity, []).append(chunk_id)
        return out

    def mentions_of(self, entity_ids: Sequence[int]) -> list[tuple[int, str]]:
        """Distinct (entity id, chunk id) mentions of ``entity_ids``, by entity."""
        out: list[tuple[int, str]] = []
        for start in range(0, len(entity_ids), 900):
            part = list(entity_ids[start : start + 900])
            out += [(int(r[0]), r[1]) for r in self.db.execute(
                "SELECT DISTINCT entity, chunk_id FROM mentions WHERE entity IN "
                f"({','.join('?' * len(part))})", part)]
        return out

    def mention_tallies(self, entity_ids: Sequence[int]) -> list[tuple[int, str, int]]:
        """(entity id, chunk id, mentions) of ``entity_ids``, by entity and chunk id."""
        out: list[tuple[int, str, int]] = []
        for start in range(0, len(entity_ids), 900):
            part = list(entity_ids[start : start + 900])
            out += [(int(r[0]), r[1], int(r[2])) for r in self.db.execute(
                "SELECT entity, chunk_id, count(*) FROM mentions WHERE entity IN "
                f"({','.join('?' * len(part))}) GROUP BY entity, chunk_id", part)]
        return out

    def relation_qualifiers(self, source: str) -> list[dict[str, Any]]:
        """The qualifiers of the relations from ``source``."""
        return [json.loads(q) for (q,) in self.db.execute(
            "SELECT qualifiers FROM relations WHERE source=?", (source,))]

    # -- review proposals --------------------------------------------------------------

    def _proposals(self) -> None:
        if not self._proposals_ready:
            with self.lock:
                self.db.executescript(PROPOSALS_SCHEMA)
            self._proposals_ready = True

    def add_proposal(self, row: dict[str, Any]) -> int | None:
        """Store a pending proposal (``row``: its columns but id, status and decided);
        its id, or None when one with the same key exists."""
        self._proposals()
        names = [*PROPOSAL_COLUMNS[1:-3], "key", "created"]
        with self.lock:
            cursor = self.db.execute(
                f"INSERT OR IGNORE INTO proposals ({', '.join(names)}) VALUES "
                f"({', '.join('?' * len(names))})", [row[n] for n in names])
        return int(cursor.lastrowid or 0) if cursor.rowcount else None

    def proposal_rows(self, *, status: str | None = None,
                      ids: Sequence[int] | None = None) -> list[tuple[Any, ...]]:
        """Proposals (:data:`PROPOSAL_COLUMNS`) with ``status`` (by id) or ``ids``."""
        self._proposals()
        columns = ", ".join(PROPOSAL_COLUMNS)
        if ids is None:
            return list(self.db.execute(
                f"SELECT {columns} FROM proposals WHERE status=? ORDER BY id", (status,)))
        out: list[tuple[Any, ...]] = []
        for start in range(0, len(ids), 900):
            part = list(ids[start : start + 900])
            out += self.db.execute(f"SELECT {columns} FROM proposals WHERE id IN "
                                   f"({','.join('?' * len(part))})", part).fetchall()
        return out

    def set_proposal_status(self, proposal_id: int, status: str, decided: str) -> None:
        self._proposals()
        with self.lock:
            self.db.execute("UPDATE proposals SET status=?, decided=? WHERE id=?",
                            (status, decided, proposal_id))

    # -- copying -------------------------------------------------------------------------

    def table_rows(self, table: str) -> Iterator[tuple[Any, ...]]:
        """The rows of one of :data:`COPY_TABLES` in their order (rowid, or the key); none
        for a proposals table never created."""
        if table == "proposals" and self.db.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'proposals'").fetchone() is None:
            return
        order = COPY_TABLES[table][0] if table in COPY_BY_KEY else "rowid"
        yield from self.db.execute(f"SELECT {copy_columns(table)} FROM {table} ORDER BY {order}")

    def replace_tables(self, rows: Callable[[str], Iterable[tuple[Any, ...]]]) -> None:
        """Replace every table's rows (see :meth:`GraphBackend.replace_tables`)."""
        self._proposals()
        with self.transaction():
            for table, columns in COPY_TABLES.items():
                self.db.execute(f"DELETE FROM {table}")
                self.db.executemany(f"INSERT INTO {table} ({copy_columns(table)}) "
                                    f"VALUES ({', '.join('?' * len(columns))})", rows(table))
