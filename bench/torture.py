"""Concurrency torture test of the embedded index: writers, readers and kill -9 at once.

Each round copies a seed index (200 2Wiki passages, model2vec embedder) into a fresh folder
and then runs, concurrently:

- one long ``python -m sleuth index`` (1,500 passages: 4 commit batches of 2,048 sentences);
- three short ``python -m sleuth index`` runs (30 passages each) started together at a
  random moment while the long one runs;
- two Python-API writers, ``Index.add(file, batch_sentences=8..48)`` over two files each:
  dozens of commit batches and vector segments, and a finish-time compaction per file
  that races the other writers' commits;
- in "update" rounds also ``sleuth index`` of the seed file rewritten (every 4th passage's
  text changed, every 10th removed: documents updated and deleted in place) and an API
  writer deleting 60 other documents (``Index.delete``);
- one or two long-lived readers (an ``Index`` opened once per process) looping checks:
  no exception anywhere; keyword and semantic search: every hit's chunk readable and every
  snippet inside that chunk's text; read: a document's first chunk (and its neighbour)
  equal to the document's text at its span; vectors: a document already committed is
  found by a semantic search for one of its own sentences (a failure is "stale" when a
  freshly opened ``Index`` in the same process finds it, "lost-vectors" when that does
  not either). A check that fails while another process committed (SQLite's
  ``PRAGMA data_version`` moved) is retried, then counted inconclusive, not as an error;
- none, one or two ``kill -9`` of a running writer at random moments (from 1 s to 80% of
  the median time the writers took in earlier rounds), each re-run 0.1-1 s later with the
  same arguments (the build resumes).

When every writer has finished, the folder is compared with a sequential reference build of
the same final content (the same jobs one after another, in this process; built once per
content set, "add" or "update", and reused by every round of that set): document, chunk and
sentence counts; a digest of the rows keyed by ids (document id, title and text; chunk id,
text and span; sentence spans); every document's sentence vectors
(``store.document_vectors``) bit-identical; the top 5 of 20 keyword and 20 semantic queries
(chunk ids and scores to 5 decimals, ties ordered by chunk id); live vector rows
(sentence ids in the registered ``vectors/seg-N.ids.npy`` files that are still in the
sentences table) equal to the number of sentences, no registered segment file missing;
the manifest's build state (``build``) that of the sequential build; every writer's exit
status 0 unless it was killed; and the long-lived readers' answers to the same queries,
asked once the writers are done, equal to the reference (a reader must not keep serving a
stale view).

Prints one line per round and a summary (rounds, failures by kind, rows and vectors lost,
reader queries and errors, time per round), writes ``--json`` after every round, keeps the
folders and logs of the first ``--keep-failed`` failed rounds under ``--out``, and exits 1
if any round failed. The worker processes are this script too
(``python bench/torture.py worker {write,delete,read} ...``).

Run: python bench/torture.py [--rounds 200] [--seed 0] [--out /tmp/bench-torture]
                             [--json /tmp/bench-torture/torture.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

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

from sleuth import Index, Settings

SCRIPT = Path(__file__).resolve()
SEED = range(0, 200)  # corpus positions of each part of the content
DOOMED = range(200, 260)
LONG = range(300, 1800)
SHORT_FIRST, SHORT_SIZE, SHORTS = 2000, 30, 3
API_FIRST, API_SIZE, API_WRITERS, API_FILES = 2300, 60, 2, 2
CHANGED_EVERY, REMOVED_EVERY = 4, 10  # update set: seed passages changed / removed
QUERIES = 20  # keyword and semantic queries compared with the reference
TOP_K = 5
RETRIES = 5  # attempts of a reader check that fails while other processes commit
MAX_SAMPLES = 5  # error messages kept per kind
KILL_BY = 6.0  # seconds: latest kill -9 of the first round (then 80% of the writing time)
READER_PAUSE = 0.03  # seconds between a reader's checks (2 cores: leave the writers some)


def settings() -> Settings:
    return Settings.load(embed={"model": "model2vec"})


def digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, ensure_ascii=False).encode()).hexdigest()[:16]


# -- jobs: the writers of a round, also replayed one by one for the reference ------------------


@dataclass(frozen=True)
class Job:
    """One writer: a CLI ``sleuth index`` of a file, an API writer over files, or an API
    deleter of the documents of a file."""

    name: str
    kind: Literal["cli", "api", "delete"]
    files: tuple[Path, ...]

    def argv(self, index: Path, batch_sentences: int) -> list[str]:
        files = [str(f) for f in self.files]
        if self.kind == "cli":
            return [sys.executable, "-m", "sleuth", "index", *files, "--index", str(index),
                    "--embedder", "model2vec", "--json"]
        return [sys.executable, str(SCRIPT), "worker",
                "write" if self.kind == "api" else "delete", "--index", str(index),
                "--batch-sentences", str(batch_sentences), *files]

    def apply(self, index: Index) -> None:
        """What the job does, in this process (the sequential reference build)."""
        if self.kind == "delete":
            index.delete(record_ids(self.files))
            return
        for path in self.files:
            index.add([path])


def record_ids(files: tuple[Path, ...]) -> list[str]:
    return [r["id"] for f in files for r in json.loads(f.read_text(encoding="utf-8"))]


def jobs_of(folder: Path, update: bool) -> list[Job]:
    jobs = [Job("long", "cli", (folder / "long.json",))]
    jobs += [Job(f"short-{i}", "cli", (folder / f"short-{i}.json",))
             for i in range(1, SHORTS + 1)]
    jobs += [Job(f"api-{w}", "api", tuple(folder / f"api-{w}{c}.json"
                                          for c in "abcdefgh"[:API_FILES]))
             for w in range(1, API_WRITERS + 1)]
    if update:
        jobs += [Job("update", "cli", (folder / "seed.json",)),
                 Job("delete", "delete", (folder / "doomed.json",))]
    return jobs


# -- content sets ----------------------------------------------------------------------


@dataclass
class ContentSet:
    """The files of one kind of round, its seed index and its reference snapshot."""

    name: str
    folder: Path
    template: Path
    jobs: list[Job]
    queries: dict[str, list[Any]]
    reference: dict[str, Any]
    build_s: float


def changed(record: dict[str, str]) -> dict[str, str]:
    return {**record, "text": f"{record['text']} This entry about {record['title']} was "
            "revised for the torture test."}


def write_files(folder: Path, corpus: list[dict[str, str]], update: bool) -> None:
    def dump(name: str, positions: range) -> None:
        (folder / name).write_text(json.dumps([corpus[i] for i in positions]), "utf-8")

    dump("seed.json", SEED)
    if update:
        dump("doomed.json", DOOMED)
    dump("long.json", LONG)
    for i in range(SHORTS):
        first = SHORT_FIRST + i * SHORT_SIZE
        dump(f"short-{i + 1}.json", range(first, first + SHORT_SIZE))
    for w in range(API_WRITERS):
        for c in range(API_FILES):
            first = API_FIRST + (w * API_FILES + c) * API_SIZE
            dump(f"api-{w + 1}{'abcdefgh'[c]}.json", range(first, first + API_SIZE))


def revised_seed(corpus: list[dict[str, str]]) -> list[dict[str, str]]:
    out = []
    for n, i in enumerate(SEED):
        if n % REMOVED_EVERY == REMOVED_EVERY - 1:
            continue
        out.append(changed(corpus[i]) if n % CHANGED_EVERY == 1 else corpus[i])
    return out


def prepare_set(name: str, corpus: list[dict[str, str]], root: Path, embedder: Any,
                rng: random.Random) -> ContentSet:
    """Files, seed index (template), sequential reference build and its snapshot."""
    t0 = time.perf_counter()
    update = name == "update"
    folder = root / "sets" / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    write_files(folder, corpus, update)
    template = folder / "template"
    with Index.open(template, settings=settings(), create=True, embedder=embedder) as index:
        index.add([folder / "seed.json"])
        if update:
            index.add([folder / "doomed.json"])
    if update:  # the same path, new content: re-indexing it updates and deletes in place
        (folder / "seed.json").write_text(json.dumps(revised_seed(corpus)), "utf-8")
    jobs = jobs_of(folder, update)
    reference = folder / "reference"
    shutil.copytree(template, reference)
    with Index.open(reference, settings=settings(), embedder=embedder) as index:
        for job in jobs:
            job.apply(index)
        queries = pick_queries(index, rng)
    (folder / "queries.json").write_text(json.dumps(queries), "utf-8")
    snap = snapshot(reference, embedder, queries)
    if snap["errors"]:
        raise SystemExit(f"the reference build of {name} is unreadable: {snap['errors']}")
    return ContentSet(name, folder, template, jobs, queries, snap, time.perf_counter() - t0)


def pick_queries(index: Index, rng: random.Random) -> dict[str, list[Any]]:
    """Keyword queries (titles, long words) and semantic ones (a document's own embedding
    input "title: sentence", plain sentences) drawn from the final content."""
    chunks = sorted(index.store.iter_chunks(), key=lambda c: c.chunk_id)
    titles = index.document_titles()
    picked = rng.sample(chunks, 2 * QUERIES)
    keyword: list[list[str]] = []
    semantic: list[str] = []
    for n, chunk in enumerate(picked[:QUERIES]):
        words = sorted(chunk.text.split(), key=len)
        keyword.append([titles[chunk.doc_id]] if n % 2 else [words[-1].strip(".,;:()\"'")])
    for n, chunk in enumerate(picked[QUERIES:]):
        sentence = rng.choice(chunk.sentences).text
        semantic.append(embed_input(titles[chunk.doc_id], sentence) if n % 2 else sentence)
    return {"keyword": keyword, "semantic": semantic}


def embed_input(title: str, sentence: str) -> str:
    """What indexing embeds for a sentence (``Index._embed_inputs``): a search for it
    scores its own vector 1.0."""
    title = title.strip()
    return sentence if not title or sentence.startswith(title) else f"{title}: {sentence}"


# -- snapshots: what an index holds, compared with the reference -----------------------


def ranking(hits: list[Any]) -> list[list[Any]]:
    """The top ``TOP_K`` of a top-10 answer as [chunk id, score], ties by chunk id."""
    rows = sorted(((h.chunk_id, round(float(h.score), 5)) for h in hits),
                  key=lambda r: (-r[1], r[0]))
    return [list(r) for r in rows[:TOP_K]]


def answers(index: Index, queries: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {"keyword": [ranking(index.keyword_search(q, 10)) for q in queries["keyword"]],
            "semantic": [ranking(index.semantic_search(q, 10)) for q in queries["semantic"]]}


def snapshot(folder: Path, embedder: Any, queries: dict[str, list[Any]]) -> dict[str, Any]:
    """Counts, row digests, vector digests and query answers of the index at ``folder``;
    ``errors`` lists what could not be read."""
    snap: dict[str, Any] = {"errors": [], "audit": vector_audit(folder)}
    try:
        with Index.open(folder, settings=settings(), embedder=embedder) as index:
            stats = index.stats()
            snap["counts"] = {"documents": stats.documents, "chunks": stats.chunks,
                              "sentences": stats.sentences}
            snap["build_state"] = (stats.manifest.get("build") or {}).get("state")
            snap["docs"], sentences = row_digests(index)
            snap["vectors"] = vector_digests(index, sentences)
            snap.update(answers(index, queries))
    except Exception as exc:  # an unreadable index is a finding
        snap["errors"].append(f"{type(exc).__name__}: {exc}")
    return snap


def row_digests(index: Index) -> tuple[dict[str, str], dict[str, int]]:
    """Per document: digest of title, text, chunks (id, text, span) and sentence spans; and
    its number of sentences."""
    chunks: dict[str, list[Any]] = {}
    sentences: Counter[str] = Counter()
    for c in index.store.iter_chunks():
        chunks.setdefault(c.doc_id, []).append(
            [c.chunk_id, c.position, c.text, c.start, c.end,
             [[s.start, s.end] for s in c.sentences]])
        sentences[c.doc_id] += len(c.sentences)
    out = {}
    for doc_id in index.document_titles():
        doc = index.document(doc_id)
        body = [doc.title, doc.text] if doc else None
        out[doc_id] = digest([body, sorted(chunks.get(doc_id, []), key=lambda r: r[1])])
    return out, dict(sentences)


def vector_digests(index: Index, sentences: dict[str, int]) -> dict[str, list[Any]]:
    """Per document: [rows, digest of its float32 sentence vectors] or [rows, error]."""
    out: dict[str, list[Any]] = {}
    for doc_id, n in sentences.items():
        try:
            vectors = np.ascontiguousarray(index.store.document_vectors(doc_id), np.float32)
            out[doc_id] = [len(vectors), hashlib.sha256(vectors.tobytes()).hexdigest()[:16]]
        except Exception as exc:  # recorded per document
            out[doc_id] = [n, f"error {type(exc).__name__}: {exc}"[:200]]
    return out


def vector_audit(folder: Path) -> dict[str, Any]:
    """Straight from the files: sentence vectors of the registered segments against the
    sentences table (the embedded layout: ``segments`` table, ``vectors/seg-N.ids.npy``)."""
    db = sqlite3.connect(folder / "sleuth.db")
    try:
        segs = [r[0] for r in db.execute("SELECT seg FROM segments")]
        live = np.fromiter((r[0] for r in db.execute("SELECT id FROM sentences")), np.int64)
    except sqlite3.Error as exc:
        return {"available": False, "why": str(exc)}
    finally:
        db.close()
    parts, missing = [], []
    for seg in segs:
        path = folder / "vectors" / f"seg-{seg}.ids.npy"
        try:
            parts.append(np.load(path))
        except (OSError, ValueError):
            missing.append(path.name)
    ids = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    rows = ids[np.isin(ids, live)]
    return {"available": True, "sentences": len(live), "live_vector_rows": len(rows),
            "sentences_without_vector": int((~np.isin(live, ids)).sum()),
            "duplicate_rows": len(rows) - len(np.unique(rows)),
            "missing_segment_files": missing, "segments": len(segs)}


def compare(snap: dict[str, Any], ref: dict[str, Any]) -> tuple[list[list[str]], dict[str, int]]:
    """Failure reasons ([kind, detail]) and loss figures of a round's snapshot."""
    reasons: list[list[str]] = [["unreadable", e] for e in snap["errors"]]
    loss = {"documents_lost": 0, "sentences_lost": 0, "vector_rows_lost": 0,
            "documents_wrong_vectors": 0}
    reasons += audit_reasons(snap["audit"], loss)
    if snap["errors"]:
        return reasons, loss
    counts, want = snap["counts"], ref["counts"]
    if counts != want:
        reasons.append(["counts", f"{counts} != reference {want}"])
    loss["documents_lost"] = max(0, want["documents"] - counts["documents"])
    loss["sentences_lost"] = max(0, want["sentences"] - counts["sentences"])
    missing = sorted(set(ref["docs"]) - set(snap["docs"]))
    extra = sorted(set(snap["docs"]) - set(ref["docs"]))
    differ = [d for d in ref["docs"] if d in snap["docs"] and snap["docs"][d] != ref["docs"][d]]
    if missing or extra or differ:
        reasons.append(["rows", f"{len(missing)} documents missing, {len(extra)} extra, "
                        f"{len(differ)} with other rows (e.g. {(missing + extra + differ)[:3]})"])
    wrong = [d for d, v in ref["vectors"].items()
             if d in snap["vectors"] and snap["vectors"][d] != v]
    if wrong:
        loss["documents_wrong_vectors"] = len(wrong)
        example = snap["vectors"][wrong[0]]
        reasons.append(["vectors", f"{len(wrong)} documents' sentence vectors differ from the "
                        f"reference (e.g. {wrong[0]}: {example} != {ref['vectors'][wrong[0]]})"])
    if snap["build_state"] != ref["build_state"]:
        reasons.append(["manifest", f"build state {snap['build_state']!r} after all writers "
                        f"(sequential build: {ref['build_state']!r})"])
    for kind in ("keyword", "semantic"):
        bad = [q for q, (a, b) in enumerate(zip(snap[kind], ref[kind], strict=True)) if a != b]
        if bad:
            reasons.append([f"{kind}-results", f"{len(bad)} of {len(ref[kind])} queries' "
                            f"top {TOP_K} differ (e.g. query {bad[0]})"])
    return reasons, loss


