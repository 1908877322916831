"""The embedded store: one folder of plain files, no server.

Layout of an index folder::

    manifest.json        format version, embedder, chunk size, build state
    sleuth.db            SQLite (WAL): documents, chunks, sentences, vector segments, counters,
                         and an FTS5 index of chunk tokens (the keyword candidates and counts)
    vectors/seg-N.npy    float32 unit sentence vectors (memory-mapped), seg-N.ids.npy row ids
    vectors/ann.faiss   optional HNSW index of the sentence vectors (see store/ann.py)

Crash safety: rows, keyword postings and the vector-segment registry change in one SQLite
transaction per batch; row ids are reserved (and committed) before anything refers to them,
and a vector segment is written before the transaction that registers it. A segment file
no transaction registered is ignored and deleted later. So an interrupted build leaves the
previous state readable and the next build resumes.

Keyword search: the FTS5 table holds the ``\\w+`` tokens of each lowercased chunk (the
``ascii`` tokenizer on space-joined tokens, so its terms are exactly those tokens). A
whole-word keyword that is a single token is counted straight from the postings
(``fts5vocab`` instances): its whole-word matches are exactly the tokens equal to it.
Phrases, substrings and keywords with punctuation take FTS5 candidates and are counted
exactly in the chunk text. Either way the result equals :func:`keyword.brute_force`.

Access control: each document row carries its collection and groups. A restricting
:class:`~sleuth.access.Access` is turned once into the set of visible chunk rows (cached per
access until the next write), and every read drops invisible rows before ranking: keyword
scores, the semantic score vector, BM25 (whose N, document frequencies and average length
are then counted over the visible chunks only), titles, summaries, spans and reads.

Semantic search is exact (every live vector scored) unless an approximate index exists (a
faiss inverted file, :mod:`sleuth.store.ann`): built by ``finish_build`` per
:class:`~sleuth.settings.VectorSettings` (from 200k sentence vectors by default), it proposes
candidate sentences that are re-scored exactly and ranked like the exact path. Restrictions
(access, ``doc_ids``) that leave under a fifth of the rows are searched exactly over those
rows; wider ones filter inside the approximate search and again after.

Migration: format 1 (no collections, groups or word counts) is upgraded in place on open.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import numpy as np

from sleuth._version import __version__
from sleuth.access import Access, decode_groups, encode_groups, restricted
from sleuth.errors import IndexNotFound, StoreError
from sleuth.settings import VectorSettings
from sleuth.store import ann
from sleuth.store import keyword as kw
from sleuth.store.base import (
    FORMAT_VERSION,
    PreparedDocument,
    StoreStats,
    check_embedder,
    check_manifest,
    check_vectors,
    new_manifest,
    now,
    register_store,
    top_chunks_by_best_sentence,
)
from sleuth.types import Chunk, Document, Hit, Sentence

MANIFEST = "manifest.json"
DB = "sleuth.db"
MAX_TOKEN_CHARS = 4096  # index and query tokens are cut to this length alike
MAX_EXPANSION = 5000  # substring terms per keyword token before falling back to a scan
MAX_BM25_WITHIN = 5000  # chunks scored by a document-restricted BM25
EXACT_SHARE = 0.2  # restrictions leaving fewer rows than this share are searched exactly
MAX_CANDIDATES = 5000  # approximate candidates asked for before a search settles exactly
REBUILD_DEAD = 0.2  # share of dead sentences in the approximate index that triggers a rebuild
RETRAIN_GROWTH = 4.0  # live sentences / sentences its lists were trained on: retrain above

SCHEMA = """
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, next INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, title TEXT NOT NULL, type TEXT NOT NULL, path TEXT,
    hash TEXT NOT NULL, metadata TEXT NOT NULL, text TEXT NOT NULL, n_chunks INTEGER NOT NULL,
    collection TEXT NOT NULL DEFAULT 'default', groups TEXT NOT NULL DEFAULT '[]');
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE, doc_id TEXT NOT NULL,
    position INTEGER NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL,
    n_tokens INTEGER NOT NULL, text TEXT NOT NULL, n_words INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_id, position);
