"""``compute_metric`` (the statements pack) on every question of a question file it applies
to: how many it reads, settles and settles right, and what a call costs. No model is
involved: the tool reads the question itself (its ``from_question``), as the default agent
does before its first model call, and its verdict (``data["answer"]``) is scored against
the gold with the answer benchmark's figure test (a number within 1 %).

    python bench/statements.py              # FinanceBench's dev questions, its dev index
    python bench/statements.py --applies ../shared/data/*/questions.json \
        bench/sets/*/questions.json          # where it applies at all (no index needed)
    ... --busy 1                             # beside a busy process

The index is FinanceBench's dev index (``_common.dev_index``: model2vec, built on first use
and cached) unless ``--index`` names another.

Writes ``bench/out/statements-busy<N>.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    OUT_DIR,
    add_data_option,
    command_line,
    dev_questions,
    machine_facts,
    resolve_index,
    write_json,
)
from contention import spin

from sleuth.eval.metrics import numeric_match
from sleuth.index.write import Index
from sleuth.statements.metric import metric_arguments
from sleuth.tools import TOOLS, ToolContext
from sleuth.tools.tracker import Tracker


def questions_of(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [q for q in (data.get("questions", []) if isinstance(data, dict) else data)
            if isinstance(q, dict) and "question" in q]


def applies(paths: list[Path]) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        asked = questions_of(path)
        hits, seconds = 0, []
        for q in asked:  # what the default agent pays on every question
            started = time.perf_counter()
            hits += metric_arguments(q["question"], 5) is not None
            seconds.append(time.perf_counter() - started)
        micros = sorted(1e6 * s for s in seconds)
        p50, top = (micros[len(micros) // 2], micros[-1]) if micros else (0.0, 0.0)
        rows.append({"file": str(path), "questions": len(asked), "applies": hits,
                     "us_p50": round(p50, 1), "us_max": round(top, 1)})
        print(f"{path}: {hits} of {len(asked)}; reading one: p50 {p50:.0f} us, max {top:.0f} us")
    return rows


def run(index: Index, asked: list[dict[str, Any]], show: bool) -> dict[str, Any]:
    rows = []
    for q in asked:
        arguments = metric_arguments(q["question"], 5)
        if arguments is None:
            continue
        started = time.perf_counter()
        result = TOOLS["compute_metric"].run(ToolContext(index, Tracker()), arguments)
        seconds = time.perf_counter() - started
        answer = result.data.get("answer")
        golds = [q.get("answer", "")] + list(q.get("answer_aliases") or [])
        right = None if answer is None else bool(numeric_match(str(answer), golds))
        rows.append({"id": q.get("id"), "subject": arguments["subject"], "answer": answer,
                     "gold": golds[0], "right": right, "seconds": round(seconds, 3)})
        print(f"{q.get('id')}: {arguments['subject']!r} -> {answer} (gold {golds[0]}) "
              f"{'' if right is None else 'right' if right else 'WRONG'} {seconds:.2f} s")
        if show and not right:
            print(result.text)
    settled = [r for r in rows if r["answer"] is not None]
    times = sorted(r["seconds"] for r in rows)
    summary = {"applies": len(rows), "settled": len(settled),
               "seconds_p50": times[len(times) // 2] if times else 0.0,
               "right": sum(bool(r["right"]) for r in settled),
               "wrong": sum(not r["right"] for r in settled),
               "left_to_the_model": len(rows) - len(settled),
               "seconds_max": max((r["seconds"] for r in rows), default=0.0)}
    print(json.dumps(summary))
    return {"summary": summary, "questions": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", help="the index the questions are asked of "
                        "[FinanceBench's dev index]")
    parser.add_argument("--questions", type=Path,
                        help="a questions.json [FinanceBench's dev questions]")
    parser.add_argument("--applies", type=Path, nargs="*", default=[],
                        help="question files to count the questions it applies to")
    parser.add_argument("--busy", type=int, default=0,
                        help="busy processes (a spinning core each) beside the run")
    parser.add_argument("--show", action="store_true", help="print what the tool read where "
                        "it did not settle right")
    add_data_option(parser)
    args = parser.parse_args()
    asks = not args.applies or args.index or args.questions
    if asks:
        args.index = resolve_index(args.index, "financebench", args.data)
        args.questions = args.questions or dev_questions("financebench", args.data)
    out: dict[str, Any] = {"command": command_line(), "machine": machine_facts(),
                           "busy": args.busy}
    busy = spin(args.busy)
    try:
        if args.applies:
            out["applies"] = applies(args.applies)
        if asks:
            with Index.open(args.index) as index:
                out["run"] = run(index, questions_of(args.questions), args.show)
    finally:
        for process in busy:
            process.kill()
    print(write_json(OUT_DIR / f"statements-busy{args.busy}.json", out))


if __name__ == "__main__":
    main()