def audit_reasons(audit: dict[str, Any], loss: dict[str, int]) -> list[list[str]]:
    if not audit.get("available"):
        return []
    reasons = []
    if audit["missing_segment_files"]:
        reasons.append(["segment-files", "registered segment files missing: "
                        f"{audit['missing_segment_files'][:3]}"])
    if audit["live_vector_rows"] != audit["sentences"] or audit["duplicate_rows"]:
        loss["vector_rows_lost"] = audit["sentences_without_vector"]
        reasons.append(["vector-rows", f"{audit['live_vector_rows']} live vector rows for "
                        f"{audit['sentences']} sentences ({audit['sentences_without_vector']} "
                        f"sentences without a vector, {audit['duplicate_rows']} duplicated)"])
    return reasons


# -- a round: processes, kills, re-runs -------------------------------------------------


@dataclass
class Proc:
    """A worker process of the round, launched (again after a kill) by the scheduler."""

    name: str
    argv: list[str]
    next_start: float | None  # seconds into the round; None while running or when done
    log: Path
    writer: bool = True
    popen: subprocess.Popen[bytes] | None = None
    exits: list[tuple[int, bool]] = field(default_factory=list)  # (status, killed by us)
    killed_now: bool = False
    spans: list[list[float]] = field(default_factory=list)  # [launched, exited] seconds
    done: bool = False

    def launch(self, cwd: Path, now: float) -> None:
        self.spans.append([round(now, 2)])
        with self.log.open("ab") as out:
            out.write(f"\n--- launch {len(self.exits) + 1}: {' '.join(self.argv)}\n".encode())
            out.flush()
            self.popen = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT,
                                          cwd=cwd, stdin=subprocess.DEVNULL)
        self.killed_now, self.next_start = False, None

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def tick(self, now: float, cwd: Path, rerun_delay: Callable[[], float]) -> None:
        """Collect an exit (a killed writer is re-run after ``rerun_delay()``), launch when
        due."""
        if self.done or self.running:
            return
        if self.popen is not None:
            self.exits.append((self.popen.returncode, self.killed_now))
            self.spans[-1].append(round(now, 2))
            self.popen = None
            if self.killed_now:
                self.next_start = now + rerun_delay()
            else:
                self.done = True
                return
        if self.next_start is not None and now >= self.next_start:
            self.launch(cwd, now)


