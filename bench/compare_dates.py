"""``compare_dates`` on every 2Wiki dev question that compares dates: how many it parses,
settles and settles right, and what a call costs, quiet and beside busy processes.

No model is involved: the question is read by :func:`sleuth.dates.comparison`, the call is
the one the default agent makes before its first model call, and its verdict (the tool's
``data["answer"]``) is checked against the gold answer and its aliases.

    python bench/compare_dates.py --index /tmp/wiki-idx            # all 570 dev questions
    python bench/compare_dates.py --index /tmp/wiki-idx --busy 0,1,2

Writes ``bench/out/compare_dates.json``.
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

from _common import OUT_DIR, QUESTIONS_2WIKI, command_line, machine_facts, pct, write_json
from contention import spin

from sleuth.index import Index
from sleuth.tools import TOOLS, ToolContext
from sleuth.tracker import Tracker


def run(index: Index, questions: list[dict[str, Any]]) -> dict[str, Any]:
    tool = TOOLS["compare_dates"]
    counts: Counter[str] = Counter()
    by_type: dict[str, Counter[str]] = {}
    seconds, wrong = [], []
    for q in questions:
        kind = by_type.setdefault(q.get("type", "?"), Counter())
        kind["questions"] += 1
        arguments = tool.question_arguments(q["question"], 5)
        if arguments is None:
            continue
        started = time.perf_counter()
        answer = tool.run(ToolContext(index, Tracker()), arguments).data["answer"]
        seconds.append(time.perf_counter() - started)
        golds = {g.lower() for g in [q["answer"], *q.get("answer_aliases", [])]}
        verdict = "unsettled" if answer is None else \
            "right" if answer.lower() in golds else "wrong"
        for c in (counts, kind):
            c["parsed"] += 1
            c[verdict] += 1
        if verdict == "wrong":
            wrong.append({"question": q["question"], "gold": q["answer"], "answer": answer})
    return {"counts": dict(counts), "by_type": {k: dict(v) for k, v in by_type.items()},
            "ms": {"p50": round(1000 * pct(seconds, 50), 2),
                   "p95": round(1000 * pct(seconds, 95), 2)} if seconds else {},
            "wrong": wrong}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", required=True, help="a 2Wiki index (the whole corpus)")
    parser.add_argument("--questions", default=str(QUESTIONS_2WIKI))
    parser.add_argument("--busy", default="0", help="busy processes beside it, e.g. 0,1,2")
    args = parser.parse_args()
    questions = json.loads(Path(args.questions).read_text())
    index = Index.open(args.index)
    results = {}
    for busy in [int(b) for b in args.busy.split(",")]:
        hogs = spin(busy)
        try:
            results[str(busy)] = run(index, questions)
        finally:
            for hog in hogs:
                hog.kill()
        r = results[str(busy)]
        print(f"busy {busy}: {r['counts']} p50 {r['ms'].get('p50')} ms "
              f"p95 {r['ms'].get('p95')} ms")
    path = write_json(OUT_DIR / "compare_dates.json", {
        "command": command_line(), "machine": machine_facts(), "questions": len(questions),
        "results": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
