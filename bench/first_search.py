"""What the default agent's first search shows a small model: on each set, the share of
questions whose answer is in the text ``hybrid_search`` returns for the question itself
(the call the default agent makes first), how much text that is, and what the call costs.

No model is involved. Each question goes to the ``hybrid_search`` tool as the agent sends
it (the whole question, 5 chunks); a long chunk is shown by a few runs of its sentences
(``tools.corpus._passages``). Checked three ways, each where it applies:

- ``shown``: the gold answer or an alias inside the tool's text (normalised as Contain-Acc
  normalises; short-answer sets: the PostgreSQL manual, 2Wiki);
- ``evidence words``: the share of the content words of the set's evidence text that the
  tool's text holds (GraphRAG-Bench's ``evidence_text``, FinanceBench's ``evidence_texts``);
- ``ceiling``: the same with each of the 5 chunks whole, what the ranking alone allows.

Also timed: the whole call (p50/p95) and, within it, picking what the long chunks show
(``picking``: the sentence weights and each long chunk's runs).

    python bench/first_search.py --set pgdocs --set medical     # the default
    python bench/first_search.py --set med=/path/to/index:questions.json

A set is a dev set's name (its questions, over its dev index: ``_common.dev_index``, built
on first use and cached) or ``NAME=INDEX:QUESTIONS``.

Writes ``bench/out/first_search.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import OUT_DIR, add_data_option, command_line, dev_set, machine_facts, pct, write_json

from sleuth.eval.metrics import contain_match, normalize_answer
from sleuth.index.write import Index
from sleuth.text.querytext import content_words
from sleuth.tools import TOOLS, ToolContext
from sleuth.tools.corpus import LEAD_CHARS, _passages, sentence_weights
from sleuth.tools.tracker import Tracker


def _words(text: str) -> set[str]:
    return set(content_words(normalize_answer(text)))


def _evidence(question: dict[str, Any]) -> str:
    texts = question.get("evidence_texts") or [question.get("evidence_text") or ""]
    return " ".join(t for t in texts if t)


def run_set(index: Index, questions: list[dict[str, Any]]) -> dict[str, Any]:
    tool = TOOLS["hybrid_search"]
    shown = ceiling = evidence = evidence_ceiling = chars = 0.0
    n_evidence = 0
    seconds: list[float] = []
    picking: list[float] = []  # the part of a call that picks what a long chunk shows
    for q in questions:
        golds = [q["answer"], *q.get("answer_aliases", [])]
        started = time.perf_counter()
        result = tool.run(ToolContext(index, Tracker()), {"query": q["question"], "top_k": 5})
        seconds.append(time.perf_counter() - started)
        ids = [h["chunk_id"] for h in result.data["hits"]]
        chunks = index.read(ids).chunks
        started = time.perf_counter()
        weights = sentence_weights(chunks)
        for chunk in chunks:
            if len(chunk.text) > LEAD_CHARS:
                _passages(chunk, q["question"], LEAD_CHARS, weights)
        picking.append(time.perf_counter() - started)
        whole = " ".join(c.text for c in chunks)
        body = result.text.partition("\n")[2]  # the first line repeats the question
        text = re.sub(r"^=== chunk .*$|^\[\.\.\. \d+ more tokens.*$", "", body,
                      flags=re.MULTILINE)
        chars += len(text)
        shown += contain_match(text, golds)
        ceiling += contain_match(whole, golds)
        wanted = _words(_evidence(q))
        if wanted:
            n_evidence += 1
            evidence += len(wanted & _words(text)) / len(wanted)
            evidence_ceiling += len(wanted & _words(whole)) / len(wanted)
    n = len(questions)
    return {
        "questions": n, "shown": round(100 * shown / n, 1),
        "ceiling": round(100 * ceiling / n, 1),
        "evidence_words": round(100 * evidence / n_evidence, 1) if n_evidence else None,
        "evidence_ceiling": round(100 * evidence_ceiling / n_evidence, 1) if n_evidence else None,
        "chars_shown": round(chars / n), "p50_ms": round(1000 * pct(seconds, 50), 1),
        "p95_ms": round(1000 * pct(seconds, 95), 1),
        "picking_p50_ms": round(1000 * pct(picking, 50), 2),
        "picking_p95_ms": round(1000 * pct(picking, 95), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=None, metavar="SET",
                        help="a dev set (pgdocs, 2wiki, medical, ...) or NAME=INDEX:QUESTIONS "
                        "(repeatable) [pgdocs, medical]")
    parser.add_argument("--limit", type=int, default=0, help="first N answerable questions")
    add_data_option(parser)
    args = parser.parse_args()
    out: dict[str, Any] = {"command": command_line(), "machine": machine_facts(), "sets": {}}
    for spec in args.set or ("pgdocs", "medical"):
        name, where, path = dev_set(spec, args.data)
        questions = [q for q in json.loads(Path(path).read_text())
                     if q.get("answerable") is not False]
        if args.limit:
            questions = questions[:args.limit]
        with Index.open(where) as index:
            out["sets"][name] = row = run_set(index, questions)
        print(f"{name}: {json.dumps(row)}", flush=True)
    write_json(OUT_DIR / "first_search.json", out)


if __name__ == "__main__":
    main()
