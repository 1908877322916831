"""One very large document: peak memory, time, and what a kill -9 halfway loses.

Writes one plain-text file of ``--mb`` megabytes (2Wiki passages, numbered so none repeats),
then with the ``model2vec`` embedder, each in its own process:

1. ``sleuth index FILE`` into a fresh index: wall time and the process's peak RSS (which
   counts the memory-mapped vector files a compaction reads), and in another process the
   peak Python heap of the same ``Index.add`` (tracemalloc, numpy arrays included);
2. the same into another fresh index, killed with SIGKILL after ``--kill-at`` of the first
   run's time, then the same command again: how many chunks the killed run had committed,
   and the resumed run's time and peak RSS; the resumed index is checked (``sleuth check``)
   and compared with the first (chunk ids and texts).

``--src DIR`` runs another checkout's ``src`` (e.g. the commit before a change, from
``git worktree add``) so both are measured in one run.

Run: python bench/long_document.py --mb 20 [--src /tmp/sleuth-old/src] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import add_data_option, command_line, data_root, log, machine_facts, wiki_corpus


def write_document(path: Path, megabytes: float, corpus: Path) -> int:
    """A text file of about ``megabytes`` MB: numbered passages of ``corpus`` (2Wiki's), a
    title first."""
    passages = json.loads(corpus.read_text())
    parts, size, n = ["A very long report\n"], 0, 0
    while size < megabytes * 1e6:
        record = passages[n % len(passages)]
        text = f"Section {n}. {record['title']}. {record['text']}\n"
        parts.append(text)
        size += len(text.encode())
        n += 1
    path.write_text("".join(parts))
    return n


def run(args: list[str], env: dict[str, str], kill_after: float | None = None
        ) -> dict[str, Any]:
    """A command in its own process: exit status, wall seconds, peak RSS (MiB)."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed = False
    if kill_after is not None:
        try:
            proc.wait(kill_after)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            killed = True
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"rc": proc.returncode, "killed": killed,
            "seconds": round(time.perf_counter() - start, 1),
            "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
            "stderr_tail": (proc.stderr.read() if proc.stderr else b"").decode()[-300:]}


TRACED = """
import shutil, sys, tracemalloc
from sleuth import Index, Settings
shutil.rmtree(sys.argv[2], ignore_errors=True)
settings = Settings.load(embed={"model": "model2vec"})
with Index.open(sys.argv[2], settings=settings, create=True) as index:
    index.embedder
    tracemalloc.start()
    index.add([sys.argv[1]])
    print(round(tracemalloc.get_traced_memory()[1] / 2**20, 1))
"""


def traced_peak(source: Path, folder: Path, env: dict[str, str]) -> float:
    """Peak Python heap (tracemalloc; numpy arrays included) of ``Index.add`` in-process,
    the embedder already loaded: what the document costs, without mapped files."""
    done = subprocess.run([sys.executable, "-c", TRACED, str(source), str(folder)], env=env,
                          capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def chunks(folder: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(folder / "sleuth.db") as db:
        return db.execute("SELECT chunk_id, text FROM chunks ORDER BY doc_id, position"
                          ).fetchall()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--kill-at", type=float, default=0.5, help="share of the first run's time")
    ap.add_argument("--src", type=Path, default=None, help="another checkout's src to run")
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench-long-document"))
    ap.add_argument("--json", type=Path, default=None)
    add_data_option(ap)
    args = ap.parse_args()
    corpus = wiki_corpus(data_root(args.data))
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    source = out / "long.txt"
    passages = write_document(source, args.mb, corpus)
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = str(args.src)
    sleuth = [sys.executable, "-m", "sleuth", "index", str(source), "--embedder", "model2vec"]
    for name in ("whole", "killed"):
        subprocess.run(["rm", "-rf", str(out / name)], check=True)
    log(f"{source}: {source.stat().st_size / 1e6:.1f} MB, {passages} passages")
    whole = run([*sleuth, "--index", str(out / "whole")], env)
    log(f"whole: {whole}")
    killed = run([*sleuth, "--index", str(out / "killed")], env,
                 kill_after=whole["seconds"] * args.kill_at)
    kept = len(chunks(out / "killed")) if (out / "killed" / "sleuth.db").exists() else 0
    log(f"killed: {killed}, chunks kept {kept}")
    resumed = run([*sleuth, "--index", str(out / "killed")], env)
    log(f"resumed: {resumed}")
    same = chunks(out / "killed") == chunks(out / "whole")
    check = subprocess.run([sys.executable, "-m", "sleuth", "check", "--index",
                            str(out / "killed")], env=env, capture_output=True, text=True)
    heap = traced_peak(source, out / "traced", env)
    log(f"traced heap peak of Index.add: {heap} MiB")
    result = {"command": command_line(), "machine": machine_facts(), "mb": args.mb,
              "traced_heap_peak_mib": heap,
              "src": str(args.src or "this checkout"), "chunks": len(chunks(out / "whole")),
              "whole": whole, "killed": killed, "chunks_kept_after_kill": kept,
              "resumed": resumed, "resumed_equals_whole": same,
              "check": check.stdout.strip() or check.stderr.strip()}
    log(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
