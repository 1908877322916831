"""Copy an index between stores (a local folder into PostgreSQL, one schema into another).

:func:`copy_store`: every document moves with its chunks, sentence vectors, summary,
collection, groups and content hash, so nothing is embedded again and a later incremental
``add`` on the destination sees the copied documents as unchanged. Documents are written in
batches of about ``batch_sentences`` sentences, each one transaction of the destination;
documents already in the destination under the same ids are replaced, others are left
alone. The source is read in a worker thread while the destination writes.

:func:`copy_graph`: the knowledge graph, table by table in one transaction of the
destination (entity ids, aliases, name vectors and reviewed proposals included), so graph
queries answer as on the source and a later ``sleuth graph build`` extracts only chunks the
graph has not seen. A destination graph of its own is replaced only when asked.

:func:`copy_sessions`: saved sessions, each under the same owner (shared or one API key's)
and id; one already in the destination is kept. Chunk ids are the same in both indexes, so
a copied session's reference ids still resolve.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from sleuth.errors import StoreError
from sleuth.index.pipeline import pipelined
from sleuth.index.read import session_store
from sleuth.store.base import PreparedDocument, Store, check_embedder

if TYPE_CHECKING:
    from sleuth.index.write import Index

BATCH_SENTENCES = 4096

CopyProgress = Callable[[int, int], None]  # (documents copied, documents in the source)


def copy_store(src: Store, dst: Store, on_progress: CopyProgress | None = None,
               batch_sentences: int = BATCH_SENTENCES) -> int:
    """Copy every document of ``src`` into ``dst``; returns how many were copied. Both must
    use the same embedder (the destination's manifest is checked against the source's)."""
    embedder = src.manifest.get("embedder") or None
    check_embedder(dst.manifest, embedder, "the destination index")
    hashes = src.document_hashes()
    access = src.document_access()
    ids, texts, matrix = src.summaries()
    summaries = {doc_id: (text, matrix[i]) for i, (doc_id, text)
                 in enumerate(zip(ids, texts, strict=True))}
    total, copied = len(hashes), 0

    def batches() -> Iterator[list[PreparedDocument]]:
        """The source's documents with their vectors, a batch at a time (a worker thread)."""
        batch: list[PreparedDocument] = []
        sentences = 0
        for doc_id in sorted(hashes):
            document = src.get_document(doc_id)
            if document is None:  # deleted from the source meanwhile
                continue
            spans = src.chunk_spans(doc_id)
            found = src.get_chunks([chunk_id for chunk_id, _, _ in spans])
            chunks = [found[chunk_id] for chunk_id, _, _ in spans]
            vectors = src.document_vectors(doc_id)
            if len(vectors) != sum(len(c.sentences) for c in chunks):
                raise StoreError(f"{doc_id}: the source has {len(vectors)} vectors for "
                                 f"{sum(len(c.sentences) for c in chunks)} sentences")
            summary, summary_vector = summaries.get(doc_id, ("", None))
            collection, groups = access[doc_id]
            batch.append(PreparedDocument(document, hashes[doc_id], chunks, vectors, summary,
                                          summary_vector, collection, groups))
            sentences += len(vectors)
            if sentences >= batch_sentences:
                yield batch
                batch, sentences = [], 0
        if batch:
            yield batch

    dst.begin_build()
    for batch in pipelined(batches()):  # reading the source overlaps writing the destination
        dst.write(batch)
        copied += len(batch)
        if on_progress:
            on_progress(copied, total)
    dst.finish_build()
    if on_progress:
        on_progress(copied, total)
    return copied


@dataclass(frozen=True)
class GraphCopy:
    """What :func:`copy_graph` did: ``copied``; ``none`` (the source has no graph);
    ``same`` (the destination's graph already equals it); ``kept`` (the destination has
    another graph and ``replace`` was not given). ``counts``: the source graph's counts."""

    outcome: Literal["copied", "none", "same", "kept"]
    counts: dict[str, int]


def copy_graph(src: Index, dst: Index, *, replace: bool = False) -> GraphCopy:
    """Copy the knowledge graph of ``src`` into ``dst`` (see the module docstring)."""
    from sleuth.graph import Graph

    if not Graph.exists(src):
        return GraphCopy("none", {})
    had_graph = Graph.exists(dst)
    with Graph.open(src) as source, Graph.open(dst) as target:
        counts = source.counts()
        existing = _graph_rows(target.store) if had_graph else None
        if existing is not None and existing == _graph_rows(source.store):
            return GraphCopy("same", counts)
        if existing is not None and not replace and \
                (existing["entities"] or existing["proposals"]):
            return GraphCopy("kept", counts)
        target.store.replace_tables(source.store.table_rows)
    return GraphCopy("copied", counts)


def _graph_rows(store: Any) -> dict[str, int]:
    """Rows per table, and the extraction records: enough to tell a finished copy."""
    from sleuth.store.graphs import COPY_TABLES

    out: dict[str, Any] = {table: sum(1 for _ in store.table_rows(table))
                           for table in COPY_TABLES}
    out["extracted"] = store.extracted()
    return out


@dataclass(frozen=True)
class SessionCopy:
    """Sessions :func:`copy_sessions` copied, found identical, and kept in the destination
    because it holds a different session under the same owner and id."""

    copied: int
    same: int
    kept: int


def copy_sessions(src: Index, dst: Index) -> SessionCopy:
    """Copy every saved session of ``src`` (shared and per key) into ``dst``."""
    source, target = session_store(src), session_store(dst)
    copied = same = kept = 0
    for owner in source.owners():
        for summary in source.list(owner):
            data = source.load(owner, summary["id"])
            if data is None:  # deleted meanwhile
                continue
            existing = target.load(owner, summary["id"])
            if existing is None:
                target.save(owner, summary["id"], data)
                copied += 1
            elif existing == data:
                same += 1
            else:
                kept += 1
    return SessionCopy(copied, same, kept)
