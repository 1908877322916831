"""The knowledge graph's tables, as every backend keeps them: the schema, the rows a graph is
made of (a chunk's :class:`Extraction`, an :class:`Entity`, a :class:`Reviewed` triple), the
key entities merge on (:func:`norm`) and :class:`GraphBackend`, what the graph needs of its
storage. The folder backend's tables are :mod:`sleuth.store.local.graph`, PostgreSQL's
:mod:`sleuth.store.postgres.graph`, both answering with the statements of
:mod:`sleuth.store.graphsql`; the graph as a domain is :mod:`sleuth.graph`.

Entities are keyed by a normalised name (:func:`norm`: case, accents, punctuation and a
leading article folded), so spelling variants merge; ``aliases`` maps further variant keys
(acronyms such as "IBM" for "International Business Machines") to an entity. Mentions and
relations keep their provenance (chunk id and character span); ``extracted`` records which
chunks were processed by which extractor, so a re-build only processes new or changed
chunks and drops what came from chunks that are gone. ``checked`` remembers which names
alias merging has paired, ``name_vectors`` caches name embeddings (float32 blobs; the
embedder's name is in ``meta``). ``proposals`` holds the triples proposed for review,
created on first use.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from sleuth.text.lexicon import name_key


@dataclass(frozen=True)
class Mention:
    name: str
    type: str
    chunk_id: str
    start: int  # character span in the document
    end: int


@dataclass(frozen=True)
class Triple:
    subject: str
    subject_type: str
    relation: str
    object: str
    object_type: str
    chunk_id: str
    start: int  # the sentence's character span in the document
    end: int
    qualifiers: dict[str, str] = field(default_factory=dict)


@dataclass
class Extraction:
    """What one chunk yielded."""

    mentions: list[Mention] = field(default_factory=list)
    triples: list[Triple] = field(default_factory=list)



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


TYPE_RANK = {"TITLE": 0, "PROPN": 9}  # a real NER type beats these when names merge
# The key entities merge on: lowercase, no accents, no punctuation, no article (the
# lexicon's name key; stored, so changing it means rebuilding a graph).
norm = name_key


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


