"""Which questions the default agent reads as a request to write something (BENCHMARKS §41):
on every dev set, by question type, how many ``sleuth.writing.writing_task`` finds (such a
request gets the ``compose`` prompt; every other question's request is unchanged), and what
reading a question costs, quiet and beside busy processes, on the dev questions and on
hostile ones (long runs of commas, clauses and hyphens, up to 100,000 characters).

No index and no model: the question reading alone.

    python bench/writing_tasks.py --busy 0,1,2

Writes ``bench/out/writing_tasks.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    OUT_DIR,
    add_data_option,
    command_line,
    data_root,
    machine_facts,
    pct,
    write_json,
)
from contention import spin

from sleuth.writing import writing_task

SETS = Path(__file__).resolve().parent / "sets"
HOSTILE = ("a, ", "As a x ", "You are a b-", ", ", "Construct a ", "tasked with ", "Write ")


def dev_sets(data: Path) -> dict[str, Path]:
    return {"graphrag_bench_medical": data / "graphrag_bench_medical" / "questions.json",
            "graphrag_bench_novel": data / "graphrag_bench_novel" / "questions.json",
            "financebench": data / "financebench" / "questions.json",
            "2wiki": data / "2wikimultihopqa" / "questions.json",
            "2wiki as people type it": SETS / "2wiki-natural" / "questions.json",
            "pgdocs": SETS / "pgdocs" / "questions.json",
            "javadoc": SETS / "javadoc" / "questions.json"}


def timed(questions: list[str], repeats: int = 3) -> dict[str, float]:
    """Milliseconds per question (the best of ``repeats`` each): p50, p95, max."""
    seconds = []
    for question in questions:
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            writing_task(question)
            best = min(best, time.perf_counter() - started)
        seconds.append(best)
    return {"p50": round(1000 * pct(seconds, 50), 4), "p95": round(1000 * pct(seconds, 95), 4),
            "max": round(1000 * max(seconds), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_option(parser)
    parser.add_argument("--busy", default="0", help="busy processes beside it, e.g. 0,1,2")
    args = parser.parse_args()
    counts: dict[str, dict[str, list[int]]] = {}
    everything: list[str] = []
    for name, path in dev_sets(data_root(args.data)).items():
        found: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for record in json.loads(path.read_text()):
            kind = record.get("type") or "all"
            total[kind] += 1
            found[kind] += writing_task(record["question"])
            everything.append(record["question"])
        counts[name] = {kind: [found[kind], total[kind]] for kind in total}
        print(f"{name}: " + ", ".join(f"{kind} {found[kind]} of {total[kind]}"
                                      for kind in total))
    hostile = [(pattern * (size // len(pattern) + 1))[:size]
               for size in (2_000, 100_000) for pattern in HOSTILE]
    costs: dict[str, dict[str, Any]] = {}
    for busy in [int(b) for b in args.busy.split(",")]:
        hogs = spin(busy)
        try:
            time.sleep(0.5 if busy else 0)
            costs[str(busy)] = {"dev": timed(everything), "hostile": timed(hostile, 1)}
        finally:
            for hog in hogs:
                hog.kill()
        print(f"busy {busy}: dev questions {costs[str(busy)]['dev']} ms; hostile "
              f"{costs[str(busy)]['hostile']} ms")
    path = write_json(OUT_DIR / "writing_tasks.json", {
        "command": command_line(), "machine": machine_facts(), "counts": counts,
        "questions": len(everything), "ms": costs})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
