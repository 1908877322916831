"""The optional approximate index of the embedded store's sentence vectors (faiss IVF-SQ8).

One file, ``vectors/ivf.faiss``: an ``IndexIDMap2`` over ``IndexIVFScalarQuantizer`` (8-bit
codes, inner product; the vectors are unit length), labelled by **sentence id**. The
vectors are clustered (k-means on a sample, ``nlist`` lists, about 2·√n); a search scans
the ``nprobe`` lists whose centroids are nearest to the query on their 8-bit codes (a
quarter of the float32 bytes: scanning is bound by memory bandwidth) and proposes its best
candidates, which the store re-scores exactly. On the scale bench's clustered corpus (3.9M
sentences) this reaches recall@10 0.98 at 30 ms where an HNSW graph (faiss, M 32, efSearch
800) stopped at 0.86 on a tenth of the data, and it builds 10x faster (k-means and one
assignment per vector instead of a graph search per insertion).

Sentence ids are never reused and a sentence's vector never changes, so the file stays
meaningful when segments are compacted, rows die or new segments arrive: it only proposes
candidates, and the store re-scores every candidate exactly from its own vectors, drops
labels that are no longer live and searches the live rows the file does not hold (a build
in progress) exactly. A missing, stale or damaged file can therefore cost speed or recall
but never give a wrong score or a hidden chunk.

The file is written to a temporary name and renamed; the store records its kind, size,
count and sha256 (the ``ann`` record in ``sleuth.db``), and a file that does not match the
record (an interrupted build, a partial copy, damage, the HNSW file of earlier versions) is
ignored, with a warning when damaged, until the next build or repair rebuilds it.

``faiss`` is imported lazily (the ``ann`` extra, ``faiss-cpu``); without it searches are
exact and a warning is logged once.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sleuth.text.threads import kernel_threads

log = logging.getLogger(__name__)

FILE = "ivf.faiss"
LEGACY_FILES = ("hnsw.faiss",)  # approximate indexes of earlier versions, removed at a build
KIND = "ivf-sq8"
ADD_BATCH = 65_536  # rows copied out of the memory-mapped segments per faiss add
TRAIN_PER_LIST = 40  # k-means sample: vectors per list (faiss asks for at least 39)
TRAIN_ITERATIONS = 10
MIN_LISTS = 16
PROBE_SHARE = 0.06  # lists scanned per search unless configured (recall: BENCHMARKS §12)
MIN_PROBES = 8
PARALLEL_MODE = 1  # one query's lists scanned by every core (faiss's default: one per query)
_warned = False  # a warning about a missing faiss was logged


def load_faiss() -> Any | None:
    """The ``faiss`` module, or None (logged once) when the ``ann`` extra is missing."""
    global _warned
    try:
        import faiss
    except ImportError:
        if not _warned:
            _warned = True
            log.warning("an approximate index is configured but faiss is not installed "
                        "(pip install 'sleuth-rag[ann]'); semantic search stays exact")
        return None
    return faiss


@dataclass(frozen=True)
class AnnIndex:
    """A loaded inverted-file index: the faiss object and the sentence ids it holds."""

    index: Any  # faiss.IndexIDMap2 over faiss.IndexIVFScalarQuantizer
    labels: np.ndarray  # sentence id per faiss row, in insertion order
    trained_on: int  # live sentences when its lists were trained (it is retrained later)

    @property
    def size(self) -> int:
        return len(self.labels)

    @property
    def nlist(self) -> int:
        return int(self.ivf.nlist)

    @property
    def ivf(self) -> Any:
        faiss = load_faiss()
        assert faiss is not None  # an AnnIndex exists only where faiss does
        return faiss.extract_index_ivf(self.index)

    def search(self, query: np.ndarray, k: int, nprobe: int | None = None,
               allowed: Any | None = None) -> np.ndarray:
        """Labels (sentence ids) of the ``k`` nearest vectors in the ``nprobe`` lists nearest
        to ``query`` (default: PROBE_SHARE of the lists), best first; only those in the faiss
        selector ``allowed`` when one is given."""
        faiss = load_faiss()
        if faiss is None or not self.size:
            return np.zeros(0, dtype=np.int64)
        probes = nprobe or max(MIN_PROBES, round(PROBE_SHARE * self.nlist))
        # a fresh parameter object per call: faiss swaps its selector while searching
        params = faiss.SearchParametersIVF(nprobe=min(probes, self.nlist), sel=allowed)
        with kernel_threads():
            _, labels = self.index.search(query.reshape(1, -1), min(k, self.size),
                                          params=params)
        found: np.ndarray = labels[0]
        return found[found >= 0]

    def add(self, matrices: list[np.ndarray], rows: np.ndarray, labels: np.ndarray) -> AnnIndex:
        """This index with the vector ``rows`` (global row numbers over ``matrices``, in
        order) added under ``labels``; the faiss object is updated in place."""
        offsets = np.cumsum([0] + [len(m) for m in matrices])
        for start in range(0, len(rows), ADD_BATCH):
            part = rows[start : start + ADD_BATCH]
            with kernel_threads():
                self.index.add_with_ids(gather(matrices, offsets, part),
                                        np.ascontiguousarray(labels[start : start + ADD_BATCH]))
        return AnnIndex(self.index, np.concatenate([self.labels, labels]), self.trained_on)


def lists_for(n: int, nlist: int | None = None) -> int:
    """The number of lists for ``n`` vectors: ``nlist`` or about 2·√n (at least MIN_LISTS),
    and never more than k-means can train on ``n`` (TRAIN_PER_LIST vectors per list)."""
    wanted = nlist or max(MIN_LISTS, round(2 * math.sqrt(n)))
    return max(1, min(wanted, n // TRAIN_PER_LIST))


def gather(matrices: list[np.ndarray], offsets: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The float32 vectors of the sorted global ``rows`` (``offsets``: segment starts)."""
    segs = np.searchsorted(offsets, rows, side="right") - 1
    parts = [np.asarray(matrices[s][rows[segs == s] - offsets[s]], dtype=np.float32)
             for s in np.unique(segs)]
    dim = matrices[0].shape[1] if matrices else 0
    return np.ascontiguousarray(np.concatenate(parts) if parts
                                else np.zeros((0, dim), dtype=np.float32))


