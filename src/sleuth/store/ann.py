"""The optional approximate index of the embedded store's sentence vectors (faiss HNSW).

One file, ``vectors/hnsw.faiss``: an ``IndexIDMap2`` over ``IndexHNSWFlat`` with the inner
product (the vectors are unit length), labelled by **sentence id**. Sentence ids are never
reused and a sentence's vector never changes, so the file stays meaningful when segments
are compacted, rows die or new segments arrive: it only proposes candidates, and the store
re-scores every candidate exactly from its own vectors, drops labels that are no longer live
and searches the live rows the file does not hold (a build in progress) exactly. A missing,
stale or damaged file can therefore cost speed or recall but never give a wrong score or a
hidden chunk.

The file is written to a temporary name and renamed; the manifest records its size and
count (``manifest["ann"]``), and a file that does not match the record (an interrupted
build, a partial copy) is ignored until the next build rebuilds it.

``faiss`` is imported lazily (the ``ann`` extra, ``faiss-cpu``); without it searches are
exact and a warning is logged once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

FILE = "hnsw.faiss"
ADD_BATCH = 65_536  # rows copied out of the memory-mapped segments per faiss add
_warned = False  # a warning about a missing faiss was logged


def load_faiss() -> Any | None:
    """The ``faiss`` module, or None (logged once) when the ``ann`` extra is missing."""
    global _warned
    try:
        import faiss
    except ImportError:
        if not _warned:
            _warned = True
            log.warning("an HNSW index is configured but faiss is not installed "
                        "(pip install 'sleuth-rag[ann]'); semantic search stays exact")
        return None
    return faiss


@dataclass(frozen=True)
class AnnIndex:
    """A loaded HNSW index: the faiss object and the sentence ids it holds."""

    index: Any  # faiss.IndexIDMap2 over faiss.IndexHNSWFlat
    labels: np.ndarray  # sentence id per faiss row, in insertion order
    m: int  # the graph degree it was built with

    @property
    def size(self) -> int:
        return len(self.labels)

    def search(self, query: np.ndarray, k: int, allowed: Any | None = None) -> np.ndarray:
        """Labels (sentence ids) of about the ``k`` nearest vectors (search breadth efSearch
        ``k``), best first; only those in the faiss selector ``allowed`` when one is given."""
        faiss = load_faiss()
        if faiss is None or not self.size:
            return np.zeros(0, dtype=np.int64)
        # a fresh parameter object per call: faiss swaps its selector while searching
        params = faiss.SearchParametersHNSW(efSearch=k, sel=allowed)
        _, labels = self.index.search(query.reshape(1, -1), min(k, self.size), params=params)
        found: np.ndarray = labels[0]
        return found[found >= 0]

    def add(self, matrices: list[np.ndarray], rows: np.ndarray, labels: np.ndarray) -> AnnIndex:
        """This index with the vector ``rows`` (global row numbers over ``matrices``, in
        order) added under ``labels``; the faiss object is updated in place."""
        offsets = np.cumsum([0] + [len(m) for m in matrices])
        for start in range(0, len(rows), ADD_BATCH):
            part = rows[start : start + ADD_BATCH]
            self.index.add_with_ids(gather(matrices, offsets, part),
                                    np.ascontiguousarray(labels[start : start + ADD_BATCH]))
        return AnnIndex(self.index, np.concatenate([self.labels, labels]), self.m)


def gather(matrices: list[np.ndarray], offsets: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The float32 vectors of the sorted global ``rows`` (``offsets``: segment starts)."""
    segs = np.searchsorted(offsets, rows, side="right") - 1
    parts = [np.asarray(matrices[s][rows[segs == s] - offsets[s]], dtype=np.float32)
             for s in np.unique(segs)]
    dim = matrices[0].shape[1] if matrices else 0
    return np.ascontiguousarray(np.concatenate(parts) if parts
                                else np.zeros((0, dim), dtype=np.float32))


def new(dim: int, m: int) -> AnnIndex | None:
    """An empty index (None without faiss)."""
    faiss = load_faiss()
    if faiss is None:
        return None
    inner = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
    return AnnIndex(faiss.IndexIDMap2(inner), np.zeros(0, dtype=np.int64), m)


def read(path: Path, record: Mapping[str, Any] | None, dim: int) -> AnnIndex | None:
    """The index at ``path`` when it matches the manifest ``record`` and ``dim``; None when
    it is missing, damaged, stale or faiss is not installed."""
    if not record or not path.is_file() or path.stat().st_size != record.get("bytes"):
        return None
    faiss = load_faiss()
    if faiss is None:
        return None
    try:
        index = faiss.read_index(str(path))
    except (RuntimeError, OSError) as exc:  # faiss raises RuntimeError on a bad file
        log.warning("ignoring the damaged HNSW index %s (%s); searches are exact until the "
                    "next build", path, exc)
        return None
    if index.d != dim or index.ntotal != record.get("sentences") \
            or not hasattr(index, "id_map"):
        return None
    return AnnIndex(index, faiss.vector_to_array(index.id_map).astype(np.int64),
                    int(record.get("m") or 0))


def write(ann: AnnIndex, path: Path) -> dict[str, Any]:
    """Write ``ann`` to ``path`` (temporary file, then rename); the manifest record."""
    faiss = load_faiss()
    assert faiss is not None  # an AnnIndex exists only where faiss does
    tmp = path.with_name(path.name + ".tmp")
    faiss.write_index(ann.index, str(tmp))
    tmp.replace(path)
    return {"file": f"vectors/{path.name}", "sentences": ann.size, "m": ann.m,
            "bytes": path.stat().st_size}


def bitmap_selector(labels: np.ndarray) -> Any | None:
    """A faiss selector admitting exactly ``labels`` (None without faiss). The bitmap is
    attached to the selector, which must outlive the searches that use it."""
    faiss = load_faiss()
    if faiss is None:
        return None
    mask = np.zeros(int(labels.max()) + 1 if len(labels) else 1, dtype=bool)
    mask[labels] = True
    bits = np.packbits(mask, bitorder="little")
    selector = faiss.IDSelectorBitmap(len(bits), faiss.swig_ptr(bits))
    selector.bits = bits  # keep the bitmap alive as long as the selector
    return selector
