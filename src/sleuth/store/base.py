"""The Store seam: what an index backend provides, and the registry that finds it.

A backend persists documents, chunks, sentences and sentence vectors and answers the
searches. It provides small capability Protocols (:class:`Documents`, :class:`Catalog`,
:class:`KeywordSearch`, :class:`Vectors`, :class:`Builds`) and says where its graph
(:class:`GraphTables`), its sessions (:class:`~sleuth.store.sessions.SessionStore`) and its
side files live; :class:`Store` is all of them. The ranking semantics (exact keyword scores,
BM25, best-sentence cosine, what an access may read) are written once in
:mod:`sleuth.store.ranking` and :mod:`sleuth.store.keyword`, so every backend returns the
same results.

Backends register under a URL scheme (:func:`register_backend`, or the entry point group
``sleuth.backends`` of an installed package); :func:`open_store` picks one by the scheme of
a location. The built-ins register below exactly so, by module path: the PostgreSQL driver
is imported only when a ``postgresql://`` index is opened.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from sleuth.errors import StoreError
from sleuth.plugins import BACKENDS, entries
from sleuth.store.keyword import KeywordMode
from sleuth.store.ranking import (  # re-exported from its earlier home
    top_chunks_by_best_sentence as top_chunks_by_best_sentence,
)
from sleuth.store.sessions import SessionStore
from sleuth.text.access import DEFAULT_COLLECTION, Access
from sleuth.types import Chunk, Document, Hit

if TYPE_CHECKING:
    from sleuth.settings import PostgresSettings, VectorSettings
    from sleuth.store.graphs import GraphBackend


FORMAT = "sleuth-index"
FORMAT_VERSION = 3  # 2: documents carry a collection and access groups; chunks a word count
# 3: (embedded store) checksums, leases, the generation (several processes, one index)
OLDEST_MIGRATABLE = 1  # older formats are refused; 1 and 2 are migrated in place when opened


PARTIAL = "partial:"  # the hash of a document whose last part is not stored yet


@dataclass(frozen=True)
class PreparedDocument:
    """A document ready to store: its chunks and one unit vector per sentence (chunk order).

    A long document is stored in parts, each its own transaction: the part that ``opens``
    it replaces any earlier version and stores the document row with the hash
    ``PARTIAL + content_hash``; later parts add their chunks; the part that ``closes`` it
    sets the real hash. An interrupted document is resumed after its stored chunks."""

    document: Document
    content_hash: str
    chunks: Sequence[Chunk]
    vectors: np.ndarray
    summary: str = ""  # a short summary of the document (the A2RAG gate compares to it)
    summary_vector: np.ndarray | None = None
    collection: str = DEFAULT_COLLECTION  # the tenant it belongs to
    groups: tuple[str, ...] = ()  # access groups; none: open to the whole collection
    opens: bool = True  # this part starts the document (the whole document: both)
    closes: bool = True  # this part completes it

    @property
    def stored_hash(self) -> str:
        """The hash the document row carries once this part is stored."""
        return self.content_hash if self.closes else PARTIAL + self.content_hash


@dataclass(frozen=True)
class Problem:
    """One damaged part of an index: which, what is wrong, and the command that repairs it."""

    part: str
    problem: str
    repair: str


@dataclass
class RepairReport:
    """What a repair did."""

    segments_dropped: int = 0  # damaged vector segments unregistered
    sentences_embedded: int = 0  # sentences whose vectors were missing, embedded again
    ann_rebuilt: bool = False
    manifest_restored: bool = False


@dataclass(frozen=True)
class DocumentInfo:
    """What a document list shows of one document, read without its text."""

    doc_id: str
    title: str
    type: str  # the DocType it was read as
    path: str | None  # the source file
    collection: str
    groups: tuple[str, ...]
    chunks: int
    pages: int | None  # None: an unpaged document


@dataclass(frozen=True)
class StoreStats:
    documents: int
    chunks: int
    sentences: int
    manifest: Mapping[str, Any] = field(default_factory=dict)


# -- capabilities: what a backend provides, each a small Protocol ----------------------
#
# Every read takes ``access``: the caller's collections and groups (``None``: everything).
# A backend applies it inside its queries, before ranking and counting, so nothing outside
# it shows: hidden chunks are absent from results, counts and statistics (BM25's document
# frequencies and lengths included), and a hidden id reads exactly like a nonexistent one.
# Nor may the time a search takes say what hidden chunks hold: a keyword or BM25 search
# reads, counts and matches the text of visible chunks only, and hidden ones cost at most
# the index's own step over them (tests/test_hostile_timing.py, bench/timing_channel.py).
# :func:`sleuth.store.ranking.visible_documents` says what an access may read.


class Documents(Protocol):
    """Documents and chunks, read back as they were written."""

    def get_document(self, doc_id: str, access: Access | None = None) -> Document | None: ...

    def get_chunks(self, chunk_ids: Sequence[str],
                   access: Access | None = None) -> dict[str, Chunk]: ...

    def chunk_spans(self, doc_id: str,
                    access: Access | None = None) -> list[tuple[str, int, int]]:
        """``(chunk_id, start, end)`` of a document's chunks, in document order."""

    def document_titles(self, access: Access | None = None) -> dict[str, str]:
        """``doc_id`` → title, for every (visible) document."""

    def document_list(self, access: Access | None = None,
                      doc_ids: Sequence[str] | None = None) -> list[DocumentInfo]:
        """Every (visible) document's :class:`DocumentInfo` (only of ``doc_ids`` when
        given), by ``doc_id``, without reading any document's text."""

    def visible_documents(self, access: Access | None) -> frozenset[str] | None:
        """The ids of the documents ``access`` may read; ``None`` when it may read all."""

    def iter_chunks(self) -> Iterator[Chunk]: ...

    def stats(self, access: Access | None = None) -> StoreStats: ...


