"""Shared helpers for the Sleuth benchmarks: the data root, the cached dev indexes, machine
facts, percentiles, output files."""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "bench" / "out"
# the benchmark data (2wikimultihopqa/, financebench/, graphrag_bench_*/): beside the checkout
DEFAULT_DATA = REPO.parent / "shared" / "data"


def bench_cache() -> Path:
    """Where the benchmarks cache what they build: ``$SLEUTH_BENCH_CACHE``, else
    ``$XDG_CACHE_HOME/sleuth/bench`` (``~/.cache/sleuth/bench``)."""
    if os.environ.get("SLEUTH_BENCH_CACHE"):
        return Path(os.environ["SLEUTH_BENCH_CACHE"]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sleuth" / "bench"


# synthetic indexes (bench/_synth.py) of keyword_search, semantic and timing_channel
CACHE_DIR = bench_cache() / "synthetic"


# --- the data root ---------------------------------------------------------------------

def add_data_option(parser: argparse.ArgumentParser) -> None:
    """The ``--data`` option every benchmark that reads the dev sets takes."""
    parser.add_argument("--data", type=Path, default=None, metavar="DIR",
                        help="the benchmark data root, holding 2wikimultihopqa/, financebench/, "
                        "graphrag_bench_medical/, graphrag_bench_novel/ [../shared/data from "
                        "the repository root]")


def data_root(value: str | Path | None = None) -> Path:
    """The data root: ``value`` (a ``--data`` argument, relative to the current folder) or
    ``../shared/data`` from the repository root, whatever the current folder. Exits with a
    message naming the folder when it is missing."""
    path = Path(value).expanduser().resolve() if value else DEFAULT_DATA.resolve()
    if not path.is_dir():
        raise SystemExit(f"bench: no benchmark data at {path}; pass --data DIR, the folder "
                         "holding 2wikimultihopqa/, financebench/, graphrag_bench_medical/ "
                         "and graphrag_bench_novel/ (see ../shared/data/README.md)")
    return path


def data_file(data: Path, relative: str) -> Path:
    """A file of the data root, or an exit naming it when it is missing."""
    path = data / relative
    if not path.exists():
        raise SystemExit(f"bench: {path} is missing from the data root {data}")
    return path


def wiki_corpus(data: Path) -> Path:
    """The 2WikiMultihopQA corpus (6,119 passages) of the data root."""
    return data_file(data, "2wikimultihopqa/corpus.json")


def wiki_questions(data: Path) -> Path:
    """The 2WikiMultihopQA dev questions (570) of the data root."""
    return data_file(data, "2wikimultihopqa/questions.json")


# --- the cached dev indexes --------------------------------------------------------------

@dataclass(frozen=True)
class DevCorpus:
    """One dev corpus ``dev_index`` can build: what it indexes and with which embedder."""

    source: str  # relative to the data root, or an absolute folder a Debian package installs
    embedder: str = "minilm"  # the embedder the project's measurements used
    package: str | None = None  # the Debian package that installs an absolute source
    build_time: str = ""  # how long a build takes on 2 cores (BENCHMARKS), for the log line
    # whether the project's runs on it build the knowledge graph (answers.py, ranking.py)
    graph: bool = False
    include: tuple[str, ...] = ()  # globs of the files to take (``sleuth index --include``)


DEV_CORPORA = {
    "2wiki": DevCorpus("2wikimultihopqa/corpus.json", build_time="about 3 min", graph=True),
    "medical": DevCorpus("graphrag_bench_medical/corpus.json", build_time="about 2 min",
                         graph=True),
    "novel": DevCorpus("graphrag_bench_novel/corpus.json", build_time="several minutes",
                       graph=True),
    # 10,206 long pages: the model2vec embedder indexes them in minutes (BENCHMARKS §8, §32)
    "financebench": DevCorpus("financebench/corpus.json", embedder="model2vec",
                              build_time="about 3 min"),
    # BENCHMARKS §23-§24, bench/sets/README.md: Debian bookworm's PostgreSQL 15 manual
    "pgdocs": DevCorpus("/usr/share/doc/postgresql-doc-15/html", package="postgresql-doc-15",
                        build_time="4 to 9 min"),
    # BENCHMARKS §38: Apache Commons Lang 3.12's Javadoc as Debian ships it
    "javadoc": DevCorpus("/usr/share/doc/libcommons-lang3-java/api",
                         package="libcommons-lang3-java-doc", build_time="a few minutes"),
    # bench/sets/README.md: Git 2.39's manual as Debian bookworm ships it (its HTML pages; the
    # folder holds their AsciiDoc sources too), a manual added after the answer path was
    # declared, to see what the checks and rankings do on one they were not shaped on
    "gitdocs": DevCorpus("/usr/share/doc/git-doc", package="git-doc", include=("*.html",),
                         build_time="a few minutes"),
}


def ensure_debian_docs(folder: Path, package: str) -> None:
    """Install the Debian package that puts ``folder`` on disk when it is missing (apt-get,
    as root or through sudo); exits with the command to run when that cannot be done."""
    if folder.is_dir():
        return
    command = ["apt-get", "install", "-y", package]
    if os.geteuid() != 0:
        command = ["sudo", "-n", *command]
    log(f"{folder} is missing: installing the Debian package {package} ({' '.join(command)})")
    try:
        subprocess.run(command, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"bench: {folder} is missing and `{' '.join(command)}` failed "
                         f"({exc}); install {package} (Debian/Ubuntu: apt-get install -y "
                         f"{package}) or pass --index to an index of it") from exc
    if not folder.is_dir():
        raise SystemExit(f"bench: {package} is installed but {folder} is still missing")


def corpus_fingerprint(source: Path) -> str:
    """sha256 (16 hex) of a corpus file's or folder's files: relative path and content. A
    changed, added or removed file changes it; a copy of the same files (the shared data
    provided again with new times) does not: the dev corpora are tens of MB, read in a
    second."""
    digest = hashlib.sha256()
    files = sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() else [source]
    for f in files:
        name = f.relative_to(source) if source.is_dir() else f.name
        digest.update(f"{name}\0".encode())
        with f.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\n")
    return digest.hexdigest()[:16]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (two benches asking for one index: one builds,
    the other waits and then finds it built)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_complete(index: Path) -> bool:
    """Whether the index folder holds a finished build (none running or interrupted)."""
    from sleuth.errors import SleuthError
    from sleuth.store.base import open_store

    if not (index / "manifest.json").is_file():
        return False
    try:
        store = open_store(str(index), create=False, embedder=None)
    except SleuthError:
        return False
    try:
        return bool(store.build_status()["state"] == "complete")
    finally:
        store.close()


def _sleuth(*args: str) -> None:
    """Run a ``sleuth`` command of this checkout, its progress on stderr, with no SLEUTH_*
    setting of the caller's environment (a cached dev index is the same for everyone)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLEUTH_", "ARAG_"))}
    command = [sys.executable, "-m", "sleuth", *args]
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL)
    if done.returncode != 0:
        raise SystemExit(f"bench: `sleuth {' '.join(args)}` failed (exit {done.returncode}); "
                         "run the same bench again to resume the build")


def dev_index_meta(index: Path) -> dict[str, Any]:
    """What :func:`dev_index` recorded of a build: ``key``, ``state``, ``seconds`` (the
    last build's or resume's), ``finished`` (epoch) and ``built_utc``; empty for another
    folder."""
    path = index.with_name(index.name + ".json")
    return json.loads(path.read_text()) if path.is_file() else {}


def dev_index(name: str, *, data: Path | None = None, embedder: str | None = None,
              graph: bool = False) -> Path:
    """The folder of an index of dev corpus ``name``, built on first use and cached.

    ``name`` is one of ``DEV_CORPORA``: ``2wiki`` (``2wikimultihopqa/corpus.json`` of the
    data root), ``medical`` and ``novel`` (``graphrag_bench_*/corpus.json``),
    ``financebench`` (``financebench/corpus.json``, one passage per PDF page), ``pgdocs``
    (the PostgreSQL 15 manual of Debian's ``postgresql-doc-15``) and ``javadoc`` (Commons
    Lang 3.12's Javadoc, Debian's ``libcommons-lang3-java-doc``); a missing Debian package
    is installed with apt-get. ``data`` is the data root (None: :func:`data_root`'s default).
    ``embedder`` is a ``sleuth index --embedder`` value; None takes the one the project
    measured the corpus with (``model2vec`` for FinanceBench, ``minilm`` for the others).
    ``graph`` also builds the knowledge graph (``sleuth graph build``), in an index of its
    own, since a graph changes how ``hybrid`` ranks.

    The index lives in ``bench_cache()/<name>-<embedder>[-graph]/`` (``$SLEUTH_BENCH_CACHE``
    or ``~/.cache/sleuth/bench``), with ``<folder>.json`` beside it recording the corpus's
    fingerprint (its files' contents) and the embedder: a changed corpus rebuilds it
    from scratch. It is built with ``sleuth index`` (and ``sleuth graph build``), both
    resumable: a build interrupted (Ctrl-C, a crash) resumes on the next call. Building logs
    one line on stderr, then ``sleuth index``'s own progress bar; a cached index costs a
    ``stat`` of the corpus's files. Concurrent calls for one index wait for each other.
    """
    if name not in DEV_CORPORA:
        raise SystemExit(f"bench: no dev corpus {name!r}; choose from {', '.join(DEV_CORPORA)}")
    spec = DEV_CORPORA[name]
    if spec.package:
        source = Path(spec.source)
        ensure_debian_docs(source, spec.package)
    else:
        source = data_file(data_root(data), spec.source)
    chosen = embedder or spec.embedder
    folder = bench_cache() / f"{name}-{chosen.replace('/', '_').replace(':', '_')}" \
        f"{'-graph' if graph else ''}"
    key = {"name": name, "source": str(source), "fingerprint": corpus_fingerprint(source),
           "embedder": chosen, "graph": graph}
    if spec.include:
        key["include"] = list(spec.include)
    meta_path = folder.with_name(folder.name + ".json")
    with _locked(folder.with_name(folder.name + ".lock")):
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        if meta.get("key") == key and meta.get("state") == "complete" and build_complete(folder):
            return folder
        if meta.get("key") != key and folder.exists():
            log(f"dev index {name}: {source} or the embedder changed since {folder} was "
                "built; building it again")
            shutil.rmtree(folder)
        resuming = folder.exists()
        log(f"dev index {name} ({chosen}{', graph' if graph else ''}): "
            f"{'resuming the build' if resuming else 'building'} of {source} into {folder} "
            f"({spec.build_time or 'minutes'} on 2 cores; resumable, cached for next time)")
        meta_path.write_text(json.dumps({"key": key, "state": "building"}, indent=2))
        started = time.perf_counter()
        _sleuth("index", str(source), "--index", str(folder), "--embedder", chosen,
                *(arg for glob in spec.include for arg in ("--include", glob)))
        if graph:
            _sleuth("graph", "build", "--index", str(folder))
        seconds = round(time.perf_counter() - started, 1)
        meta_path.write_text(json.dumps(
            {"key": key, "state": "complete", "seconds": seconds, "finished": time.time(),
             "built_utc": datetime.now(UTC).isoformat(timespec="seconds")}, indent=2))
        log(f"dev index {name}: ready at {folder} in {seconds} s")
        return folder


@dataclass(frozen=True)
class DevSet:
    """A dev question set: the dev corpus its index is built from and its question file."""

    corpus: str  # a DEV_CORPORA name
    questions: str  # relative to the data root, or "bench/..." relative to the repository


DEV_SETS = {
    "2wiki": DevSet("2wiki", "2wikimultihopqa/questions.json"),
    "2wiki-natural": DevSet("2wiki", "bench/sets/2wiki-natural/questions.json"),
    "2wiki-written": DevSet("2wiki", "bench/sets/2wiki-natural/written.json"),
    "medical": DevSet("medical", "graphrag_bench_medical/questions.json"),
    "novel": DevSet("novel", "graphrag_bench_novel/questions.json"),
    "financebench": DevSet("financebench", "financebench/questions.json"),
    "pgdocs": DevSet("pgdocs", "bench/sets/pgdocs/questions.json"),
    "javadoc": DevSet("javadoc", "bench/sets/javadoc/questions.json"),
    "gitdocs": DevSet("gitdocs", "bench/sets/gitdocs/questions.json"),
}


def dev_questions(name: str, data: Path | None = None) -> Path:
    """The question file of dev set ``name`` (one of ``DEV_SETS``)."""
    if name not in DEV_SETS:
        raise SystemExit(f"bench: no dev set {name!r}; choose from {', '.join(DEV_SETS)}")
    relative = DEV_SETS[name].questions
    if relative.startswith("bench/"):
        return REPO / relative
    return data_file(data_root(data), relative)


def resolve_index(value: str | Path | None, corpus: str, data: Path | None = None,
                  **options: Any) -> Path:
    """An ``--index`` argument: None builds or reuses ``dev_index(corpus)``; a dev corpus
    name (``2wiki``, ``pgdocs``, ...) that one's dev index; anything else an index folder
    or store URL, as given. ``options`` go to :func:`dev_index` (``embedder``, ``graph``)."""
    if value is None:
        return dev_index(corpus, data=data, **options)
    if str(value) in DEV_CORPORA:
        return dev_index(str(value), data=data, **options)
    return Path(value)


def dev_set(spec: str, data: Path | None = None) -> tuple[str, Path, Path]:
    """A ``--set`` argument as ``(name, index, questions)``: ``NAME``, a ``DEV_SETS`` name
    (its dev index, built or reused, and its questions), or ``NAME=INDEX:QUESTIONS`` (an
    index folder or a dev corpus name, and a question file)."""
    name, equals, rest = spec.partition("=")
    if not equals:
        if name not in DEV_SETS:
            raise SystemExit(f"bench: --set {spec!r}: give a dev set ({', '.join(DEV_SETS)}) "
                             "or NAME=INDEX:QUESTIONS")
        return name, dev_index(DEV_SETS[name].corpus, data=data), dev_questions(name, data)
    where, colon, questions = rest.partition(":")
    if not colon:
        raise SystemExit(f"bench: --set {spec!r}: expected NAME=INDEX:QUESTIONS")
    return name, resolve_index(where, where, data), Path(questions)


def load_minilm() -> tuple[Any, float]:
    """The default (bundled MiniLM) embedder and its load time in seconds."""
    from sleuth.embed import load_embedder
    from sleuth.settings import Settings

    started = time.perf_counter()
    embedder = load_embedder(Settings.load().embed)
    return embedder, time.perf_counter() - started


def machine_facts() -> dict[str, Any]:
    """CPU model, cores, RAM, Python and library versions, date."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        usable = os.cpu_count()
    versions: dict[str, str] = {}
    for mod in ("sleuth", "numpy", "tantivy", "torch", "sentence_transformers"):
        try:
            m = __import__(mod)
            versions[mod] = str(getattr(m, "__version__", "?"))
        except ImportError:
            pass
    return {
        "cpu_model": cpu,
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "ram_gib": ram_gib,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "versions": versions,
        "date_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "git": git_state(),
        "loadavg_start": os.getloadavg(),
    }


def git_state() -> str:
    """Short HEAD commit of the repo, with '+dirty src' when src/ has uncommitted changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "src"], cwd=REPO,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" +dirty src" if dirty else "")


STORE_SOURCES = ("store", "ingest", "tokens.py", "types.py")


def source_fingerprint(parts: tuple[str, ...] = STORE_SOURCES) -> str:
    """sha256 (12 hex) of the sleuth sources that decide what an index holds: a cached
    benchmark index is rebuilt when they change."""
    root = REPO / "src" / "sleuth"
    digest = hashlib.sha256()
    for part in parts:
        p = root / part
        files = sorted(p.rglob("*.py")) if p.is_dir() else [p]
        for f in files:
            if f.is_file():
                digest.update(str(f.relative_to(root)).encode())
                digest.update(f.read_bytes())
    return digest.hexdigest()[:12]


def machine_md(facts: dict[str, Any]) -> str:
    v = ", ".join(f"{k} {val}" for k, val in facts["versions"].items())
    return (
        f"- Machine: CPU `{facts['cpu_model']}`, {facts['cores']} cores "
        f"({facts['usable_cores']} usable), {facts['ram_gib']} GiB RAM, "
        f"Python {facts['python']}, {facts['platform']}\n"
        f"- Libraries: {v}; Sleuth source at commit `{facts.get('git')}`\n"
        f"- Date (UTC): {facts['date_utc']}; load average at start "
        f"{', '.join(f'{x:.2f}' for x in facts.get('loadavg_start', ()))}"
    )


def pct(values: Sequence[float], q: float) -> float:
    """Percentile with linear interpolation (numpy's default), q in [0, 100]."""
    if not values:
        return float("nan")
    s = sorted(values)
    if len(s) == 1:
        return s[0]
    pos = (len(s) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summary_ms(seconds: Sequence[float]) -> dict[str, float]:
    ms = [s * 1000 for s in seconds]
    return {
        "n": len(ms),
        "p50_ms": round(pct(ms, 50), 3),
        "p95_ms": round(pct(ms, 95), 3),
        "mean_ms": round(statistics.fmean(ms), 3) if ms else float("nan"),
        "min_ms": round(min(ms), 3) if ms else float("nan"),
        "max_ms": round(max(ms), 3) if ms else float("nan"),
    }


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


def write_json(path: str | Path, data: dict[str, Any]) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    return p


def command_line() -> str:
    return "python " + " ".join([os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:])


class Timer:
    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start


def log(msg: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
