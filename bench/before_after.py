"""Query latency of two source trees of Sleuth in the same run (issue 39: a refactor must
leave performance unchanged within noise).

Each tree (a ``src`` folder, put first on ``PYTHONPATH`` of a fresh process) opens the same
index read-only and answers the same queries in-process: ``keyword_search`` with each
question's keywords and ``semantic_search`` with the question, top 5, after one warm-up
pass; the p50 and p95 of each, quiet and with one other process spinning a core. The trees
alternate (A, B, A, B), so drift on the machine falls on both.

    git worktree add /tmp/before <commit>
    python bench/before_after.py --before /tmp/before/src --after src

The index is the 2Wiki dev index (``dev_index("2wiki")``, built on first use and cached)
unless ``--index`` names another; the questions are 2Wiki's dev questions.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    OUT_DIR,
    add_data_option,
    data_root,
    machine_facts,
    md_table,
    resolve_index,
    wiki_questions,
    write_json,
)

PROBE = r"""
import json, statistics, sys, time
try:
    from sleuth.text.querytext import question_keywords
except ImportError:
    from sleuth.querytext import question_keywords
from sleuth import Index
index_path, questions = sys.argv[1], json.loads(sys.stdin.read())
out = {}
with Index.open(index_path) as index:
    for name, call in (("keyword", lambda q: index.keyword_search(question_keywords(q), top_k=5)),
                       ("semantic", lambda q: index.semantic_search(q, top_k=5))):
        for q in questions:  # warm-up
            call(q)
        took = []
        for q in questions:
            started = time.perf_counter()
            call(q)
            took.append(1000 * (time.perf_counter() - started))
        took.sort()
        out[name] = {"p50_ms": statistics.median(took),
                     "p95_ms": took[int(0.95 * (len(took) - 1))]}
print(json.dumps(out))
"""


def probe(src: Path, index: str, questions: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src.resolve())}
    done = subprocess.run([sys.executable, "-c", PROBE, index], input=json.dumps(questions),
                          capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", default=None,
                        help="index folder or dev corpus name [the 2Wiki dev index]")
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    add_data_option(parser)
    args = parser.parse_args()
    args.index = str(resolve_index(args.index, "2wiki", args.data))
    questions = [q["question"] for q in json.loads(wiki_questions(data_root(args.data))
                                                   .read_text())]
    questions = questions[: args.questions]
    result: dict[str, Any] = {"machine": machine_facts(), "index": args.index,
                              "questions": len(questions), "runs": []}
    rows = []
    for busy in (0, 1):
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    for _ in range(busy)]
        try:
            seen: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
            for _ in range(args.rounds):
                for label, src in (("before", args.before), ("after", args.after)):
                    seen[label].append(probe(src, args.index, questions))
        finally:
            for spinner in spinners:
                spinner.kill()
        for label, runs in seen.items():
            result["runs"].append({"busy": busy, "tree": label, "runs": runs})
        for kind in ("keyword", "semantic"):
            before = min(r[kind]["p50_ms"] for r in seen["before"])
            after = min(r[kind]["p50_ms"] for r in seen["after"])
            rows.append([str(busy), kind, f"{before:.2f}", f"{after:.2f}",
                         f"{after / before:.2f}",
                         f"{min(r[kind]['p95_ms'] for r in seen['before']):.2f}",
                         f"{min(r[kind]['p95_ms'] for r in seen['after']):.2f}"])
    table = md_table(["busy", "query", "before p50 ms", "after p50 ms", "after/before",
                      "before p95 ms", "after p95 ms"], rows)
    result["table"] = table
    print(table)
    write_json(OUT_DIR / "before-after.json", result)


if __name__ == "__main__":
    main()