@dataclass
class Schedule:
    procs: list[Proc]
    kill_times: list[float]
    rerun_delay: Callable[[], float]
    rng: random.Random
    timeout: float
    events: list[str] = field(default_factory=list)


def run_schedule(s: Schedule, cwd: Path) -> bool:
    """Launch, kill -9 and re-run until every writer finished; False on timeout."""
    t0 = time.monotonic()
    kills = sorted(s.kill_times)
    while True:
        now = time.monotonic() - t0
        for p in s.procs:
            p.tick(now, cwd, s.rerun_delay)
        while kills and now >= kills[0]:
            kills.pop(0)
            kill_one(s, now)
        if all(p.done for p in s.procs if p.writer):
            return True
        if now > s.timeout:
            return False
        time.sleep(0.02)


def kill_one(s: Schedule, now: float) -> None:
    victims = [p for p in s.procs if p.writer and p.running]
    if not victims:
        s.events.append(f"{now:.2f}s kill skipped: no writer running")
        return
    victim = s.rng.choice(victims)
    assert victim.popen is not None
    os.kill(victim.popen.pid, signal.SIGKILL)
    victim.killed_now = True
    s.events.append(f"{now:.2f}s kill -9 {victim.name}")


def stop_all(procs: list[Proc]) -> None:
    for p in procs:
        if p.running:
            assert p.popen is not None
            p.popen.kill()
            p.popen.wait()


