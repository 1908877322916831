"""What token F1 measures on a set whose gold answers are sentences (GraphRAG-Bench's): for
each run, its F1 beside three references no agent produced and its F1 on the words the
question does not already hold. No model is involved: it reads ``predictions.jsonl`` files
written by ``sleuth eval run``.

- *the question as the answer*: F1 of the question's own text against the gold. A gold
  sentence restates its question ("The Philadelphia chromosome (Ph) is the abnormal
  chromosome found in CML."), so this scores without answering anything.
- *the best short answer*: the highest F1 any run of at most ``--short`` words of the gold
  itself reaches: the ceiling of an answer as short as the agents give.
- *new-word F1*: token F1 with the question's words taken out of both the answer and the
  gold: what the answer adds, scored against what the gold adds (the question as the
  answer scores 0 on it).

    python bench/answer_form.py RUN_FOLDER [RUN_FOLDER ...] [--short 5] [--by-type]

Prints a Markdown table; writes ``bench/out/answer-form.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import OUT_DIR, command_line, write_json

from sleuth.eval.metrics import f1_score, normalize_answer


def _tokens(text: str) -> list[str]:
    return [str(t) for t in normalize_answer(text).split()]


def _f1(pred: Sequence[str], gold: Sequence[str]) -> float:
    if not pred or not gold:
        return float(list(pred) == list(gold))
    common = sum((Counter(pred) & Counter(gold)).values())
    if not common:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def best_short(gold: str, words: int) -> float:
    """The best F1 against ``gold`` of a run of at most ``words`` of its own tokens."""
    tokens = _tokens(gold)
    return max((_f1(tokens[i:j], tokens) for i in range(len(tokens))
                for j in range(i + 1, min(len(tokens), i + words) + 1)), default=0.0)


def new_word_f1(prediction: str, gold: str, question: str) -> float:
    """Token F1 of ``prediction`` against ``gold``, the words of ``question`` left out of
    both."""
    asked = set(_tokens(question))
    return _f1([t for t in _tokens(prediction) if t not in asked],
               [t for t in _tokens(gold) if t not in asked])


def score(records: Iterable[dict[str, Any]], short: int) -> dict[str, float]:
    rows = [r for r in records if r.get("answerable", True) and r.get("gold_answer")]
    if not rows:
        return {"n": 0}

    def mean(values: Iterable[float]) -> float:
        return round(100 * sum(values) / len(rows), 1)

    def golds(r: dict[str, Any]) -> list[str]:  # the gold and its aliases, as eval scores
        return [g for g in r.get("gold_answers") or [r["gold_answer"]] if g]

    return {
        "n": len(rows),
        "f1": mean(f1_score(r["pred_answer"], golds(r)) for r in rows),
        "question_f1": mean(f1_score(r["question"], golds(r)) for r in rows),
        "short_ceiling_f1": mean(max(best_short(g, short) for g in golds(r)) for r in rows),
        "new_word_f1": mean(max(new_word_f1(r["pred_answer"], g, r["question"])
                                for g in golds(r)) for r in rows),
        "answer_words": round(sum(len(_tokens(r["pred_answer"])) for r in rows) / len(rows), 1),
        "gold_words": round(sum(len(_tokens(golds(r)[0])) for r in rows) / len(rows), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="folders holding predictions.jsonl")
    parser.add_argument("--short", type=int, default=5,
                        help="the longest answer, in words, of the short-answer ceiling")
    parser.add_argument("--by-type", action="store_true", help="one row per question type too")
    args = parser.parse_args()
    results = []
    print(f"| run | type | n | F1 | the question as the answer | best {args.short}-word answer "
          "| new-word F1 | answer words | gold words |")
    print("|---|---|---|---|---|---|---|---|---|")
    for folder in args.runs:
        records = [json.loads(line) for line in
                   (folder / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
                   if line.strip()]
        groups: dict[str, list[dict[str, Any]]] = {"all": records}
        if args.by_type:
            by: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for r in records:
                by[str(r.get("question_type") or "?")].append(r)
            groups.update(sorted(by.items()))
        for kind, group in groups.items():
            s = score(group, args.short)
            results.append({"run": str(folder), "type": kind, **s})
            if s["n"]:
                print(f"| {folder.name} | {kind} | {s['n']} | {s['f1']} | {s['question_f1']} | "
                      f"{s['short_ceiling_f1']} | {s['new_word_f1']} | {s['answer_words']} | "
                      f"{s['gold_words']} |")
    write_json(OUT_DIR / "answer-form.json",
               {"command": command_line(), "short": args.short, "runs": results})


if __name__ == "__main__":
    main()
