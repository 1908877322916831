"""The page-fact tools (``compare_dates``, ``person_fact``: every tool with a
``from_question``) on every 2Wiki dev question they apply to: how many questions each
reads, settles and settles right, and what a call costs, quiet and beside busy processes.

No model is involved: each tool reads the question itself (its ``from_question``), the
call is the one the default agent makes before its first model call, and the verdict (the
tool's ``data["answer"]``) is scored against the gold answer and its aliases with the
answer benchmark's metrics: exact match and Contain-Acc (the gold inside the verdict).

    python bench/pagefacts.py                                  # all 570 dev questions
    python bench/pagefacts.py --busy 0,1,2
    python bench/pagefacts.py --tools person_fact --show wrong

The index is the 2Wiki dev index (``_common.dev_index``, built on first use and cached)
unless ``--index`` names another.

Writes ``bench/out/pagefacts.json``.
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
    resolve_index,
    wiki_questions,
    write_json,
)
from contention import spin

from sleuth.eval.metrics import contain_match, exact_match
from sleuth.index.write import Index
from sleuth.tools import TOOLS, Tool, ToolContext
from sleuth.tools.tracker import Tracker


def run(index: Index, tool: Tool, questions: list[dict[str, Any]]) -> dict[str, Any]:
    counts: Counter[str] = Counter()
    by_type: dict[str, Counter[str]] = {}
    seconds, missed = [], []
    for q in questions:
        kind = by_type.setdefault(q.get("type", "?"), Counter())
        kind["questions"] += 1
        arguments = tool.question_arguments(q["question"], 5)
        if arguments is None:
            continue
        started = time.perf_counter()
        answer = tool.run(ToolContext(index, Tracker()), arguments).data["answer"]
        seconds.append(time.perf_counter() - started)
        golds = [q["answer"], *q.get("answer_aliases", [])]
        verdict = "unsettled" if answer is None else \
            "exact" if exact_match(answer, golds) else \
            "contained" if contain_match(answer, golds) else "wrong"
        for c in (counts, kind):
            c["applied"] += 1
            c[verdict] += 1
        if verdict in ("wrong", "unsettled"):
            missed.append({"question": q["question"], "type": q.get("type"), "gold": q["answer"],
                           "verdict": verdict, "answer": answer, "arguments": arguments})
    return {"counts": dict(counts), "by_type": {k: dict(v) for k, v in by_type.items()},
            "ms": {"p50": round(1000 * pct(seconds, 50), 2),
                   "p95": round(1000 * pct(seconds, 95), 2)} if seconds else {},
            "missed": missed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", default=None,
                        help="a 2Wiki index (the whole corpus) [the 2Wiki dev index]")
    parser.add_argument("--questions", default=None,
                        help="question file [the data root's 2Wiki dev questions]")
    parser.add_argument("--tools", default=",".join(n for n, t in TOOLS.items()
                                                    if t.from_question is not None),
                        help="comma-separated tools with a from_question")
    parser.add_argument("--busy", default="0", help="busy processes beside it, e.g. 0,1,2")
    parser.add_argument("--show", choices=("wrong", "unsettled", "missed"),
                        help="print the questions a tool got wrong or left unsettled")
    add_data_option(parser)
    args = parser.parse_args()
    path = Path(args.questions) if args.questions else wiki_questions(data_root(args.data))
    questions = json.loads(path.read_text())
    index = Index.open(resolve_index(args.index, "2wiki", args.data))
    results: dict[str, dict[str, Any]] = {}
    for name in args.tools.split(","):
        tool = TOOLS[name]
        if tool.from_question is None:
            parser.error(f"{name} does not read questions (no from_question)")
        for busy in [int(b) for b in args.busy.split(",")]:
            hogs = spin(busy)
            try:
                result = run(index, tool, questions)
            finally:
                for hog in hogs:
                    hog.kill()
            results.setdefault(name, {})[str(busy)] = result
            print(f"{name}, busy {busy}: {result['counts']} p50 {result['ms'].get('p50')} ms "
                  f"p95 {result['ms'].get('p95')} ms")
            for miss in result["missed"] if args.show and busy == 0 else []:
                if args.show in ("missed", miss["verdict"]):
                    print(f"  [{miss['verdict']}] {miss['question']} | gold {miss['gold']!r} "
                          f"| {miss['answer']!r} | {miss['arguments']}")
    path = write_json(OUT_DIR / "pagefacts.json", {
        "command": command_line(), "machine": machine_facts(), "questions": len(questions),
        "results": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
