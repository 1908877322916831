"""The sentence vectors in memory: the live rows of the memory-mapped segments at one
generation (:class:`_Vectors`: exact scores, the row lookups the approximate search needs,
per-access masks), and the writing side (:class:`_HashingWriter` checksums a segment file as
it is written; :class:`_Live` copies the live rows of segments one at a time)."""

from __future__ import annotations

import hashlib
from functools import cached_property
from pathlib import Path
from typing import IO, Any

import numpy as np

from sleuth.store.local import ann
from sleuth.store.ranking import top_chunks_by_best_sentence

EXACT_SHARE = 0.2  # restrictions leaving fewer rows than this share are searched exactly


class _HashingWriter:
    """A file wrapper that hashes what is written through it."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh = fh
        self.hash = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        self.hash.update(view)
        self.size += view.nbytes
        return self.fh.write(view)


def file_digest(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


class _Live:
    """The live rows of memory-mapped segments, written as one ``.npy`` a segment at a
    time (a compaction never holds every vector in memory)."""

    def __init__(self, matrices: list[np.ndarray], keep: np.ndarray) -> None:
        self.matrices, self.keep = matrices, keep

    def save(self, out: _HashingWriter) -> None:
        dim = int(self.matrices[0].shape[1])
        header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)),
                  "fortran_order": False, "shape": (int(self.keep.sum()), dim)}
        np.lib.format.write_array_header_1_0(out, header)
        start = 0
        for matrix in self.matrices:
            rows = self.keep[start : start + len(matrix)]
            start += len(matrix)
            for first in range(0, len(matrix), ann.ADD_BATCH):
                part = np.asarray(matrix[first : first + ann.ADD_BATCH], dtype=np.float32)
                out.write(np.ascontiguousarray(part[rows[first : first + ann.ADD_BATCH]])
                          .tobytes())


class _Vectors:
    """Live sentence vectors at one generation: memory-mapped segments + row → chunk
    mapping, and the approximate index when one is in use."""

    def __init__(self, matrices: list[np.ndarray], chunk_of: np.ndarray,
                 sentence_of: np.ndarray, ann: ann.AnnIndex | None = None, *,
                 generation: int = 0, segs: tuple[int, ...] = (),
                 tail: np.ndarray | None = None) -> None:
        self.matrices = matrices
        self.offsets = np.cumsum([0] + [len(m) for m in matrices])  # first row per segment
        self.chunk_of = chunk_of  # chunk rowid per vector row, -1 when dead
        self.sentence_of = sentence_of  # sentence id per vector row
        self.generation = generation
        self.segs = segs  # the segments mapped, in row order
        self.masks: dict[str, np.ndarray] = {}  # access key → rows of visible chunks
        self.ann = ann
        # live rows the approximate index lacks (written since the last build): scored exactly
        if tail is None:
            tail = np.zeros(0, dtype=np.int64) if ann is None else np.flatnonzero(
                (chunk_of >= 0) & ~np.isin(sentence_of, ann.labels))
        self.tail = tail
        self.filters: dict[str, tuple[np.ndarray, Any]] = {}  # access key → rows, selector

    def visible(self, key: str, rows: frozenset[int]) -> np.ndarray:
        """True for the vector rows of the chunks ``rows`` (cached under ``key``)."""
        if key not in self.masks:
            wanted = np.fromiter(rows, dtype=np.int64, count=len(rows))
            self.masks[key] = np.isin(self.chunk_of, wanted)
        return self.masks[key]

    def scores(self, query: np.ndarray) -> np.ndarray:
        parts = [m @ query for m in self.matrices]
        scores = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
        scores = scores.astype(np.float32, copy=False)
        scores[self.chunk_of < 0] = -np.inf
        return scores

    def ranked(self, query: np.ndarray, top_k: int,
               allowed: np.ndarray | None) -> list[tuple[int, float, list[int]]]:
        """Exact ranking over every live row (only the ``allowed`` ones when given)."""
        scores = self.scores(query)
        if allowed is not None:
            scores[~allowed] = -np.inf
        if not np.isfinite(scores).any():
            return []
        return top_chunks_by_best_sentence(scores, self.chunk_of, top_k)

    def ranked_among(self, rows: np.ndarray, query: np.ndarray,
                     top_k: int) -> list[tuple[int, float, list[int]]]:
        """Exact ranking of the sorted live ``rows`` alone (rows as global row numbers)."""
        if not len(rows):
            return []
        scores = ann.gather(self.matrices, self.offsets, rows) @ query
        return [(key, score, [int(rows[r]) for r in found]) for key, score, found
                in top_chunks_by_best_sentence(scores, self.chunk_of[rows], top_k)]

    @cached_property
    def by_sentence(self) -> np.ndarray:
        """Rows in sentence id order."""
        return np.argsort(self.sentence_of, kind="stable")

    @cached_property
    def sorted_sentences(self) -> np.ndarray:
        """Sentence ids in order (``sentence_of[by_sentence]``)."""
        ordered: np.ndarray = self.sentence_of[self.by_sentence]
        return ordered

    @cached_property
    def sorted_chunks(self) -> np.ndarray:
        """Chunk rowids in order (``chunk_of[by_chunk]``)."""
        ordered: np.ndarray = self.chunk_of[self.by_chunk]
        return ordered

    @cached_property
    def by_chunk(self) -> np.ndarray:
        """Rows in chunk order."""
        return np.argsort(self.chunk_of, kind="stable")

    def with_siblings(self, rows: np.ndarray) -> np.ndarray:
        """Every live row of the chunks of ``rows`` (sorted): a chunk found by one sentence
        is scored by its best one."""
        keys = np.unique(self.chunk_of[rows])
        keys = keys[keys >= 0]
        ordered = self.sorted_chunks
        lo = np.searchsorted(ordered, keys, side="left")
        counts = np.searchsorted(ordered, keys, side="right") - lo
        starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
        return np.unique(self.by_chunk[starts + np.arange(int(counts.sum()))])

    def rows_of(self, sentence_ids: np.ndarray) -> np.ndarray:
        """The live rows holding ``sentence_ids`` (sorted); ids no longer stored are dropped."""
        ordered = self.sorted_sentences
        if not len(ordered):
            return np.zeros(0, dtype=np.int64)
        at = np.minimum(np.searchsorted(ordered, sentence_ids), len(ordered) - 1)
        rows = self.by_sentence[at[ordered[at] == sentence_ids]]
        return np.unique(rows[self.chunk_of[rows] >= 0])

    def filtered(self, key: str | None, allowed: np.ndarray) -> tuple[np.ndarray, Any]:
        """The live rows of ``allowed`` and a faiss selector of their sentence ids, built
        lazily (cached under an access ``key``; None: not cached)."""
        if key is not None and key in self.filters:
            return self.filters[key]
        rows = np.flatnonzero(allowed & (self.chunk_of >= 0))
        selector = None
        if len(rows) >= EXACT_SHARE * len(self.chunk_of):  # few rows are searched exactly
            selector = ann.bitmap_selector(self.sentence_of[rows])
        if key is not None:
            self.filters[key] = (rows, selector)
        return rows, selector


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
