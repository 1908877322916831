"""Answer accuracy of Sleuth's agents with the bundled local model (issue 22).

Fixed dev subsets (``bench/answer_subsets.json``: evenly spaced through each question
file, so every question type is in): 2WikiMultiHopQA 100 questions, FinanceBench 30 (with
their PDFs' pages), GraphRAG-Bench novel 30 and medical 30, and on request 100 of each
(``novel100``, ``medical100``). On request (``--datasets``), the
question sets of ``bench/sets`` whole: ``2wiki-natural`` (160 2Wiki questions typed the way
people type) and ``2wiki-written`` (the same 160 as 2Wiki wrote them, paired by id) over the
2Wiki corpus, and ``pgdocs`` (117 questions over the PostgreSQL 15 HTML manual, 14 of them
unanswerable). Each dataset's index is its dev index (``_common.dev_index``: built with
``sleuth index`` on first use, and the knowledge graph for 2Wiki and GraphRAG-Bench, then
cached in ``~/.cache/sleuth/bench``) unless ``--index NAME=PATH`` names another. Each
dataset's agents run as ordinary ``sleuth eval run`` jobs into
``bench/out/answers/<dataset>/<agent>/``:

- resumable: a finished question is on disk at once and is skipped when the bench runs
  again (kill it at any moment and start the same command);
- LLM replies are cached by request (``~/.cache/sleuth/llm-replies.sqlite``), so a re-run of
  an unchanged configuration, or a re-score, costs no LLM time;
- scored with ``sleuth eval score``: EM, F1, Contain-Acc (A-RAG's substring test over the
  answered questions), retrieved evidence Recall@5 and read recall, steps and LLM calls per
  question, prompt tokens the server processed (its prompt cache left out), answer length
  in characters (Contain-Acc rewards verbosity) and seconds per question; the share of
  unanswerable questions the agent abstains on (scored apart: the accuracy columns are over
  the answerable ones) and the share of cited answers whose cited chunks hold the gold
  answer. GraphRAG-Bench
  answers are long: LLM-Acc is added there, judged by the same local model with A-RAG's
  judge prompt and labelled so (``--judge-all`` judges every dataset).

The A-RAG authors' own code (``bench/arag_baseline.py``) runs on 2Wiki against the same
llama.cpp server when ``--arag`` is given.

    python bench/answers.py                                  # everything (hours on 2 cores)
    python bench/answers.py --datasets 2wiki --agents naive-rag,hybrid
    python bench/answers.py --datasets 2wiki --index 2wiki=/path/to/index --model 0.5b
    python bench/answers.py --datasets pgdocs --limit 2

Writes ``bench/out/answers/summary.md`` and ``summary.json`` (machine facts, commands, the
table the README quotes).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import OUT_DIR, add_data_option, data_root, dev_index, machine_facts

BENCH = Path(__file__).resolve().parent
SUBSETS = BENCH / "answer_subsets.json"
OUT = OUT_DIR / "answers"


@dataclass(frozen=True)
class Spec:
    """One dataset of the bench: its agents, its index settings, how it is judged."""

    agents: tuple[str, ...]
    dev: str  # the dev corpus (``_common.DEV_CORPORA``) its index is built from
    embed: str | None = None  # the embedder its index is built with (None: the corpus's)
    graph: bool = True  # build the knowledge graph, so `hybrid` ranks with it
    judge: bool = False  # LLM-Acc with the local model as judge (long answers)
    level_docs: bool = False  # report document Recall@1 (FinanceBench)
    # a whole question file (relative to bench/) instead of a subset of answer_subsets.json
    questions: str | None = None
    folder: str | None = None  # its data folder under --data (None: the question file's own)


SPECS = {
    "2wiki": Spec(("naive-rag", "hybrid", "full"), "2wiki"),
    "2wiki-natural": Spec(("naive-rag", "hybrid", "full"), "2wiki",
                          questions="sets/2wiki-natural/questions.json",
                          folder="2wikimultihopqa"),
    "2wiki-written": Spec(("naive-rag", "hybrid", "full"), "2wiki",
                          questions="sets/2wiki-natural/written.json", folder="2wikimultihopqa"),
    "pgdocs": Spec(("naive-rag", "hybrid"), "pgdocs", graph=False,
                   questions="sets/pgdocs/questions.json"),
    # 10k long pages: the model2vec embedder indexes them in minutes (BENCHMARKS §8)
    "financebench": Spec(("naive-rag", "hybrid", "docs", "agenticrag"), "financebench",
                         embed="model2vec", graph=False, level_docs=True),
    "novel": Spec(("naive-rag", "hybrid"), "novel", judge=True),
    "medical": Spec(("naive-rag", "hybrid"), "medical", judge=True),
    # 100 questions each, evenly spaced too (issue 40 measures F1 on at least 100)
    "novel100": Spec(("naive-rag", "hybrid"), "novel", judge=True),
    "medical100": Spec(("naive-rag", "hybrid"), "medical", judge=True),
}
COLUMNS = [("contain", "Contain", 100), ("em", "EM", 100), ("f1", "F1", 100),
           ("numeric", "figure ±1%", 100), ("numeric_n", "figures n", 1),
           ("llm_acc", "LLM-Acc*", 100), ("recall@5", "R@5 retrieved", 100),
           ("read_recall", "read R", 100), ("doc_recall@1", "doc R@1", 100),
           ("steps", "steps", 1), ("llm_calls", "calls", 1),
           ("prompt_processed", "prompt tok processed", 1), ("answer_chars", "answer chars", 1),
           ("latency", "s/question", 1),
           ("abstain_unanswerable", "abstain on unanswerable", 100),
           ("cited_contains_answer", "cited passages hold answer", 100),
           ("cited_right", "of right answers", 100)]
# the datasets of a run without --datasets: those of the README's table
DEFAULT_DATASETS = ("2wiki", "financebench", "novel", "medical")


def subset(name: str, out: Path, data: Path) -> tuple[Path, Path]:
    """The dataset folder and a question file holding the subset's questions (for a spec
    with its own question file, all of that file's)."""
    spec = SPECS[name]
    path = out / "questions.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if spec.questions:
        source = BENCH / spec.questions
        path.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
        return (data / spec.folder if spec.folder else source.parent), path
    chosen = json.loads(SUBSETS.read_text())[name]
    folder = data / chosen["folder"]
    questions = {q["id"]: q for q in json.loads((folder / "questions.json").read_text())}
    path.write_text(json.dumps([questions[i] for i in chosen["ids"]], ensure_ascii=False))
    return folder, path


