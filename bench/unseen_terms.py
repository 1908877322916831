"""Where the default agent says a term of the question is missing from the corpus: on each
set, how many answerable and how many unanswerable questions get "the corpus never
mentions ..." beside the first passages (``agent.checks.unfounded.unseen_terms``: an
identifier the corpus never holds, or a name capitalised mid-sentence that it never holds
and the first passages do not spell nearly). Such a question's answer is withheld unless it names
something else the corpus holds, so every answerable question it fires on is a likely
loss: the count is the rule's false alarms.

No model is involved; the first passages are ``hybrid_search``'s for the question, as the
agent's first call gets them.

    python bench/unseen_terms.py --set pgdocs --set 2wiki      # the default
    python bench/unseen_terms.py --set javadoc

A set is a dev set's name (its questions, over its dev index: ``_common.dev_index``, built
on first use and cached) or ``NAME=INDEX:QUESTIONS``.

Writes ``bench/out/unseen_terms.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import OUT_DIR, add_data_option, command_line, dev_set, machine_facts, write_json

from sleuth.agent.checks.unfounded import unseen_terms
from sleuth.index.write import Index
from sleuth.tools import TOOLS, ToolContext
from sleuth.tools.tracker import Tracker


def run_set(index: Index, questions: list[dict[str, Any]]) -> dict[str, Any]:
    counts = {"answerable": 0, "unanswerable": 0, "fired_answerable": 0,
              "fired_unanswerable": 0}
    fired: list[dict[str, Any]] = []
    for q in questions:
        kind = "unanswerable" if q.get("answerable") is False else "answerable"
        counts[kind] += 1
        result = TOOLS["hybrid_search"].run(ToolContext(index, Tracker()),
                                            {"query": q["question"], "top_k": 5})
        evidence = " ".join(c.text for c in index.read(result.chunk_ids).chunks)
        terms = unseen_terms(index, q["question"], evidence)
        if terms:
            counts[f"fired_{kind}"] += 1
            fired.append({"id": q.get("id"), "kind": kind, "terms": terms,
                          "question": q["question"]})
    return {**counts, "fired": fired}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=None, metavar="SET",
                        help="a dev set (pgdocs, 2wiki, medical, ...) or NAME=INDEX:QUESTIONS "
                        "(repeatable) [pgdocs, 2wiki]")
    add_data_option(parser)
    args = parser.parse_args()
    out: dict[str, Any] = {"command": command_line(), "machine": machine_facts(), "sets": {}}
    for spec in args.set or ("pgdocs", "2wiki"):
        name, where, path = dev_set(spec, args.data)
        questions = json.loads(Path(path).read_text())
        with Index.open(where) as index:
            out["sets"][name] = row = run_set(index, questions)
        print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in row.items() if k != "fired"))
        for f in row["fired"]:
            print(f"    [{f['kind']}] {f['terms']} {f['question'][:90]}")
    write_json(OUT_DIR / "unseen_terms.json", out)


if __name__ == "__main__":
    main()
