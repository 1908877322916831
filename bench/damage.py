"""The damage matrix: what each CLI command does when one file of an index is damaged.

Builds a small index once (the first ``--passages`` 2Wiki passages, model2vec embedder, the
approximate index forced on so ``vectors/ivf.faiss`` exists: ``SLEUTH_VECTORS__ANN=on``,
set for every command below too, as a user's config would be) and a copy whose last build
(``--wal-passages`` more passages) is still in ``sleuth.db-wal``: the process that wrote it
exited without closing, as after ``kill -9``. Then, for every file of the index (each file
in the built folder, except the runtime ``sessions/`` and ``locks/``: manifest.json,
sleuth.db, each ``vectors/seg-*`` file, ivf.faiss; sleuth.db-wal in the copy) and every
damage that applies to its kind:

    delete, truncate-0 (zero length), truncate-half, garble-header (first 64 bytes random),
    zero-block (4 KiB of zeros in the payload), random-payload (4 KiB of random bytes),
    permute-rows (.npy: rows shuffled, header valid), non-utf8 (JSON: bytes 0xff 0xfe in a
    value), append-garbage (512 random bytes at the end)

it copies the pristine folder, applies the damage and runs each command as a user would,
``python -m sleuth ... --index COPY`` with a timeout, on a fresh copy per command:

    status --json | search keyword TITLE --json | search semantic SENTENCE --json |
    read CHUNK CHUNK CHUNK --json | open DOC_ID

The probe (TITLE, SENTENCE, the chunks, DOC_ID) is a sentence in the middle rows of the
vector segment. Block damage lands on it: at its row in the .npy files, on the SQLite page
holding its text in sleuth.db (the middle of other files), so a damaged part changes a
pristine answer. Each run is classified:

    detected      exit status non-zero, no traceback, the damaged part named (its file name
                  or kind: manifest, database, vector, approximate index, WAL) by a one-line
                  stderr, or, for a command answering in JSON with an empty stderr, by stdout
    error         exit non-zero without a traceback, the part not named that way
    traceback     stderr contains "Traceback"
    silent-wrong  exit 0, stdout differs from the pristine index's for the same command
    ok            exit 0, stdout identical to pristine (damage that does not matter there)
    hang          timed out;  killed: ended by a signal (e.g. a segmentation fault)

Paths of the copy are replaced by <INDEX> before comparing; ``status`` is compared on what
it says about the content (counts, embedder, chunk size, format, build state, problems),
not on timestamps or the approximate index's record. Every run also compares a listing of
the index folder (path, size, sha256) before and after: a read-only command must not
create, delete or change a file. Ignored: ``sleuth.db-shm`` (SQLite's shared-memory index),
a zero-length ``sleuth.db-wal`` (SQLite's empty log of a connection), and for ``open`` the
``sessions/`` folder, where the session the command extends is saved by design. Opening
the WAL copy checkpoints it (SQLite moves the log into sleuth.db and removes it), so there
the commands "write"; the notes list what the commands did to the intact indexes.

Then ``python -m sleuth check --index COPY --json`` (expected: exit 0 and ``"ok": true`` on
the pristine index; exit 1 with problems naming the damaged part otherwise) and, when it
fails, ``python -m sleuth index --repair --index COPY`` and the five commands again on the
repaired copy (expected: vector damage repaired, answers equal to pristine), then check
again. A command that does not exist yet (click: "No such command"/"No such option") is
"unsupported".

Prints the matrix (rows: file x damage; columns: the commands, folder writes, check,
repair) and totals per class, writes ``--json``, exits 1 if any run was a traceback, a
silent wrong answer, a hang or killed (the five commands, before and after a repair, check
and repair).

Run: python bench/damage.py [--passages 200] [--out /tmp/bench-damage] [--jobs 2]
                            [--json /tmp/bench-damage/damage.json] [--only TEXT]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    add_data_option,
    command_line,
    data_root,
    log,
    machine_facts,
    md_table,
    wiki_corpus,
    write_json,
)

SCRIPT = Path(__file__).resolve()
BLOCK = 4096
COMMANDS = ("status", "keyword", "semantic", "read", "open")
FAILING = {"traceback", "silent-wrong", "hang", "killed"}
UNSUPPORTED = ("No such command", "No such option")
RUNTIME = ("sessions/", "locks/")  # saved sessions and writers' lock files: not index data


# -- damages ------------------------------------------------------------------------------


def overwrite(path: Path, at: int, data: bytes) -> None:
    with path.open("r+b") as fh:
        fh.seek(at)
        fh.write(data)


@dataclass(frozen=True)
class Target:
    """Where block damage goes: the probe's row of the vector segment, and its sentence's
    bytes (found in the SQLite file)."""

    row: int
    text: bytes


def payload_at(path: Path, target: Target) -> int:
    """Offset of a block of damage: an .npy file's probe row; the SQLite page holding the
    probe's text (else the middle page); the middle of anything else."""
    size = path.stat().st_size
    if path.suffix == ".npy":
        with path.open("rb") as fh:
            version = np.lib.format.read_magic(fh)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, _, dtype = read_header(fh)
            start = fh.tell()
        row = int(np.prod(shape[1:], dtype=np.int64)) * np.dtype(dtype).itemsize
        return start + min(target.row, max(shape[0] - 1, 0)) * row if shape else start
    if path.name.endswith(".db"):
        found = path.read_bytes().find(target.text)
        return (found if found >= 0 else size // 2) // BLOCK * BLOCK
    return size // 2


def delete(path: Path, rng: random.Random, target: Target) -> None:
    path.unlink()


def truncate_0(path: Path, rng: random.Random, target: Target) -> None:
    os.truncate(path, 0)


def truncate_half(path: Path, rng: random.Random, target: Target) -> None:
    os.truncate(path, path.stat().st_size // 2)


def garble_header(path: Path, rng: random.Random, target: Target) -> None:
    overwrite(path, 0, rng.randbytes(min(64, path.stat().st_size)))


def zero_block(path: Path, rng: random.Random, target: Target) -> None:
    at = payload_at(path, target)
    overwrite(path, at, bytes(min(BLOCK, path.stat().st_size - at)))


def random_payload(path: Path, rng: random.Random, target: Target) -> None:
    at = payload_at(path, target)
    overwrite(path, at, rng.randbytes(min(BLOCK, path.stat().st_size - at)))


def permute_rows(path: Path, rng: random.Random, target: Target) -> None:
    array = np.load(path)
    order = np.random.default_rng(rng.randrange(1 << 30)).permutation(len(array))
    with path.open("wb") as fh:
        np.save(fh, array[order])


def non_utf8(path: Path, rng: random.Random, target: Target) -> None:
    data = path.read_bytes()
    quote = data.find(b'": "')
    at = quote + 4 if quote >= 0 else len(data) // 2
    path.write_bytes(data[:at] + b"\xff\xfe" + data[at:])


def append_garbage(path: Path, rng: random.Random, target: Target) -> None:
    with path.open("ab") as fh:
        fh.write(rng.randbytes(512))


Damage = Callable[[Path, random.Random, Target], None]
COMMON: dict[str, Damage] = {"delete": delete, "truncate-0": truncate_0,
                             "truncate-half": truncate_half, "garble-header": garble_header}
BLOCKS: dict[str, Damage] = {"zero-block": zero_block, "random-payload": random_payload}
TAIL: dict[str, Damage] = {"append-garbage": append_garbage}


def damages_for(name: str) -> dict[str, Damage]:
    if name.endswith(".json"):
        return {**COMMON, "non-utf8": non_utf8, **TAIL}
    if name.endswith(".npy"):
        return {**COMMON, **BLOCKS, "permute-rows": permute_rows, **TAIL}
    return {**COMMON, **BLOCKS, **TAIL}


def part_words(name: str) -> tuple[str, ...]:
    """Words a message naming the damaged part may use (lowercase)."""
    base = Path(name).name.lower()
    if base.endswith(".json"):
        return (base, "manifest")
    if base.endswith("-wal"):
        return (base, "wal", "write-ahead", "sleuth.db", "database")
    if base.endswith(".db"):
        return (base, "database")
    if base.endswith(".npy"):
        return (base, "vector", "segment")
    if base.endswith(".faiss"):
        return (base, "approximate", "ann", "faiss")
    return (base,)


# -- running commands ---------------------------------------------------------------------


def listing(folder: Path, ignore_sessions: bool) -> dict[str, tuple[int, str]]:
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if not path.is_file() or rel.endswith("-shm"):
            continue
        if ignore_sessions and rel.startswith("sessions/"):
            continue
        size = path.stat().st_size
        if rel.endswith("-wal") and size == 0:
            continue
        out[rel] = (size, hashlib.sha256(path.read_bytes()).hexdigest()[:16])
    return out


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return ([f"created {p}" for p in after if p not in before]
            + [f"deleted {p}" for p in before if p not in after]
            + [f"changed {p}" for p in before if p in after and before[p] != after[p]])


@dataclass
class Run:
    rc: int | None
    stdout: str
    stderr: str
    seconds: float
    writes: list[str]

    @property
    def unsupported(self) -> bool:
        return self.rc == 2 and any(u in self.stderr for u in UNSUPPORTED)


def sleuth_env() -> dict[str, str]:
    """The user's environment without their SLEUTH_* settings, plus the setting the index
    is built with (the approximate index at any size), for every command alike."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLEUTH_", "ARAG_"))}
    return {**env, "PYTHONUNBUFFERED": "1", "SLEUTH_VECTORS__ANN": "on"}


def run_cli(args: list[str], index: Path, timeout: float, *, read_only: bool = True,
            ignore_sessions: bool = False) -> Run:
    before = listing(index, ignore_sessions) if read_only else {}
    t0 = time.perf_counter()
    argv = [sys.executable, "-m", "sleuth", *args, "--index", str(index)]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                           timeout=timeout, cwd=index.parent, env=sleuth_env())
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = None, _text(exc.stdout), _text(exc.stderr)
    seconds = time.perf_counter() - t0
    writes = changes(before, listing(index, ignore_sessions)) if read_only else []
    where = (str(index), str(index.resolve()))
    for w in sorted(set(where), key=len, reverse=True):
        out, err = out.replace(w, "<INDEX>"), err.replace(w, "<INDEX>")
    return Run(rc, out, err, round(seconds, 2), writes)


def _text(data: bytes | str | None) -> str:
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data or ""


def _abnormal(run: Run) -> str | None:
    """"hang", "killed" or "traceback" when the run ended so, else None."""
    if run.rc is None:
        return "hang"
    if run.rc < 0:
        return "killed"
    return "traceback" if "Traceback" in run.stderr else None


def classify(run: Run, baseline: str, words: tuple[str, ...],
             view: Callable[[str], str] = str) -> str:
    """The run's class; exit-0 answers are compared with the pristine one through ``view``."""
    abnormal = _abnormal(run)
    if abnormal:
        return abnormal
    if run.rc == 0:
        return "ok" if view(run.stdout) == view(baseline) else "silent-wrong"
    return "detected" if names_part(run, words) else "error"


def names_part(run: Run, words: tuple[str, ...]) -> bool:
    """stderr is one line naming the damaged part; or, for a command that reports damage as
    its --json answer (status, check), stderr is empty and stdout names it."""
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    text = lines[0] if len(lines) == 1 else run.stdout if not lines else ""
    return any(w in text.lower() for w in words)


def status_view(text: str) -> str:
    """What ``status --json`` tells about the content: counts, embedder, chunk size, format,
    build state and problems (not timestamps, nor the approximate index's record, which a
    repair that rebuilds it renews)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text
    manifest = data.get("manifest") or {}
    build = data.get("build") or manifest.get("build") or {}
    view = {k: data.get(k) for k in ("documents", "chunks", "sentences", "problems")}
    view |= {k: manifest.get(k) for k in ("embedder", "chunk_tokens", "format",
                                          "format_version")}
    view["build_state"] = build.get("state")
    return json.dumps(view, sort_keys=True)


VIEWS: dict[str, Callable[[str], str]] = {"status": status_view}


def first_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1][:240] if lines else ""


# -- the probe and the pristine indexes ---------------------------------------------------


@dataclass(frozen=True)
class Probe:
    """What the commands ask about: a sentence in the middle rows of the vector segment
    (where block damage to the .npy files lands)."""

    doc_id: str
    title: str
    query: str
    chunks: tuple[str, ...]
    row: int

    def commands(self) -> dict[str, list[str]]:
        return {"status": ["status", "--json"],
                "keyword": ["search", "keyword", self.title, "--json"],
                "semantic": ["search", "semantic", self.query, "--json"],
                "read": ["read", *self.chunks, "--json"],
                "open": ["open", self.doc_id]}

    def target(self) -> Target:
        return Target(self.row, self.query.removeprefix(f"{self.title}: ").encode())


SENTENCE_SQL = (
    "SELECT c.doc_id, c.chunk_id, d.title, substr(c.text, s.start - c.start + 1, "
    "s.end - s.start) FROM sentences s JOIN chunks c ON c.id = s.chunk "
    "JOIN documents d ON d.doc_id = c.doc_id WHERE s.id = ?")


def find_probe(index: Path) -> Probe:
    """The first sentence of six words or more among the three middle rows of the first
    registered segment (a 4 KiB block from the middle row covers about three vectors)."""
    db = sqlite3.connect(index / "sleuth.db")
    try:
        seg = db.execute("SELECT seg FROM segments ORDER BY seg").fetchone()[0]
        ids = np.load(index / "vectors" / f"seg-{seg}.ids.npy")
        rows = [(r, db.execute(SENTENCE_SQL, (int(ids[r]),)).fetchone())
                for r in range(len(ids) // 2, min(len(ids) // 2 + 3, len(ids)))]
        row, (doc_id, chunk_id, title, text) = next(
            ((r, x) for r, x in rows if len(x[3].split()) >= 6), rows[0])
        first, last = (db.execute(f"SELECT chunk_id FROM chunks ORDER BY id {o} LIMIT 1")
                       .fetchone()[0] for o in ("ASC", "DESC"))
    finally:
        db.close()
    query = text if text.startswith(title) else f"{title}: {text}"  # its embedding input
    return Probe(doc_id, title, query, tuple(dict.fromkeys([chunk_id, first, last])), row)


def build(root: Path, passages: int, wal_passages: int, timeout: float,
          source: Path) -> dict[str, Path]:
    """The pristine index of ``source``'s first passages, and a copy whose last build is
    still in its WAL."""
    records = json.loads(source.read_text(encoding="utf-8"))
    corpus, tail = root / "corpus.json", root / "tail.json"
    corpus.write_text(json.dumps(records[:passages]), encoding="utf-8")
    tail.write_text(json.dumps(records[passages : passages + wal_passages]), encoding="utf-8")
    pristine = root / "pristine" / "index"
    shutil.rmtree(pristine.parent, ignore_errors=True)
    pristine.parent.mkdir(parents=True)
    env = sleuth_env()
    subprocess.run([sys.executable, "-m", "sleuth", "index", str(corpus), "--index",
                    str(pristine), "--embedder", "model2vec", "--json"], check=True,
                   env=env, capture_output=True, timeout=timeout)
    out = {"pristine": pristine}
    wal = root / "pristine-wal" / "index"
    shutil.rmtree(wal.parent, ignore_errors=True)
    shutil.copytree(pristine, wal)
    subprocess.run([sys.executable, str(SCRIPT), "worker", "wal-tail", "--index", str(wal),
                    str(tail)], check=True, env=env, capture_output=True, timeout=timeout)
    log_file = wal / "sleuth.db-wal"
    if log_file.is_file() and log_file.stat().st_size:
        out["pristine-wal"] = wal
    else:
        log("no sleuth.db-wal left by an unclosed writer: the WAL rows are skipped")
    return out


def worker_wal_tail(args: argparse.Namespace) -> None:
    """Add a file and exit without closing anything (its commits stay in the WAL)."""
    from sleuth import Index, Settings

    index = Index.open(args.index, settings=Settings.load(embed={"model": "model2vec"}))
    index.add([args.file])
    sys.stdout.flush()
    os._exit(0)


# -- the matrix ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    variant: str  # "pristine" or "pristine-wal"
    file: str  # relative path of the damaged file
    damage: str

    @property
    def slug(self) -> str:
        return f"{self.variant}-{self.file}-{self.damage}".replace("/", "_")


@dataclass
class Context:
    sources: dict[str, Path]
    commands: dict[str, list[str]]
    baselines: dict[str, dict[str, str]]  # variant -> command -> stdout
    work: Path
    timeout: float
    seed: int
    target: Target
    check_supported: bool = True
    notes: list[str] = field(default_factory=list)


def damaged_copy(ctx: Context, case: Case, name: str) -> Path:
    folder = fresh_copy(ctx.sources[case.variant], ctx.work / f"{case.slug}-{name}")
    rng = random.Random(f"{ctx.seed}-{case.file}-{case.damage}")
    damages_for(case.file)[case.damage](folder / case.file, rng, ctx.target)
    return folder


def run_commands(ctx: Context, case: Case, source: Path, tag: str) -> dict[str, Any]:
    """The five commands, each on a fresh copy of ``source``, classified."""
    words = part_words(case.file)
    out = {}
    for name, args in ctx.commands.items():
        folder = fresh_copy(source, ctx.work / f"{case.slug}-{tag}-{name}")
        run = run_cli(args, folder, ctx.timeout, ignore_sessions=name == "open")
        baseline = ctx.baselines[case.variant][name]
        out[name] = result(run, classify(run, baseline, words, VIEWS.get(name, str)))
        shutil.rmtree(folder.parent, ignore_errors=True)
    return out


def result(run: Run, cls: str) -> dict[str, Any]:
    return {"class": cls, "rc": run.rc, "stderr": first_line(run.stderr),
            "writes": run.writes, "seconds": run.seconds}


def run_case(ctx: Context, case: Case) -> dict[str, Any]:
    t0 = time.perf_counter()
    damaged = damaged_copy(ctx, case, "damaged")
    row: dict[str, Any] = {"variant": case.variant, "file": case.file, "damage": case.damage,
                           "commands": run_commands(ctx, case, damaged, "cmd")}
    row["check"], row["repair"] = check_and_repair(ctx, case, damaged)
    shutil.rmtree(damaged.parent, ignore_errors=True)
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def check_and_repair(ctx: Context, case: Case, damaged: Path) -> tuple[dict[str, Any],
                                                                      dict[str, Any]]:
    if not ctx.check_supported:
        return {"class": "unsupported"}, {"class": "unsupported"}
    run = run_cli(["check", "--json"], damaged, ctx.timeout, read_only=True)
    check = result(run, classify_check(run, part_words(case.file), damaged=True))
    if check["class"] in {"unsupported", "missed", "hang", "killed", "traceback"}:
        return check, {"class": "not run"}
    fix = run_cli(["index", "--repair"], damaged, ctx.timeout * 4, read_only=False)
    if fix.unsupported:
        return check, {"class": "unsupported", "stderr": first_line(fix.stderr)}
    repair: dict[str, Any] = {"rc": fix.rc, "stderr": first_line(fix.stderr),
                              "seconds": fix.seconds}
    if fix.rc != 0 or "Traceback" in fix.stderr:
        repair["class"] = "traceback" if "Traceback" in fix.stderr else "refused"
        return check, repair
    repair["commands"] = run_commands(ctx, case, damaged, "repaired")
    again = run_cli(["check", "--json"], damaged, ctx.timeout)
    repair["check_after"] = classify_check(again, part_words(case.file), damaged=False)
    bad = [n for n, r in repair["commands"].items() if r["class"] != "ok"]
    bad += [] if repair["check_after"] == "clean" else [f"check {repair['check_after']}"]
    repair["class"] = "repaired" if not bad else "not repaired: " + ",".join(bad)
    return check, repair


def classify_check(run: Run, words: tuple[str, ...], *, damaged: bool) -> str:
    """unsupported | flagged (exit 1: a report with "ok": false, or one error line; naming
    the damaged part) | flagged-unnamed | missed ("ok": true on a damaged index) | clean
    ("ok": true on an intact one) | false-alarm | hang | killed | traceback | error."""
    if run.unsupported:
        return "unsupported"
    abnormal = _abnormal(run)
    if abnormal:
        return abnormal
    try:
        verdict = json.loads(run.stdout).get("ok")
    except (json.JSONDecodeError, AttributeError):
        verdict = None
    if run.rc == 0 and verdict is True:
        return "missed" if damaged else "clean"
    if not damaged:
        return "false-alarm"
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    if run.rc == 1 and (verdict is False or len(lines) == 1):  # a report, or one error line
        return "flagged" if names_part(run, words) else "flagged-unnamed"
    return "error"


def baselines(ctx: Context) -> None:
    """Each command on each pristine index, twice: both must succeed and agree. Notes what
    they changed in the folder, and what check says of the intact index."""
    for variant, source in ctx.sources.items():
        ctx.baselines[variant] = {}
        wrote: dict[str, list[str]] = {}
        for name, args in ctx.commands.items():
            runs = [run_cli(args, fresh_copy(source, ctx.work / f"baseline-{variant}-{name}-"
                                              f"{attempt}"), ctx.timeout,
                            ignore_sessions=name == "open") for attempt in range(2)]
            if any(r.rc != 0 for r in runs):
                raise SystemExit(f"{name} fails on the {variant} index: {runs[0].stderr}")
            if runs[0].stdout != runs[1].stdout:
                raise SystemExit(f"{name} answers differently on two copies of {variant}")
            ctx.baselines[variant][name] = runs[0].stdout
            if runs[0].writes:
                wrote.setdefault(", ".join(runs[0].writes), []).append(name)
        ctx.notes += [f"on the intact {variant} index, {', '.join(names)} changed the folder: "
                      f"{writes}" for writes, names in wrote.items()]
    folder = fresh_copy(ctx.sources["pristine"], ctx.work / "baseline-check")
    cls = classify_check(run_cli(["check", "--json"], folder, ctx.timeout), (), damaged=False)
    ctx.check_supported = cls != "unsupported"
    ctx.notes.append(f"check on the intact index: {cls}")
    shutil.rmtree(ctx.work, ignore_errors=True)  # the copies made so far


def fresh_copy(source: Path, slot: Path) -> Path:
    """A copy of the index ``source`` as ``slot/index``."""
    shutil.rmtree(slot, ignore_errors=True)
    shutil.copytree(source, slot / "index")
    return slot / "index"


def cases_of(sources: dict[str, Path]) -> list[Case]:
    cases = []
    pristine = sources["pristine"]
    for path in sorted(pristine.rglob("*")):
        rel = path.relative_to(pristine).as_posix()
        if path.is_file() and not rel.startswith(RUNTIME):
            cases += [Case("pristine", rel, d) for d in damages_for(rel)]
    if "pristine-wal" in sources:
        cases += [Case("pristine-wal", "sleuth.db-wal", d) for d in damages_for("x-wal")]
    return cases


# -- report -------------------------------------------------------------------------------

SHORT = {"ok": "ok", "detected": "detected", "error": "error", "traceback": "TRACEBACK",
         "silent-wrong": "SILENT-WRONG", "hang": "HANG", "killed": "KILLED"}


def matrix(rows: list[dict[str, Any]]) -> str:
    table = []
    for r in rows:
        cells = [SHORT.get(r["commands"][c]["class"], r["commands"][c]["class"])
                 for c in COMMANDS]
        writes = sorted({c for c in COMMANDS if r["commands"][c]["writes"]})
        name = r["file"] if r["variant"] == "pristine" else f"{r['file']} (WAL copy)"
        table.append([name, r["damage"], *cells, ",".join(writes) or "-",
                      r["check"]["class"], r["repair"]["class"]])
    return md_table(["file", "damage", *COMMANDS, "wrote", "check", "repair"], table)


def totals(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for c in COMMANDS:
        out[c] = dict(Counter(r["commands"][c]["class"] for r in rows))
    out["check"] = dict(Counter(r["check"]["class"] for r in rows))
    out["repair"] = dict(Counter(r["repair"]["class"].split(":")[0] for r in rows))
    after = Counter(x["class"] for r in rows
                    for x in (r["repair"].get("commands") or {}).values())
    out["after repair"] = dict(after)
    return out


def failures(rows: list[dict[str, Any]]) -> list[str]:
    found = []
    for r in rows:
        runs = {**r["commands"], **{f"{c} after repair": x for c, x
                                    in (r["repair"].get("commands") or {}).items()}}
        found += [f"{r['file']} {r['damage']}: {c} {x['class']}" for c, x in runs.items()
                  if x["class"] in FAILING]
        if r["check"]["class"] in FAILING or r["repair"]["class"] in FAILING:
            found.append(f"{r['file']} {r['damage']}: check/repair {r['check']['class']}"
                         f"/{r['repair']['class']}")
    return found


def report(result: dict[str, Any]) -> str:
    t = result["totals"]
    classes = sorted({k for v in t.values() for k in v})
    total_rows = [[cls, *(t[c].get(cls, 0) for c in t)] for cls in classes]
    wrote = sum(bool(x["writes"]) for r in result["rows"] for x in r["commands"].values())
    return "\n".join([
        "## Damage matrix", "",
        f"- Command: `{result['command']}`; sleuth from `{result['sleuth']}`",
        f"- Index: {result['passages']} 2Wiki passages (model2vec, approximate index on); "
        f"probe document {result['probe']['doc_id']!r}; {len(result['rows'])} damage cases, "
        f"{result['seconds']} s",
        *(f"- Note: {n}" for n in result["notes"]), "",
        matrix(result["rows"]), "",
        "Totals (runs per class):", "",
        md_table(["class", *t], total_rows), "",
        f"Read-only runs that changed the index folder: {wrote}.",
        f"Tracebacks, silent wrong answers, hangs, kills: {len(result['failures'])}",
        *(f"- {f}" for f in result["failures"][:40]),
    ])


def harness(args: argparse.Namespace) -> int:
    import sleuth

    t0 = time.perf_counter()
    facts = machine_facts()
    root = args.out.resolve()
    root.mkdir(parents=True, exist_ok=True)
    log(f"building the pristine index ({args.passages} passages) under {root}")
    sources = build(root, args.passages, args.wal_passages, args.timeout * 4,
                    wiki_corpus(data_root(args.data)))
    probe = find_probe(sources["pristine"])
    work = root / "work"
    shutil.rmtree(work, ignore_errors=True)
    ctx = Context(sources, probe.commands(), {}, work, args.timeout, args.seed, probe.target())
    baselines(ctx)
    cases = [c for c in cases_of(sources) if args.only in f"{c.file} {c.damage}"]
    log(f"{len(cases)} damage cases x {len(COMMANDS)} commands (+ check, repair); {probe}")
    for note in ctx.notes:
        log(note)
    rows = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for row in pool.map(lambda c: run_case(ctx, c), cases):
            rows.append(row)
            cells = " ".join(f"{c}={row['commands'][c]['class']}" for c in COMMANDS)
            log(f"{row['file']} {row['damage']}: {cells} check={row['check']['class']} "
                f"repair={row['repair']['class']}")
    result = {"benchmark": "damage", "command": command_line(), "machine": facts,
              "sleuth": str(Path(sleuth.__file__).parent), "passages": args.passages,
              "probe": probe.__dict__, "notes": ctx.notes, "rows": rows,
              "totals": totals(rows), "failures": failures(rows),
              "seconds": round(time.perf_counter() - t0, 1)}
    write_json(args.json, result)
    print(report(result))
    log(f"wrote {args.json}")
    return 1 if result["failures"] else 0


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--passages", type=int, default=200)
    ap.add_argument("--wal-passages", type=int, default=20,
                    help="passages of the last build, left in sleuth.db-wal")
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench-damage"))
    ap.add_argument("--json", type=Path, default=None, help="default OUT/damage.json")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per command")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="damage cases run at once")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="",
                    help="only the cases whose 'FILE DAMAGE' contains this text")
    add_data_option(ap)
    sub = ap.add_subparsers(dest="worker_command")
    worker = sub.add_parser("worker", help="(internal) leave a build in the WAL")
    roles = worker.add_subparsers(dest="role", required=True)
    tail = roles.add_parser("wal-tail")
    tail.add_argument("--index", required=True)
    tail.add_argument("file")
    args = ap.parse_args()
    if args.json is None:
        args.json = args.out / "damage.json"
    return args


def main() -> None:
    args = parse_args()
    if args.worker_command == "worker":
        worker_wal_tail(args)
        return
    sys.exit(harness(args))


if __name__ == "__main__":
    main()