def settings_for(model: str, index: Path) -> Any:
    """The run's settings: the local model and the dataset's index (whose own manifest
    names its embedder)."""
    from sleuth.settings import Settings

    return Settings.load(llm={"local_model": model}, index=str(index))


def prepare(spec: Spec, index: str | None, data: Path) -> Path:
    """The dataset's index: ``index`` when given, else its dev index (built on first use,
    with its graph when the spec asks for one, and cached)."""
    if index:
        return Path(index)
    return dev_index(spec.dev, data=data, embedder=spec.embed, graph=spec.graph)


def run_dataset(name: str, agents: list[str], model: str, index: str | None,
                judge: bool, arag: bool, cap_tokens: int | None = None,
                limit: int | None = None, out_root: Path = OUT,
                cache: bool = True, data: Path | None = None) -> dict[str, Any]:
    import sleuth.eval as sleuth_eval
    from sleuth.llm.cache import default_llm_cache

    spec = SPECS[name]
    out = out_root / name
    data = data_root(data)
    folder, questions = subset(name, out, data)
    location = prepare(spec, index, data)
    settings = settings_for(model, location)
    timings = {}
    for agent in agents:
        started = time.perf_counter()
        print(f"[{name}] {agent}: answering (resumable) ...", flush=True)
        result = sleuth_eval.run(folder, [agent], output=out / agent, settings=settings,
                                 questions=questions, limit=limit, workers=1,
                                 resume=True, index=location,
                                 llm_cache=default_llm_cache() if cache else None)
        timings[agent] = {"seconds_this_call": round(time.perf_counter() - started, 1),
                          **result["runs"][0]}
        print(f"[{name}] {agent}: {timings[agent]}", flush=True)
    runs = [out / a for a in agents]
    if arag and name == "2wiki":
        from arag_baseline import run_arag  # the A-RAG authors' code, fetched

        timings["arag-code"] = run_arag(folder, questions=questions, model=model,
                                        output=out / "arag-code", cap_max_tokens=cap_tokens,
                                        limit=limit)
        runs.append(out / "arag-code" / "sleuth")
    scores = sleuth_eval.score(runs, ks=(2, 5), judge=judge or spec.judge,
                               settings=settings if judge or spec.judge else None)
    (out / "scores.json").write_text(json.dumps(scores, indent=2) + "\n")
    return {"dataset": name, "questions": str(questions), "index": str(location),
            "judge": f"local {model} model, A-RAG's judge prompt" if judge or spec.judge
            else None, "timings": timings, "scores": scores}


