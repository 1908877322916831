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
takes a lease (:mod:`sleuth.store.local.lease`) and reserves row ids and a segment number in one
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
:class:`~sleuth.text.access.Access` is turned once into the set of visible chunk rows (cached per
access and generation), and every read drops invisible rows before ranking: keyword
scores, the semantic score vector, BM25 (whose N, document frequencies and average length
are then counted over the visible chunks only), titles, summaries, spans and reads.

Semantic search is exact (every live vector scored) unless an approximate index exists (a
faiss inverted file, :mod:`sleuth.store.local.ann`): built by ``finish_build`` per
:class:`~sleuth.settings.VectorSettings` (from 200k sentence vectors by default), it proposes
candidate sentences that are re-scored exactly and ranked like the exact path. Restrictions
(access, ``doc_ids``) that leave under a fifth of the rows are searched exactly over those
rows; wider ones filter inside the approximate search and again after.

Migration: formats 1 (no collections, groups or word counts) and 2 (no checksums, leases
or generation) are upgraded in place on open.

The guarantees above (snapshots, leases, pending segments, the generation) hold only
together, over one object's connections and locks, so :class:`LocalStore` stays one class,
composed of parts that each own one concern and share the state set here:
:mod:`~sleuth.store.local.database` (connections, snapshots, write transactions, the
generation), :mod:`~sleuth.store.local.manifest` (opening, creating, migrating),
:mod:`~sleuth.store.local.segments` (segment files, compaction, loading the vectors, the
approximate index's upkeep), :mod:`~sleuth.store.local.writes` (document rows),
:mod:`~sleuth.store.local.integrity` (check, repair), :mod:`~sleuth.store.local.reads` and
:mod:`~sleuth.store.local.search`; the vectors in memory are
:mod:`~sleuth.store.local.vectors`. This module keeps the opening, the builds and the side
files. What is not about this folder format lives elsewhere: ranking in
:mod:`sleuth.store.ranking`, leases in :mod:`sleuth.store.local.lease`, the approximate index
in :mod:`sleuth.store.local.ann`.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sleuth.errors import IndexNotFound
from sleuth.settings import PostgresSettings, VectorSettings
from sleuth.store.base import GraphTables, check_embedder, check_manifest, now
from sleuth.store.local.database import (
    BUSY_SECONDS,
    DB,
    MANIFEST,
    MAX_TOKEN_CHARS,
    READ_ATTEMPTS,
    SCHEMA,
    SCHEMA_3,
    SEGMENT_FILES,
    TABLES,
    VECTORS,
    _PerGeneration,
)
from sleuth.store.local.integrity import REPAIR_BATCH, _Integrity
from sleuth.store.local.lease import Lease, Maintenance
from sleuth.store.local.manifest import _Manifest
from sleuth.store.local.search import (
    COMMON_TERM_CHUNKS,
    MAX_BM25_WITHIN,
    MAX_CANDIDATES,
    MAX_EXPANSION,
    POSTINGS_CACHE_SIZE,
    _Search,
)
from sleuth.store.local.segments import REBUILD_DEAD, RETRAIN_GROWTH
from sleuth.store.local.sessions import FileSessions
from sleuth.store.local.vectors import EXACT_SHARE, file_digest
from sleuth.store.local.writes import _Writes
from sleuth.store.sessions import SessionStore

__all__ = [
    "BUSY_SECONDS", "COMMON_TERM_CHUNKS", "DB", "EXACT_SHARE", "KEEP_BUILDS", "MANIFEST",
    "MAX_BM25_WITHIN", "MAX_CANDIDATES", "MAX_EXPANSION", "MAX_TOKEN_CHARS",
    "POSTINGS_CACHE_SIZE", "READ_ATTEMPTS", "REBUILD_DEAD", "REPAIR_BATCH", "RETRAIN_GROWTH",
    "SCHEMA", "SCHEMA_3", "SEGMENT_FILES", "TABLES", "VECTORS", "LocalStore", "file_digest",
]

KEEP_BUILDS = 50  # finished build records kept


class LocalStore(_Writes, _Integrity, _Search, _Manifest):
    """SQLite (rows + FTS5) and memory-mapped ``.npy`` vectors in one folder."""

    def __init__(self, location: str, *, create: bool, embedder: Mapping[str, Any] | None,
                 chunk_tokens: int | None = None, repair: bool = False) -> None:
        self.root = Path(location).expanduser()
        self._lock = threading.RLock()  # this process's writes, one at a time
        self._load_lock = threading.Lock()  # one vector (re)load at a time
        self._tls = threading.local()  # per thread: its read connection, its snapshot
        self._connections = []
        self._writer = None
        self._lease = Lease(self.root)
        self._builds = threading.local()  # per thread: the build it runs (builds.id)
        self._vectors = None
        self._visible = _PerGeneration(self._load_lock)
        self._postings = _PerGeneration(self._load_lock)  # common terms' (chunk rowids, counts)
        self._masks = _PerGeneration(self._load_lock)  # per access: its chunk rowids, a mask
        self._verified = set()  # files whose checksum matched
        self._vector_settings = VectorSettings()
        self._ann = None  # file stamp, approximate index
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

    def warm(self) -> None:
        """Nothing: the vectors are memory-mapped, and the first search reads the
        approximate index itself (2.9 s at 1M chunks, BENCHMARKS §12)."""

    def configure_ann(self, settings: VectorSettings) -> None:
        """Use ``settings`` for the approximate index: whether searches use it, how builds
        make it."""
        self._vector_settings = settings
        self._vectors = None

    def configure_connections(self, settings: PostgresSettings) -> None:
        """A folder has no database connections: nothing to hold."""

    # -- side files: the folder itself keeps them, the graph and the sessions ----------

    @property
    def where(self) -> str:
        return str(self.root)

    @property
    def folder(self) -> Path:
        return self.root

    def graph_tables(self) -> GraphTables:
        from sleuth.store.local.graph import FolderGraph

        return FolderGraph(self.root)

    def sessions(self) -> SessionStore:
        return FileSessions(self.root / "sessions")

    # -- builds ------------------------------------------------------------------------

    @property
    def _build(self) -> int | None:
        """The build the calling thread runs (builds.id), if any. A build is one thread's
        calls from :meth:`begin_build` to :meth:`finish_build` or :meth:`stop_build`, so
        that builds of several threads at once (a server's uploads, embedded outside its
        write lock) and a delete between their writes each end only their own record."""
        return getattr(self._builds, "id", None)

    @_build.setter
    def _build(self, build: int | None) -> None:
        self._builds.id = build

    def begin_build(self, command: str = "") -> None:
        """Record a running build of this thread under this process's lease (``command``
        resumes it)."""
        owner = self._lease.take()
        with self._transaction() as w:
            cursor = w.execute(
                "INSERT INTO builds (owner, host, pid, command, started) VALUES (?,?,?,?,?)",
                (owner, socket.gethostname(), os.getpid(), command or "sleuth index PATH",
                 now()))
            self._build = cursor.lastrowid

    def stop_build(self) -> None:
        """This thread's build failed: it shows as interrupted (its command resumes it)."""
        if self._build is not None:
            with self._transaction() as w:
                w.execute("UPDATE builds SET owner='' WHERE id=?", (self._build,))
            self._build = None

    def finish_build(self) -> None:
        """Maintain the vectors (compaction, clean-up, the approximate index) unless another
        process is doing it, and mark this thread's build and the interrupted ones it resumed
        (same command) finished."""
        with Maintenance(self.root) as held:
            # a writer that finds the lock held skips maintenance: segments it committed
            # while this one merged are merged by this one, before it lets go (a few rounds
            # at most, while other writers are still committing batches)
            for _ in range(3 if held else 0):
                self._compact_vectors()
                self._clean_files()
                self._update_ann()
                if self.db.execute("SELECT count(*) FROM segments").fetchone()[0] <= 1:
                    break
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

    def close(self) -> None:
        with self._lock:
            for db in [*self._connections, *([self._writer] if self._writer else [])]:
                db.close()
            self._connections, self._writer = [], None
            self._tls = threading.local()
            self._lease.release()
