"""Verdicts without a model: how many questions the default agent answers from a page-fact
tool's verdict alone (``compare_dates``, ``person_fact``: no model call), and how many of
those are wrong, on three sets.

- ``2wiki``: the 570 2WikiMultihopQA dev questions over the whole 2Wiki corpus;
- ``natural``: the 160 of ``bench/sets/2wiki-natural`` typed the way people type, same index;
- ``stress``: ``bench/sets/facts-stress`` (pages in other styles than an encyclopedia's:
  obituaries, plaques, CVs, family blogs, record tables, and entries whose first "born" is a
  relative's), its pages indexed beside the whole 2Wiki corpus;
- ``stress-manual``: the same questions, their pages indexed beside Git's manual
  (``dev_index("gitdocs", embedder="model2vec")``), where entity pages are a few among
  hundreds of others: the pack applies per document, so their share changes nothing;
- ``fresh``: ``bench/sets/facts-fresh``, pages in still other styles (a museum label, a
  wedding announcement, an interview, a passenger manifest, a gravestone, a family Bible,
  an "on this day" list, an infobox, a letter, a house history, a parish register) and
  entries with namesakes, step- and adoptive parents, two wives, circa dates, then pages
  imitating a 2Wiki dump about people, works and organisations, and pages that are no
  entries: eighteen batches, each written by someone who had not seen the rules and run
  once as they stood (its README), indexed beside 2Wiki as ``stress`` is.

Each question goes through the real default agent (``sleuth.ask``, agent ``hybrid``) with
a model that raises if called: a question the agent answers is one a tool settled; one that
reaches the model is counted as left to it. A verdict is right when the gold answer (or an
alias) equals or is contained in it (the answer benchmark's exact match and Contain-Acc);
a stress question whose gold is null (the pages do not state it) is wrong whatever the
verdict says.

    python bench/verdicts.py --index /tmp/wiki-idx                    # all four sets
    python bench/verdicts.py --index /tmp/wiki-idx --sets stress --show wrong

Without ``--index`` the 2Wiki index is ``dev_index("2wiki")`` (built on first use, cached).
The mixed indexes (2Wiki, or Git's manual, and the stress pages) are copies of those indexes
with the pages added, kept in ``--work`` (default ``bench_cache()/verdicts``) and rebuilt
when either changes. Writes
``bench/out/verdicts.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    OUT_DIR,
    REPO,
    add_data_option,
    bench_cache,
    command_line,
    data_root,
    dev_index,
    machine_facts,
    wiki_questions,
    write_json,
)

import sleuth
from sleuth.eval.metrics import contain_match, exact_match
from sleuth.index.write import Index
from sleuth.llm import ChatResponse
from sleuth.text.ids import strip_citations

STRESS = REPO / "bench" / "sets" / "facts-stress"
FRESH = REPO / "bench" / "sets" / "facts-fresh"
# a set of pages of its own: its folder (pages.json, questions.json) and the corpus beside
# which it is indexed
PAGE_SETS = {"stress": (STRESS, "2wiki"), "stress-manual": (STRESS, "gitdocs"),
             "fresh": (FRESH, "2wiki")}
NATURAL = REPO / "bench" / "sets" / "2wiki-natural" / "questions.json"
SETS = ("2wiki", "natural", *PAGE_SETS)


class ModelCalled(Exception):
    """The agent asked the model: the question was not settled by a verdict."""


class NoModel:
    """An LLM that raises if called: only what a tool settles is answered."""

    model = "no-model"

    def chat(self, *args: Any, **kwargs: Any) -> ChatResponse:
        raise ModelCalled


def scored(answer: str, gold: str | None, aliases: list[str]) -> str:
    """"right" or "wrong" for a verdict against the gold and its aliases."""
    if gold is None:
        return "wrong"
    golds = [gold, *aliases]
    return "right" if exact_match(answer, golds) or contain_match(answer, golds) else "wrong"


def run_set(index: Index, questions: list[dict[str, Any]]) -> dict[str, Any]:
    """Each question through the default agent with :class:`NoModel`."""
    counts: Counter[str] = Counter()
    rows = []
    started = time.perf_counter()
    for q in questions:
        try:
            answer = sleuth.ask(q["question"], index=index, llm=NoModel())
        except ModelCalled:
            counts["model"] += 1
            continue
        said = strip_citations(answer.answer).strip()
        verdict = scored(said, q.get("answer"), q.get("answer_aliases", []))
        counts["verdicts"] += 1
        counts[verdict] += 1
        rows.append({"id": q["id"], "question": q["question"], "gold": q.get("answer"),
                     "verdict": said, "score": verdict, "type": q.get("type") or q.get("trap"),
                     "tools": [s.tool_name for s in answer.trajectory]})
    total = counts["verdicts"]
    return {"questions": len(questions), "verdicts": total, "right": counts["right"],
            "wrong": counts["wrong"], "to_model": counts["model"],
            "wrong_pct": round(100 * counts["wrong"] / total, 2) if total else 0.0,
            "seconds": round(time.perf_counter() - started, 1), "answers": rows}


def _fingerprint(*paths: Path) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes() if path.is_file() else
                      (path / "manifest.json").read_bytes())
    return digest.hexdigest()[:16]


def mixed_index(base: Path, work: Path, name: str = "mixed", pages_of: Path = STRESS
                ) -> Path:
    """A copy of the ``base`` index with the pages of ``pages_of`` added, rebuilt when
    either changed."""
    wiki = base
    pages = pages_of / "pages.json"
    folder = work / name
    stamp = work / f"{name}.key"
    key = _fingerprint(pages, wiki)
    if folder.is_dir() and stamp.is_file() and stamp.read_text() == key:
        return folder
    if folder.exists():
        shutil.rmtree(folder)
    work.mkdir(parents=True, exist_ok=True)
    print(f"mixed index: copying {wiki} to {folder} and adding {pages}", file=sys.stderr)
    shutil.copytree(wiki, folder, ignore=shutil.ignore_patterns("locks"))
    sleuth.index_paths([pages], index=folder)
    stamp.write_text(key)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, help="a 2Wiki index (the whole corpus) "
                        "[dev_index('2wiki')]")
    parser.add_argument("--sets", default=",".join(SETS), help=f"of {', '.join(SETS)}")
    parser.add_argument("--work", type=Path, default=None,
                        help="where the mixed index is kept [bench_cache()/verdicts]")
    parser.add_argument("--show", choices=("wrong", "all"), help="print the verdicts")
    parser.add_argument("--out", type=Path, default=OUT_DIR / "verdicts.json")
    add_data_option(parser)
    args = parser.parse_args()
    chosen = [s for s in args.sets.split(",") if s]
    unknown = set(chosen) - set(SETS)
    if unknown:
        parser.error(f"unknown sets {', '.join(sorted(unknown))}; choose from {', '.join(SETS)}")
    if args.index is None:
        args.index = dev_index("2wiki", data=args.data)
    results: dict[str, Any] = {}
    for name in chosen:
        if name in PAGE_SETS:
            folder, corpus = PAGE_SETS[name]
            base = args.index if corpus == "2wiki" else \
                dev_index(corpus, data=args.data, embedder="model2vec")
            work = args.work or bench_cache() / "verdicts"
            path = mixed_index(base, work, {"stress": "mixed", "stress-manual": "manual"}.get(
                name, name), folder)
            questions = json.loads((folder / "questions.json").read_text())
        else:
            path = args.index
            source = wiki_questions(data_root(args.data)) if name == "2wiki" else NATURAL
            questions = json.loads(source.read_text())
        with Index.open(path) as index:
            result = run_set(index, questions)
        results[name] = result
        print(f"{name}: {result['questions']} questions, {result['verdicts']} verdicts, "
              f"{result['wrong']} wrong ({result['wrong_pct']} %), {result['to_model']} left "
              f"to the model, {result['seconds']} s")
        for row in result["answers"]:
            if args.show == "all" or (args.show == "wrong" and row["score"] == "wrong"):
                print(f"  [{row['score']}] {row['id']} {row['question']} | gold "
                      f"{row['gold']!r} | verdict {row['verdict']!r}")
    path = write_json(args.out, {"command": command_line(), "machine": machine_facts(),
                                 "index": str(args.index), "results": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
