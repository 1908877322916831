"""Shared helpers for the Sleuth benchmarks: machine facts, percentiles, output files."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "bench" / "out"
CACHE_DIR = Path("/tmp/sleuth-bench")
CORPUS_2WIKI = Path("/work/shared/data/2wikimultihopqa/corpus.json")
QUESTIONS_2WIKI = Path("/work/shared/data/2wikimultihopqa/questions.json")


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
