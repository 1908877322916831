"""The knowledge graph of one index: ``graph.db`` (SQLite) beside the index's own files.

Entities are keyed by a normalised name (:func:`norm`: case, accents, punctuation and a
leading article folded), so spelling variants merge; ``aliases`` maps further variant keys
(acronyms such as "IBM" for "International Business Machines") to an entity. Mentions and
relations keep their provenance (chunk id and character span); ``extracted`` records which
chunks were processed by which extractor, so a re-build only processes new or changed
chunks and drops what came from chunks that are gone. Alias merging
(:mod:`sleuth.graph.aliases`) adds further aliases, remembers in ``checked`` which names it
has paired, and caches name embeddings in ``name_vectors`` (float32 blobs; the embedder's
name is in ``meta``).
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
FORMAT_VERSION = 1
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


class GraphStore:
    """Read and write access to ``graph.db``."""

    def __init__(self, folder: str | Path) -> None:
        self.path = Path(folder) / GRAPH_DB
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