class Catalog(Protocol):
    """What the indexer keeps per document: it writes and deletes whole documents and
    compares hashes, sources and owners with the files it reads."""

    def write(self, docs: Sequence[PreparedDocument]) -> None:
        """Insert or replace documents (by ``doc_id``) atomically as one batch."""

    def delete(self, doc_ids: Sequence[str]) -> None: ...

    def document_hashes(self) -> dict[str, str]: ...

    def document_sources(self) -> dict[str, str | None]:
        """``doc_id`` → the source file it came from (``None`` when it has none)."""

    def document_access(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """``doc_id`` → (collection, groups), for every document."""


class KeywordSearch(Protocol):
    """Keyword candidates (postings), scored by :mod:`sleuth.store.ranking`."""

    def keyword_search(self, keywords: Sequence[str], top_k: int, mode: KeywordMode = "word",
                       access: Access | None = None) -> list[Hit]:
        """Chunks by exact keyword counts: equal to :func:`sleuth.store.keyword.brute_force`
        over the visible chunks."""

    def bm25_search(self, terms: Sequence[str], top_k: int,
                    doc_ids: Sequence[str] | None = None,
                    access: Access | None = None) -> list[Hit]:
        """Chunks ranked by BM25 over ``terms`` (any term may match), only in ``doc_ids``
        when given; the snippets are the chunk's sentences holding a term. Under a
        restricting ``access`` the statistics (N, df, average length) are the visible ones."""


class Vectors(Protocol):
    """Sentence vectors and document summaries."""

    def semantic_search(self, query: np.ndarray, top_k: int,
                        doc_ids: Sequence[str] | None = None,
                        access: Access | None = None) -> list[Hit]:
        """Chunks by best-sentence cosine (:func:`sleuth.store.ranking.top_chunks_by_best_
        sentence`); ``doc_ids`` restricts the search to documents."""

    def document_vectors(self, doc_id: str) -> np.ndarray:
        """A document's sentence vectors in document order (what ``copy_store`` moves)."""

    def summaries(self, access: Access | None = None
                  ) -> tuple[list[str], list[str], np.ndarray]:
        """Document summaries: ``(doc_ids, texts, unit vectors)``; documents written before
        summaries existed have none (the index fills them in)."""

    def write_summaries(self, rows: Sequence[tuple[str, str, np.ndarray]]) -> None:
        """Insert or replace ``(doc_id, text, vector)`` summaries of stored documents."""

    def configure_ann(self, settings: VectorSettings) -> None:
        """Use ``settings`` for approximate search (a backend without one ignores them)."""

    def configure_connections(self, settings: PostgresSettings) -> None:
        """Hold database connections to ``settings`` (a backend without any ignores them)."""

    def warm(self) -> None:
        """Load now what the first search would load (a server calls it in the background
        when it starts, so no request waits for it); nothing where that is cheap."""


class Builds(Protocol):
    """Build bookkeeping and integrity, for several processes on one index."""

    def begin_build(self, command: str = "") -> None:
        """Mark a build as running (an interrupted one is resumed by the next build);
        ``command`` is what resumes it."""

    def stop_build(self) -> None:
        """The build this process began failed; it shows as interrupted."""

    def finish_build(self) -> None:
        """Compact and mark the index consistent."""

    def build_status(self) -> dict[str, Any]:
        """``{"state": "empty" | "running" | "interrupted" | "complete", "running": [...],
        "interrupted": [{"command", "started", ...}], ...}``."""

    def generation(self) -> int:
        """A number that changes with every commit that changes what a read returns, by
        any process (cheap: callers check it per request to drop derived caches)."""

    def check(self, full: bool = True) -> list[Problem]:
        """The damaged parts of the index (empty: intact); ``full`` adds the slow checks."""

    def repair(self, embed: Callable[[list[tuple[str, str]]], np.ndarray],
               on_progress: Callable[[int, int], None] | None = None) -> RepairReport:
        """Repair what :meth:`check` finds that the stored text can restore (sentence
        vectors, through ``embed`` of ``(title, sentence)`` pairs)."""


class GraphTables(Protocol):
    """Where a backend keeps the knowledge graph (``graph.db`` in a folder, tables in a
    database)."""

    def exists(self) -> bool:
        """Whether a graph is stored (possibly empty), without creating one."""

    def open(self) -> GraphBackend:
        """The graph's storage, created empty when missing."""

    def drop(self) -> None:
        """Delete the stored graph, reviewed proposals included."""


class Store(Documents, Catalog, KeywordSearch, Vectors, Builds, Protocol):
    """A persistent index backend: the capabilities above, plus where its side files, its
    graph and its sessions live. :func:`open_store` makes one from a location."""

    manifest: dict[str, Any]

    @property
    def where(self) -> str:
        """The index, for messages: its folder, or its URL without the password."""

    @property
    def folder(self) -> Path:
        """The side folder: a local folder for files kept beside the index (uploads, caches;
        a folder index's graph and sessions)."""

    def graph_tables(self) -> GraphTables: ...

    def sessions(self) -> SessionStore:
        """The saved sessions of the index (:mod:`sleuth.store.sessions`)."""

    def close(self) -> None: ...


def data_folder(where: str) -> Path:
    """The side folder of an index that lives outside the file system (``where`` names it):
    one under ``$XDG_DATA_HOME/sleuth/stores`` named after it."""
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return data / "sleuth" / "stores" / hashlib.sha256(where.encode()).hexdigest()[:16]


def check_manifest(manifest: Mapping[str, Any], where: str) -> None:
    """Refuse indexes this version cannot read, with a message that says what to do."""
    if manifest.get("format") != FORMAT:
        raise StoreError(f"{where} is not a Sleuth index (no {FORMAT!r} manifest)")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise StoreError(
            f"{where} was written in index format {version!r}, newer than this Sleuth reads "
            f"({FORMAT_VERSION}); upgrade sleuth-rag or rebuild the index"
        )
    if version < OLDEST_MIGRATABLE:
        raise StoreError(
            f"{where} uses index format {version}, which has no migration to {FORMAT_VERSION}; "
            "rebuild it with `sleuth index --rebuild`"
        )


def check_vectors(docs: Sequence[PreparedDocument]) -> None:
    """Refuse a batch where a document's vectors do not match its sentences one to one."""
    for d in docs:
        expected = sum(len(c.sentences) for c in d.chunks)
        if len(d.vectors) != expected:
            raise StoreError(f"{d.document.doc_id}: {len(d.vectors)} vectors for "
                             f"{expected} sentences")


def new_manifest(embedder: Mapping[str, Any], chunk_tokens: int) -> dict[str, Any]:
    """The manifest of a new, empty index (every store keeps this same JSON)."""
    from sleuth._version import __version__
    from sleuth.text.tokens import ENCODING

    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "sleuth_version": __version__,
        "created": now(),
        "embedder": dict(embedder),
        "chunk_tokens": chunk_tokens,
        "tokenizer": ENCODING,
        "build": {"state": "empty"},
    }


