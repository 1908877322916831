"""Several processes, one index, and a damaged index: tried as users would, with real
``sleuth`` processes, a long-lived reader and damaged files.

- Writers coordinate: a long writer committing many small batches, with short writers
  finishing (and compacting) beside it, lose no row and no vector.
- Readers stay current: an index open in this process sees other processes' commits and
  never fails a query while they happen.
- Damage is named: each damaged part is one line with its repair, never a traceback or a
  wrong answer; read-only commands write nothing; ``sleuth index --repair`` restores it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import twowiki_records
from sleuth import Index, Settings


def _sleuth(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The real CLI in its own process."""
    return subprocess.run([sys.executable, "-m", "sleuth", *args], capture_output=True,
                          text=True, timeout=timeout)


def _corpus(folder: Path, name: str, records: list[dict[str, str]]) -> Path:
    path = folder / name
    path.write_text(json.dumps(records))
    return path


WRITER = """
import sys
from sleuth import Index, Settings
with Index.open(sys.argv[1], settings=Settings.load(), create=True) as index:
    index.add([sys.argv[2]], batch_sentences=int(sys.argv[3]))
"""


def _documents(folder: Path) -> int:
    """Committed documents, read straight from SQLite (another reader of the file)."""
    try:
        with sqlite3.connect(folder / "sleuth.db", timeout=30) as db:
            return int(db.execute("SELECT count(*) FROM documents").fetchone()[0])
    except sqlite3.Error:
        return 0


@pytest.mark.slow  # stress: three processes
def test_concurrent_writers_and_a_reader_lose_nothing(tmp_path: Path) -> None:
    records = twowiki_records(90)
    long_part = _corpus(tmp_path, "long.json", records[:60])
    shorts = [_corpus(tmp_path, f"short{i}.json", records[60 + 10 * i: 70 + 10 * i])
              for i in range(3)]
    folder = tmp_path / "idx"
    long_writer = subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(long_part),
                                    "16"], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while _documents(folder) < 5:  # the long writer has committed batches
        assert long_writer.poll() is None, long_writer.stderr.read() if long_writer.stderr \
            else ""
        assert time.monotonic() < deadline
        time.sleep(0.2)
    reader = Index.open(folder, settings=Settings.load())
    errors: list[BaseException] = []
    queries = [0]
    stop = threading.Event()

    def read() -> None:  # a long-lived reader, as a server holds one
        while not stop.is_set():
            try:
                for hit in reader.semantic_search("Who directed the film?", top_k=5):
                    assert reader.read([hit.chunk_id]).chunks
                reader.keyword_search(["film"], top_k=5)
                queries[0] += 1
            except BaseException as exc:  # noqa: BLE001 - every failure counts
                errors.append(exc)
                return

    thread = threading.Thread(target=read)
    thread.start()
    try:
        short_writers = [subprocess.Popen([sys.executable, "-m", "sleuth", "index", str(p),
                                           "--index", str(folder)], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True) for p in shorts]
        for writer in short_writers:
            _, err = writer.communicate(timeout=300)
            assert writer.returncode == 0, err
        _, err = long_writer.communicate(timeout=300)
        assert long_writer.returncode == 0, err
    finally:
        stop.set()
        thread.join(60)
    assert not errors, errors[0]
    assert queries[0] > 0
    check = _sleuth("check", "--index", str(folder), "--json")
    assert check.returncode == 0, check.stdout + check.stderr
    assert json.loads(check.stdout)["ok"]
    assert reader.stats().documents == 90  # the reader sees every commit
    for record in records[60::10]:  # each short writer's documents are found by meaning
        hits = reader.semantic_search(f"{record['title']}: {record['text']}", top_k=3)
        assert record["id"] in {h.doc_id for h in hits}
    reader.close()
    leftovers = sorted(p.name for p in (folder / "vectors").iterdir())
    assert len(leftovers) == 3  # compacted into one segment: no stray files
    assert not [p for p in (folder / "locks").iterdir() if p.name != "maintenance.lock"]


