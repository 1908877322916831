"""The PostgreSQL store's approximate index (``postgres.vector_search = "faiss"``, the
default): the embedded store's inverted file (faiss IVF-SQ8, :mod:`sleuth.store.local.ann`)
kept in the database, copied once per host into the cache folder and memory-mapped by every
process there. Re-measured against pgvector 0.8's own indexes by bench/pg_engine.py: HNSW
(on ``halfvec`` or binary-quantised) found too few of the exact top 10, and IVFFlat inside
the engine (:mod:`sleuth.store.postgres.engine_ann`, the other choice) reached the recall
at several times the cost, because on these vectors the lists nearest to a query are the
largest and it scans float vectors where faiss scans 8-bit codes.

Why not pgvector's own indexes when this was written (pgvector 0.6, BENCHMARKS §12): on
the scale bench's 1M chunks (3.9M sentences) its HNSW index found 0.498 of the exact top 10
and took 45 minutes to build; IVFFlat needed 40 of 630 lists for 0.98 at 100k chunks, a
scan that grows with the rows.
Here, the inverted file with 8-bit codes and exact re-scoring in SQL reaches 0.971 at
77.5 ms p50 on the same 1M chunks and builds in minutes, so a team that moves to
PostgreSQL keeps the embedded store's quality (0.968 there).

Tables (in the index schema)::

    ann        one row: the record (kind, labels, sentences, chunks, nlist, trained_on,
               covered, bytes, sha256, built, seconds)
    ann_parts  the serialised index in parts of PART_BYTES (bytea, stored uncompressed)

Its vectors are labelled by **chunk** (a chunk's sentences share its label), so candidates
name the chunks to re-score without a lookup per sentence, and a restricted search selects
by visible chunks. ``covered`` is the largest sentence id the index was built from.
Sentence ids are never reused, so the rows a search must score besides the index's
candidates are exactly those with ``id > covered`` (written since), scored exactly in SQL.
To make that true for writers in flight, the build reads ``covered`` under a SHARE lock
on ``sentences``: every transaction that had inserted sentences has committed by then, and
every later one draws larger ids. Candidates are only proposals: the store re-scores every
sentence of their chunks exactly from ``sentences.embedding`` and applies the access filter
in the same SQL, so a stale or damaged index can cost recall, never a wrong score or a
hidden chunk.

The index is about a quarter of the float32 vector bytes (1.5 GB for 1M chunks of 384-d
sentences). A process that needs it (at its first search, and when the record changes)
reads it into ``<cache folder>/pg-ann/<sha256>.faiss`` unless a process of the host already
did (the file is checked against the hash, written to a temporary name and renamed), and
maps its inverted lists read-only (``faiss.IO_FLAG_MMAP``): the pages are the page cache's,
shared by every process on the host, instead of a private copy each; only the ids (8 bytes
a vector) are read into the process. The file of the record it replaced is removed (a
process still mapping it keeps its pages). Until it is mapped, and without faiss (the
``ann`` extra), searches are exact.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from sleuth.settings import VectorSettings, cache_dir
from sleuth.store.base import now
from sleuth.store.local import ann
from sleuth.text.threads import kernel_threads

log = logging.getLogger(__name__)

TABLES = """
CREATE TABLE ann (id boolean PRIMARY KEY DEFAULT true CHECK (id), record jsonb NOT NULL);
CREATE TABLE ann_parts (part int PRIMARY KEY, data bytea NOT NULL);
ALTER TABLE ann_parts ALTER COLUMN data SET STORAGE EXTERNAL;
"""
LABELS = "chunk"  # what a vector's label is (a record without it is rebuilt)
PART_BYTES = 64 << 20  # one bytea value per 64 MiB of the serialised index
HOST_FOLDER = "pg-ann"  # under the cache folder: one file per index, named by its sha256
COPY_ROWS = ann.ADD_BATCH  # vectors per faiss add while streaming the table
EXACT_SHARE = 0.01  # restrictions leaving fewer sentences than this share are scanned exactly
REBUILD_DEAD = 0.2  # share of deleted sentences in the index that triggers a rebuild
RETRAIN_GROWTH = 4.0  # live sentences / sentences its lists were trained on: retrain above

Connection = psycopg.Connection[tuple[Any, ...]]


@dataclass(frozen=True)
class Loaded:
    """An index loaded from the database, with the record it was loaded under."""

    index: ann.AnnIndex
    covered: int  # the largest sentence id it holds candidates for
    stamp: str  # the record's sha256: a change means a new index
    chunks: int  # distinct chunks among its labels


def ensure_tables(conn: Connection, schema: str) -> None:
    """Create the tables in an index ``schema`` of an earlier version; nothing on a server
    or role that cannot write (its searches stay exact until a writer opens the index)."""
    found = conn.execute("SELECT to_regclass(%s)", (f'"{schema}".ann',)).fetchone()
    if found is not None and found[0] is not None:
        return
    try:
        with conn.transaction():
            conn.execute(f'SET LOCAL search_path TO "{schema}"')
            conn.execute(TABLES)
    except (psycopg.errors.ReadOnlySqlTransaction, psycopg.errors.InsufficientPrivilege,
            psycopg.errors.DuplicateTable):  # read-only, or another process made them
        pass


class DatabaseAnn:
    """Loading, caching and (re)building the index of one PostgreSQL index schema."""

    def __init__(self, connect: Callable[[], Any], dim: int) -> None:
        self._connect = connect  # a context manager yielding a pooled connection
        self._dim = dim
        self._lock = threading.Lock()
        self._loaded: Loaded | None = None
        self._missing: str | None = None  # the record stamp found unusable (not reloaded)
        self._filters: dict[tuple[str, int], Any | None] = {}
        self._file: Path | None = None  # the host file this process maps

    # -- reading -----------------------------------------------------------------------

    def current(self, conn: Connection) -> Loaded | None:
        """The index of the current record, loaded when it changed (one thread loads, the
        others search exactly meanwhile); None when there is none or it is unusable."""
        try:
            row = conn.execute("SELECT record->>'sha256' FROM ann").fetchone()
        except psycopg.errors.UndefinedTable:  # an index of an earlier version, read-only
            conn.rollback()
            return None
        if row is None:
            self._loaded = None
            return None
        stamp = str(row[0])
        loaded = self._loaded
        if loaded is not None and loaded.stamp == stamp:
            return loaded
        # one thread loads; while a newer index loads, the others keep the older one (its
        # own ``covered`` bounds the rows they score exactly, so nothing is missed)
        if stamp == self._missing or not self._lock.acquire(blocking=loaded is None):
            return loaded
        try:
            if self._loaded is None or self._loaded.stamp != stamp:
                self._loaded = self._load(conn, stamp)
                self._filters.clear()
                self._missing = None if self._loaded else stamp
            return self._loaded
        finally:
            self._lock.release()

    def _load(self, conn: Connection, stamp: str) -> Loaded | None:
        record_row = conn.execute("SELECT record FROM ann").fetchone()
        record = record_row[0] if record_row else None
        if not isinstance(record, dict) or record.get("sha256") != stamp \
                or record.get("kind") != ann.KIND or record.get("labels") != LABELS:
            return None
        conn.commit()
        path = host_file(stamp)
        try:
            if not _intact(path, stamp, int(record.get("bytes") or 0)) \
                    and not self._write_host_file(conn, path, stamp):
                return None  # a build replaced it while we read: the next search loads
        except OSError as exc:  # a cache folder this process cannot write
            log.warning("cannot write the approximate index's host copy %s (%s): this "
                        "process loads a copy of its own", path, exc)
            return self._load_copy(conn, record, stamp)
        index = mapped(path, int(record.get("trained_on") or 0), self._dim)
        if index is None or index.size != record.get("sentences"):
            return None
        if self._file is not None and self._file != path:
            self._file.unlink(missing_ok=True)  # processes mapping it keep their mapping
        self._file = path
        log.info("loaded the approximate index: %s sentences, %s lists", index.size,
                 index.nlist)
        return Loaded(index, int(record["covered"]), stamp,
                      int(record.get("chunks") or index.size))

    def _load_copy(self, conn: Connection, record: dict[str, Any], stamp: str
                   ) -> Loaded | None:
        """The index read from the database into this process (no host file)."""
        digest = hashlib.sha256()
        parts = []
        for (data,) in conn.execute("SELECT data FROM ann_parts ORDER BY part"):
            digest.update(data)
            parts.append(bytes(data))
        conn.commit()
        if digest.hexdigest() != stamp:  # a build replaced it while we read: next search
            return None
        index = ann.from_bytes(b"".join(parts), int(record.get("trained_on") or 0), self._dim)
        if index is None or index.size != record.get("sentences"):
            return None
        return Loaded(index, int(record["covered"]), stamp,
                      int(record.get("chunks") or index.size))

    def _write_host_file(self, conn: Connection, path: Path, stamp: str) -> bool:
        """Write the stored parts to ``path`` (a temporary name renamed: a reader never
        maps half a file); False when they do not hash to ``stamp``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            with tmp.open("wb") as out:
                for (data,) in conn.execute("SELECT data FROM ann_parts ORDER BY part"):
                    digest.update(data)
                    out.write(data)
            conn.commit()
            if digest.hexdigest() != stamp:
                return False
            tmp.replace(path)
            return True
        finally:
            tmp.unlink(missing_ok=True)

    def filter(self, loaded: Loaded, key: str, generation: int,
               visible_ids: Callable[[], np.ndarray]) -> Any | None:
        """A faiss selector of the chunks an access ``key`` may see (None when they are few
        enough to scan exactly), cached per key and write generation."""
        cache_key = (key, generation)
        if cache_key not in self._filters:
            ids = visible_ids()
            if len(self._filters) > 16:
                self._filters.clear()
            self._filters[cache_key] = ann.bitmap_selector(ids) \
                if len(ids) >= EXACT_SHARE * max(loaded.chunks, 1) else None
        return self._filters[cache_key]

    # -- building ----------------------------------------------------------------------

    def update(self, conn: Connection, settings: VectorSettings,
               on_progress: Callable[[str], None] | None = None) -> dict[str, Any] | None:
        """Bring the index in line with the table and ``settings`` (see the local store's
        ``_update_ann``): drop it where it is not wanted, rebuild it when missing, of
        another ``nlist``, too full of deleted sentences or trained on far fewer than are
        stored, else add the sentences written since. The new record, or None."""
        say = on_progress or (lambda _: None)
        started = time.perf_counter()
        with conn.transaction():
            conn.execute("LOCK TABLE sentences IN SHARE MODE")  # writers in flight commit
            covered = int(conn.execute("SELECT coalesce(max(id), 0) FROM sentences")
                          .fetchone()[0])  # type: ignore[index]
        n_live = int(conn.execute("SELECT count(*) FROM sentences").fetchone()[0])  # type: ignore[index]
        if not n_live or settings.ann == "off" or (
                settings.ann == "auto" and n_live < settings.ann_min_sentences):
            with conn.transaction():
                conn.execute("DELETE FROM ann")
                conn.execute("DELETE FROM ann_parts")
            return None
        current = self.current(conn)
        start_after = 0
        if current is not None:
            held = current.index
            old_live = int(conn.execute("SELECT count(*) FROM sentences WHERE id <= %s",
                                        (current.covered,)).fetchone()[0])  # type: ignore[index]
            if ((settings.nlist is not None
                 and held.nlist != ann.lists_for(held.trained_on, settings.nlist))
                    or n_live > RETRAIN_GROWTH * held.trained_on
                    or held.size - old_live > REBUILD_DEAD * held.size):
                current = None
            elif covered <= current.covered:
                return None  # nothing new
            else:
                start_after = current.covered
        if current is None:
            lists = ann.lists_for(n_live, settings.nlist)
            say(f"training the approximate index ({lists} lists)")
            index = ann.trained(self._sample(conn, lists * ann.TRAIN_PER_LIST, n_live),
                                lists, n_live)
            if index is None:  # faiss is missing (logged): searches stay exact
                return None
        else:
            # a copy: searches in flight keep the loaded one
            copied = ann.from_bytes(ann.to_bytes(current.index), current.index.trained_on,
                                    self._dim)
            if copied is None:
                return None
            index = copied
        labels = [index.labels]
        added = 0
        for chunks, vectors in self._rows(conn, start_after, covered):
            with kernel_threads():
                index.index.add_with_ids(vectors, chunks)
            labels.append(chunks)
            added += len(chunks)
            say(f"approximate index: {added:,} sentences added")
        index = ann.AnnIndex(index.index, np.concatenate(labels), index.trained_on)
        data = ann.to_bytes(index)
        record: dict[str, Any] = {
            "kind": ann.KIND, "labels": LABELS, "sentences": index.size,
            "chunks": len(np.unique(index.labels)), "nlist": index.nlist,
            "trained_on": index.trained_on, "covered": covered, "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "built": now(),
            "seconds": round(time.perf_counter() - started, 1)}
        with conn.transaction():
            conn.execute("DELETE FROM ann_parts")
            with conn.cursor() as cur:
                for part, first in enumerate(range(0, len(data), PART_BYTES)):
                    cur.execute("INSERT INTO ann_parts (part, data) VALUES (%s, %b)",
                                (part, data[first : first + PART_BYTES]))
            conn.execute("INSERT INTO ann (record) VALUES (%s) ON CONFLICT (id) "
                         "DO UPDATE SET record = excluded.record", (Jsonb(record),))
        self._loaded = Loaded(index, covered, record["sha256"], record["chunks"])
        self._filters.clear()
        return record

    def _sample(self, conn: Connection, want: int, n_live: int) -> np.ndarray:
        """About ``want`` stored vectors drawn at random (whole pages: a sample that does not
        read the table)."""
        share = min(100.0, 100.0 * want / max(n_live, 1) * 1.1)
        rows = conn.execute(f"SELECT embedding FROM sentences TABLESAMPLE SYSTEM ({share}) "
                            "REPEATABLE (0)", binary=True).fetchall()
        conn.commit()
        return np.stack([r[0] for r in rows[:want]]).astype(np.float32)

    def _rows(self, conn: Connection, after: int, upto: int
              ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(chunk keys, float32 vectors) of the sentences with ``after < id <= upto``, in
        blocks of COPY_ROWS, read with a binary COPY."""
        row = np.dtype([("n", ">i2"), ("l1", ">i4"), ("chunk", ">i8"), ("l2", ">i4"),
                        ("dim", ">u2"), ("unused", ">u2"), ("vec", ">f4", (self._dim,))])
        buf = bytearray()
        header = False
        with conn.cursor() as cur, cur.copy(
                "COPY (SELECT chunk, embedding FROM sentences WHERE id > %s AND id <= %s) "
                "TO STDOUT (FORMAT BINARY)", (after, upto)) as copy:
            for data in copy:
                buf += data
                if not header and len(buf) >= 19:
                    del buf[: 19 + int.from_bytes(buf[15:19], "big")]
                    header = True
                while header and len(buf) >= COPY_ROWS * row.itemsize:
                    yield _parse(buf, row, COPY_ROWS)
        conn.commit()
        if header and (n := (len(buf) - 2) // row.itemsize):  # the trailer: int16 -1
            yield _parse(buf, row, n)


def host_file(stamp: str) -> Path:
    """The per-host copy of the index with sha256 ``stamp``, which every process on the host
    maps (the name is its content's hash: any index of any database may share the folder)."""
    return cache_dir() / HOST_FOLDER / f"{stamp}.faiss"


def _intact(path: Path, stamp: str, size: int) -> bool:
    """Whether ``path`` holds the index ``stamp`` (its size, then its hash: a damaged copy
    is written again)."""
    try:
        if path.stat().st_size != size:
            return False
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            while block := fh.read(1 << 24):
                digest.update(block)
    except OSError:
        return False
    return digest.hexdigest() == stamp


def mapped(path: Path, trained_on: int, dim: int) -> ann.AnnIndex | None:
    """The index in ``path`` with its inverted lists memory-mapped (read-only, shared by
    every process mapping the file); None when faiss is missing or the file is not an index
    of ``dim``-dimensional vectors with ids."""
    faiss = ann.load_faiss()
    if faiss is None:
        return None
    try:
        index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
    except RuntimeError as exc:  # faiss's error for a file that is not an index
        log.warning("ignoring a damaged approximate index (%s); searches are exact until "
                    "the next build", exc)
        return None
    if index.d != dim or not hasattr(index, "id_map"):
        return None
    faiss.extract_index_ivf(index).parallel_mode = ann.PARALLEL_MODE  # not kept in the file
    return ann.AnnIndex(index, faiss.vector_to_array(index.id_map).astype(np.int64),
                        trained_on)


def _parse(buf: bytearray, row: np.dtype[Any], n: int) -> tuple[np.ndarray, np.ndarray]:
    rows = np.frombuffer(bytes(buf[: n * row.itemsize]), dtype=row)
    del buf[: n * row.itemsize]
    return (rows["chunk"].astype(np.int64),
            np.ascontiguousarray(rows["vec"], dtype=np.float32))