def now() -> str:
    """The current UTC time, to the second (manifest timestamps)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def check_embedder(manifest: Mapping[str, Any], embedder: Mapping[str, Any] | None,
                   where: str) -> None:
    built = manifest.get("embedder") or {}
    if embedder is None or not built:
        return
    if built.get("name") != embedder.get("name") or built.get("dim") != embedder.get("dim"):
        raise StoreError(
            f"{where} was built with embedder {built.get('name')!r} ({built.get('dim')}-d) but "
            f"{embedder.get('name')!r} ({embedder.get('dim')}-d) is configured; query it with "
            f"--embedder {built.get('name')} or rebuild the index"
        )


# -- the registry: URL scheme → backend -------------------------------------------------

StoreFactory = Callable[..., Store]
_REGISTRY: dict[str, StoreFactory | str] = {}
# scheme → what to pip install when its import fails
_INSTALL: dict[str, str] = {"postgresql": "'sleuth-rag[postgres]'",
                            "postgres": "'sleuth-rag[postgres]'"}
_discovered = False


def register_backend(scheme: str, factory: StoreFactory | str, *, install: str = "") -> None:
    """Open locations ``<scheme>://…`` (``""``: a local folder) with ``factory``, called as
    ``factory(location, create=, embedder=, chunk_tokens=)`` (and ``repair=True`` to open a
    damaged index for its repair). ``factory`` may be a ``"module:attribute"`` path, imported
    when an index of its scheme is first opened, so a backend's dependencies stay optional;
    ``install`` names what provides them. A package registers one the same way through the
    entry point group ``sleuth.backends`` (name: the scheme; value: the path)."""
    _REGISTRY[scheme] = factory
    if install:
        _INSTALL[scheme] = install


register_store = register_backend  # the earlier name


def backend_schemes() -> list[str]:
    """The registered schemes (``""``: the folder store), entry points included."""
    _discover()
    return sorted(_REGISTRY)


def _discover() -> None:
    """Register the built-in backends and those of installed packages through
    :mod:`sleuth.plugins`, once (a registration in-process wins; an installed package's
    entry replaces a built-in of the same scheme)."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    found: dict[str, str] = {}
    for entry in entries(BACKENDS):
        found[entry.name] = entry.value
    for scheme, value in found.items():
        _REGISTRY.setdefault(scheme, value)