def new(matrices: list[np.ndarray], rows: np.ndarray, nlist: int | None = None,
        seed: int = 0) -> AnnIndex | None:
    """An empty index whose ``nlist`` lists (default :func:`lists_for`) are trained by
    k-means on a sample of the vector ``rows`` (global row numbers over ``matrices``); None
    without faiss."""
    lists = lists_for(len(rows), nlist)
    take = min(len(rows), lists * TRAIN_PER_LIST)
    sample = np.sort(np.random.default_rng(seed).choice(rows, take, replace=False))
    offsets = np.cumsum([0] + [len(m) for m in matrices])
    return trained(gather(matrices, offsets, sample), lists, len(rows), seed)


def trained(sample: np.ndarray, lists: int, n: int, seed: int = 0) -> AnnIndex | None:
    """An empty index of ``lists`` lists trained by k-means on the float32 ``sample`` of
    ``n`` vectors (draw ``lists * TRAIN_PER_LIST`` of them); None without faiss."""
    faiss = load_faiss()
    if faiss is None:
        return None
    dim = int(sample.shape[1])
    inner = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dim), dim, lists,
                                          faiss.ScalarQuantizer.QT_8bit,
                                          faiss.METRIC_INNER_PRODUCT)
    inner.parallel_mode = PARALLEL_MODE
    inner.cp.niter = TRAIN_ITERATIONS
    inner.cp.max_points_per_centroid = TRAIN_PER_LIST
    inner.cp.seed = seed
    with kernel_threads():
        inner.train(np.ascontiguousarray(sample, dtype=np.float32))
    return AnnIndex(faiss.IndexIDMap2(inner), np.zeros(0, dtype=np.int64), n)


def to_bytes(ann: AnnIndex) -> bytes:
    """``ann`` serialised (faiss's file format), for a store that keeps it in a database."""
    faiss = load_faiss()
    assert faiss is not None  # an AnnIndex exists only where faiss does
    return bytes(faiss.serialize_index(ann.index))


def from_bytes(data: bytes, trained_on: int, dim: int) -> AnnIndex | None:
    """The index serialised in ``data`` (see :func:`to_bytes`); None when faiss is missing
    or ``data`` is not an index of ``dim``-dimensional vectors with ids."""
    faiss = load_faiss()
    if faiss is None:
        return None
    try:
        index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
    except RuntimeError as exc:  # faiss's error for bytes that are not an index
        log.warning("ignoring a damaged approximate index (%s); searches are exact until "
                    "the next build", exc)
        return None
    if index.d != dim or not hasattr(index, "id_map"):
        return None
    faiss.extract_index_ivf(index).parallel_mode = PARALLEL_MODE  # not kept in the file
    return AnnIndex(index, faiss.vector_to_array(index.id_map).astype(np.int64), trained_on)


def read(path: Path, record: Mapping[str, Any] | None, dim: int) -> AnnIndex | None:
    """The index at ``path`` when it matches the manifest ``record`` and ``dim``; None when
    it is missing, damaged, stale, of another kind or faiss is not installed."""
    try:
        if not record or record.get("kind") != KIND or path.stat().st_size != record.get("bytes"):
            return None
    except OSError:  # missing, or removed since the caller's stat by a build: searches exact
        return None
    faiss = load_faiss()
    if faiss is None:
        return None
    if record.get("sha256"):
        try:
            with path.open("rb") as fh:
                digest = hashlib.file_digest(fh, "sha256").hexdigest()
        except OSError:  # replaced or removed meanwhile by a build: searches stay exact
            return None
        if digest != record["sha256"]:
            log.warning("ignoring the damaged approximate index %s (it does not match its "
                        "checksum); searches are exact until `sleuth index --repair` "
                        "rebuilds it", path)
            return None
    try:
        index = faiss.read_index(str(path))
    except (RuntimeError, OSError) as exc:  # faiss raises RuntimeError on a bad file
        log.warning("ignoring the damaged approximate index %s (%s); searches are exact "
                    "until the next build", path, exc)
        return None
    if index.d != dim or index.ntotal != record.get("sentences") \
            or not hasattr(index, "id_map"):
        return None
    faiss.extract_index_ivf(index).parallel_mode = PARALLEL_MODE  # not kept in the file
    return AnnIndex(index, faiss.vector_to_array(index.id_map).astype(np.int64),
                    int(record.get("trained_on") or 0))


def write(ann: AnnIndex, path: Path) -> dict[str, Any]:
    """Write ``ann`` to ``path`` (temporary file, then rename); the manifest record."""
    faiss = load_faiss()
    assert faiss is not None  # an AnnIndex exists only where faiss does
    tmp = path.with_name(path.name + ".tmp")
    faiss.write_index(ann.index, str(tmp))
    with tmp.open("rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    tmp.replace(path)
    return {"file": f"vectors/{path.name}", "kind": KIND, "sentences": ann.size,
            "nlist": ann.nlist, "trained_on": ann.trained_on, "bytes": path.stat().st_size,
            "sha256": digest}


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