@pytest.mark.slow  # stress: another process
def test_a_reader_sees_updates_and_deletions_by_another_process(tmp_path: Path) -> None:
    records = twowiki_records(40)
    corpus = _corpus(tmp_path, "corpus.json", records)
    folder = tmp_path / "idx"
    assert _sleuth("index", str(corpus), "--index", str(folder)).returncode == 0
    with Index.open(folder, settings=Settings.load()) as reader:
        target = records[3]
        assert reader.keyword_search([target["title"]], top_k=1)[0].doc_id == target["id"]
        reader.titles()  # derived caches built
        changed = [dict(r, text=r["text"] + " Quetzalcoatlus flew over the harbour.")
                   if i % 2 else r for i, r in enumerate(records[5:])]
        corpus.write_text(json.dumps(changed))  # 5 gone, 18 changed
        stop = threading.Event()
        errors: list[BaseException] = []

        def read() -> None:
            while not stop.is_set():
                try:
                    reader.semantic_search("a flying reptile over the harbour", top_k=5)
                    reader.read([h.chunk_id for h in reader.keyword_search(["harbour"])])
                except BaseException as exc:  # noqa: BLE001
                    errors.append(exc)
                    return

        thread = threading.Thread(target=read)
        thread.start()
        done = _sleuth("index", str(corpus), "--index", str(folder))
        stop.set()
        thread.join(60)
        assert done.returncode == 0, done.stderr
        assert not errors, errors[0]
        assert reader.stats().documents == 35
        assert reader.document(target["id"]) is None
        assert not [h for h in reader.keyword_search([target["title"]]) if
                    h.doc_id == target["id"]]
        assert all(target["id"] not in ids for ids in reader.titles().by_token.values())
        hits = reader.semantic_search("Quetzalcoatlus flew over the harbour", top_k=5)
        assert {h.doc_id for h in hits} <= {r["id"] for r in changed[1::2]}
        assert len(reader.keyword_search(["quetzalcoatlus"], top_k=50)) == 17


@pytest.mark.minilm  # a build long enough to interrupt
def test_an_interrupted_build_is_shown_with_the_command_that_resumes_it(
        tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, "corpus.json", twowiki_records(60))
    folder = tmp_path / "idx"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(corpus), "16"],
                              stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while _documents(folder) < 3:
        assert writer.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    running = json.loads(_sleuth("status", "--index", str(folder), "--json").stdout)
    assert running["build"]["state"] == "running"
    assert running["build"]["running"][0]["pid"] == writer.pid
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    status = _sleuth("status", "--index", str(folder))
    assert status.returncode == 0, status.stderr
    command = f"sleuth index {corpus} --index {folder}"
    assert "interrupted (started" in status.stdout and command in status.stdout
    resumed = _sleuth("index", str(corpus), "--index", str(folder))
    assert resumed.returncode == 0 and resumed.stdout.startswith("resumed; ")
    after = json.loads(_sleuth("status", "--index", str(folder), "--json").stdout)
    assert after["build"]["state"] == "complete" and after["documents"] == 60
    assert json.loads(_sleuth("check", "--index", str(folder), "--json").stdout)["ok"]
    assert [p.name for p in (folder / "locks").iterdir()] == ["maintenance.lock"]  # (the
    # killed writer's lease file is cleaned up by the next build)


# -- damage -------------------------------------------------------------------------


