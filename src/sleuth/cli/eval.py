"""``sleuth eval``: each command parses its options, calls one function of
:mod:`sleuth.eval.evaluate` and prints the result (progress bars on stderr)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from sleuth.cli.console import (
    IndexBar,
    RunBar,
    common,
    emit,
    int_list,
    load_settings,
    status,
    table,
)
from sleuth.eval import evaluate
from sleuth.eval.datasets import Dataset, Question
from sleuth.eval.report import to_markdown
from sleuth.eval.runner import Interrupted, ProgressCallback
from sleuth.llm.cache import default_llm_cache
from sleuth.settings import DEFAULT_AGENT


def _dataset_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--dataset, --questions and --limit, shared by the eval commands."""
    for option in reversed((
        click.option("--dataset", "dataset_path", required=True, type=click.Path(),
                     help="Dataset folder (questions.json + corpus.json/chunks.json) or "
                     "question file."),
        click.option("--questions", type=click.Path(dir_okay=False), default=None,
                     help="Question file to use instead of the dataset's own (e.g. a "
                     "held-out split)."),
        click.option("--limit", type=click.IntRange(1), default=None,
                     help="First N questions only."),
    )):
        command = option(command)
    return command


_workers_option = click.option("--workers", type=click.IntRange(1, 64), default=4,
                               show_default=True, help="Questions answered concurrently.")


def _select(dataset_path: str, questions: str | None,
            limit: int | None) -> tuple[Dataset, list[Question]]:
    """The dataset and its chosen questions, saying which questions were left out."""
    dataset, chosen = evaluate.select(dataset_path, questions, limit)
    if dataset.unanswerable:
        status(f"{dataset.unanswerable} questions left out: their document is not in the "
               "corpus (doc_available: false)")
    for q in dataset.questions:
        if "id_repeated" in q.metadata:
            status(f"question id {q.metadata['id_repeated']!r} is used more than once: "
                   f"the later record is scored as {q.id!r}")
    return dataset, chosen