def plan_round(cs: ContentSet, index: Path, logs: Path, rng: random.Random, stop: Path,
               kill_by: float) -> Schedule:
    """Start times, batch sizes, readers and kill moments (between 1 s and ``kill_by``) of
    one round."""
    wave = rng.uniform(0.3, 2.5)  # the short writers start together
    procs = []
    for job in cs.jobs:
        if job.name.startswith("short-"):
            start = wave
        else:
            start = 0.0 if job.name == "long" else rng.uniform(0.0, 2.5)
        argv = job.argv(index, rng.choice([8, 16, 32, 48]))
        procs.append(Proc(job.name, argv, start, logs / f"{job.name}.log"))
    for r in range(rng.choice([1, 1, 2])):
        argv = [sys.executable, str(SCRIPT), "worker", "read", "--index", str(index),
                "--queries", str(cs.folder / "queries.json"), "--stop", str(stop),
                "--report", str(logs / f"reader-{r + 1}.json"),
                "--seed", str(rng.randrange(1 << 30))]
        procs.append(Proc(f"reader-{r + 1}", argv, 0.0, logs / f"reader-{r + 1}.log",
                          writer=False))
    kills = [rng.uniform(1.0, kill_by) for _ in range(rng.choice([0, 1, 1, 2]))]
    return Schedule(procs, kills, lambda: rng.uniform(0.1, 1.0), rng, timeout=300.0)


