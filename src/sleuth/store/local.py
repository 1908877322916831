"""The embedded store: one folder of plain files, no server.

Layout of an index folder::

    manifest.json        format version, embedder, chunk size (a copy lives in sleuth.db)
    sleuth.db            SQLite (WAL): documents, chunks, sentences, the vector-segment
                         registry with checksums, builds, counters, and an FTS5 index of chunk
                         tokens (the keyword candidates and counts)
    vectors/seg-N.npy    float32 unit sentence vectors (memory-mapped), seg-N.ids.npy their
                         sentence ids, seg-N.chunks.npy their chunk rowids
    vectors/ivf.faiss    optional approximate index of the sentence vectors (store/ann.py)
    locks/               leases of the processes writing (store/lease.py)

Several processes, one index. SQLite is the one source of truth for what exists. A writer
takes a lease (:mod:`sleuth.store.lease`) and reserves row ids and a segment number in one
committed transaction, which records the segment as *pending* under its lease; it writes
the segment's files (a temporary name, then renamed) and then registers the segment, with
the checksums of its files, in the same transaction as the rows that use it. Compaction
merges only the segments it read, and registers its merged segment only if all of them are
still registered; it deletes exactly the files its own transaction unregistered. Other
files are deleted only when no registered or pending segment names them, or when the lease
of the process that was writing them is gone. So a kill -9 at any moment, or any number of
writers at once, loses nothing, and an interrupted build leaves the previous state
readable and the next build resumes it.

Readers stay current. Every commit that changes what a read returns bumps a *generation*
counter in the same transaction. Each public read runs in one read transaction (a
snapshot: every row it sees belongs to one generation) on the calling thread's own
connection, and starts by reading the generation; a change drops the per-access caches and
reloads the vectors incrementally (new segments are mapped, rows of chunks deleted since
are marked dead; a compaction means a full reload). A file that vanished under a read (a
concurrent compaction) retries the read in a fresh snapshot.

Damage is named. Every segment file's size and sha256 are registered with it and checked
the first time this process maps it (and again only if the file changes); the approximate
index carries its own checksum. A missing or damaged part is one :class:`IndexDamaged`
error that names it and the repair command (``sleuth index --repair`` re-embeds missing
vectors from the stored text); :meth:`LocalStore.check` walks the whole index.
Opening an index never creates or changes a file, except a one-time format migration.

Keyword search: the FTS5 table holds the ``\\w+`` tokens of each lowercased chunk (the
``ascii`` tokenizer on space-joined tokens, so its terms are exactly those tokens). A
whole-word keyword that is a single token is counted straight from the postings
(``fts5vocab`` instances): its whole-word matches are exactly the tokens equal to it.
Phrases, substrings and keywords with punctuation take FTS5 candidates and are counted
exactly in the chunk text. Either way the result equals :func:`keyword.brute_force`.

Access control: each document row carries its collection and groups. A restricting
:class:`~sleuth.access.Access` is turned once into the set of visible chunk rows (cached per
access and generation), and every read drops invisible rows before ranking: keyword
scores, the semantic score vector, BM25 (whose N, document frequencies and average length
are then counted over the visible chunks only), titles, summaries, spans and reads.

Semantic search is exact (every live vector scored) unless an approximate index exists (a
faiss inverted file, :mod:`sleuth.store.ann`): built by ``finish_build`` per
:class:`~sleuth.settings.VectorSettings` (from 200k sentence vectors by default), it proposes
candidate sentences that are re-scored exactly and ranked like the exact path. Restrictions
(access, ``doc_ids``) that leave under a fifth of the rows are searched exactly over those
rows; wider ones filter inside the approximate search and again after.

Migration: formats 1 (no collections, groups or word counts) and 2 (no checksums, leases
or generation) are upgraded in place on open.

Long because the guarantees above (snapshots, leases, pending segments, the
generation) hold only together, over one class's connections and locks; split, each part
would reach into the others' private state. What is not about this folder format lives
elsewhere: ranking in :mod:`sleuth.store.ranking`, leases in :mod:`sleuth.store.lease`, the
approximate index in :mod:`sleuth.store.ann`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import socket
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import IO, Any, Concatenate, Generic, ParamSpec, TypeVar

import numpy as np

from sleuth.access import Access, decode_groups, encode_groups, restricted
from sleuth.errors import IndexDamaged, IndexNotFound, StoreError
from sleuth.settings import VectorSettings
from sleuth.store import ann, ranking
from sleuth.store import keyword as kw
from sleuth.store.base import (
    FORMAT_VERSION,
    DocumentInfo,
    GraphTables,
    PreparedDocument,
    Problem,
    RepairReport,
    StoreStats,
    check_embedder,
    check_manifest,
    check_vectors,
    new_manifest,
    now,
)
from sleuth.store.lease import LOCKS, Lease, Maintenance
from sleuth.store.ranking import top_chunks_by_best_sentence
from sleuth.store.sessions import FileSessions, SessionStore
from sleuth.types import Chunk, Document, Hit, Sentence

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
DB = "sleuth.db"
VECTORS = "vectors"
SEGMENT_FILES = (".npy", ".ids.npy", ".chunks.npy")  # vectors, sentence ids, chunk rowids
MAX_TOKEN_CHARS = 4096  # index and query tokens are cut to this length alike
MAX_EXPANSION = 5000  # substring terms per keyword token before falling back to a scan
MAX_BM25_WITHIN = 5000  # chunks scored by a document-restricted BM25
EXACT_SHARE = 0.2  # restrictions leaving fewer rows than this share are searched exactly
MAX_CANDIDATES = 5000  # approximate candidates asked for before a search settles exactly
# A term in at least this many chunks keeps its per-chunk counts in memory (per generation):
# reading a common word's postings ("of": 4,200 chunks of 2Wiki) took 7 ms, most of a search
COMMON_TERM_CHUNKS = 256
POSTINGS_CACHE_SIZE = 2_000_000  # cached (chunk, count) pairs at most: about 24 MB
REBUILD_DEAD = 0.2  # share of dead sentences in the approximate index that triggers a rebuild
RETRAIN_GROWTH = 4.0  # live sentences / sentences its lists were trained on: retrain above
BUSY_SECONDS = 300.0  # how long a connection waits for another process's write to commit
READ_ATTEMPTS = 5  # snapshots a read tries when files vanish under it (concurrent compaction)
REPAIR_BATCH = 2048  # sentences re-embedded per repaired segment
KEEP_BUILDS = 50  # finished build records kept

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
CREATE TABLE IF NOT EXISTS segments (seg INTEGER PRIMARY KEY, rows INTEGER NOT NULL,
    checksum TEXT);
CREATE VIRTUAL TABLE IF NOT EXISTS keyword USING fts5 (
    tokens, content='', tokenize="ascii tokenchars '_'", detail=full);
CREATE VIRTUAL TABLE IF NOT EXISTS keyword_postings USING fts5vocab (keyword, instance);
CREATE VIRTUAL TABLE IF NOT EXISTS keyword_terms USING fts5vocab (keyword, row);
CREATE TABLE IF NOT EXISTS summaries (
    doc_id TEXT PRIMARY KEY, text TEXT NOT NULL, vector BLOB NOT NULL);
"""

