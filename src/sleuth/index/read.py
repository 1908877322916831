"""The index over any Store, as tools, agents and servers read it (:class:`ReadIndex`; the
writes are :class:`sleuth.index.write.Index`).

- :class:`ReadIndex` is the read surface that tools, agents and the servers use: the
  retrieval primitives (keyword, BM25 and semantic search, reading chunks with their
  neighbours, titles, documents), the A2RAG gate (:meth:`ReadIndex.scope` over the
  documents' summaries), the knowledge graph and the sessions store, opened once and shared.
  It writes no documents (sessions go to their own store); ``index.scoped(access)`` is a
  read view that sees only what an :class:`~sleuth.text.access.Access` allows, in every search,
  read and count.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Self

import numpy as np

from sleuth.embed import Embedder, load_embedder
from sleuth.errors import IndexNotFound, StoreError
from sleuth.index.indexing import (
    identity,
    lead_summaries,
)
from sleuth.settings import Settings
from sleuth.store.base import (
    DocumentInfo,
    Store,
    StoreStats,
    open_store,
)
from sleuth.store.keyword import KeywordMode
from sleuth.store.sessions import SessionStore
from sleuth.text.access import (
    Access,
    restricted,
)
from sleuth.text.querytext import content_words
from sleuth.text.threads import configure_threads
from sleuth.text.titles import TitleIndex
from sleuth.types import Chunk, Document, Hit

if TYPE_CHECKING:
    from sleuth.graph import Graph

__all__ = ["ReadIndex", "ReadResult", "session_store"]


@dataclass(frozen=True)
class ReadResult:
    """Chunks found (requested ones first, then neighbours) and ids that do not exist."""

    chunks: list[Chunk]
    unknown: list[str]


class ReadIndex:
    """A searchable corpus, read only (see the module docstring). Thread-safe."""

    def __init__(self, store: Store, settings: Settings, embedder: Embedder | None = None):
        self.store = store
        configure_threads(settings.threads)
        store.configure_ann(settings.vectors)  # approximate-search settings
        store.configure_connections(settings.postgres)  # database timeouts
        self.settings = settings
        self._embedder = embedder
        self.access: Access | None = None  # None: everything (see scoped())
        self._base: ReadIndex | None = None  # the index a scoped view reads through
        self._titles: TitleIndex | None = None
        self._summaries: tuple[list[str], np.ndarray] | None = None
        self._graph: Graph | None = None  # the knowledge graph, opened once (see graph())
        self._sessions: Store | None = None  # settings.sessions_store, opened once
        self._seen: int | None = None  # the store generation the caches were built at

    def scoped(self, access: Access | None) -> ReadIndex:
        """A read view that sees only the documents ``access`` allows (``self`` when it
        allows everything). Views share the store, embedder and graph; closing one closes
        nothing. Write through the index itself (a view of an :class:`Index` refuses)."""
        base = self._base or self
        access = restricted(access)
        if access is None:
            return base
        view = copy.copy(base)
        view.access, view._base = access, base
        view._forget()
        return view

    def _forget(self) -> None:
        """Drop caches derived from the documents (after a write, or a view's first use)."""
        self._titles, self._summaries, self._seen = None, None, None
        if self._base is not None:
            self._graph = None

    def _fresh(self) -> None:
        """Drop the derived caches when the index changed since they were built, by this
        process or any other (the store's generation, read per call)."""
        generation = self.store.generation()
        if self._seen != generation:
            self._forget()
            self._seen = generation

    # -- opening -----------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path | None = None, *, settings: Settings | None = None,
             create: bool = False, embedder: Embedder | None = None,
             repair: bool = False) -> Self:
        """Open the index at ``path`` (default: settings.index); ``create`` builds a new one;
        ``repair`` opens a damaged one for :meth:`repair` (its manifest restored)."""
        settings = settings or Settings.load()
        location = str(path if path is not None else settings.index)
        try:
            store = open_store(location, create=False, embedder=None, repair=repair)
        except IndexNotFound:
            if not create:
                raise
            embedder = embedder or load_embedder(settings.embed)
            store = open_store(location, create=True, embedder=identity(embedder),
                               chunk_tokens=settings.chunk.tokens)
            return cls(store, settings, embedder)
        built = (store.manifest.get("embedder") or {}).get("name")
        wanted = settings.embed.model
        if built and wanted != built:
            if "model" in settings.embed.model_fields_set:
                store.close()
                raise StoreError(
                    f"{location} was built with embedder {built!r} but {wanted!r} is "
                    f"configured; drop the embedder setting to use {built!r}, or rebuild the "
                    "index into a new folder"
                )
            settings = settings.model_copy(
                update={"embed": settings.embed.model_copy(update={"model": built})}
            )
        return cls(store, settings, embedder)

    @property
    def embedder(self) -> Embedder:
        """The embedder (loaded on first semantic use; keyword search never loads it)."""
        if self._base is not None:
            return self._base.embedder
        if self._embedder is None:
            self._embedder = load_embedder(self.settings.embed)
            from sleuth.store.base import check_embedder

            check_embedder(self.store.manifest, identity(self._embedder), str(self.location))
        return self._embedder

    @property
    def location(self) -> str:
        """Where the index lives, for messages: its folder, or its store URL without the
        password."""
        return self.store.where

    @property
    def folder(self) -> Path:
        """The local folder for the index's side files (sessions, uploads, graph): the index
        folder itself, or for a database store one under ``$XDG_DATA_HOME/sleuth/stores``
        named after the store."""
        return self.store.folder

    def close(self) -> None:
        if self._base is not None:
            return  # a view owns nothing
        if self._graph is not None:
            self._graph.close()
            self._graph = None
        if self._sessions is not None:
            self._sessions.close()
            self._sessions = None
        self.store.close()

    def graph(self) -> Graph | None:
        """The index's knowledge graph (:class:`sleuth.graph.Graph`) when one was built, opened
        once and shared, so its caches (adjacency, name index) serve every question; None
        when the index has none."""
        if self._base is not None:
            self._fresh()
            if self._graph is None:
                full = self._base.graph()
                self._graph = None if full is None else \
                    full.scoped(self.store.visible_documents(self.access))
            return self._graph
        if self._graph is not None:
            self._graph.refresh()  # another process may have built or changed it
        if self._graph is None:
            from sleuth.graph import Graph

            if not Graph.exists(self):
                return None
            graph = Graph.open(self)
            if not graph.store.counts()["entities"]:
                graph.close()
                return None
            self._graph = graph
        return self._graph

    def sessions_store(self) -> Store | None:
        """The store that saves this index's sessions when ``settings.sessions_store`` names
        one (the same index on a writable server, for an index read from a replica), opened
        once and shared with the views; None: the index's own store saves them."""
        if self._base is not None:
            return self._base.sessions_store()
        location = self.settings.sessions_store
        if not location:
            return None
        if self._sessions is None:
            if "://" not in location:
                raise StoreError(f"sessions_store {location!r} is a folder; it takes the URL "
                                 "of a PostgreSQL index (a folder index keeps its sessions "
                                 "in its own folder)")
            store = open_store(location, create=False, embedder=None)
            store.configure_connections(self.settings.postgres)  # the index's timeouts
            if store.manifest.get("embedder") != self.store.manifest.get("embedder") or \
                    store.manifest.get("chunk_tokens") != self.store.manifest.get("chunk_tokens"):
                store.close()
                raise StoreError(f"sessions_store {location!r} holds another index than "
                                 f"{self.location} (embedder or chunk size differ); point it "
                                 "at the same index on a writable server")
            self._sessions = store
        return self._sessions

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stats(self) -> StoreStats:
        return self.store.stats(self.access)

    # -- retrieval ---------------------------------------------------------------------

    def keyword_search(self, keywords: Sequence[str] | str, top_k: int = 5,
                       mode: KeywordMode = "word") -> list[Hit]:
        """Chunks ranked by the A-RAG keyword score (exact, case-insensitive)."""
        if isinstance(keywords, str):
            keywords = [keywords]
        return self.store.keyword_search(list(keywords), top_k, mode, self.access)

    def semantic_search(self, query: str, top_k: int = 5,
                        doc_ids: Sequence[str] | None = None) -> list[Hit]:
        """Chunks ranked by their best sentence's cosine similarity to ``query`` (only in
        ``doc_ids`` when given)."""
        vector = self.embedder.embed([query])[0]
        return self.store.semantic_search(vector, top_k, doc_ids, self.access)

    def bm25_search(self, query: str, top_k: int = 10,
                    doc_ids: Sequence[str] | None = None) -> list[Hit]:
        """Chunks ranked by BM25 over the query's content words (the store's own ranking),
        only in ``doc_ids`` when given."""
        return self.store.bm25_search(content_words(query), top_k, doc_ids, self.access)

    def titles(self) -> TitleIndex:
        """Document titles as search terms (built on first use, rebuilt after changes)."""
        self._fresh()
        if self._titles is None:
            self._titles = TitleIndex(self.document_titles())
        return self._titles

    def document_titles(self) -> dict[str, str]:
        """``doc_id`` → title of every visible document."""
        return self.store.document_titles(self.access)

    def document_list(self, doc_ids: Sequence[str] | None = None) -> list[DocumentInfo]:
        """Every visible document (of ``doc_ids`` when given) as a document list shows it,
        by id, without reading the documents' text."""
        return self.store.document_list(self.access, doc_ids)

    def chunk_spans(self, doc_id: str) -> list[tuple[str, int, int]]:
        """``(chunk_id, start, end)`` of a visible document's chunks, in order."""
        return self.store.chunk_spans(doc_id, self.access)

    def summaries(self) -> tuple[list[str], np.ndarray]:
        """Every document's summary vector: ``(doc_ids, matrix)``. Summaries are built at
        index time; documents indexed by a version without them are summarised now, once
        (the migration of older indexes: an :class:`Index` stores them, a read-only index
        keeps them in memory)."""
        self._fresh()
        if self._summaries is None:
            doc_ids, _, matrix = self.store.summaries(self.access)
            missing = sorted(set(self.document_titles()) - set(doc_ids))
            if missing:
                doc_ids, matrix = self._backfill_summaries(missing, doc_ids, matrix)
            self._summaries = (doc_ids, matrix)
        return self._summaries

    def _backfill_summaries(self, missing: Sequence[str], doc_ids: list[str],
                            matrix: np.ndarray) -> tuple[list[str], np.ndarray]:
        """The stored ``(doc_ids, matrix)`` with the ``missing`` documents' summaries added,
        in the store's order (by document id)."""
        rows = [row for batch in lead_summaries(self.store, self.embedder, missing)
                for row in batch]
        pairs = sorted([*zip(doc_ids, matrix, strict=True),
                        *((doc_id, vector) for doc_id, _, vector in rows)],
                       key=lambda pair: pair[0])
        if not pairs:
            return [], matrix
        return [d for d, _ in pairs], np.stack([v for _, v in pairs]).astype(np.float32)

    def scope(self, question: str) -> tuple[float, str | None]:
        """The A2RAG gate's score: the question's best cosine similarity to a document
        summary, and that document (``(-1.0, None)`` for an empty index)."""
        doc_ids, matrix = self.summaries()
        if not doc_ids:
            return -1.0, None
        scores = matrix @ self.embedder.embed([question])[0]
        best = int(np.argmax(scores))
        return float(scores[best]), doc_ids[best]

    def read(self, chunk_ids: Sequence[str], adjacent: int = 0) -> ReadResult:
        """Full chunks by id. With ``adjacent`` > 0 each requested chunk comes with that many
        neighbours on each side, in document order (windows in request order, no repeats)."""
        requested = list(dict.fromkeys(chunk_ids))
        found = self.store.get_chunks(requested, self.access)
        unknown = [cid for cid in requested if cid not in found]
        out: list[Chunk] = []
        have: set[str] = set()
        for cid in requested:
            if cid not in found:
                continue
            for chunk in self._window(found[cid], adjacent):
                if chunk.chunk_id not in have:
                    have.add(chunk.chunk_id)
                    out.append(chunk)
        return ReadResult(out, unknown)

    def _window(self, chunk: Chunk, adjacent: int) -> list[Chunk]:
        before: list[Chunk] = []
        after: list[Chunk] = []
        prev_id, next_id = chunk.prev_id, chunk.next_id
        for _ in range(adjacent):
            more = self.store.get_chunks([i for i in (prev_id, next_id) if i], self.access)
            prev = more.get(prev_id) if prev_id else None
            nxt = more.get(next_id) if next_id else None
            if prev:
                before.insert(0, prev)
            if nxt:
                after.append(nxt)
            prev_id = prev.prev_id if prev else None
            next_id = nxt.next_id if nxt else None
        return [*before, chunk, *after]

    def document(self, doc_id: str) -> Document | None:
        return self.store.get_document(doc_id, self.access)


def session_store(index: ReadIndex) -> SessionStore:
    """The sessions of ``index``: those of the store ``settings.sessions_store`` names,
    else of the index's own store (files in a folder index, rows of a PostgreSQL schema)."""
    return (index.sessions_store() or index.store).sessions()