class _Bars:
    """The index bar while the corpus is indexed, then one bar per run (each closed when
    the next starts)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.index = IndexBar(enabled)
        self.runs: list[RunBar] = []

    def run(self, label: str) -> ProgressCallback:
        self.close()
        self.runs.append(RunBar(self.enabled, label))
        return self.runs[-1].update

    def close(self) -> None:
        for bar in (self.index, *self.runs):
            bar.close()

    def __enter__(self) -> _Bars:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@click.group("eval")
def eval_group() -> None:
    """Batch evaluation: run an agent over a dataset (scoring commands follow)."""


@eval_group.command("run")
@_dataset_options
@click.option("--agent", "agent_names", default=DEFAULT_AGENT, show_default=True,
              help="Agent variant, or several comma-separated (see `sleuth agents`).")
@_workers_option
@click.option("--resume", is_flag=True, help="Continue a run: skip ids already in the output.")
@click.option("--output", type=click.Path(file_okay=False), default="results",
              show_default=True, help="Folder for predictions.jsonl (one subfolder per agent "
              "when several are given).")
@click.option("--max-steps", type=click.IntRange(1, 200), default=None,
              help="Max tool-calling steps [15].")
@click.option("--score", is_flag=True,
              help="Score the runs when they finish (implied by --judge and by several agents).")
@click.option("--judge", is_flag=True,
              help="Score with LLM-Acc too, judged by the configured endpoint (cached).")
@click.option("--k", "ks", default="2,5", show_default=True,
              help="Comma-separated k for evidence Recall@k when scoring.")
@click.option("--verify", is_flag=True, default=None,
              help="Triple-Check the answer (relevance, grounding, adequacy); on failure rewrite "
              "the question and retry (a2rag.retries, 2), then abstain.")
@click.option("--llm-cache", type=click.Path(dir_okay=False), default=None,
              help="SQLite file keeping every LLM reply by request, so an unchanged re-run "
              "costs nothing [~/.cache/sleuth/llm-replies.sqlite].")
@click.option("--no-llm-cache", is_flag=True,
              help="Send every request to the server (a sampling model draws anew each run).")
@common
def eval_run_cmd(dataset_path: str, questions: str | None, agent_names: str, limit: int | None,
                 workers: int, resume: bool, output: str, max_steps: int | None, score: bool,
                 judge: bool, ks: str, verify: bool | None, llm_cache: str | None,
                 no_llm_cache: bool, index_dir: str | None, as_json: bool,
                 config: str | None) -> None:
    """Answer every question of a dataset and write predictions.jsonl (resumable).

    The dataset's corpus is indexed once into the user cache (or --index) and reused.
    Each finished question is flushed to OUTPUT/predictions.jsonl at once; a failed question
    is recorded with its error and the run goes on; Ctrl-C keeps everything finished.

    With several agents (e.g. --agent direct,naive-rag,naive,full --judge) each runs into
    OUTPUT/<agent>/ and the runs are scored side by side into OUTPUT/scores.md and
    scores.json: A-RAG's Table 1 protocol for one dataset in one command.
    """
    agents = evaluate.check_agents(agent_names)
    k_values = int_list(ks, "--k")
    settings = load_settings(config, index_dir, agent={"max_steps": max_steps},
                             a2rag={"verify": verify})
    dataset, chosen = _select(dataset_path, questions, limit)
    if not as_json:
        status(f"{dataset.name}: {len(chosen)} questions; preparing the index ...")

    def finished(summary: dict[str, Any]) -> None:
        if not as_json:
            click.echo(" | ".join(f"{k} {v}" for k, v in summary.items()))

    try:
        with _Bars(not as_json) as bars:
            result = evaluate.run(
                dataset, agents, output=output, settings=settings, limit=limit,
                workers=workers, resume=resume, score=score, judge=judge, ks=k_values,
                index=index_dir,
                llm_cache=None if no_llm_cache else llm_cache or default_llm_cache(),
                on_index_progress=bars.index.update, progress=bars.run, on_run=finished)
    except Interrupted as stopped:
        run = stopped.stats
        status(f"interrupted: {run.done + run.skipped} of {run.total} questions saved in "
               f"{stopped.path}; to go on, run the same command with --resume")
        sys.exit(130)
    summaries, scores = result["runs"], result["scores"]
    if scores is not None and not as_json:
        click.echo("\n" + to_markdown(scores))
    if as_json:
        emit(summaries[0] if len(summaries) == 1 and scores is None else result)


@eval_group.command("retrieval")
@_dataset_options
@click.option("--tools", "tool_names", default="keyword,semantic,hybrid,search,bm25,best",
              show_default=True,
              help="Comma-separated: keyword, semantic, hybrid (fusion of both, a second hop "
              "and a title search), search (the document search tool), bm25, graph (PPR over "
              "the knowledge graph, mapped back to chunks; builds the graph if needed), "
              "hybrid+graph, best (the ranking the default agent and hybrid_search get: "
              "hybrid or hybrid+graph on a corpus of short entity pages, BM25 + semantic "
              "+ title search on the pages or passages of longer works), progressive "
              "(A2RAG's local → bridge → PPR stages; prints the stage breakdown).")
@click.option("--k", "ks", default="2,5,10", show_default=True, help="Comma-separated k values.")
@click.option("--level", type=click.Choice(["page", "doc"]), default="page", show_default=True,
              help="page: recall of the gold passages/pages; doc: of the gold document "
              "(FinanceBench filing, from its pages' ids).")
@common
def eval_retrieval_cmd(dataset_path: str, questions: str | None, tool_names: str, ks: str,
                       level: str, limit: int | None, index_dir: str | None, as_json: bool,
                       config: str | None) -> None:
    """LLM-free retrieval recall per tool, by gold document id (no LLM needed).

    Queries are the questions themselves; keyword search gets the entities and noun phrases
    extracted from each question. bm25 is a standard BM25 (bm25s) over the same chunks.
    """
    k_values = int_list(ks, "--k")
    dataset, _ = _select(dataset_path, questions, limit)
    with IndexBar(not as_json) as bar:
        result = evaluate.retrieval(dataset, tool_names, ks=k_values,
                                    level=level,  # type: ignore[arg-type]  # a click Choice
                                    settings=load_settings(config, index_dir), limit=limit,
                                    index=index_dir, on_index_progress=bar.update)
    if as_json:
        emit(result)
        return
    click.echo(f"{dataset.name}: {result['questions']} questions with gold evidence, "
               f"{level} level\n")
    click.echo(table(["tool", *[f"R@{k}" for k in k_values], "p50 ms"], [
        [tool, *[f"{100 * row[f'recall@{k}']:.1f}" for k in k_values], f"{row['ms_p50']:.1f}"]
        for tool, row in result["tools"].items()]))
    if result.get("stages"):
        total = sum(result["stages"].values())
        shares = ", ".join(f"{stage} {100 * n / total:.0f}%" for stage, n in
                           sorted(result["stages"].items(), key=lambda item: -item[1]))
        click.echo(f"\nprogressive: questions ending at each stage: {shares}")
    if result.get("best"):
        click.echo("\nbest: " + ", ".join(f"{method} for {n} questions"
                                           for method, n in result["best"].items()))


@eval_group.command("graph-loss")
@_dataset_options
@click.option("--fractions", default="0,0.1,0.2,0.3,0.4", show_default=True,
              help="Comma-separated shares of the graph's entities to delete.")
@click.option("--k", "ks", default="2,5", show_default=True, help="Comma-separated k values.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--output", type=click.Path(file_okay=False), default="results/graph-loss",
              show_default=True, help="Folder for extraction_loss.json and .png.")
@common
def eval_graph_loss_cmd(dataset_path: str, questions: str | None, fractions: str, ks: str,
                        seed: int, output: str, limit: int | None, index_dir: str | None,
                        as_json: bool, config: str | None) -> None:
    """A2RAG's extraction-loss stress test (no LLM): delete a growing share of the knowledge
    graph's entities and plot Recall@k of graph and hybrid+graph retrieval against the
    hybrid retriever, which uses no graph. Builds the graph first if needed."""
    from sleuth.cli.console import Bar

    shares = [float(f) for f in fractions.split(",") if f.strip()]
    if not shares or any(not 0 <= f < 1 for f in shares):
        raise click.BadParameter("fractions must be in [0, 1)", param_hint="--fractions")
    k_values = int_list(ks, "--k")
    dataset, _ = _select(dataset_path, questions, limit)
    with IndexBar(not as_json) as bar, Bar(not as_json, "graph", " chunks") as graph_bar:
        result = evaluate.graph_loss(
            dataset, shares, ks=k_values, seed=seed, output=output,
            settings=load_settings(config, index_dir), limit=limit, index=index_dir,
            on_index_progress=bar.update,
            on_graph_progress=lambda done, total: graph_bar.advance(done, of=total),
            on_step=None if as_json else status)
    if as_json:
        emit(result)
        return
    heads = [f"{name}@{k}" for name in ("graph", "hybrid+graph") for k in k_values]
    click.echo(table(["deleted", *heads], [
        [f"{100 * row['fraction']:.0f}%", *[f"{100 * row[h]:.1f}" for h in heads]]
        for row in result["rows"]]))
    baseline = ", ".join(f"R@{k} {100 * v:.1f}" for k, v in
                         zip(k_values, result["hybrid"].values(), strict=True))
    click.echo(f"\nhybrid (no graph): {baseline}\nwrote {result['json']} and {result['png']}")


@eval_group.command("score")
@click.argument("predictions", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--k", "ks", default="2,5", show_default=True,
              help="Comma-separated k for evidence Recall@k.")
@click.option("--judge", is_flag=True,
              help="Also compute LLM-Acc with the configured endpoint (verdicts are cached).")
@click.option("--compare", is_flag=True,
              help="Several runs side by side (the default whenever several are given).")
@common
def eval_score_cmd(predictions: tuple[str, ...], ks: str, judge: bool, compare: bool,
                   index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Score predictions.jsonl files: EM, F1, Contain-Acc, LLM-Acc, Recall@k, cost, latency.

    Each PREDICTIONS is a predictions.jsonl file or the folder holding one. Results are
    given overall and by question type, as Markdown (default) or JSON.
    """
    scores = evaluate.score(predictions, int_list(ks, "--k"), judge=judge,
                            settings=load_settings(config, index_dir) if judge else None)
    if as_json:
        emit(scores)
    else:
        click.echo(to_markdown(scores))