def run_round(n: int, cs: ContentSet, root: Path, embedder: Any, rng: random.Random,
              kill_by: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    folder = root / "rounds" / f"round-{n:04d}"
    shutil.rmtree(folder, ignore_errors=True)
    logs = folder / "logs"
    logs.mkdir(parents=True)
    index = folder / "index"
    shutil.copytree(cs.template, index)
    stop = folder / "stop"
    schedule = plan_round(cs, index, logs, rng, stop, kill_by)
    try:
        finished = run_schedule(schedule, folder)
        writers_s = time.perf_counter() - t0
        stop.touch()
        readers = finish_readers([p for p in schedule.procs if not p.writer], logs)
    finally:
        stop_all(schedule.procs)
    reasons = [] if finished else [["timeout", f"writers still running after "
                                    f"{schedule.timeout:.0f} s"]]
    reasons += writer_reasons(schedule.procs)
    reasons += reader_reasons(readers, cs.reference)
    snap = snapshot(index, embedder, cs.queries)
    found, loss = compare(snap, cs.reference)
    reasons += found
    return {"round": n, "set": cs.name, "ok": not reasons, "reasons": reasons,
            "seconds": round(time.perf_counter() - t0, 2), "writers_s": round(writers_s, 2),
            "kills": schedule.events, "loss": loss,
            "exits": {p.name: [rc for rc, _ in p.exits] for p in schedule.procs},
            "spans": {p.name: p.spans for p in schedule.procs if p.writer},
            "readers": [{k: v for k, v in r.items() if k != "final"} for r in readers],
            "audit": snap["audit"], "folder": str(folder)}


def finish_readers(readers: list[Proc], logs: Path) -> list[dict[str, Any]]:
    """Wait for the readers to see the stop file, ask their final queries and report."""
    out = []
    for p in readers:
        rc = p.exits[-1][0] if p.exits else None  # a reader that died early was collected
        if p.popen is not None:
            try:
                rc = p.popen.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.popen.kill()
                rc = p.popen.wait()
        path = logs / f"{p.name}.json"
        report: dict[str, Any] = {"name": p.name, "exit": rc}
        if path.is_file():
            report.update(json.loads(path.read_text(encoding="utf-8")))
        else:
            tail = p.log.read_text(errors="replace").strip().splitlines()[-1:]
            report["crashed"] = f"no report (exit {rc}): {tail}"
        out.append(report)
    return out


def writer_reasons(procs: list[Proc]) -> list[list[str]]:
    reasons = []
    for p in procs:
        if not p.writer:
            continue
        text = p.log.read_text(errors="replace")
        bad = [rc for rc, killed in p.exits if rc != 0 and not killed]
        if bad or "Traceback" in text:
            lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("---")]
            reasons.append(["writer-error", f"{p.name} exits {[rc for rc, _ in p.exits]}: "
                            f"{lines[-1][:200] if lines else ''}"])
    return reasons


