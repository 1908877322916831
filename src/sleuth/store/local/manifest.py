"""The manifest and the opening of an index: creating a new one, reading ``manifest.json``
and its copy in ``sleuth.db`` (restored from it by a repair), refusing a missing or
unreadable database, and the in-place migrations from formats 1 and 2."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Mapping
from typing import Any

from sleuth.errors import IndexDamaged, StoreError
from sleuth.store import keyword as kw
from sleuth.store.base import FORMAT_VERSION, check_embedder, check_manifest, new_manifest, now
from sleuth.store.local import ann
from sleuth.store.local.database import (
    DB,
    MANIFEST,
    SCHEMA,
    SCHEMA_3,
    SEGMENT_FILES,
    TABLES,
    VECTORS,
    _Database,
    _short,
    _statements,
)
from sleuth.store.local.lease import LOCKS, Maintenance
from sleuth.store.local.vectors import file_digest


class _Manifest(_Database):
    """Opening, creating and migrating the index; the manifest file and its copy."""

    restored_manifest: bool  # a repair wrote the manifest from its copy

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


def _essential(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest without the parts format 2 kept in it and format 3 keeps in the database
    (build state, approximate index record)."""
    return {k: v for k, v in manifest.items() if k not in ("build", "ann")}