def _factory(scheme: str) -> StoreFactory:
    found = _REGISTRY.get(scheme)
    if found is None:
        _discover()
        found = _REGISTRY.get(scheme)
    if found is None:
        known = ", ".join(f"{s}://" if s else "<folder>" for s in backend_schemes())
        raise StoreError(f"no store backend for {scheme}:// (known: {known})")
    if not isinstance(found, str):
        return found
    module, _, name = found.partition(":")
    try:
        factory: StoreFactory = getattr(import_module(module), name)
    except ImportError as exc:
        install = _INSTALL.get(scheme) or f"the package that provides {scheme}://"
        raise StoreError(f"{scheme}:// indexes need {exc.name or module}: "
                         f"pip install {install}") from None
    return factory


def open_store(location: str | Path, *, create: bool, embedder: Mapping[str, Any] | None,
               chunk_tokens: int | None = None, repair: bool = False) -> Store:
    """Open (or create) the store at ``location``; the scheme picks the backend. ``repair``:
    open a damaged index as far as its repair needs (a manifest restored from its copy)."""
    text = str(location)
    scheme = text.split("://", 1)[0] if "://" in text else ""
    factory = _factory(scheme)
    if repair:
        return factory(text, create=create, embedder=embedder, chunk_tokens=chunk_tokens,
                       repair=True)
    return factory(text, create=create, embedder=embedder, chunk_tokens=chunk_tokens)