def reader_reasons(readers: list[dict[str, Any]], ref: dict[str, Any]) -> list[list[str]]:
    reasons = []
    for r in readers:
        if "crashed" in r:
            reasons.append(["reader-crash", f"{r['name']}: {r['crashed']}"])
            continue
        for kind, count in r["errors"].items():
            sample = r["samples"].get(kind, [""])[0]
            reasons.append([f"reader-{kind}", f"{r['name']}: {count}x, e.g. {sample}"])
        final = r.get("final") or {}
        if "error" in final:
            reasons.append(["reader-final", f"{r['name']}: {final['error']}"])
            continue
        stale = [k for k in ("keyword", "semantic") if final.get(k) != ref[k]]
        if stale:
            reasons.append(["reader-final", f"{r['name']}: after the writers stopped, its "
                            f"{' and '.join(stale)} answers differ from the reference"])
    return reasons


# -- workers ----------------------------------------------------------------------------


def worker_write(args: argparse.Namespace) -> None:
    with Index.open(args.index, settings=settings(), create=True) as index:
        for path in args.files:
            report = index.add([path], batch_sentences=args.batch_sentences)
            print(json.dumps({"file": path, **report.to_dict()}), flush=True)


def worker_delete(args: argparse.Namespace) -> None:
    with Index.open(args.index, settings=settings()) as index:
        ids = record_ids(tuple(Path(f) for f in args.files))
        index.delete(ids)
        print(json.dumps({"deleted": len(ids)}), flush=True)


