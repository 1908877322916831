"""Checking and repairing an index: the manifest against its copy, SQLite's and the keyword
index's integrity, every segment file against its size and checksum, the sentences each
holds against the database, lost commits and the approximate index's checksum; a repair
drops damaged segments and re-embeds the sentences left without a vector."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np

from sleuth.store.base import Problem, RepairReport
from sleuth.store.local import ann
from sleuth.store.local.database import DB, MANIFEST, VECTORS, _Broken
from sleuth.store.local.lease import Maintenance
from sleuth.store.local.manifest import _essential, _Manifest
from sleuth.store.local.segments import _Segments
from sleuth.store.local.vectors import _concat, file_digest

REPAIR_BATCH = 2048  # sentences re-embedded per repaired segment


class _Integrity(_Segments, _Manifest):
    """``check`` and ``repair``."""

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