# Format 3: several processes on one index (see the module docstring).
SCHEMA_3 = """
CREATE TABLE IF NOT EXISTS pending (seg INTEGER PRIMARY KEY, owner TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dead_chunks (chunk INTEGER PRIMARY KEY, generation INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS builds (
    id INTEGER PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
    command TEXT NOT NULL, started TEXT NOT NULL, finished TEXT);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
TABLES = ("counters", "documents", "chunks", "sentences", "segments", "keyword", "summaries",
          "pending", "dead_chunks", "builds", "meta")

P = ParamSpec("P")
R = TypeVar("R")
V = TypeVar("V")


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";\n") if s.strip()]


class _Broken(Exception):
    """A registered file is missing or does not match what was written. ``retry``: it is
    missing, which a compaction committed since the read's snapshot explains (the read is
    retried in a fresh snapshot; missing again at the same generation, it is damage)."""

    def __init__(self, part: str, problem: str, *, retry: bool = False) -> None:
        super().__init__(f"{part} {problem}")
        self.part, self.problem, self.retry = part, problem, retry


class _Superseded(Exception):
    """The segments a compaction merged changed meanwhile (another compaction or repair)."""


def _reads(method: Callable[Concatenate[LocalStore, P], R]
           ) -> Callable[Concatenate[LocalStore, P], R]:
    """Run a public read in one snapshot of the database (nested reads share it)."""

    @functools.wraps(method)
    def read(self: LocalStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        if self._tls.__dict__.get("generation") is not None:
            return method(self, *args, **kwargs)
        last: int | None = None
        for _ in range(READ_ATTEMPTS):
            generation: int | None = None
            try:
                with self._snapshot() as generation:
                    return method(self, *args, **kwargs)
            except _Broken as broken:
                if not broken.retry or generation == last:  # not a concurrent compaction
                    raise self._damaged(f"{broken.part} {broken.problem}") from None
                last = generation
        raise StoreError(f"{self.root} kept changing under a read ({READ_ATTEMPTS} tries); "
                         "try again")

    return read


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
                 chunk_tokens: int | None = None, repair: bool = False) -> None:
        self.root = Path(location).expanduser()
        self._lock = threading.RLock()  # this process's writes, one at a time
        self._load_lock = threading.Lock()  # one vector (re)load at a time
        self._tls = threading.local()  # per thread: its read connection, its snapshot
        self._connections: list[sqlite3.Connection] = []
        self._writer: sqlite3.Connection | None = None
        self._lease = Lease(self.root)
        self._build: int | None = None  # this process's running build (builds.id)
        self._vectors: _Vectors | None = None
        self._visible: _PerGeneration[_Visible] = _PerGeneration(self._load_lock)
        self._postings: _PerGeneration[tuple[np.ndarray, np.ndarray]] = \
            _PerGeneration(self._load_lock)  # common terms' (chunk rowids, occurrences)
        self._verified: set[tuple[Any, ...]] = set()  # files whose checksum matched
        self._vector_settings = VectorSettings()
        self._ann: tuple[tuple[int, int], ann.AnnIndex | None] | None = None  # file stamp
        self.restored_manifest = False  # a repair wrote the manifest from its copy
        manifest_path, db_path = self.root / MANIFEST, self.root / DB
        if repair and db_path.exists():
            self._restore_manifest_file()
        if manifest_path.is_file():
            self.manifest = self._read_manifest()
            check_manifest(self.manifest, str(self.root))
            check_embedder(self.manifest, embedder, str(self.root))
            self._check_database()
        elif db_path.exists() and not create:
            raise self._damaged(f"{MANIFEST} is missing", repair=f"restores it from {DB}")
        elif create:
            self._create(embedder, chunk_tokens)
        else:
            raise IndexNotFound(
                f"no Sleuth index at {self.root}; build one with `sleuth index PATH --index "
                f"{self.root}`"
            )
        original = self.manifest.get("format_version")
        if original == 1:
            self._migrate_from_1()
        if self.manifest.get("format_version") == 2:
            self._migrate_to_3(original)

    # -- opening -----------------------------------------------------------------------

    def _create(self, embedder: Mapping[str, Any] | None, chunk_tokens: int | None) -> None:
        """A new index: the database first (with a copy of the manifest), the manifest file
        last, so a folder with a manifest is a whole index. Processes creating the same
        index at once take turns (the maintenance lock): the later ones open it."""
        own = {LOCKS, VECTORS, DB, f"{DB}-wal", f"{DB}-shm"}
        if self.root.exists() and any(p.name not in own for p in self.root.iterdir()):
            raise StoreError(f"{self.root} exists and is not a Sleuth index; choose an empty "
                             "folder")
        if embedder is None:
            raise StoreError("an embedder is needed to create an index")
        self.root.mkdir(parents=True, exist_ok=True)
        with Maintenance(self.root, wait=True):
            if (self.root / MANIFEST).is_file():  # another process created it meanwhile
                self.manifest = self._read_manifest()
                check_manifest(self.manifest, str(self.root))
                check_embedder(self.manifest, embedder, str(self.root))
                self._check_database()
                return
            if (self.root / DB).exists() and self._unfinished_creation():
                return
            self.manifest = _essential(new_manifest(embedder, chunk_tokens or 1000))
            (self.root / VECTORS).mkdir(exist_ok=True)
            db = self._connect()
            db.execute("PRAGMA journal_mode=WAL")
            db.close()
            with self._transaction() as w:
                for statement in _statements(SCHEMA) + _statements(SCHEMA_3):
                    w.execute(statement)
                w.execute("INSERT OR REPLACE INTO meta VALUES ('manifest', ?)",
                          (json.dumps(self.manifest),))
            self._save_manifest()

    def _unfinished_creation(self) -> bool:
        """A database without a manifest file, left by an interrupted creation: with no
        table yet it is created anew (False); with its manifest copy and no document the
        manifest is written now (True); anything else is a damaged index."""
        try:
            tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master")}
        except sqlite3.DatabaseError as exc:
            raise self._db_error(exc) from None
        if not tables:
            return False
        self._check_database()
        saved = self._meta("manifest")
        if saved is None or self.db.execute("SELECT 1 FROM documents LIMIT 1").fetchone():
            raise self._damaged(f"{MANIFEST} is missing", repair=f"restores it from {DB}")
        self.manifest = json.loads(saved)
        self._save_manifest()
        return True

    def _restore_manifest_file(self) -> None:
        """Write the manifest from the database's copy when the file is missing, unreadable
        or differs (``sleuth index --repair``)."""
        self._check_database()
        saved = self._meta("manifest")
        if saved is None:
            return
        try:
            current = self._read_manifest()
        except IndexDamaged:
            current = None
        if current is None or _essential(current) != _essential(json.loads(saved)):
            self.manifest = json.loads(saved)
            self._save_manifest()
            self.restored_manifest = True

    def _read_manifest(self) -> dict[str, Any]:
        path = self.root / MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # ValueError: bad JSON, bad UTF-8
            raise self._damaged(f"{MANIFEST} cannot be read ({_short(exc)})",
                                repair=f"restores it from {DB}") from None
        if not isinstance(data, dict):
            raise self._damaged(f"{MANIFEST} is not a JSON object",
                                repair=f"restores it from {DB}")
        return data

    def _check_database(self) -> None:
        """Refuse a missing, empty or unreadable ``sleuth.db`` before anything reads it (an
        empty file would otherwise read as an empty index)."""
        path = self.root / DB
        if not path.is_file():
            raise self._damaged(f"{DB} is missing", repair=None)
        if path.stat().st_size == 0:
            raise self._damaged(f"{DB} is empty (0 bytes)", repair=None)
        try:
            names = {r[0] for r in self.db.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        except sqlite3.DatabaseError as exc:
            raise self._db_error(exc) from None
        format_version = self.manifest.get("format_version") if hasattr(self, "manifest") \
            else FORMAT_VERSION
        wanted = TABLES if format_version == FORMAT_VERSION else TABLES[:7]
        missing = [t for t in wanted if t not in names]
        if missing:
            raise self._damaged(f"{DB} lacks the table {missing[0]!r}", repair=None)

    def _damaged(self, problem: str, repair: str | None = "re-embeds the vectors from the "
                 "stored text") -> IndexDamaged:
        """The one error for a damaged part: what is wrong and how to repair it."""
        if repair is None:
            return IndexDamaged(f"index {self.root} is damaged: {problem}; its documents must "
                                "be indexed again (move the folder away and run `sleuth index "
                                "PATH` into a new one)")
        return IndexDamaged(f"index {self.root} is damaged: {problem}; `sleuth index --repair "
                            f"--index {self.root}` {repair}")

    def _db_error(self, exc: sqlite3.DatabaseError) -> StoreError:
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and "locked" in text:
            return StoreError(f"{self.root / DB} is locked by another process ({text}); try "
                              "again")
        return self._damaged(f"{DB} cannot be read ({text})", repair=None)

    def _connect(self, *, readonly: bool = False) -> sqlite3.Connection:
        """A connection to ``sleuth.db``. A read-only one never writes the database: it
        neither checkpoints nor recovers a write-ahead log into it (SQLite may leave its
        empty ``-wal``/``-shm`` files beside it)."""
        path = (self.root / DB).resolve()
        target = f"{path.as_uri()}?mode=ro" if readonly else str(path)
        db = sqlite3.connect(target, uri=readonly, check_same_thread=False,
                             isolation_level=None, timeout=BUSY_SECONDS)
        if not readonly:
            db.execute("PRAGMA synchronous=NORMAL")
        return db

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's read connection (reads of one public call share its snapshot)."""
        db: sqlite3.Connection | None = self._tls.__dict__.get("db")
        if db is None:
            db = self._tls.db = self._connect(readonly=True)
            with self._lock:
                self._connections.append(db)
        return db

    @contextmanager
    def _snapshot(self) -> Iterator[int]:
        """One read transaction on this thread's connection; yields its generation."""
        db = self.db
        try:
            db.execute("BEGIN")
            generation = self._tls.generation = self._read_generation(db)
            try:
                yield generation
            finally:
                self._tls.generation = None
                db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise self._db_error(exc) from None

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: it waits for other writers)."""
        with self._lock:
            if self._writer is None:
                self._writer = self._connect()
            w = self._writer
            w.execute("BEGIN IMMEDIATE")
            try:
                yield w
                w.execute("COMMIT")
            except BaseException:
                w.execute("ROLLBACK")
                raise

    @staticmethod
    def _read_generation(db: sqlite3.Connection) -> int:
        row = db.execute("SELECT next FROM counters WHERE name='generation'").fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _bump(w: sqlite3.Connection) -> int:
        """Inside a write transaction: the next generation (what readers compare)."""
        w.execute("INSERT INTO counters VALUES ('generation', 1) "
                  "ON CONFLICT(name) DO UPDATE SET next = next + 1")
        return int(w.execute("SELECT next FROM counters WHERE name='generation'").fetchone()[0])

    def generation(self) -> int:
        """The index's generation: it changes with every commit that changes a read."""
        generation: int | None = self._tls.__dict__.get("generation")
        if generation is not None:
            return generation
        try:
            return self._read_generation(self.db)
        except sqlite3.DatabaseError as exc:
            raise self._db_error(exc) from None

    def _meta(self, name: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE name=?", (name,)).fetchone()
        return None if row is None else str(row[0])

    # -- migrations --------------------------------------------------------------------

    def _migrate_from_1(self) -> None:
        """Format 1 → 2: add documents' collection and groups, chunks' word counts."""
        with self._transaction() as w:
            columns = {r[1] for r in w.execute("PRAGMA table_info(documents)")}
            if "collection" not in columns:
                w.execute("ALTER TABLE documents ADD COLUMN collection TEXT NOT NULL "
                          "DEFAULT 'default'")
                w.execute("ALTER TABLE documents ADD COLUMN groups TEXT NOT NULL "
                          "DEFAULT '[]'")
            if "n_words" not in {r[1] for r in w.execute("PRAGMA table_info(chunks)")}:
                w.execute("ALTER TABLE chunks ADD COLUMN n_words INTEGER NOT NULL DEFAULT 0")
                w.executemany(
                    "UPDATE chunks SET n_words=? WHERE id=?",
                    [(len(kw.tokenize(text.lower())), rowid) for rowid, text
                     in w.execute("SELECT id, text FROM chunks").fetchall()])
        self.manifest["format_version"] = 2
        self.manifest["migrated"] = {"from": 1, "at": now()}
        self._save_manifest()

    def _migrate_to_3(self, original: Any) -> None:
        """Format 2 → 3: leases, builds, the generation, dead-chunk log, a copy of the
        manifest and the checksums of the existing segment files (taken as they are)."""
        build, record = self.manifest.pop("build", None), self.manifest.pop("ann", None)
        with self._transaction() as w:
            for statement in _statements(SCHEMA_3):
                w.execute(statement)
            if "checksum" not in {r[1] for r in w.execute("PRAGMA table_info(segments)")}:
                w.execute("ALTER TABLE segments ADD COLUMN checksum TEXT")
            for seg, in w.execute("SELECT seg FROM segments WHERE checksum IS NULL").fetchall():
                files = [self.root / VECTORS / f"seg-{seg}{s}" for s in SEGMENT_FILES]
                if all(f.is_file() for f in files):
                    checksum = {s: [f.stat().st_size, file_digest(f)]
                                for s, f in zip(SEGMENT_FILES, files, strict=True)}
                    w.execute("UPDATE segments SET checksum=? WHERE seg=?",
                              (json.dumps(checksum), seg))
            path = self.root / VECTORS / ann.FILE
            if record and path.is_file():
                record["sha256"] = file_digest(path)
                w.execute("INSERT OR REPLACE INTO meta VALUES ('ann', ?)", (json.dumps(record),))
            if (build or {}).get("state") == "building":
                w.execute("INSERT INTO builds (owner, host, pid, command, started) "
                          "VALUES ('format-2', '', 0, 'sleuth index PATH', ?)",
                          (build.get("started") or now(),))
            self.manifest["format_version"] = FORMAT_VERSION
            self.manifest["migrated"] = {"from": original, "at": now()}
            w.execute("INSERT OR REPLACE INTO meta VALUES ('manifest', ?)",
                      (json.dumps(self.manifest),))
            self._bump(w)
        self._save_manifest()

    def _save_manifest(self) -> None:
        tmp = self.root / f"{MANIFEST}.{os.getpid()}.{threading.get_ident()}.tmp"
        tmp.write_text(json.dumps(self.manifest, indent=2, sort_keys=True), encoding="utf-8")
        tmp.replace(self.root / MANIFEST)

    # -- counts and state --------------------------------------------------------------

    @_reads
    def stats(self, access: Access | None = None) -> StoreStats:
        q = self.db.execute
        manifest = {**self.manifest, "build": self.build_status()}
        record = self._meta("ann")
        if record:
            manifest["ann"] = json.loads(record)
        visible = self._visible_for(access)
        if visible is not None:
            rows = sorted(visible.rows)
            sentences = sum(q(f"SELECT count(*) FROM sentences WHERE chunk IN "
                              f"({','.join('?' * len(part))})", part).fetchone()[0]
                            for part in _batches(rows))
            return StoreStats(len(visible.docs), len(visible.rows), sentences,
                              manifest=manifest)
        return StoreStats(
            documents=q("SELECT count(*) FROM documents").fetchone()[0],
            chunks=q("SELECT count(*) FROM chunks").fetchone()[0],
            sentences=q("SELECT count(*) FROM sentences").fetchone()[0],
            manifest=manifest,
        )

    @_reads
    def build_status(self) -> dict[str, Any]:
        """The state of the builds: ``complete``, ``running`` (a live process is writing)
        or ``interrupted`` (a build's process ended before it finished: re-running its
        ``command`` resumes it), with the builds behind it; ``empty`` before any build."""
        rows = self.db.execute("SELECT owner, host, pid, command, started FROM builds "
                               "WHERE finished IS NULL ORDER BY id").fetchall()
        running: list[dict[str, Any]] = []
        interrupted: list[dict[str, Any]] = []
        for owner, host, pid, command, started in rows:
            entry = {"command": command, "started": started, "host": host, "pid": pid}
            (running if self._lease.alive(owner) else interrupted).append(entry)
        last = self.db.execute("SELECT max(finished) FROM builds").fetchone()[0]
        state = "interrupted" if interrupted else "running" if running else \
            "complete" if last or self.db.execute(
                "SELECT 1 FROM documents LIMIT 1").fetchone() else "empty"
        return {"state": state, "running": running, "interrupted": interrupted,
                "finished": last}

    @_reads
    def document_hashes(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT doc_id, hash FROM documents").fetchall())

    @_reads
    def document_sources(self) -> dict[str, str | None]:
        return dict(self.db.execute("SELECT doc_id, path FROM documents").fetchall())

    @_reads
    def document_access(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        return {doc_id: (collection, decode_groups(groups)) for doc_id, collection, groups
                in self.db.execute("SELECT doc_id, collection, groups FROM documents")}

    @_reads
    def visible_documents(self, access: Access | None) -> frozenset[str] | None:
        visible = self._visible_for(access)
        return None if visible is None else visible.docs

    def _visible_for(self, access: Access | None) -> _Visible | None:
        """The visible rows of a restricting ``access`` (cached per generation); None when
        all are. Called inside a snapshot."""
        access = restricted(access)
        if access is None:
            return None
        return self._visible.get(self.generation(), access.key,
                                 lambda: self._compute_visible(access))

    def _compute_visible(self, access: Access) -> _Visible:
        docs = ranking.visible_documents(self.document_access(), access) or frozenset()
        rows: set[int] = set()
        words = 0
        for part in _batches(sorted(docs)):
            for rowid, n_words in self.db.execute(
                    f"SELECT id, n_words FROM chunks WHERE doc_id IN "
                    f"({','.join('?' * len(part))})", part):
                rows.add(rowid)
                words += n_words
        return _Visible(access.key, docs, frozenset(rows), words)

    def warm(self) -> None:
        """Nothing: the vectors are memory-mapped, and the first search reads the
        approximate index itself (2.9 s at 1M chunks, BENCHMARKS §12)."""

    def configure_ann(self, settings: VectorSettings) -> None:
        """Use ``settings`` for the approximate index: whether searches use it, how builds
        make it."""
        self._vector_settings = settings
        self._vectors = None

    # -- side files: the folder itself keeps them, the graph and the sessions ----------

    @property
    def where(self) -> str:
        return str(self.root)

    @property
    def folder(self) -> Path:
        return self.root

    def graph_tables(self) -> GraphTables:
        from sleuth.graph.store import FolderGraph

        return FolderGraph(self.root)

    def sessions(self) -> SessionStore:
        return FileSessions(self.root / "sessions")

    # -- builds ------------------------------------------------------------------------

    def begin_build(self, command: str = "") -> None:
        """Record a running build under this process's lease (``command`` resumes it)."""
        owner = self._lease.take()
        with self._transaction() as w:
            cursor = w.execute(
                "INSERT INTO builds (owner, host, pid, command, started) VALUES (?,?,?,?,?)",
                (owner, socket.gethostname(), os.getpid(), command or "sleuth index PATH",
                 now()))
            self._build = cursor.lastrowid

    def stop_build(self) -> None:
        """This process's build failed: it shows as interrupted (its command resumes it)."""
        if self._build is not None:
            with self._transaction() as w:
                w.execute("UPDATE builds SET owner='' WHERE id=?", (self._build,))
            self._build = None

    def finish_build(self) -> None:
        """Maintain the vectors (compaction, clean-up, the approximate index) unless another
        process is doing it, and mark this build and the interrupted ones it resumed (same
        command) finished."""
        with Maintenance(self.root) as held:
            if held:
                self._compact_vectors()
                self._clean_files()
                self._update_ann()
        self._lease.take()
        finished = now()
        with self._transaction() as w:
            if self._build is not None:
                command = w.execute("SELECT command FROM builds WHERE id=?",
                                    (self._build,)).fetchone()
                w.execute("UPDATE builds SET finished=? WHERE id=?", (finished, self._build))
                for build_id, owner in w.execute(
                        "SELECT id, owner FROM builds WHERE finished IS NULL AND command=?",
                        (command[0] if command else "",)).fetchall():
                    if not self._lease.alive(owner):
                        w.execute("UPDATE builds SET finished=? WHERE id=?",
                                  (finished, build_id))
                self._build = None
            w.execute("DELETE FROM builds WHERE finished IS NOT NULL AND id NOT IN (SELECT id "
                      "FROM builds WHERE finished IS NOT NULL ORDER BY id DESC LIMIT ?)",
                      (KEEP_BUILDS,))
        with self._lock:  # the log into the database, as far as readers allow: a finished
            if self._writer is not None:  # build does not depend on sleuth.db-wal
                self._writer.execute("PRAGMA wal_checkpoint(PASSIVE)")

    # -- writing -----------------------------------------------------------------------

    def write(self, docs: Sequence[PreparedDocument]) -> None:
        if not docs:
            return
        n_chunks = sum(len(d.chunks) for d in docs)
        n_sents = sum(len(c.sentences) for d in docs for c in d.chunks)
        check_vectors(docs)
        chunk_row, sent_row, seg = self._reserve(n_chunks, n_sents, segment=n_sents > 0)
        rows = self._rows(docs, chunk_row, sent_row)
        checksum = None
        try:
            if seg is not None:
                chunk_of = np.fromiter((row[1] for row in rows["sentences"]), dtype=np.int64,
                                       count=n_sents)
                checksum = self._write_segment(
                    seg, np.concatenate([d.vectors for d in docs]),
                    np.arange(sent_row, sent_row + n_sents, dtype=np.int64), chunk_of)
            self._commit_rows(docs, rows, seg, checksum)
        except BaseException:
            if seg is not None:
                self._abandon(seg)
            raise

    def _reserve(self, n_chunks: int, n_sents: int, *,
                 segment: bool) -> tuple[int, int, int | None]:
        """Reserve row ids and a segment number in one committed transaction, the segment
        recorded as pending under this process's lease (so no one deletes its files)."""
        owner = self._lease.take()
        with self._transaction() as w:
            firsts = []
            for name, count in (("chunk", n_chunks), ("sentence", n_sents),
                                ("segment", 1 if segment else 0)):
                row = w.execute("SELECT next FROM counters WHERE name=?", (name,)).fetchone()
                first = row[0] if row else 1
                w.execute("INSERT OR REPLACE INTO counters (name, next) VALUES (?, ?)",
                          (name, first + count))
                firsts.append(int(first))
            if segment:
                w.execute("INSERT INTO pending VALUES (?, ?)", (firsts[2], owner))
        return firsts[0], firsts[1], firsts[2] if segment else None

    def _abandon(self, seg: int) -> None:
        """Forget a pending segment of this process that will not be registered."""
        self._remove_segment_files(seg)
        try:
            with self._transaction() as w:
                w.execute("DELETE FROM pending WHERE seg=?", (seg,))
        except sqlite3.Error:  # the next clean-up removes it
            pass

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

    def _write_segment(self, seg: int, matrix: np.ndarray | _Live, ids: np.ndarray,
                       chunks: np.ndarray) -> str:
        """Vectors, their sentence ids and their chunk rowids, one row per sentence, each
        file written whole (temporary name, then renamed); returns their checksum record
        (a file a power cut left incomplete is caught by it, and repaired).
        A :class:`_Live` matrix is copied a segment at a time (memory stays bounded)."""
        folder = self.root / VECTORS
        folder.mkdir(exist_ok=True)
        record: dict[str, list[Any]] = {}
        arrays = (matrix if isinstance(matrix, _Live) else np.asarray(matrix, np.float32),
                  np.asarray(ids, dtype=np.int64), np.asarray(chunks, dtype=np.int64))
        for suffix, array in zip(SEGMENT_FILES, arrays, strict=True):
            path = folder / f"seg-{seg}{suffix}"
            tmp = path.with_name(path.name + ".tmp")
            with tmp.open("wb") as fh:
                writer = _HashingWriter(fh)
                if isinstance(array, _Live):
                    array.save(writer)
                else:
                    np.save(writer, array)
            tmp.replace(path)
            record[suffix] = [writer.size, writer.hash.hexdigest()]
        return json.dumps(record)

    def _commit_rows(self, docs: Sequence[PreparedDocument], rows: dict[str, list[Any]],
                     seg: int | None, checksum: str | None) -> None:
        with self._transaction() as w:
            generation = self._bump(w)
            opening = [d for d in docs if d.opens]
            self._drop_docs(w, [d.document.doc_id for d in opening], generation)
            w.executemany(
                "INSERT INTO documents VALUES (?,?,?,?,?,?,?,?,?,?)",
                [(d.document.doc_id, d.document.title, d.document.type, d.document.path,
                  d.stored_hash, json.dumps(dict(d.document.metadata), default=str),
                  d.document.text, len(d.chunks), d.collection, encode_groups(d.groups))
                 for d in opening],
            )
            for d in docs:
                if not d.opens and not w.execute(
                        "UPDATE documents SET n_chunks = n_chunks + ?, hash = ? WHERE doc_id=?",
                        (len(d.chunks), d.stored_hash, d.document.doc_id)).rowcount:
                    raise StoreError(f"{d.document.doc_id}: a later part of a document whose "
                                     "first part is not stored")
            w.executemany("INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?)", rows["chunks"])
            w.executemany("INSERT INTO sentences VALUES (?,?,?,?)", rows["sentences"])
            w.executemany(
                "INSERT INTO keyword (rowid, tokens) VALUES (?, ?)",
                [(rowid, _tokens(text)) for rowid, _, text in rows["chunk_text"]],
            )
            self._insert_summaries(w, [(d.document.doc_id, d.summary, d.summary_vector)
                                       for d in docs if d.summary_vector is not None])
            if seg is not None:
                w.execute("INSERT INTO segments VALUES (?, ?, ?)",
                          (seg, len(rows["sentences"]), checksum))
                w.execute("DELETE FROM pending WHERE seg=?", (seg,))

    @staticmethod
    def _drop_docs(w: sqlite3.Connection, doc_ids: Sequence[str], generation: int) -> None:
        """Inside a transaction: remove documents, their chunks, sentences and postings;
        their chunk rows are logged dead at ``generation`` (readers mark their vectors)."""
        for doc_id in doc_ids:
            old = w.execute("SELECT id, text FROM chunks WHERE doc_id=?", (doc_id,)).fetchall()
            if not old:
                w.execute("DELETE FROM documents WHERE doc_id=?", (doc_id,))
                w.execute("DELETE FROM summaries WHERE doc_id=?", (doc_id,))
                continue
            w.executemany(  # a contentless FTS5 row is deleted by replaying its tokens
                "INSERT INTO keyword (keyword, rowid, tokens) VALUES ('delete', ?, ?)",
                [(rowid, _tokens(text)) for rowid, text in old],
            )
            w.executemany("INSERT OR REPLACE INTO dead_chunks VALUES (?, ?)",
                          [(rowid, generation) for rowid, _ in old])
            w.execute(
                "DELETE FROM sentences WHERE chunk IN (SELECT id FROM chunks WHERE doc_id=?)",
                (doc_id,),
            )
            w.execute("DELETE FROM chunks WHERE doc_id=?", (doc_id,))
            w.execute("DELETE FROM documents WHERE doc_id=?", (doc_id,))
            w.execute("DELETE FROM summaries WHERE doc_id=?", (doc_id,))

    def delete(self, doc_ids: Sequence[str]) -> None:
        if not doc_ids:
            return
        with self._transaction() as w:
            self._drop_docs(w, doc_ids, self._bump(w))

    def write_summaries(self, rows: Sequence[tuple[str, str, np.ndarray]]) -> None:
        with self._transaction() as w:
            self._insert_summaries(w, rows)
            self._bump(w)

    @staticmethod
    def _insert_summaries(w: sqlite3.Connection,
                          rows: Sequence[tuple[str, str, np.ndarray | None]]) -> None:
        w.executemany(
            "INSERT OR REPLACE INTO summaries VALUES (?, ?, ?)",
            [(doc_id, text, np.asarray(vector, dtype=np.float32).tobytes())
             for doc_id, text, vector in rows if vector is not None])

    # -- maintenance (one process at a time: lease.Maintenance) --------------------------

    def _compact_vectors(self) -> None:
        """Merge the registered segments into one and drop dead rows, once deletions or
        fragments pile up. Only the segments read are merged; if any of them left the
        registry meanwhile, the merge is abandoned."""
        with self._snapshot() as generation:
            segs = [r[0] for r in self.db.execute("SELECT seg FROM segments ORDER BY seg")]
            live = self.db.execute("SELECT count(*) FROM sentences").fetchone()[0]
            total = self.db.execute("SELECT coalesce(sum(rows), 0) FROM segments").fetchone()[0]
            if len(segs) <= 1 and total == live:
                return
            vectors = self._load_vectors_or_fail()
        keep = vectors.chunk_of >= 0
        ids = vectors.sentence_of[keep]
        new = self._reserve(0, 0, segment=True)[2] if len(ids) else None
        try:
            checksum = None
            if new is not None:
                checksum = self._write_segment(new, _Live(vectors.matrices, keep), ids,
                                               vectors.chunk_of[keep])
            with self._transaction() as w:
                marks = ",".join("?" * len(segs))
                still = w.execute(f"SELECT count(*) FROM segments WHERE seg IN ({marks})",
                                  segs).fetchone()[0]
                if still != len(segs):
                    raise _Superseded
                w.execute(f"DELETE FROM segments WHERE seg IN ({marks})", segs)
                if new is not None:
                    w.execute("INSERT INTO segments VALUES (?, ?, ?)", (new, len(ids), checksum))
                    w.execute("DELETE FROM pending WHERE seg=?", (new,))
                w.execute("DELETE FROM dead_chunks WHERE generation <= ?", (generation,))
                self._bump(w)
        except _Superseded:
            if new is not None:
                self._abandon(new)
            return
        except BaseException:
            if new is not None:
                self._abandon(new)
            raise
        for seg in segs:  # unregistered by this process's transaction: its files to delete
            self._remove_segment_files(seg)

    def _clean_files(self) -> None:
        """Delete what no one will register: the pending segments of processes that are
        gone, and segment files that neither the registry nor a pending entry names (left
        by a process killed while it compacted or cleaned)."""
        with self._snapshot():
            pending = dict(self.db.execute("SELECT seg, owner FROM pending").fetchall())
            registered = {r[0] for r in self.db.execute("SELECT seg FROM segments")}
        gone = {seg for seg, owner in pending.items() if not self._lease.alive(owner)}
        for owner in self._lease.others():  # lock files of processes that died
            self._lease.alive(owner, remove=True)
        if gone:
            for seg in gone:
                self._remove_segment_files(seg)
            with self._transaction() as w:
                w.executemany("DELETE FROM pending WHERE seg=?", [(s,) for s in gone])
        named = registered | (set(pending) - gone)
        for path in (self.root / VECTORS).glob("seg-*"):
            seg = path.name.split(".")[0].removeprefix("seg-")
            if seg.isdigit() and int(seg) not in named:
                with self._snapshot():  # registered since the listing above?
                    if self.db.execute("SELECT 1 FROM segments WHERE seg=? UNION ALL SELECT 1 "
                                       "FROM pending WHERE seg=?", (seg, seg)).fetchone():
                        continue
                path.unlink(missing_ok=True)

    def _remove_segment_files(self, seg: int) -> None:
        folder = self.root / VECTORS
        for suffix in SEGMENT_FILES:
            for name in (f"seg-{seg}{suffix}", f"seg-{seg}{suffix}.tmp"):
                (folder / name).unlink(missing_ok=True)

    def _update_ann(self) -> None:
        """Bring the approximate index in line with the live rows and the settings: drop it
        where it is not wanted; rebuild it (lists trained anew) when missing, unreadable,
        of another ``nlist``, too full of dead sentences or trained on far fewer sentences
        than are live; else add the live rows it lacks. It is built on a fresh copy read
        from disk, so searches in flight keep the loaded one."""
        settings = self._vector_settings
        folder = self.root / VECTORS
        path = folder / ann.FILE
        path.with_name(path.name + ".tmp").unlink(missing_ok=True)  # an interrupted write
        for legacy in ann.LEGACY_FILES:
            (folder / legacy).unlink(missing_ok=True)
        with self._snapshot():
            vectors = self._load_vectors_or_fail()
            record = self._meta("ann")
        live = vectors.chunk_of >= 0
        n_live = int(live.sum())
        if not n_live or settings.ann == "off" or (
                settings.ann == "auto" and n_live < settings.ann_min_sentences):
            if path.exists() or record:
                path.unlink(missing_ok=True)
                self._save_ann_record(None)
            return
        dim = int(vectors.matrices[0].shape[1])
        current = ann.read(path, json.loads(record) if record else None, dim)
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
        self._save_ann_record({**ann.write(current, path), "built": now()})

    def _save_ann_record(self, record: dict[str, Any] | None) -> None:
        with self._transaction() as w:
            if record is None:
                w.execute("DELETE FROM meta WHERE name='ann'")
            else:
                w.execute("INSERT OR REPLACE INTO meta VALUES ('ann', ?)", (json.dumps(record),))
            self._bump(w)

    # -- reading vectors ---------------------------------------------------------------

    def _load_vectors(self) -> _Vectors:
        """The vectors at this snapshot's generation: cached, updated from the cached ones
        (new segments mapped, chunks deleted since marked dead) or loaded anew."""
        generation = self.generation()
        cached = self._vectors
        if cached is not None and cached.generation == generation:
            return cached
        with self._load_lock:
            cached = self._vectors
            if cached is not None and cached.generation == generation:
                return cached
            if cached is not None and cached.generation > generation:  # an older snapshot
                return self._read_vectors(None, generation)
            vectors = self._read_vectors(cached, generation)
            self._vectors = vectors
            return vectors

    def _load_vectors_or_fail(self) -> _Vectors:
        """The vectors, for maintenance: a missing or damaged file is an error."""
        try:
            return self._load_vectors()
        except _Broken as broken:
            raise self._damaged(f"{broken.part} {broken.problem}") from None

    def _read_vectors(self, base: _Vectors | None, generation: int) -> _Vectors:
        segments = self.db.execute("SELECT seg, rows, checksum FROM segments "
                                   "ORDER BY seg").fetchall()
        numbers = tuple(r[0] for r in segments)
        if base is not None and set(base.segs) <= set(numbers):
            dead = np.fromiter((r[0] for r in self.db.execute(
                "SELECT chunk FROM dead_chunks WHERE generation > ?", (base.generation,))),
                dtype=np.int64)
            old = base.chunk_of
            if len(dead):
                old = np.where(np.isin(old, dead), -1, old)
            added = [r for r in segments if r[0] not in set(base.segs)]
            matrices, ids, chunk_of = self._map_segments(added)
            approx = self._ann_for(base.matrices + matrices)
            tail = None  # rows the approximate index lacks: the new ones, if it is the same
            if approx is not None and approx is base.ann:
                first = int(base.offsets[-1])
                tail = np.concatenate([base.tail, np.arange(first, first + len(ids))])
            return _Vectors(base.matrices + matrices, _concat([old, chunk_of]),
                            _concat([base.sentence_of, ids]), approx, generation=generation,
                            segs=base.segs + tuple(r[0] for r in added), tail=tail)
        matrices, ids, chunk_of = self._map_segments(segments)
        return _Vectors(matrices, chunk_of, ids, self._ann_for(matrices), generation=generation,
                        segs=numbers)

    def _map_segments(self, segments: Sequence[tuple[int, int, str | None]]
                      ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """Memory-map ``(seg, rows, checksum)`` segments, checking each file; rows of
        chunks no longer stored are marked dead."""
        matrices, ids, chunks = [], [], []
        for seg, rows, checksum in segments:
            matrix, seg_ids, seg_chunks = self._open_segment(seg, rows, checksum)
            matrices.append(matrix)
            ids.append(seg_ids)
            chunks.append(seg_chunks)
        chunk_of = _concat(chunks)
        if len(chunk_of):
            lo, hi = int(chunk_of.min()), int(chunk_of.max())
            live = np.fromiter((r[0] for r in self.db.execute(
                "SELECT id FROM chunks WHERE id BETWEEN ? AND ?", (lo, hi))), dtype=np.int64)
            chunk_of = np.where(np.isin(chunk_of, live), chunk_of, -1)
        return matrices, _concat(ids), chunk_of

    def _open_segment(self, seg: int, rows: int,
                      checksum: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One registered segment, each file checked against its registered size and
        checksum (hashed once per file version in this process)."""
        record = json.loads(checksum) if checksum else {}
        folder = self.root / VECTORS
        for suffix in SEGMENT_FILES:
            path = folder / f"seg-{seg}{suffix}"
            try:
                stat = path.stat()
            except FileNotFoundError:
                raise _Broken(f"{VECTORS}/{path.name}", "is missing", retry=True) from None
            expected = record.get(suffix)
            if expected is None:
                continue
            size, digest = expected
            if stat.st_size != size:
                raise _Broken(f"{VECTORS}/{path.name}",
                              f"has {stat.st_size} bytes where {size} were written")
            stamp = (path.name, stat.st_ino, stat.st_size, stat.st_mtime_ns)
            if stamp not in self._verified:
                if file_digest(path) != digest:
                    raise _Broken(f"{VECTORS}/{path.name}", "does not match its checksum")
                self._verified.add(stamp)
        dim = int((self.manifest.get("embedder") or {}).get("dim") or 0)
        try:
            matrix = np.load(folder / f"seg-{seg}.npy", mmap_mode="r")
            ids = np.load(folder / f"seg-{seg}.ids.npy")
            chunks = np.load(folder / f"seg-{seg}.chunks.npy")
        except FileNotFoundError as exc:  # deleted since its stat: a compaction, or damage
            raise _Broken(f"{VECTORS}/{Path(str(exc.filename)).name}", "is missing",
                          retry=True) from None
        except (OSError, ValueError, EOFError) as exc:
            raise _Broken(f"{VECTORS}/seg-{seg}", f"cannot be read ({_short(exc)})") from None
        if matrix.ndim != 2 or matrix.dtype != np.float32 or len(matrix) != rows or \
                (dim and matrix.shape[1] != dim) or ids.shape != (rows,) or \
                chunks.shape != (rows,) or ids.dtype != np.int64 or chunks.dtype != np.int64:
            raise _Broken(f"{VECTORS}/seg-{seg}", f"does not hold {rows} sentence vectors")
        return matrix, ids, chunks

    def _ann_for(self, matrices: list[np.ndarray]) -> ann.AnnIndex | None:
        return self._load_ann(int(matrices[0].shape[1])) if matrices else None

    def _load_ann(self, dim: int) -> ann.AnnIndex | None:
        """The approximate index on disk (read once per file version) when it matches its
        record (size, count, checksum); None when off, missing or unusable: searches are
        then exact, and a damaged file is logged."""
        if self._vector_settings.ann == "off":
            return None
        path = self.root / VECTORS / ann.FILE
        try:
            stat = path.stat()
        except FileNotFoundError:
            return None
        stamp = (stat.st_mtime_ns, stat.st_size)
        if self._ann is None or self._ann[0] != stamp:
            record = self._meta("ann")
            self._ann = (stamp, ann.read(path, json.loads(record) if record else None, dim))
        return self._ann[1]

    # -- checking and repairing --------------------------------------------------------

    def check(self, full: bool = True) -> list[Problem]:
        """What is damaged, each with how to repair it (empty: intact). Always: the
        manifest against its copy, every segment file against its size and checksum, the
        sentence ids and chunk rows they hold against the database, the approximate index's
        checksum; ``full`` adds SQLite's integrity check and the keyword index's."""
        problems: list[Problem] = []
        with self._snapshot():
            problems += self._check_manifest()
            if full:
                problems += self._check_sqlite()
            problems += self._check_segments()
            problems += self._check_ann()
        return problems

    def _check_manifest(self) -> list[Problem]:
        saved = self._meta("manifest")
        if saved is not None and _essential(json.loads(saved)) != _essential(self.manifest):
            return [Problem(MANIFEST, "differs from the copy in sleuth.db",
                            f"sleuth index --repair --index {self.root}")]
        return []

    def _check_sqlite(self) -> list[Problem]:
        problems = []
        result = [r[0] for r in self.db.execute("PRAGMA integrity_check")]
        if result != ["ok"]:
            problems.append(Problem(DB, "; ".join(result[:3]), "index the documents again"))
        indexed = self.db.execute("SELECT count(*) FROM keyword_docsize").fetchone()[0]
        chunks = self.db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        if indexed != chunks:
            problems.append(Problem(DB, f"the keyword index holds {indexed} chunks of {chunks}",
                                    "index the documents again"))
        return problems

    def _check_segments(self) -> list[Problem]:
        """Each segment readable and matching its checksum, and every stored sentence with
        exactly one vector (beyond those of the damaged segments already named)."""
        problems = []
        covered: list[np.ndarray] = []
        lost = 0  # sentences of damaged segments
        repair = f"sleuth index --repair --index {self.root}"
        for seg, rows, checksum in self.db.execute(
                "SELECT seg, rows, checksum FROM segments ORDER BY seg").fetchall():
            try:
                _, ids, _ = self._open_segment(seg, rows, checksum)
            except _Broken as broken:
                problems.append(Problem(broken.part, broken.problem, repair))
                lost += rows
                continue
            if checksum is None:
                problems.append(Problem(f"{VECTORS}/seg-{seg}", "has no checksum (written "
                                        "before format 3); it cannot be verified", repair))
            covered.append(ids)
        stored = np.fromiter((r[0] for r in self.db.execute("SELECT id FROM sentences")),
                             dtype=np.int64)
        have = _concat(covered)
        missing = int(np.isin(stored, have, invert=True).sum())
        if missing > lost:
            problems.append(Problem(VECTORS, f"{missing - lost} stored sentences have no "
                                    "vector", repair))
        twice = len(have) - len(np.unique(have))
        if twice:
            problems.append(Problem(VECTORS, f"{twice} sentence vectors are stored twice",
                                    repair))
        return problems + self._check_lost_commits()

    def _check_lost_commits(self) -> list[Problem]:
        """A segment file numbered past every number the database reserved was written
        after its last commit: the database lost commits (its write-ahead log
        ``sleuth.db-wal`` deleted or damaged), and with them documents."""
        on_disk = [int(n) for p in (self.root / VECTORS).glob("seg-*.npy")
                   if (n := p.name.split(".")[0].removeprefix("seg-")).isdigit()]
        fresh = self._connect(readonly=True)  # read after the listing: not this snapshot
        try:
            row = fresh.execute("SELECT next FROM counters WHERE name='segment'").fetchone()
        finally:
            fresh.close()
        reserved = int(row[0]) if row else 1
        newer = sorted(n for n in on_disk if n >= reserved)
        if not newer:
            return []
        return [Problem(f"{DB}-wal", f"was lost or damaged: {DB} lacks its latest commits "
                        f"({VECTORS}/seg-{newer[0]}.npy was written after the last one it "
                        "holds), so documents indexed then are missing",
                        "run the last `sleuth index` commands again (they add what is "
                        "missing)")]

    def _check_ann(self) -> list[Problem]:
        record = self._meta("ann")
        path = self.root / VECTORS / ann.FILE
        if not record:
            return []
        data = json.loads(record)
        if not path.is_file():
            problem = "is missing"
        elif path.stat().st_size != data.get("bytes"):
            problem = "has another size than was written"
        elif data.get("sha256") and file_digest(path) != data["sha256"]:
            problem = "does not match its checksum"
        else:
            return []
        return [Problem(f"{VECTORS}/{ann.FILE}", f"{problem} (searches are exact until it "
                        "is rebuilt)", f"sleuth index --repair --index {self.root}")]

    def repair(self, embed: Callable[[list[tuple[str, str]]], np.ndarray],
               on_progress: Callable[[int, int], None] | None = None) -> RepairReport:
        """Unregister damaged segments and re-embed every stored sentence without a vector
        (``embed`` takes ``(title, sentence)`` pairs), then rebuild the approximate index
        where it is damaged. Holds the maintenance lock (waits for it)."""
        report = RepairReport(manifest_restored=self.restored_manifest)
        with Maintenance(self.root, wait=True):
            with self._snapshot():
                self._restore_manifest_copy(report)
                bad, covered = self._sort_segments()
            if bad:
                with self._transaction() as w:
                    w.executemany("DELETE FROM segments WHERE seg=?", [(s,) for s in bad])
                    self._bump(w)
                for seg in bad:
                    self._remove_segment_files(seg)
                report.segments_dropped = len(bad)
            with self._snapshot():
                todo = self.db.execute(
                    "SELECT s.id, s.chunk, s.start, s.end, c.start, c.text, d.title "
                    "FROM sentences s JOIN chunks c ON c.id = s.chunk JOIN documents d "
                    "ON d.doc_id = c.doc_id ORDER BY s.id").fetchall()
            todo = [row for row in todo if row[0] not in covered]
            for start in range(0, len(todo), REPAIR_BATCH):
                part = todo[start : start + REPAIR_BATCH]
                matrix = embed([(title, text[s - c0 : e - c0])
                                for _, _, s, e, c0, text, title in part])
                self._add_vectors(np.array([r[0] for r in part], dtype=np.int64),
                                  np.array([r[1] for r in part], dtype=np.int64), matrix)
                report.sentences_embedded += len(part)
                if on_progress:
                    on_progress(report.sentences_embedded, len(todo))
            if self._check_ann():
                (self.root / VECTORS / ann.FILE).unlink(missing_ok=True)
                self._save_ann_record(None)
                report.ann_rebuilt = True
            self._compact_vectors()
            self._clean_files()
            self._update_ann()
        return report

    def _restore_manifest_copy(self, report: RepairReport) -> None:
        if self._check_manifest():
            saved = self._meta("manifest")
            assert saved is not None
            self.manifest = json.loads(saved)
            self._save_manifest()
            report.manifest_restored = True

    def _sort_segments(self) -> tuple[list[int], set[int]]:
        """The damaged segments, and the sentence ids the sound ones hold."""
        bad: list[int] = []
        covered: set[int] = set()
        for seg, rows, checksum in self.db.execute(
                "SELECT seg, rows, checksum FROM segments ORDER BY seg").fetchall():
            try:
                _, ids, _ = self._open_segment(seg, rows, checksum)
            except _Broken:
                bad.append(seg)
                continue
            fresh = set(ids.tolist())
            if fresh & covered:  # a sentence twice: the later copy is dropped
                bad.append(seg)
                continue
            covered |= fresh
        return bad, covered

    def _add_vectors(self, ids: np.ndarray, chunks: np.ndarray, matrix: np.ndarray) -> None:
        """Register re-embedded vectors of stored sentences as a new segment."""
        seg = self._reserve(0, 0, segment=True)[2]
        assert seg is not None
        try:
            checksum = self._write_segment(seg, matrix, ids, chunks)
            with self._transaction() as w:
                w.execute("INSERT INTO segments VALUES (?, ?, ?)", (seg, len(ids), checksum))
                w.execute("DELETE FROM pending WHERE seg=?", (seg,))
                self._bump(w)
        except BaseException:
            self._abandon(seg)
            raise

    # -- reading -----------------------------------------------------------------------
    @_reads
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
        return ranking.semantic_hits(ranked, self._chunk_meta([key for key, _, _ in ranked]),
                                     lambda row: spans[int(vectors.sentence_of[row])])

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

    @_reads
    def keyword_search(self, keywords: Sequence[str], top_k: int,
                       mode: kw.KeywordMode = "word",
                       access: Access | None = None) -> list[Hit]:
        parsed = kw.parse_keywords(keywords, mode)
        counted, rescored = ranking.split_keywords(parsed, MAX_TOKEN_CHARS)
        rows, counts = [], []
        for k in counted:
            found, occurrences = self._term_postings(k.text)
            rows.append(found)
            counts.append(occurrences * k.weight)
        scores = _summed(rows, counts)
        if rescored:
            ranking.rescore(self._candidate_texts(self._candidates(rescored)), rescored,
                            scores)
        visible = self._visible_for(access)
        if visible is not None:
            scores = {rowid: score for rowid, score in scores.items() if rowid in visible.rows}
        ranked = self._top(scores, top_k)
        chunks = self.get_chunks([cid for cid, _ in ranked])
        return ranking.keyword_hits(ranked, chunks,
                                    self._titles({c.doc_id for c in chunks.values()}), parsed)

    @_reads
    def bm25_search(self, terms: Sequence[str], top_k: int,
                    doc_ids: Sequence[str] | None = None,
                    access: Access | None = None) -> list[Hit]:
        """FTS5's BM25 over the chunk tokens (the terms joined by OR); under a restricting
        ``access``, BM25 computed over the visible chunks alone."""
        tokens = ranking.query_tokens(terms, MAX_TOKEN_CHARS)
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
        by_id = [(ids[rowid], score) for rowid, score in ranked if rowid in ids]
        chunks = self.get_chunks([chunk_id for chunk_id, _ in by_id])
        return ranking.bm25_hits(by_id, chunks,
                                 self._titles({c.doc_id for c in chunks.values()}), tokens)

    def _term_postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(chunk rowids, occurrences) of one token; a common term's are kept in memory for
        the snapshot's generation. Called inside a snapshot."""
        def keep(found: tuple[np.ndarray, np.ndarray],
                 held: Iterable[tuple[np.ndarray, np.ndarray]]) -> bool:
            return len(found[0]) >= COMMON_TERM_CHUNKS and \
                len(found[0]) + sum(len(r) for r, _ in held) <= POSTINGS_CACHE_SIZE

        return self._postings.get(self.generation(), term, lambda: self._read_postings(term),
                                  keep)

    def _read_postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        found = self.db.execute("SELECT doc, count(*) FROM keyword_postings WHERE term=? "
                                "GROUP BY doc", (term,)).fetchall()
        pairs = np.array(found, dtype=np.int64).reshape(-1, 2)
        return pairs[:, 0].copy(), pairs[:, 1].astype(np.float64)

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
            idf[token] = ranking.bm25_idf(total, len(postings))
            for rowid, n in postings:
                if rowid in allowed:
                    counts.setdefault(rowid, {})[token] = n
        lengths = {rowid: n for part in _batches(sorted(counts)) for rowid, n in self.db.execute(
            f"SELECT id, n_words FROM chunks WHERE id IN ({','.join('?' * len(part))})", part)}
        scored = [(rowid, sum(ranking.bm25_term(idf[t], n, lengths.get(rowid, 0), avg)
                              for t, n in tf.items())) for rowid, tf in counts.items()]
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
        idf = {t: ranking.bm25_idf(total, df[t]) for t in tokens if df.get(t)}
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
            score = sum(ranking.bm25_term(w, counts[t], length, avg) for t, w in idf.items()
                        if counts[t])
            if score > 0:
                scored.append((rowid, score))
        scored.sort(key=lambda item: -item[1])
        return scored[:top_k]

    @_reads
    def document_titles(self, access: Access | None = None) -> dict[str, str]:
        titles = dict(self.db.execute("SELECT doc_id, title FROM documents").fetchall())
        visible = self._visible_for(access)
        if visible is None:
            return titles
        return {doc_id: title for doc_id, title in titles.items() if doc_id in visible.docs}

    @_reads
    def document_list(self, access: Access | None = None,
                      doc_ids: Sequence[str] | None = None) -> list[DocumentInfo]:
        visible = self._visible_for(access)
        query = ("SELECT doc_id, title, type, path, collection, groups, n_chunks, "
                 "CASE json_type(metadata, '$.pages') WHEN 'array' THEN "
                 "json_array_length(metadata, '$.pages') END FROM documents")
        if doc_ids is None:
            rows = self.db.execute(query).fetchall()
        else:
            rows = [row for part in _batches(sorted(set(doc_ids))) for row in self.db.execute(
                f"{query} WHERE doc_id IN ({','.join('?' * len(part))})", part)]
        return sorted((DocumentInfo(doc_id, title, kind, path, collection,
                                    decode_groups(groups), chunks, pages)
                       for doc_id, title, kind, path, collection, groups, chunks, pages in rows
                       if visible is None or doc_id in visible.docs),
                      key=lambda info: info.doc_id)

    def _hidden(self, doc_id: str, access: Access | None) -> bool:
        visible = self._visible_for(access)
        return visible is not None and doc_id not in visible.docs

    @_reads
    def chunk_spans(self, doc_id: str,
                    access: Access | None = None) -> list[tuple[str, int, int]]:
        if self._hidden(doc_id, access):
            return []
        return [(r[0], r[1], r[2]) for r in self.db.execute(
            "SELECT chunk_id, start, end FROM chunks WHERE doc_id=? ORDER BY position",
            (doc_id,))]

    @_reads
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

    @_reads
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

    @_reads
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

    @_reads
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
        """Every chunk in document order, read a page at a time (each page one snapshot)."""
        after: tuple[str, int] = ("", -1)
        while True:
            page = self._chunk_page(after)
            if not page:
                return
            yield from page
            after = (page[-1].doc_id, page[-1].position)

    @_reads
    def _chunk_page(self, after: tuple[str, int], size: int = 500) -> list[Chunk]:
        rows = self.db.execute(
            "SELECT id, chunk_id, doc_id, position, start, end, n_tokens, text FROM chunks "
            "WHERE (doc_id, position) > (?, ?) ORDER BY doc_id, position LIMIT ?",
            (*after, size)).fetchall()
        return [self._chunk(row) for row in rows]

    def close(self) -> None:
        with self._lock:
            for db in [*self._connections, *([self._writer] if self._writer else [])]:
                db.close()
            self._connections, self._writer = [], None
            self._tls = threading.local()
            self._lease.release()


class _PerGeneration(Generic[V]):
    """Values computed inside a read snapshot, kept while the index stays at the generation
    they were computed at (a newer one drops them all); an older snapshot's values are
    computed and not kept."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self._values: dict[str, V] = {}
        self._generation = -1

    def get(self, generation: int, key: str, compute: Callable[[], V],
            keep: Callable[[V, Iterable[V]], bool] | None = None) -> V:
        """The value of ``key`` at ``generation``, computed (outside the lock) when missing
        and kept when ``keep(value, values held)`` allows."""
        with self._lock:
            if self._generation != generation:
                if generation < self._generation:
                    return compute()
                self._values, self._generation = {}, generation
            found = self._values.get(key)
        if found is not None:
            return found
        value = compute()
        with self._lock:
            if self._generation == generation and (
                    keep is None or keep(value, list(self._values.values()))):
                self._values[key] = value
        return value


def _summed(rows: list[np.ndarray], scores: list[np.ndarray]) -> dict[int, float]:
    """Scores summed per row over several (rows, scores) arrays, as a dict."""
    if not rows:
        return {}
    ids, where = np.unique(np.concatenate(rows), return_inverse=True)
    total = np.bincount(where, weights=np.concatenate(scores), minlength=len(ids))
    return dict(zip(ids.tolist(), total.tolist(), strict=True))


def _batches(items: Sequence[Any], size: int = 900) -> Iterator[list[Any]]:
    """``items`` in lists of at most ``size`` (SQLite's bound-parameter limit)."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _tokens(text: str) -> str:
    """The FTS5 document for a chunk: its lowercased ``\\w+`` tokens, space-separated."""
    return " ".join(t[:MAX_TOKEN_CHARS] for t in kw.tokenize(text.lower()))


def _essential(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest without the parts format 2 kept in it and format 3 keeps in the database
    (build state, approximate index record)."""
    return {k: v for k, v in manifest.items() if k not in ("build", "ann")}


def _short(exc: BaseException) -> str:
    """An exception as a short phrase for a one-line message."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]