class Reader:
    """A long-lived reader: one ``Index`` for the whole round, answers checked."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.folder = Path(args.index)
        self.index = Index.open(self.folder, settings=settings())
        self.queries = json.loads(Path(args.queries).read_text(encoding="utf-8"))
        self.rng = random.Random(args.seed)
        self.probe = sqlite3.connect(self.folder / "sleuth.db")  # PRAGMA data_version only
        self.counts: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.samples: dict[str, list[str]] = {}

    def version(self) -> int:
        return int(self.probe.execute("PRAGMA data_version").fetchone()[0])

    def error(self, kind: str, message: str) -> None:
        self.errors[kind] += 1
        kept = self.samples.setdefault(kind, [])
        if len(kept) < MAX_SAMPLES:
            kept.append(message[:300])

    def checked(self, check: Callable[[], str | None]) -> tuple[str, str] | None:
        """Run ``check`` until it passes or fails with no commit by anyone in between."""
        for _ in range(RETRIES):
            before = self.version()
            problem = check()
            if problem is None:
                return None
            if self.version() == before:
                return "wrong-hit", problem
        self.counts["inconclusive"] += 1
        return None

    def hits_readable(self, hits: list[Any]) -> str | None:
        found = self.index.read([h.chunk_id for h in hits])
        chunks = {c.chunk_id: c for c in found.chunks}
        for h in hits:
            chunk = chunks.get(h.chunk_id)
            if chunk is None:
                return f"hit {h.chunk_id} cannot be read"
            lost = [s for s in h.snippets if s not in chunk.text]
            if lost:
                return f"snippet {lost[0][:60]!r} not in the text of {h.chunk_id}"
        return None

    def keyword(self) -> str | None:
        return self.hits_readable(self.index.keyword_search(self.rng.choice(
            self.queries["keyword"]), TOP_K))

    def semantic(self) -> str | None:
        return self.hits_readable(self.index.semantic_search(self.rng.choice(
            self.queries["semantic"]), TOP_K))

    def read(self) -> str | None:
        """A document's first chunks read back agree with the document's text."""
        titles = self.index.document_titles()
        if not titles:
            return None
        doc_id = self.rng.choice(sorted(titles))
        doc = self.index.document(doc_id)
        chunks = self.index.read([f"{doc_id}#0"], adjacent=1).chunks
        if doc is None:
            return None  # deleted meanwhile
        if not chunks:
            return f"document {doc_id} is stored but its chunk #0 cannot be read"
        for c in chunks:
            if c.doc_id == doc_id and doc.text[c.start : c.end] != c.text:
                return f"chunk {c.chunk_id} differs from its document's text"
        return None

    def vectors_check(self, index: Index, doc_id: str, query: str) -> str | None:
        if any(h.doc_id == doc_id for h in index.semantic_search(query, 10)):
            return None
        own = index.semantic_search(query, 1, doc_ids=[doc_id])
        if own and own[0].score > 0.999:  # ties with other documents' equal sentences
            return None
        return f"committed document {doc_id} not found by a semantic search for its sentence"

    def vectors(self) -> tuple[str, str] | None:
        """A committed document's own sentence finds it (its vectors are searchable)."""
        titles = self.index.document_titles()
        if not titles:
            return None
        doc_id = self.rng.choice(sorted(titles))
        pick = self.rng.random()

        def check(index: Index) -> str | None:
            chunks = index.read([f"{doc_id}#0"]).chunks  # read now: it may have changed
            if not chunks or not chunks[0].sentences:
                return None  # deleted meanwhile
            sentences = chunks[0].sentences
            query = embed_input(titles[doc_id], sentences[int(pick * len(sentences))].text)
            return self.vectors_check(index, doc_id, query)

        failed = self.checked(lambda: check(self.index))
        if failed is None:
            return None
        with Index.open(self.folder, settings=settings(), embedder=self.index.embedder) as fresh:
            again = check(fresh)
        return ("stale", failed[1]) if again is None else ("lost-vectors", failed[1])

    def step(self) -> None:
        kind = self.rng.choice(["keyword", "semantic", "read", "vectors"])
        self.counts[kind] += 1
        try:
            if kind == "vectors":
                failed = self.vectors()
            else:
                failed = self.checked({"keyword": self.keyword, "semantic": self.semantic,
                                       "read": self.read}[kind])
        except Exception as exc:  # every exception is a finding
            where = traceback.extract_tb(exc.__traceback__)[-1]
            self.error(f"exception-{type(exc).__name__}", f"{kind}: {type(exc).__name__}: "
                       f"{exc} (at {Path(where.filename).name}:{where.lineno})")
            return
        if failed is not None:
            self.error(*failed)

    def final(self) -> dict[str, Any]:
        try:
            return answers(self.index, self.queries)
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}


def worker_read(args: argparse.Namespace) -> None:
    reader = Reader(args)
    stop = Path(args.stop)
    t0 = time.perf_counter()
    while not stop.exists():
        reader.step()
        time.sleep(READER_PAUSE)
    report = {"queries": sum(reader.counts.values()) - reader.counts["inconclusive"],
              "by_kind": dict(reader.counts), "errors": dict(reader.errors),
              "samples": reader.samples, "seconds": round(time.perf_counter() - t0, 2),
              "final": reader.final()}
    reader.index.close()
    Path(args.report).write_text(json.dumps(report), encoding="utf-8")


# -- the harness ------------------------------------------------------------------------


def summarise(rounds: list[dict[str, Any]], total_s: float) -> dict[str, Any]:
    kinds: Counter[str] = Counter()
    for r in rounds:
        kinds.update({kind for kind, _ in r["reasons"]})
    loss: Counter[str] = Counter()
    for r in rounds:
        loss.update(r["loss"])
    readers = [x for r in rounds for x in r["readers"]]
    seconds = [r["seconds"] for r in rounds]
    return {
        "rounds": len(rounds), "failed": sum(not r["ok"] for r in rounds),
        "failures_by_kind": dict(kinds.most_common()), "loss": dict(loss),
        "kills": sum(len([e for e in r["kills"] if "kill -9" in e]) for r in rounds),
        "reader_queries": sum(x.get("queries", 0) for x in readers),
        "reader_errors": sum(sum(x.get("errors", {}).values()) for x in readers),
        "reader_inconclusive": sum(x.get("by_kind", {}).get("inconclusive", 0)
                                   for x in readers),
        "seconds_total": round(total_s, 1),
        "seconds_per_round_median": round(statistics.median(seconds), 2) if seconds else None,
        "seconds_per_round_max": max(seconds, default=None),
    }


