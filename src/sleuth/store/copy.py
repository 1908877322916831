"""Copy an index between stores (a local folder into PostgreSQL, one schema into another).

Every document moves with its chunks, sentence vectors, summary, collection, groups and
content hash, so nothing is embedded again and a later incremental ``add`` on the
destination sees the copied documents as unchanged. Documents are written in batches of
about ``batch_sentences`` sentences, each one transaction of the destination; documents
already in the destination under the same ids are replaced, others are left alone. The
source is read in a worker thread while the destination writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from sleuth.errors import StoreError
from sleuth.pipeline import pipelined
from sleuth.store.base import PreparedDocument, Store, check_embedder

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