@eval_group.command("sweep")
@_dataset_options
@click.option("--agent", "agent_name", default=DEFAULT_AGENT, show_default=True,
              help="Agent variant (see `sleuth agents`).")
@click.option("--param", default="max_steps", show_default=True,
              help="Setting to sweep: max_steps, reasoning_effort, token_budget, memory_size.")
@click.option("--values", required=True,
              help="Comma-separated values, e.g. 1,3,5,10,15 or minimal,low,medium,high.")
@_workers_option
@click.option("--resume", is_flag=True, help="Continue a sweep: finished questions are kept.")
@click.option("--output", type=click.Path(file_okay=False), default="results/sweep",
              show_default=True, help="Folder for one run per value, sweep.json and sweep.png.")
@click.option("--judge", is_flag=True, help="Also plot LLM-Acc (judge verdicts are cached).")
@click.option("--k", "ks", default="2,5", show_default=True,
              help="Comma-separated k for evidence Recall@k.")
@common
def eval_sweep_cmd(dataset_path: str, questions: str | None, agent_name: str, param: str,
                   values: str, limit: int | None, workers: int, resume: bool, output: str,
                   judge: bool, ks: str, index_dir: str | None, as_json: bool,
                   config: str | None) -> None:
    """Test-time scaling: accuracy against max steps or reasoning effort (A-RAG §5).

    Runs the agent once per value into OUTPUT/<param>=<value>/ (each an ordinary, resumable
    `eval run`), scores the runs side by side, and writes OUTPUT/sweep.json and a PNG plot
    of accuracy (and retrieved tokens) against the value, OUTPUT/sweep.png.
    """
    if not [v for v in values.split(",") if v.strip()]:
        raise click.BadParameter("give at least one value", param_hint="--values")
    dataset, _ = _select(dataset_path, questions, limit)
    with _Bars(not as_json) as bars:
        result = evaluate.sweep(dataset, param, values, agent=agent_name, output=output,
                                workers=workers, resume=resume, judge=judge,
                                ks=int_list(ks, "--k"), settings=load_settings(config, index_dir),
                                limit=limit, index=index_dir,
                                on_index_progress=bars.index.update, progress=bars.run)
    if as_json:
        emit(result)
        return
    keys = [k for k in ("llm_acc", "contain", "em", "f1") if k in result["points"][0]]
    click.echo(table([result["param"], *keys, "tokens", "steps", "cost $"], [
        [p["value"], *[f"{100 * p[k]:.1f}" for k in keys], f"{p['retrieved_tokens']:.0f}",
         f"{p['steps']:.1f}", f"{p['cost_total']:.4f}"] for p in result["points"]]))
    click.echo(f"\nplot: {result['plot']}")