def report(result: dict[str, Any]) -> str:
    s = result["summary"]
    rows = [[kind, count] for kind, count in s["failures_by_kind"].items()] or [["(none)", 0]]
    return "\n".join([
        "## Torture: concurrent writers, readers and kill -9", "",
        f"- Command: `{result['command']}`; sleuth from `{result['sleuth']}`",
        f"- Rounds: {s['rounds']}, failed: {s['failed']}; kills: {s['kills']}; "
        f"time {s['seconds_total']} s (median {s['seconds_per_round_median']} s a round, "
        f"max {s['seconds_per_round_max']} s)",
        f"- Lost: {s['loss']}",
        f"- Readers: {s['reader_queries']} checked queries, {s['reader_errors']} errors, "
        f"{s['reader_inconclusive']} inconclusive", "",
        md_table(["failure kind", "rounds"], rows),
    ])


def harness(args: argparse.Namespace) -> int:
    import sleuth

    facts = machine_facts()
    log(f"machine: {facts['cpu_model']}, {facts['usable_cores']} usable cores; "
        f"sleuth from {Path(sleuth.__file__).parent}")
    root = args.out.resolve()
    root.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(root / "rounds", ignore_errors=True)
    rng = random.Random(args.seed)
    corpus = json.loads(wiki_corpus(data_root(args.data)).read_text(encoding="utf-8"))
    from sleuth.embed import load_embedder

    embedder = load_embedder(settings().embed)
    sets = {}
    for name in ("add", "update"):
        sets[name] = prepare_set(name, corpus, root, embedder, random.Random(args.seed))
        log(f"content set {name!r}: reference {sets[name].reference['counts']} built in "
            f"{sets[name].build_s:.1f} s")
    result: dict[str, Any] = {"benchmark": "torture", "command": command_line(),
                              "sleuth": str(Path(sleuth.__file__).parent), "machine": facts,
                              "seed": args.seed, "rounds": []}
    kept = 0
    t0 = time.perf_counter()
    for n in range(1, args.rounds + 1):
        cs = sets["update" if rng.random() < 1 / 3 else "add"]
        # kills land while writers run: within 80% of the median writing time so far
        spans = [x["writers_s"] for x in result["rounds"]]
        kill_by = max(KILL_BY, 0.8 * statistics.median(spans)) if spans else KILL_BY
        r = run_round(n, cs, root, embedder, random.Random(rng.randrange(1 << 30)), kill_by)
        result["rounds"].append(r)
        log(round_line(r, args.rounds))
        if r["ok"] or kept >= args.keep_failed:
            shutil.rmtree(r["folder"], ignore_errors=True)
        else:
            kept += 1
        result["summary"] = summarise(result["rounds"], time.perf_counter() - t0)
        write_json(args.json, result)
    print(report(result))
    log(f"wrote {args.json}")
    return 1 if result["summary"]["failed"] else 0


def round_line(r: dict[str, Any], total: int) -> str:
    kills = sum("kill -9" in e for e in r["kills"])
    queries = sum(x.get("queries", 0) for x in r["readers"])
    errors = sum(sum(x.get("errors", {}).values()) for x in r["readers"])
    head = (f"round {r['round']}/{total} [{r['set']}] {'ok' if r['ok'] else 'FAIL'} "
            f"{r['seconds']:.1f} s, {kills} kills, readers {queries} queries / {errors} errors")
    details = "".join(f"\n    {kind}: {detail}" for kind, detail in r["reasons"])
    return head + details


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench-torture"),
                    help="scratch folder: content sets, reference builds, rounds")
    ap.add_argument("--json", type=Path, default=None,
                    help="figures (default OUT/torture.json)")
    ap.add_argument("--keep-failed", type=int, default=3,
                    help="keep the folders and logs of this many failed rounds")
    add_data_option(ap)
    sub = ap.add_subparsers(dest="worker_command")
    worker = sub.add_parser("worker", help="(internal) a writer or reader process of a round")
    roles = worker.add_subparsers(dest="role", required=True)
    for role in ("write", "delete"):
        p = roles.add_parser(role)
        p.add_argument("--index", required=True)
        p.add_argument("--batch-sentences", type=int, default=32)
        p.add_argument("files", nargs="+")
    p = roles.add_parser("read")
    p.add_argument("--index", required=True)
    p.add_argument("--queries", required=True)
    p.add_argument("--stop", required=True)
    p.add_argument("--report", required=True)
    p.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.json is None:
        args.json = args.out / "torture.json"
    return args


WORKERS: dict[str, Callable[[argparse.Namespace], None]] = {
    "write": worker_write, "delete": worker_delete, "read": worker_read}


def main() -> None:
    args = parse_args()
    if args.worker_command == "worker":
        WORKERS[args.role](args)
        return
    sys.exit(harness(args))


if __name__ == "__main__":
    main()
