"""The Store seam: what every index backend provides, plus a plain registry.

A store persists documents, chunks, sentences and sentence vectors, and answers the two
searches. Ranking semantics live in :mod:`sleuth.store.keyword` (exact keyword scoring) and
here (best-sentence cosine) so every backend returns the same results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from sleuth.access import DEFAULT_COLLECTION, Access
from sleuth.errors import StoreError
from sleuth.store.keyword import KeywordMode
from sleuth.types import Chunk, Document, Hit

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
class StoreStats:
    documents: int
    chunks: int
    sentences: int
    manifest: Mapping[str, Any] = field(default_factory=dict)


class Store(Protocol):
    """A persistent index backend.

    Every read takes ``access``: the caller's collections and groups (``None``: everything).
    The store applies it inside its queries, before ranking and counting, so nothing outside
    it shows: hidden chunks are absent from results, counts and statistics (BM25's document
    frequencies and lengths included), and a hidden id reads exactly like a nonexistent one.
    """

    manifest: dict[str, Any]

    def stats(self, access: Access | None = None) -> StoreStats: ...

    def document_hashes(self) -> dict[str, str]: ...

    def document_sources(self) -> dict[str, str | None]:
        """``doc_id`` → the source file it came from (``None`` when it has none)."""

    def document_access(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """``doc_id`` → (collection, groups), for every document."""

    def visible_documents(self, access: Access | None) -> frozenset[str] | None:
        """The ids of the documents ``access`` may read; ``None`` when it may read all."""

    def write(self, docs: Sequence[PreparedDocument]) -> None:
        """Insert or replace documents (by ``doc_id``) atomically as one batch."""

    def delete(self, doc_ids: Sequence[str]) -> None: ...

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

    def keyword_search(
        self, keywords: Sequence[str], top_k: int, mode: KeywordMode = "word",
        access: Access | None = None,
    ) -> list[Hit]: ...

    def semantic_search(self, query: np.ndarray, top_k: int,
                        doc_ids: Sequence[str] | None = None,
                        access: Access | None = None) -> list[Hit]:
        """Chunks by best-sentence cosine; ``doc_ids`` restricts the search to documents."""

    def bm25_search(self, terms: Sequence[str], top_k: int,
                    doc_ids: Sequence[str] | None = None,
                    access: Access | None = None) -> list[Hit]:
        """Chunks ranked by BM25 over ``terms`` (any term may match), only in ``doc_ids``
        when given; the snippets are the chunk's sentences holding a term. Under a
        restricting ``access`` the statistics (N, df, average length) are the visible ones."""

    def document_titles(self, access: Access | None = None) -> dict[str, str]:
        """``doc_id`` → title, for every (visible) document."""

    def chunk_spans(self, doc_id: str,
                    access: Access | None = None) -> list[tuple[str, int, int]]:
        """``(chunk_id, start, end)`` of a document's chunks, in document order."""

    def get_chunks(self, chunk_ids: Sequence[str],
                   access: Access | None = None) -> dict[str, Chunk]: ...

    def summaries(self, access: Access | None = None
                  ) -> tuple[list[str], list[str], np.ndarray]:
        """Document summaries: ``(doc_ids, texts, unit vectors)``; documents written before
        summaries existed have none (the index fills them in)."""

    def write_summaries(self, rows: Sequence[tuple[str, str, np.ndarray]]) -> None:
        """Insert or replace ``(doc_id, text, vector)`` summaries of stored documents."""

    def get_document(self, doc_id: str, access: Access | None = None) -> Document | None: ...

    def document_vectors(self, doc_id: str) -> np.ndarray:
        """A document's sentence vectors in document order (what ``copy_store`` moves)."""

    def iter_chunks(self) -> Iterator[Chunk]: ...

    def close(self) -> None: ...


StoreFactory = Callable[..., Store]
_REGISTRY: dict[str, StoreFactory] = {}


def register_store(scheme: str, factory: StoreFactory) -> None:
    """Register a backend for locations ``<scheme>://…`` (``""`` is a local folder)."""
    _REGISTRY[scheme] = factory


def open_store(location: str | Path, *, create: bool, embedder: Mapping[str, Any] | None,
               chunk_tokens: int | None = None, repair: bool = False) -> Store:
    """Open (or create) the store at ``location``; the scheme picks the backend. ``repair``:
    open a damaged index as far as its repair needs (a manifest restored from its copy)."""
    text = str(location)
    scheme = text.split("://", 1)[0] if "://" in text else ""
    if scheme == "" and "" not in _REGISTRY:
        from sleuth.store import local  # noqa: F401  (the embedded store registers itself)
    elif scheme in ("postgresql", "postgres") and scheme not in _REGISTRY:
        try:
            from sleuth.store import postgres  # noqa: F401  (registers both schemes)
        except ImportError as exc:
            raise StoreError(f"{scheme}:// indexes need {exc.name or 'the PostgreSQL driver'}"
                             ": pip install 'sleuth-rag[postgres]'") from None
    factory = _REGISTRY.get(scheme)
    if factory is None:
        known = ", ".join(sorted(s or "<folder>" for s in _REGISTRY)) or "<folder>"
        raise StoreError(f"no store backend for {scheme}:// (known: {known})")
    if repair:
        return factory(text, create=create, embedder=embedder, chunk_tokens=chunk_tokens,
                       repair=True)
    return factory(text, create=create, embedder=embedder, chunk_tokens=chunk_tokens)


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
    from sleuth.tokens import ENCODING

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


def top_chunks_by_best_sentence(
    scores: np.ndarray, chunk_of: np.ndarray, top_k: int, per_chunk: int = 3
) -> list[tuple[int, float, list[int]]]:
    """Exact chunk ranking by best sentence score.

    ``scores[i]`` is sentence row i's cosine (``-inf`` for dead rows) and ``chunk_of[i]`` its
    chunk key. Returns (chunk key, best score, rows of its top sentences) for the top chunks.
    Scanning sentences in descending score order, the first ``top_k`` distinct chunks met are
    exactly the top chunks by maximum; the candidate pool grows until it holds enough.
    """
    n = len(scores)
    pool = min(n, max(64, top_k * 16))
    while True:
        part = np.argpartition(-scores, pool - 1)[:pool] if pool < n else np.arange(n)
        order = part[np.argsort(-scores[part], kind="stable")]
        picked: dict[int, list[int]] = {}
        for row in order:
            if not np.isfinite(scores[row]):
                break
            key = int(chunk_of[row])
            if key in picked:
                if len(picked[key]) < per_chunk:
                    picked[key].append(int(row))
            elif len(picked) < top_k:
                picked[key] = [int(row)]
        if len(picked) >= top_k or pool >= n:
            return [(key, float(scores[rows[0]]), rows) for key, rows in picked.items()]
        pool = min(n, pool * 4)