def table(results: list[dict[str, Any]]) -> str:
    """One Markdown table: a row per dataset and agent."""
    head = ["dataset", "agent", "n", *[c[1] for c in COLUMNS]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for result in results:
        for run in result["scores"]["runs"]:
            overall = run["overall"]
            cells = [result["dataset"], str(run["agent"] or Path(run["run"]).name),
                     f"{overall['n']:.0f}"]
            for key, _, scale in COLUMNS:
                value = overall.get(key)
                cells.append("" if value is None else
                             f"{scale * value:.1f}" if scale == 100 else f"{value:.1f}")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    # a SIGTERM exits through SystemExit, so the local model server stops with the bench
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=",".join(DEFAULT_DATASETS),
                        help=f"comma-separated, of {', '.join(SPECS)} "
                        f"[{','.join(DEFAULT_DATASETS)}]")
    parser.add_argument("--agents", default=None,
                        help="comma-separated agents for every dataset (default: each "
                        "dataset's own list)")
    parser.add_argument("--model", default="1.5b", choices=("1.5b", "0.5b"))
    parser.add_argument("--index", action="append", default=[],
                        help="NAME=PATH: use this index for a dataset (e.g. "
                        "2wiki=/path/to/index) instead of its cached dev index")
    parser.add_argument("--limit", type=int, default=None,
                        help="answer only the first N questions of each subset (a partial "
                        "run, reported as such; the rest can follow with the same command "
                        "without --limit)")
    parser.add_argument("--judge-all", action="store_true",
                        help="LLM-Acc (local judge) on every dataset, not only GraphRAG-Bench")
    parser.add_argument("--arag", action="store_true",
                        help="also run the A-RAG authors' code on 2Wiki (bench/arag_baseline.py)")
    parser.add_argument("--arag-cap-max-tokens", type=int, default=None,
                        help="lower A-RAG's max_tokens (16,384) to N on the wire (a deviation, "
                        "reported)")
    parser.add_argument("--out", type=Path, default=OUT,
                        help="where the runs and the summary go [bench/out/answers]")
    parser.add_argument("--no-llm-cache", action="store_true",
                        help="send every request to the model (comparing runtimes)")
    add_data_option(parser)
    args = parser.parse_args()
    data = data_root(args.data)
    indexes = dict(item.split("=", 1) for item in args.index)
    names = [n.strip() for n in args.datasets.split(",") if n.strip()]
    unknown = sorted(set(names) - set(SPECS))
    if unknown:
        parser.error(f"unknown datasets {unknown}; choose from {', '.join(SPECS)}")
    facts = machine_facts()
    results = []
    for name in names:
        agents = args.agents.split(",") if args.agents else list(SPECS[name].agents)
        results.append(run_dataset(name, agents, args.model, indexes.get(name),
                                   args.judge_all, args.arag, args.arag_cap_max_tokens,
                                   args.limit, args.out, not args.no_llm_cache, data))
    args.out.mkdir(parents=True, exist_ok=True)
    summary = {"machine": facts, "model": args.model,
               "command": "python bench/answers.py " + " ".join(sys.argv[1:]),
               "results": results}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    text = table(results)
    (args.out / "summary.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