CREATE TABLE IF NOT EXISTS sentences (
    id INTEGER PRIMARY KEY, chunk INTEGER NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS sentences_chunk ON sentences (chunk);
CREATE TABLE IF NOT EXISTS segments (seg INTEGER PRIMARY KEY, rows INTEGER NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS keyword USING fts5 (
    tokens, content='', tokenize="ascii tokenchars '_'", detail=full);
CREATE VIRTUAL TABLE IF NOT EXISTS keyword_postings USING fts5vocab (keyword, instance);
CREATE VIRTUAL TABLE IF NOT EXISTS keyword_terms USING fts5vocab (keyword, row);
CREATE TABLE IF NOT EXISTS summaries (
    doc_id TEXT PRIMARY KEY, text TEXT NOT NULL, vector BLOB NOT NULL);
"""


class _Vectors:
    """Live sentence vectors, loaded lazily: memory-mapped segments + row → chunk mapping,
    and the approximate index when one is in use."""

    def __init__(self, matrices: list[np.ndarray], chunk_of: np.ndarray,
                 sentence_of: np.ndarray, ann: ann.AnnIndex | None = None) -> None:
        self.matrices = matrices
        self.offsets = np.cumsum([0] + [len(m) for m in matrices])  # first row per segment
        self.chunk_of = chunk_of  # chunk rowid per vector row, -1 when dead
        self.sentence_of = sentence_of  # sentence id per vector row
        self.masks: dict[str, np.ndarray] = {}  # access key → rows of visible chunks
        self.ann = ann
        # live rows the approximate index lacks (written since the last build): scored exactly
        self.tail = np.zeros(0, dtype=np.int64) if ann is None else np.flatnonzero(
            (chunk_of >= 0) & ~np.isin(sentence_of, ann.labels))
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


@dataclass
class _Visible:
    """What one restricting access may see: documents, chunk rows and their totals."""

    key: str  # the access's key
    docs: frozenset[str]
    rows: frozenset[int]  # chunk rowids
    words: int  # total words of the visible chunks (BM25's average length)


class LocalStore:
    """SQLite (rows + FTS5) and memory-mapped ``.npy`` vectors in one folder."""

    def __init__(self, location: str, *, create: bool, embedder: Mapping[str, Any] | None,
                 chunk_tokens: int | None = None) -> None:
        self.root = Path(location).expanduser()
        self._lock = threading.RLock()
        manifest_path = self.root / MANIFEST
        if manifest_path.is_file():
            self.manifest = _read_json(manifest_path)
            check_manifest(self.manifest, str(self.root))
            check_embedder(self.manifest, embedder, str(self.root))
        elif create:
            if self.root.exists() and any(self.root.iterdir()):
                raise StoreError(
                    f"{self.root} exists and is not a Sleuth index; choose an empty folder"
                )
            if embedder is None:
                raise StoreError("an embedder is needed to create an index")
            self.manifest = new_manifest(embedder, chunk_tokens or 1000)
            self.root.mkdir(parents=True, exist_ok=True)
            (self.root / "vectors").mkdir(exist_ok=True)
            self._save_manifest()
        else:
            raise IndexNotFound(
                f"no Sleuth index at {self.root}; build one with `sleuth index PATH --index "
                f"{self.root}`"
            )
        self.db = sqlite3.connect(self.root / DB, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        self._vectors: _Vectors | None = None
        self._visible: dict[str, _Visible] = {}
        self._vector_settings = VectorSettings()
        self._ann: tuple[tuple[int, int], ann.AnnIndex | None] | None = None  # file stamp
        if self.manifest.get("format_version") == 1:
            self._migrate_from_1()

    def _migrate_from_1(self) -> None:
        """Format 1 → 2: add documents' collection and groups, chunks' word counts."""
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                columns = {r[1] for r in self.db.execute("PRAGMA table_info(documents)")}
                if "collection" not in columns:
                    self.db.execute("ALTER TABLE documents ADD COLUMN collection TEXT NOT NULL "
                                    "DEFAULT 'default'")
                    self.db.execute("ALTER TABLE documents ADD COLUMN groups TEXT NOT NULL "
                                    "DEFAULT '[]'")
                if "n_words" not in {r[1] for r in self.db.execute("PRAGMA table_info(chunks)")}:
                    self.db.execute("ALTER TABLE chunks ADD COLUMN n_words INTEGER NOT NULL "
                                    "DEFAULT 0")
                    self.db.executemany(
                        "UPDATE chunks SET n_words=? WHERE id=?",
                        [(len(kw.tokenize(text.lower())), rowid) for rowid, text
                         in self.db.execute("SELECT id, text FROM chunks").fetchall()])
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
        self.manifest["format_version"] = FORMAT_VERSION
        self.manifest["migrated"] = {"from": 1, "at": now()}
        self._save_manifest()

    # -- bookkeeping -------------------------------------------------------------------

    def _save_manifest(self) -> None:
        tmp = self.root / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(self.manifest, indent=2, sort_keys=True), encoding="utf-8")
        tmp.replace(self.root / MANIFEST)

    def _reserve(self, name: str, count: int) -> int:
        """Reserve ``count`` ids and commit at once, so a crash can never reuse them."""
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            row = self.db.execute("SELECT next FROM counters WHERE name=?", (name,)).fetchone()
            first = row[0] if row else 1
            self.db.execute(
                "INSERT OR REPLACE INTO counters (name, next) VALUES (?, ?)", (name, first + count)
            )
            self.db.execute("COMMIT")
            return int(first)

    def stats(self, access: Access | None = None) -> StoreStats:
        q = self.db.execute
        visible = self._visible_for(access)
        if visible is not None:
            rows = sorted(visible.rows)
            sentences = sum(q(f"SELECT count(*) FROM sentences WHERE chunk IN "
                              f"({','.join('?' * len(part))})", part).fetchone()[0]
                            for part in _batches(rows))
            return StoreStats(len(visible.docs), len(visible.rows), sentences,
                              manifest=dict(self.manifest))
        return StoreStats(
            documents=q("SELECT count(*) FROM documents").fetchone()[0],
            chunks=q("SELECT count(*) FROM chunks").fetchone()[0],
            sentences=q("SELECT count(*) FROM sentences").fetchone()[0],
            manifest=dict(self.manifest),
        )

    def document_hashes(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT doc_id, hash FROM documents").fetchall())

    def document_sources(self) -> dict[str, str | None]:
        return dict(self.db.execute("SELECT doc_id, path FROM documents").fetchall())

    def document_access(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        return {doc_id: (collection, decode_groups(groups)) for doc_id, collection, groups
                in self.db.execute("SELECT doc_id, collection, groups FROM documents")}

    def visible_documents(self, access: Access | None) -> frozenset[str] | None:
        visible = self._visible_for(access)
        return None if visible is None else visible.docs

    def _visible_for(self, access: Access | None) -> _Visible | None:
        """The visible rows of a restricting ``access`` (cached); None when all are."""
        access = restricted(access)
        if access is None:
            return None
        found = self._visible.get(access.key)
        if found is not None:
            return found
        docs = frozenset(doc_id for doc_id, (collection, groups)
                         in self.document_access().items()
                         if access.allows(collection, groups))
        rows: set[int] = set()
        words = 0
        for part in _batches(sorted(docs)):
            for rowid, n_words in self.db.execute(
                    f"SELECT id, n_words FROM chunks WHERE doc_id IN "
                    f"({','.join('?' * len(part))})", part):
                rows.add(rowid)
                words += n_words
        visible = _Visible(access.key, docs, frozenset(rows), words)
        self._visible[access.key] = visible
        return visible

    def configure_ann(self, settings: VectorSettings) -> None:
        """Use ``settings`` for the approximate index: whether searches use it, how builds
        make it."""
        self._vector_settings = settings
        self._vectors = None
        limit_blas_threads(settings.blas_threads)

    def begin_build(self) -> None:
        self.manifest["build"] = {"state": "building", "started": now()}
        self._save_manifest()

    def finish_build(self) -> None:
        self._compact_vectors()
        self._update_ann()
        self.manifest["build"] = {"state": "complete", "finished": now()}
        self.manifest["sleuth_version"] = __version__
        self._save_manifest()

    # -- writing -----------------------------------------------------------------------

    def write(self, docs: Sequence[PreparedDocument]) -> None:
        if not docs:
            return
        n_chunks = sum(len(d.chunks) for d in docs)
        n_sents = sum(len(c.sentences) for d in docs for c in d.chunks)
        check_vectors(docs)
        chunk_row = self._reserve("chunk", n_chunks)
        sent_row = self._reserve("sentence", n_sents)
        seg = self._reserve("segment", 1)
        rows = self._rows(docs, chunk_row, sent_row)
        if n_sents:
            chunk_of = np.fromiter((row[1] for row in rows["sentences"]), dtype=np.int64,
                                   count=n_sents)
            self._write_segment(seg, np.concatenate([d.vectors for d in docs]),
                                np.arange(sent_row, sent_row + n_sents, dtype=np.int64),
                                chunk_of)
        self._commit_rows(docs, rows, seg if n_sents else None)
        self._vectors = None
        self._visible = {}

    def _rows(self, docs: Sequence[PreparedDocument], chunk_row: int,
              sent_row: int) -> dict[str, list[Any]]:
        chunks: list[tuple[Any, ...]] = []
        sentences: list[tuple[int, int, int, int]] = []
        chunk_text: list[tuple[int, str, str]] = []
        for d in docs:
            for c in d.chunks:
                chunks.append((chunk_row, c.chunk_id, c.doc_id, c.position, c.start, c.end,
                               c.n_tokens, c.text, len(kw.tokenize(c.text.lower()))))
                chunk_text.append((chunk_row, c.chunk_id, c.text))
                for s in c.sentences:
                    sentences.append((sent_row, chunk_row, s.start, s.end))
                    sent_row += 1
                chunk_row += 1
        return {"chunks": chunks, "sentences": sentences, "chunk_text": chunk_text}

    def _write_segment(self, seg: int, matrix: np.ndarray, ids: np.ndarray,
                       chunks: np.ndarray) -> None:
        """Vectors, their sentence ids and their chunk rowids, one row per sentence."""
        folder = self.root / "vectors"
        folder.mkdir(exist_ok=True)
        for name, array in ((f"seg-{seg}.npy", np.asarray(matrix, dtype=np.float32)),
                            (f"seg-{seg}.ids.npy", ids), (f"seg-{seg}.chunks.npy", chunks)):
            tmp = folder / (name + ".tmp")
            with tmp.open("wb") as fh:
                np.save(fh, array)
            tmp.replace(folder / name)

    def _commit_rows(self, docs: Sequence[PreparedDocument], rows: dict[str, list[Any]],
                     seg: int | None) -> None:
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self._drop_docs([d.document.doc_id for d in docs])
                self.db.executemany(
                    "INSERT INTO documents VALUES (?,?,?,?,?,?,?,?,?,?)",
                    [(d.document.doc_id, d.document.title, d.document.type, d.document.path,
                      d.content_hash, json.dumps(dict(d.document.metadata), default=str),
                      d.document.text, len(d.chunks), d.collection, encode_groups(d.groups))
                     for d in docs],
                )
                self.db.executemany("INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?)",
                                    rows["chunks"])
                self.db.executemany("INSERT INTO sentences VALUES (?,?,?,?)", rows["sentences"])
                self.db.executemany(
                    "INSERT INTO keyword (rowid, tokens) VALUES (?, ?)",
                    [(rowid, _tokens(text)) for rowid, _, text in rows["chunk_text"]],
                )
                self._insert_summaries([(d.document.doc_id, d.summary, d.summary_vector)
                                        for d in docs if d.summary_vector is not None])
                if seg is not None:
                    self.db.execute("INSERT INTO segments VALUES (?, ?)",
                                    (seg, len(rows["sentences"])))
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def _drop_docs(self, doc_ids: Sequence[str]) -> None:
        """Inside a transaction: remove documents, their chunks, sentences and postings."""
        for doc_id in doc_ids:
            old = self.db.execute("SELECT id, text FROM chunks WHERE doc_id=?", (doc_id,))
            self.db.executemany(  # a contentless FTS5 row is deleted by replaying its tokens
                "INSERT INTO keyword (keyword, rowid, tokens) VALUES ('delete', ?, ?)",
                [(rowid, _tokens(text)) for rowid, text in old.fetchall()],
            )
            self.db.execute(
                "DELETE FROM sentences WHERE chunk IN (SELECT id FROM chunks WHERE doc_id=?)",
                (doc_id,),
            )
            self.db.execute("DELETE FROM chunks WHERE doc_id=?", (doc_id,))
            self.db.execute("DELETE FROM documents WHERE doc_id=?", (doc_id,))
            self.db.execute("DELETE FROM summaries WHERE doc_id=?", (doc_id,))

    def delete(self, doc_ids: Sequence[str]) -> None:
        if not doc_ids:
            return
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self._drop_docs(doc_ids)
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
        self._vectors = None
        self._visible = {}

    def _compact_vectors(self) -> None:
        """Merge segments into one and drop dead rows once deletions or fragments pile up."""
        segs = [r[0] for r in self.db.execute("SELECT seg FROM segments ORDER BY seg")]
        live = self.db.execute("SELECT count(*) FROM sentences").fetchone()[0]
        total = sum(r[0] for r in self.db.execute("SELECT rows FROM segments"))
        if len(segs) <= 1 and total == live:
            self._remove_orphan_segments(set(segs))
            return
        vectors = self._load_vectors()
        keep = vectors.chunk_of >= 0
        matrix = np.concatenate([np.asarray(m) for m in vectors.matrices]) if segs else None
        if matrix is not None and not keep.all():  # (a copy: spared when nothing is dead)
            matrix = matrix[keep]
        ids = vectors.sentence_of[keep]
        new = self._reserve("segment", 1)
        if matrix is not None and len(ids):
            self._write_segment(new, matrix, ids, vectors.chunk_of[keep])
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("DELETE FROM segments")
            if matrix is not None and len(ids):
                self.db.execute("INSERT INTO segments VALUES (?, ?)", (new, len(ids)))
            self.db.execute("COMMIT")
        self._vectors = None
        self._remove_orphan_segments({new} if len(ids) else set())

    def _update_ann(self) -> None:
        """Bring the approximate index in line with the live rows and the settings: drop it
        where it is not wanted; rebuild it (lists trained anew) when missing, unreadable,
        of another ``nlist``, too full of dead sentences or trained on far fewer sentences
        than are live; else add the live rows it lacks. It is built on a fresh copy read
        from disk, so searches in flight keep the loaded one."""
        settings = self._vector_settings
        folder = self.root / "vectors"
        path = folder / ann.FILE
        path.with_name(path.name + ".tmp").unlink(missing_ok=True)  # an interrupted write
        for legacy in ann.LEGACY_FILES:
            (folder / legacy).unlink(missing_ok=True)
        vectors = self._load_vectors()
        live = vectors.chunk_of >= 0
        n_live = int(live.sum())
        if not n_live or settings.ann == "off" or (
                settings.ann == "auto" and n_live < settings.ann_min_sentences):
            if path.exists() or "ann" in self.manifest:
                path.unlink(missing_ok=True)
                self.manifest.pop("ann", None)
                self._save_manifest()
                self._ann, self._vectors = None, None
            return
        dim = int(vectors.matrices[0].shape[1])
        current = ann.read(path, self.manifest.get("ann"), dim)
        if current is not None and (
                (settings.nlist is not None
                 and current.nlist != ann.lists_for(current.trained_on, settings.nlist))
                or n_live > RETRAIN_GROWTH * current.trained_on
                or int(np.isin(current.labels, vectors.sentence_of[live], invert=True).sum())
                > REBUILD_DEAD * current.size):
            current = None
        if current is None:
            rows = np.flatnonzero(live)
            current = ann.new(vectors.matrices, rows, settings.nlist)
            if current is None:  # faiss is missing (logged): searches stay exact
                return
        else:
            rows = np.flatnonzero(live & ~np.isin(vectors.sentence_of, current.labels))
            if not len(rows):
                return
        current = current.add(vectors.matrices, rows, vectors.sentence_of[rows])
        self.manifest["ann"] = {**ann.write(current, path), "built": now()}
        self._save_manifest()
        stat = path.stat()
        self._ann, self._vectors = ((stat.st_mtime_ns, stat.st_size), current), None

    def _remove_orphan_segments(self, keep: set[int]) -> None:
        for path in (self.root / "vectors").glob("seg-*"):
            seg = path.name.split(".")[0].removeprefix("seg-")
            if not seg.isdigit() or int(seg) not in keep:
                path.unlink(missing_ok=True)

    # -- reading -----------------------------------------------------------------------

    def _load_vectors(self) -> _Vectors:
        """Memory-map every registered segment; rows of deleted chunks are marked dead."""
        if self._vectors is not None:
            return self._vectors
        folder = self.root / "vectors"
        segs = [r[0] for r in self.db.execute("SELECT seg FROM segments ORDER BY seg")]
        try:
            matrices = [np.load(folder / f"seg-{seg}.npy", mmap_mode="r") for seg in segs]
            ids = _concat([np.load(folder / f"seg-{seg}.ids.npy") for seg in segs])
            chunk_of = _concat([np.load(folder / f"seg-{seg}.chunks.npy") for seg in segs])
        except (OSError, ValueError) as exc:
            raise StoreError(
                f"the sentence vectors of {self.root} are damaged or incomplete ({exc}); "
                "rebuild the index into a new folder"
            ) from None
        live = np.fromiter((r[0] for r in self.db.execute("SELECT id FROM chunks")),
                           dtype=np.int64)
        chunk_of = np.where(np.isin(chunk_of, live), chunk_of, -1)
        ann = self._load_ann(int(matrices[0].shape[1])) if matrices else None
        self._vectors = _Vectors(matrices, chunk_of, ids, ann)
        return self._vectors

    def _load_ann(self, dim: int) -> ann.AnnIndex | None:
        """The approximate index on disk (read once per file version), checked against the
        manifest on disk (another process may have built it); None when off, missing or
        unusable."""
        if self._vector_settings.ann == "off":
            return None
        path = self.root / "vectors" / ann.FILE
        try:
            stat = path.stat()
        except FileNotFoundError:
            return None
        stamp = (stat.st_mtime_ns, stat.st_size)
        if self._ann is None or self._ann[0] != stamp:
            record = _read_json(self.root / MANIFEST).get("ann")
            self._ann = (stamp, ann.read(path, record, dim))
        return self._ann[1]

    def semantic_search(self, query: np.ndarray, top_k: int,
                        doc_ids: Sequence[str] | None = None,
                        access: Access | None = None) -> list[Hit]:
        vectors = self._load_vectors()
        if not len(vectors.chunk_of):
            return []
        query = np.asarray(query, dtype=np.float32)
        cache_key, allowed = self._allowed(vectors, doc_ids, access)
        if vectors.ann is None:
            ranked = vectors.ranked(query, top_k, allowed)
        else:
            ranked = self._approximate(vectors, vectors.ann, query, top_k, cache_key, allowed)
        if not ranked:
            return []
        sentence_rows = {int(vectors.sentence_of[r]) for _, _, rows in ranked for r in rows}
        spans = self._sentence_spans(sentence_rows)
        meta = self._chunk_meta([key for key, _, _ in ranked])
        hits = []
        for key, score, rows in ranked:
            chunk_id, doc_id, title, text, start = meta[key]
            snippets = []
            for r in rows:
                s_start, s_end = spans[int(vectors.sentence_of[r])]
                snippets.append(text[s_start - start : s_end - start])
            hits.append(Hit(chunk_id, doc_id, title, round(score, 6), tuple(snippets)))
        return hits

    def _allowed(self, vectors: _Vectors, doc_ids: Sequence[str] | None,
                 access: Access | None) -> tuple[str | None, np.ndarray | None]:
        """The vector rows a search may return (None: all) and the access key they are
        cached under (None when a ``doc_ids`` restriction makes them per query)."""
        visible = self._visible_for(access)
        mask = None if visible is None else vectors.visible(visible.key, visible.rows)
        if doc_ids is None:
            return (None if visible is None else visible.key), mask
        marks = ",".join("?" * len(doc_ids))
        doc_rows = np.fromiter((r[0] for r in self.db.execute(
            f"SELECT id FROM chunks WHERE doc_id IN ({marks})", list(doc_ids))),
            dtype=np.int64)
        in_docs = np.isin(vectors.chunk_of, doc_rows)
        return None, (in_docs if mask is None else in_docs & mask)

    def _approximate(self, vectors: _Vectors, approx: ann.AnnIndex, query: np.ndarray,
                     top_k: int, key: str | None,
                     allowed: np.ndarray | None) -> list[tuple[int, float, list[int]]]:
        """The exact ranking of the chunks of approximate candidates (every sentence of a
        candidate's chunk scored, so a hit's score is exact; plus the rows the index lacks),
        asking for more until they span ``top_k`` chunks; restrictions to few rows are
        searched exactly."""
        selector = None
        if allowed is not None:
            rows, selector = vectors.filtered(key, allowed)
            if selector is None:
                return vectors.ranked_among(rows, query, top_k)
        k = max(top_k * 16, self._vector_settings.ef_search)
        while k <= MAX_CANDIDATES:
            found = vectors.rows_of(approx.search(query, k, self._vector_settings.nprobe,
                                                              selector))
            rows = vectors.with_siblings(np.union1d(found, vectors.tail))
            if allowed is not None:  # the selector filtered already: belt and braces
                rows = rows[allowed[rows]]
            ranked = vectors.ranked_among(rows, query, top_k)
            if len(ranked) >= top_k:
                return ranked
            if k >= approx.size:
                break
            k *= 4
        # fewer than top_k chunks among the candidates: only an exact scan can say why
        return vectors.ranked(query, top_k, allowed)

    def keyword_search(self, keywords: Sequence[str], top_k: int,
                       mode: kw.KeywordMode = "word",
                       access: Access | None = None) -> list[Hit]:
        parsed = kw.parse_keywords(keywords, mode)
        scores: dict[int, float] = {}
        rescore: list[kw.Keyword] = []
        for k in parsed:
            if _countable(k):
                for rowid, count in self.db.execute(
                    "SELECT doc, count(*) FROM keyword_postings WHERE term=? GROUP BY doc",
                    (k.text,),
                ):
                    scores[rowid] = scores.get(rowid, 0.0) + count * k.weight
            else:
                rescore.append(k)
        if rescore:
            for rowid, text in self._candidate_texts(self._candidates(rescore)):
                score = kw.score_text(text.lower(), rescore)
                if score > 0:
                    scores[rowid] = scores.get(rowid, 0.0) + score
        visible = self._visible_for(access)
        if visible is not None:
            scores = {rowid: score for rowid, score in scores.items() if rowid in visible.rows}
        ranked = self._top(scores, top_k)
        chunks = self.get_chunks([cid for cid, _ in ranked])
        titles = self._titles({c.doc_id for c in chunks.values()})
        hits = []
        for chunk_id, score in ranked:
            chunk = chunks[chunk_id]
            snippets = kw.matching_sentences([s.text for s in chunk.sentences], parsed)
            hits.append(Hit(chunk_id, chunk.doc_id, titles.get(chunk.doc_id, ""), score,
                            tuple(snippets)))
        return hits

    def bm25_search(self, terms: Sequence[str], top_k: int,
                    doc_ids: Sequence[str] | None = None,
                    access: Access | None = None) -> list[Hit]:
        """FTS5's BM25 over the chunk tokens (the terms joined by OR); under a restricting
        ``access``, BM25 computed over the visible chunks alone."""
        tokens = list(dict.fromkeys(
            t[:MAX_TOKEN_CHARS] for term in terms for t in kw.tokenize(term.lower())))
        if not tokens or (doc_ids is not None and not doc_ids):
            return []
        visible = self._visible_for(access)
        if visible is not None:
            ranked = self._bm25_visible(tokens, visible, doc_ids, top_k)
        elif doc_ids is not None:
            ranked = self._bm25_within(tokens, doc_ids, top_k)
        else:
            query = " OR ".join('"' + t.replace('"', '""') + '"' for t in tokens)
            ranked = self.db.execute(
                "SELECT rowid, -bm25(keyword) FROM keyword WHERE keyword MATCH ? "
                "ORDER BY bm25(keyword) LIMIT ?", (query, top_k)).fetchall()
        ids = self._chunk_ids([r for r, _ in ranked])
        chunks = self.get_chunks(list(ids.values()))
        titles = self._titles({c.doc_id for c in chunks.values()})
        parsed = kw.parse_keywords(tokens)
        hits = []
        for rowid, score in ranked:
            chunk = chunks.get(ids.get(rowid, ""))
            if chunk is None:
                continue
            snippets = sorted(  # the sentences matching the most distinct terms first
                kw.matching_sentences([s.text for s in chunk.sentences], parsed),
                key=lambda text: -sum(1 for k in parsed if k.count(text.lower())))
            hits.append(Hit(chunk.chunk_id, chunk.doc_id, titles.get(chunk.doc_id, ""),
                            round(float(score), 6), tuple(snippets)))
        return hits

    def _top(self, scores: dict[int, float], top_k: int) -> list[tuple[str, float]]:
        """Top ``top_k`` by score, ties by chunk id: ids are fetched only for the contenders."""
        if not scores:
            return []
        ordered = sorted(scores.values(), reverse=True)
        floor = ordered[min(top_k, len(ordered)) - 1]
        contenders = [rowid for rowid, score in scores.items() if score >= floor]
        ids = self._chunk_ids(contenders)
        return kw.rank(((ids[r], scores[r]) for r in contenders if r in ids), top_k)

    def _chunk_ids(self, rowids: list[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for start in range(0, len(rowids), 900):
            part = rowids[start : start + 900]
            marks = ",".join("?" * len(part))
            out.update(self.db.execute(
                f"SELECT id, chunk_id FROM chunks WHERE id IN ({marks})", part
            ).fetchall())
        return out

    def _candidates(self, keywords: Sequence[kw.Keyword]) -> list[int] | None:
        """Rowids of chunks that may match any keyword; ``None`` means scan everything."""
        clauses = []
        for k in keywords:
            tokens = [t[:MAX_TOKEN_CHARS] for t in k.tokens]
            if not tokens:
                return None
            if not k.substring:
                clauses.append('"' + " ".join(tokens) + '"')
                continue
            groups = []
            for token in tokens:
                terms = [r[0] for r in self.db.execute(
                    "SELECT term FROM keyword_terms WHERE instr(term, ?) > 0 LIMIT ?",
                    (token, MAX_EXPANSION + 1),
                )]
                if len(terms) > MAX_EXPANSION:
                    return None
                if not terms:
                    break
                groups.append("(" + " OR ".join(f'"{t}"' for t in terms) + ")")
            else:
                clauses.append("(" + " AND ".join(groups) + ")")
        if not clauses:
            return []
        query = " OR ".join(clauses)
        return [r[0] for r in self.db.execute(
            "SELECT rowid FROM keyword WHERE keyword MATCH ?", (query,)
        )]

    def _candidate_texts(self, rowids: list[int] | None) -> Iterator[tuple[int, str]]:
        if rowids is None:
            yield from self.db.execute("SELECT id, text FROM chunks")
            return
        for start in range(0, len(rowids), 900):
            part = rowids[start : start + 900]
            marks = ",".join("?" * len(part))
            yield from self.db.execute(
                f"SELECT id, text FROM chunks WHERE id IN ({marks})", part
            )

    def _sentence_spans(self, ids: set[int]) -> dict[int, tuple[int, int]]:
        out: dict[int, tuple[int, int]] = {}
        id_list = sorted(ids)
        for start in range(0, len(id_list), 900):
            part = id_list[start : start + 900]
            marks = ",".join("?" * len(part))
            for sid, s, e in self.db.execute(
                f"SELECT id, start, end FROM sentences WHERE id IN ({marks})", part
            ):
                out[sid] = (s, e)
        return out

    def _chunk_meta(self, rowids: list[int]) -> dict[int, tuple[str, str, str, str, int]]:
        marks = ",".join("?" * len(rowids))
        rows = self.db.execute(
            "SELECT c.id, c.chunk_id, c.doc_id, d.title, c.text, c.start FROM chunks c "
            f"JOIN documents d ON d.doc_id = c.doc_id WHERE c.id IN ({marks})", rowids
        ).fetchall()
        return {r[0]: (r[1], r[2], r[3], r[4], r[5]) for r in rows}

    def _titles(self, doc_ids: set[str]) -> dict[str, str]:
        if not doc_ids:
            return {}
        ids = sorted(doc_ids)
        marks = ",".join("?" * len(ids))
        return dict(self.db.execute(
            f"SELECT doc_id, title FROM documents WHERE doc_id IN ({marks})", ids
        ).fetchall())

    def _bm25_visible(self, tokens: list[str], visible: _Visible,
                      doc_ids: Sequence[str] | None, top_k: int) -> list[tuple[int, float]]:
        """BM25 (k1 1.2, b 0.75) with N, document frequencies and the average length
        counted over the visible chunks only; term counts come from the postings."""
        if not visible.rows:
            return []
        total = len(visible.rows)
        avg = visible.words / total or 1.0
        allowed: frozenset[int] | set[int] = visible.rows
        if doc_ids is not None:
            wanted = sorted(set(doc_ids) & visible.docs)
            allowed = {r for part in _batches(wanted) for (r,) in self.db.execute(
                f"SELECT id FROM chunks WHERE doc_id IN ({','.join('?' * len(part))})", part)}
        idf: dict[str, float] = {}
        counts: dict[int, dict[str, int]] = {}
        for token in tokens:
            postings = [(rowid, n) for rowid, n in self.db.execute(
                "SELECT doc, count(*) FROM keyword_postings WHERE term=? GROUP BY doc",
                (token,)) if rowid in visible.rows]
            if not postings:
                continue
            df = len(postings)
            idf[token] = math.log(1 + (total - df + 0.5) / (df + 0.5))
            for rowid, n in postings:
                if rowid in allowed:
                    counts.setdefault(rowid, {})[token] = n
        lengths = {rowid: n for part in _batches(sorted(counts)) for rowid, n in self.db.execute(
            f"SELECT id, n_words FROM chunks WHERE id IN ({','.join('?' * len(part))})", part)}
        scored = []
        for rowid, tf in counts.items():
            norm = 1.2 * (0.25 + 0.75 * lengths.get(rowid, 0) / avg)
            scored.append((rowid, sum(idf[t] * n * 2.2 / (n + norm) for t, n in tf.items())))
        scored.sort(key=lambda item: (-item[1], item[0]))
        return scored[:top_k]

    def _bm25_within(self, tokens: list[str], doc_ids: Sequence[str],
                     top_k: int) -> list[tuple[int, float]]:
        """BM25 (k1 1.2, b 0.75, FTS5's idf over the whole index) scored directly on the
        chunks of ``doc_ids``; an FTS5 query restricted to rowids costs ~100x more."""
        total = self.db.execute("SELECT count(*) FROM chunks").fetchone()[0] or 1
        marks = ",".join("?" * len(tokens))
        df = dict(self.db.execute(
            f"SELECT term, doc FROM keyword_terms WHERE term IN ({marks})", tokens).fetchall())
        idf = {t: math.log(1 + (total - df[t] + 0.5) / (df[t] + 0.5)) for t in tokens
               if df.get(t)}
        if not idf:
            return []
        rows: list[tuple[int, str]] = []
        ids = list(dict.fromkeys(doc_ids))
        for start in range(0, len(ids), 900):
            part = ids[start : start + 900]
            rows += self.db.execute(
                f"SELECT id, text FROM chunks WHERE doc_id IN ({','.join('?' * len(part))})",
                part).fetchall()
            if len(rows) >= MAX_BM25_WITHIN:
                break
        counted = [(rowid, Counter(kw.tokenize(text.lower()))) for rowid, text in
                   rows[:MAX_BM25_WITHIN]]
        lengths = [sum(c.values()) for _, c in counted]
        avg = (sum(lengths) / len(lengths)) if lengths else 1.0
        scored = []
        for (rowid, counts), length in zip(counted, lengths, strict=True):
            norm = 1.2 * (0.25 + 0.75 * length / avg)
            score = sum(w * counts[t] * 2.2 / (counts[t] + norm) for t, w in idf.items()
                        if counts[t])
            if score > 0:
                scored.append((rowid, score))
        scored.sort(key=lambda item: -item[1])
        return scored[:top_k]

    def document_titles(self, access: Access | None = None) -> dict[str, str]:
        titles = dict(self.db.execute("SELECT doc_id, title FROM documents").fetchall())
        visible = self._visible_for(access)
        if visible is None:
            return titles
        return {doc_id: title for doc_id, title in titles.items() if doc_id in visible.docs}

    def _hidden(self, doc_id: str, access: Access | None) -> bool:
        visible = self._visible_for(access)
        return visible is not None and doc_id not in visible.docs

    def chunk_spans(self, doc_id: str,
                    access: Access | None = None) -> list[tuple[str, int, int]]:
        if self._hidden(doc_id, access):
            return []
        return [(r[0], r[1], r[2]) for r in self.db.execute(
            "SELECT chunk_id, start, end FROM chunks WHERE doc_id=? ORDER BY position",
            (doc_id,))]

    def get_chunks(self, chunk_ids: Sequence[str],
                   access: Access | None = None) -> dict[str, Chunk]:
        visible = self._visible_for(access)
        ids = list(dict.fromkeys(chunk_ids))
        out: dict[str, Chunk] = {}
        for start in range(0, len(ids), 900):
            part = ids[start : start + 900]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                "SELECT id, chunk_id, doc_id, position, start, end, n_tokens, text FROM chunks "
                f"WHERE chunk_id IN ({marks})", part
            ).fetchall()
            for row in rows:
                if visible is None or row[0] in visible.rows:
                    out[row[1]] = self._chunk(row)
        return out

    def document_vectors(self, doc_id: str) -> np.ndarray:
        """The sentence vectors of a document, one row per sentence in document order (the
        rows of its PreparedDocument); empty for an unknown document."""
        ids = np.array([r[0] for r in self.db.execute(
            "SELECT s.id FROM sentences s JOIN chunks c ON c.id = s.chunk WHERE c.doc_id = ? "
            "ORDER BY c.position, s.id", (doc_id,))], dtype=np.int64)
        dim = int((self.manifest.get("embedder") or {}).get("dim") or 0)
        if not len(ids):
            return np.zeros((0, dim), dtype=np.float32)
        vectors = self._load_vectors()
        order = np.argsort(vectors.sentence_of, kind="stable")
        rows = order[np.searchsorted(vectors.sentence_of, ids, sorter=order)]
        offsets = np.cumsum([0] + [len(m) for m in vectors.matrices])
        segs = np.searchsorted(offsets, rows, side="right") - 1
        return np.stack([np.asarray(vectors.matrices[s][r - offsets[s]])
                         for s, r in zip(segs, rows, strict=True)]).astype(np.float32)

    def summaries(self, access: Access | None = None
                  ) -> tuple[list[str], list[str], np.ndarray]:
        rows = self.db.execute(
            "SELECT s.doc_id, s.text, s.vector FROM summaries s JOIN documents d "
            "ON d.doc_id = s.doc_id ORDER BY s.doc_id").fetchall()
        visible = self._visible_for(access)
        if visible is not None:
            rows = [r for r in rows if r[0] in visible.docs]
        dim = int((self.manifest.get("embedder") or {}).get("dim") or 0)
        matrix = np.stack([np.frombuffer(r[2], dtype=np.float32) for r in rows]) if rows \
            else np.zeros((0, dim), dtype=np.float32)
        return [r[0] for r in rows], [r[1] for r in rows], matrix

    def write_summaries(self, rows: Sequence[tuple[str, str, np.ndarray]]) -> None:
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self._insert_summaries(rows)
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def _insert_summaries(self, rows: Sequence[tuple[str, str, np.ndarray | None]]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO summaries VALUES (?, ?, ?)",
            [(doc_id, text, np.asarray(vector, dtype=np.float32).tobytes())
             for doc_id, text, vector in rows if vector is not None])

    def _chunk(self, row: tuple[Any, ...]) -> Chunk:
        rowid, chunk_id, doc_id, position, start, end, n_tokens, text = row
        sentences = tuple(
            Sentence(text[s - start : e - start], s, e)
            for s, e in self.db.execute(
                "SELECT start, end FROM sentences WHERE chunk=? ORDER BY id", (rowid,)
            )
        )
        neighbours = dict(self.db.execute(
            "SELECT position, chunk_id FROM chunks WHERE doc_id=? AND position IN (?, ?)",
            (doc_id, position - 1, position + 1),
        ).fetchall())
        return Chunk(chunk_id, doc_id, position, text, start, end, n_tokens, sentences,
                     neighbours.get(position - 1), neighbours.get(position + 1))

    def get_document(self, doc_id: str, access: Access | None = None) -> Document | None:
        if self._hidden(doc_id, access):
            return None
        row = self.db.execute(
            "SELECT doc_id, title, text, type, path, metadata FROM documents WHERE doc_id=?",
            (doc_id,),
        ).fetchone()
        if row is None:
            return None
        return Document(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]))

    def iter_chunks(self) -> Iterator[Chunk]:
        rows = self.db.execute(
            "SELECT id, chunk_id, doc_id, position, start, end, n_tokens, text FROM chunks "
            "ORDER BY doc_id, position"
        )
        for row in rows.fetchall():
            yield self._chunk(row)

    def close(self) -> None:
        self.db.close()


@cache
def limit_blas_threads(threads: int | None) -> None:
    """Let OpenBLAS (numpy's, faiss's) use at most ``threads`` threads in this process
    (threadpoolctl; other BLAS libraries, such as torch's, are left alone); once per value."""
    if threads is None:
        return
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - a dependency; the default stays
        return
    ThreadpoolController().select(internal_api="openblas").limit(limits=threads)


def _batches(items: Sequence[Any], size: int = 900) -> Iterator[list[Any]]:
    """``items`` in lists of at most ``size`` (SQLite's bound-parameter limit)."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _tokens(text: str) -> str:
    """The FTS5 document for a chunk: its lowercased ``\\w+`` tokens, space-separated."""
    return " ".join(t[:MAX_TOKEN_CHARS] for t in kw.tokenize(text.lower()))


def _countable(k: kw.Keyword) -> bool:
    """Whole-word keywords that are one token: counted exactly from the postings."""
    return not k.substring and len(k.text) < MAX_TOKEN_CHARS and k.tokens == [k.text]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise StoreError(f"cannot read index manifest {path}: {exc}") from None
    if not isinstance(data, dict):
        raise StoreError(f"index manifest {path} is not a JSON object")
    return data


register_store("", LocalStore)
