"""Vector segments: reserving a segment under this process's lease, writing its files with
their checksums, compacting the registered segments into one, deleting the files no one
will register, mapping the segments (each file checked against its checksum the first time)
into the live vectors of a generation, and keeping the approximate index in line with them.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sleuth.settings import VectorSettings
from sleuth.store.base import now
from sleuth.store.local import ann
from sleuth.store.local.database import SEGMENT_FILES, VECTORS, _Broken, _Database, _short
from sleuth.store.local.lease import Lease
from sleuth.store.local.vectors import _concat, _HashingWriter, _Live, _Vectors, file_digest

REBUILD_DEAD = 0.2  # share of dead sentences in the approximate index that triggers a rebuild
RETRAIN_GROWTH = 4.0  # live sentences / sentences its lists were trained on: retrain above


class _Superseded(Exception):
    """The segments a compaction merged changed meanwhile (another compaction or repair)."""


class _Segments(_Database):
    """The segment files and the vectors read from them."""

    _lease: Lease
    _load_lock: threading.Lock  # one vector (re)load at a time
    _vectors: _Vectors | None
    _verified: set[tuple[Any, ...]]  # files whose checksum matched
    _vector_settings: VectorSettings
    _ann: tuple[tuple[int, int], ann.AnnIndex | None] | None  # file stamp, index

    # -- segment files -----------------------------------------------------------------

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
                try:
                    matches = file_digest(path) == digest
                except FileNotFoundError:  # deleted since its stat: a compaction, or damage
                    raise _Broken(f"{VECTORS}/{path.name}", "is missing", retry=True) from None
                except OSError as exc:  # no descriptor left reads as such (see _damaged)
                    raise _Broken(f"{VECTORS}/{path.name}",
                                  f"cannot be read ({_short(exc)})") from None
                if not matches:
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