def _listing(folder: Path) -> dict[str, str]:
    """Every file of an index with its sha256 (SQLite's transient -wal/-shm aside)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()
            and not p.name.endswith(("-wal", "-shm"))}


def _zero_payload(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2:] = bytes(len(data) - len(data) // 2)
    path.write_bytes(bytes(data))


def _permute_rows(path: Path) -> None:
    array = np.load(path)
    np.save(path, array[::-1].copy())


def _garble_header(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[:64] = bytes(range(64))
    path.write_bytes(bytes(data))


DAMAGE = {
    "delete": lambda p: p.unlink(),
    "empty": lambda p: p.write_bytes(b""),
    "truncate": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "header": _garble_header,
    "zero-payload": _zero_payload,
    "permute": _permute_rows,
    "non-utf8": lambda p: p.write_bytes(b"\xff\xfe{\"format\": \x80}"),
}
CASES = [("sleuth.db", "delete"), ("sleuth.db", "empty"), ("sleuth.db", "truncate"),
         ("sleuth.db", "header"), ("manifest.json", "delete"), ("manifest.json", "non-utf8"),
         ("vectors/seg-1.npy", "delete"), ("vectors/seg-1.npy", "empty"),
         ("vectors/seg-1.npy", "zero-payload"), ("vectors/seg-1.npy", "permute"),
         ("vectors/seg-1.ids.npy", "permute"), ("vectors/seg-1.chunks.npy", "header"),
         ("vectors/seg-1.chunks.npy", "truncate")]


REPAIRED = {("manifest.json", "non-utf8"), ("vectors/seg-1.npy", "zero-payload"),
            ("vectors/seg-1.chunks.npy", "truncate")}  # (each re-embeds the sample: slow)
FAST = {("sleuth.db", "header"), ("vectors/seg-1.npy", "permute")}  # the database and the
# vectors in the fast tier (each case runs the CLI three times in subprocesses); the rest slow


@pytest.mark.parametrize(("part", "damage"), [
    pytest.param(*case, marks=() if case in FAST else pytest.mark.slow) for case in CASES])
def test_damage_is_one_line_naming_the_part_and_read_only_commands_write_nothing(
        part: str, damage: str, sample_index: Path, tmp_path: Path) -> None:
    folder = tmp_path / "idx"
    shutil.copytree(sample_index, folder)
    DAMAGE[damage](folder / part)
    before = _listing(folder)
    name = Path(part).name
    for args in (["status"], ["search", "semantic", "levers"]):
        done = _sleuth(*args, "--index", str(folder))
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        lines = done.stderr.strip().splitlines()
        assert lines and all(name in line or "seg-1" in line for line in lines), lines
        assert "--repair" in done.stderr or "indexed again" in done.stderr or \
            "index the documents again" in done.stderr
    assert _listing(folder) == before  # nothing created or changed, the damage kept
    if (part, damage) in REPAIRED:  # restorable from what sleuth.db holds
        repaired = _sleuth("index", "--repair", "--index", str(folder))
        assert repaired.returncode == 0, repaired.stderr
        check = _sleuth("check", "--index", str(folder), "--json")
        assert json.loads(check.stdout)["ok"], check.stdout
        with Index.open(folder) as index, Index.open(sample_index) as pristine:
            got = index.semantic_search("levers")
            expected = pristine.semantic_search("levers")
        assert [h.chunk_id for h in got] == [h.chunk_id for h in expected]


def test_a_damaged_approximate_index_falls_back_to_exact_search(tmp_path: Path) -> None:
    pytest.importorskip("faiss")
    corpus = _corpus(tmp_path, "corpus.json", twowiki_records(120))
    folder = tmp_path / "idx"
    settings = Settings.load(vectors={"ann": "on"})
    with Index.open(folder, settings=settings, create=True) as index:
        index.add([corpus])
        expected = index.semantic_search("Who directed the film?", top_k=5)
    path = folder / "vectors" / "ivf.faiss"
    _zero_payload(path)
    with Index.open(folder, settings=settings) as index:
        got = index.semantic_search("Who directed the film?", top_k=5)
        assert [h.chunk_id for h in got] == [h.chunk_id for h in expected]
        problems = index.check()
    assert [p.part for p in problems] == ["vectors/ivf.faiss"]
    with Index.open(folder, settings=settings, repair=True) as index:
        assert index.repair().ann_rebuilt
        assert index.check() == []


def test_a_format_2_index_is_migrated_with_checksums(sample_index: Path,
                                                     tmp_path: Path) -> None:
    folder = tmp_path / "old"
    shutil.copytree(sample_index, folder)
    with sqlite3.connect(folder / "sleuth.db") as db:  # what format 2 looked like
        for table in ("pending", "dead_chunks", "builds", "meta"):
            db.execute(f"DROP TABLE {table}")
        db.execute("ALTER TABLE segments DROP COLUMN checksum")
        db.execute("DELETE FROM counters WHERE name='generation'")
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.update(format_version=2, build={"state": "building", "started": "2026-01-01"})
    (folder / "manifest.json").write_text(json.dumps(manifest))
    status = _sleuth("status", "--index", str(folder))
    assert "format 3, build interrupted" in status.stdout
    with Index.open(folder) as index, Index.open(sample_index) as current:
        assert index.store.manifest["migrated"]["from"] == 2
        assert index.check() == []
        assert index.semantic_search("levers") == current.semantic_search("levers")


def test_a_lost_write_ahead_log_is_named(sample_index: Path, tmp_path: Path) -> None:
    """Commits still in ``sleuth.db-wal`` when it is lost: the database alone reads as an
    older index, which ``status`` and ``check`` name rather than report as whole."""
    folder = tmp_path / "idx"
    shutil.copytree(sample_index, folder)
    extra = tmp_path / "extra.md"
    extra.write_text("# Extra\n\nThe lighthouse keeper logs every passing ship.\n")
    holder = sqlite3.connect(folder / "sleuth.db")  # a reader keeps the log from the database
    holder.execute("BEGIN")
    holder.execute("SELECT count(*) FROM documents").fetchone()
    with Index.open(folder) as index:
        index.add([extra])
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    holder.close()
    (copy / "sleuth.db-wal").unlink()
    for args in (["status"], ["check"]):
        done = _sleuth(*args, "--index", str(copy))
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert "sleuth.db-wal was lost or damaged" in done.stderr


def test_a_segment_deleted_under_a_read_retries_it(sample_index: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A compaction deletes the files it unregistered right after its commit; a reader
    that checked a file just before then reads again in a fresh snapshot (found by
    bench/torture.py: it once reported damage)."""
    from sleuth.store.local import segments as local

    folder = tmp_path / "idx"
    shutil.copytree(sample_index, folder)
    real = np.load
    vanished: list[str] = []

    def load(path: Any, *args: Any, **kwargs: Any) -> Any:
        if str(path).endswith(".chunks.npy") and not vanished:
            vanished.append(str(path))
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(local.np, "load", load)
    with Index.open(folder) as index:
        assert index.semantic_search("levers")
    assert vanished
