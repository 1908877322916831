"""Evaluation from Python: every ``sleuth eval`` command is one function here plus printing.

:func:`run` answers a dataset's questions with one or several agents (each into its own
folder when several) and, when asked (always for several agents), scores the runs side by
side into ``scores.json`` and ``scores.md``; :func:`score` scores finished runs;
:func:`retrieval`, :func:`graph_loss` and :func:`sweep` are the LLM-free recall table, the
extraction-loss stress test and the test-time scaling sweep. A dataset is a folder (or
question file) as :func:`~sleuth.eval.datasets.load_dataset` reads it, or a loaded
:class:`~sleuth.eval.datasets.Dataset`; its corpus is indexed once into the user cache (or
``index``) and reused. Progress is reported through callbacks; nothing is printed.

    >>> from sleuth.eval import run
    >>> result = run("datasets/2wiki", ["naive", "full"], limit=50, judge=True)
    >>> result["scores"]["runs"][0]["overall"]["llm_acc"]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError
from sleuth.eval.datasets import Dataset, Question, load_dataset
from sleuth.eval.report import score_runs, to_markdown
from sleuth.eval.retrieval import DEFAULT_TOOLS, TOOL_NAMES, Level, RetrievalEval, RetrievalTool
from sleuth.eval.runner import PREDICTIONS, EvalRun, ProgressCallback, dataset_index
from sleuth.index.write import IndexProgress
from sleuth.llm import LLM
from sleuth.llm.cache import cache_of, with_reply_cache
from sleuth.settings import DEFAULT_AGENT, Settings

DatasetLike = Dataset | str | Path
IndexProgressCallback = Callable[[IndexProgress], None]
RunProgress = Callable[[str], ProgressCallback | None]  # a run's label -> its callback


def select(dataset: DatasetLike, questions: str | Path | None = None,
           limit: int | None = None) -> tuple[Dataset, list[Question]]:
    """The dataset (loaded when a path, with ``questions`` instead of its own question
    file) and its first ``limit`` questions (all without a limit)."""
    if not isinstance(dataset, Dataset):
        dataset = load_dataset(dataset, questions)
    return dataset, dataset.questions[:limit] if limit else dataset.questions


def check_agents(agents: Sequence[str] | str) -> list[str]:
    """Agent names (a list, or comma-separated), each known; ConfigError otherwise."""
    from sleuth.agent.router import AUTO
    from sleuth.agent.variants import VARIANTS

    names = agents.split(",") if isinstance(agents, str) else list(agents)
    chosen = list(dict.fromkeys(a.strip() for a in names if a.strip()))
    unknown = [a for a in chosen if a not in VARIANTS and a != AUTO]
    if unknown or not chosen:
        raise ConfigError(f"unknown agents {unknown}; choose from "
                          f"{', '.join(sorted([*VARIANTS, AUTO]))}")
    return chosen


def run(dataset: DatasetLike, agents: Sequence[str] | str = DEFAULT_AGENT, *,
        output: str | Path = "results", settings: Settings | None = None,
        questions: str | Path | None = None, limit: int | None = None, workers: int = 4,
        resume: bool = False, score: bool = False, judge: bool = False,
        ks: Sequence[int] = (2, 5), index: str | Path | None = None, llm: LLM | None = None,
        llm_cache: str | Path | None = None,
        on_index_progress: IndexProgressCallback | None = None,
        progress: RunProgress | None = None,
        on_run: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Answer the questions with each agent into ``output/predictions.jsonl`` (with several
    agents, ``output/<agent>/``), resumable. With ``score``, ``judge`` (LLM-Acc by ``llm``)
    or several agents, the runs are then scored into ``output/scores.json`` and
    ``scores.md``. With ``llm_cache`` (a SQLite file, see :mod:`sleuth.llm.cache`) every
    server reply is kept by request, so re-running an unchanged configuration costs nothing.

    Returns ``{"runs": [summary per agent], "scores": the scores or None}``; ``on_run``
    gets each summary as its run finishes, ``progress(agent)`` a callback for its questions.
    """
    from sleuth.llm.factory import llm_from_settings

    names = check_agents(agents)
    settings = settings or Settings.load()
    llm = llm or llm_from_settings(settings)
    if llm_cache is not None:
        llm = with_reply_cache(llm, llm_cache)
    dataset, chosen = select(dataset, questions, limit)
    root = Path(output)
    folders = {a: root / a if len(names) > 1 else root for a in names}
    summaries = []
    with dataset_index(dataset, settings, index, on_progress=on_index_progress) as opened:
        for agent in names:
            label = agent if len(names) > 1 else "questions"
            before = _cache_counts(llm)
            stats = EvalRun(opened, settings, agent=agent, output=folders[agent],
                            workers=workers, resume=resume, llm=llm,
                            on_progress=progress(label) if progress else None).run(chosen)
            summaries.append({
                "agent": agent, "output": str(folders[agent] / PREDICTIONS),
                "questions": stats.total, "skipped_done": stats.skipped,
                "finished": stats.done, "errors": stats.errors, "answered": stats.answered,
                "contain_acc": round(stats.contain_acc, 4), "cost": round(stats.cost, 6),
                **{k: n - before[k] for k, n in _cache_counts(llm).items()},
            })
            if on_run:
                on_run(summaries[-1])
    scores = None
    if score or judge or len(names) > 1:
        scores = score_runs(list(folders.values()), ks, llm if judge else None)
        write_scores(scores, root)
    return {"runs": summaries, "scores": scores}


def _cache_counts(llm: LLM) -> dict[str, int]:
    """Replies so far from the reply cache and from the server (none without a cache)."""
    cache = cache_of(llm)
    return {} if cache is None else {"llm_replies_cached": cache.hits,
                                     "llm_replies_new": cache.misses}


def score(predictions: Sequence[str | Path], ks: Sequence[int] = (2, 5), *,
          judge: bool = False, settings: Settings | None = None,
          llm: LLM | None = None) -> dict[str, Any]:
    """Scores of finished runs (``predictions.jsonl`` files or their folders), overall and
    by question type; with ``judge``, LLM-Acc too, judged by ``llm`` (default: the
    configured endpoint; verdicts are cached next to each run)."""
    judge_llm = None
    if judge:
        from sleuth.llm.factory import llm_from_settings

        judge_llm = llm or llm_from_settings(settings or Settings.load())
    return score_runs([Path(p) for p in predictions], ks, judge_llm)


def write_scores(scores: dict[str, Any], folder: Path) -> None:
    """``scores.json`` and ``scores.md`` in ``folder``."""
    (folder / "scores.json").write_text(json.dumps(scores, indent=2) + "\n")
    (folder / "scores.md").write_text(to_markdown(scores) + "\n")


def retrieval(dataset: DatasetLike, tools: Sequence[str] | str = DEFAULT_TOOLS, *,
              ks: Sequence[int] = (2, 5, 10), level: Level = "page",
              settings: Settings | None = None, questions: str | Path | None = None,
              limit: int | None = None, index: str | Path | None = None,
              on_index_progress: IndexProgressCallback | None = None) -> dict[str, Any]:
    """LLM-free Recall@k of each retrieval tool by gold document id (see
    :class:`~sleuth.eval.retrieval.RetrievalEval`), with the dataset's name."""
    names = [t.strip() for t in (tools.split(",") if isinstance(tools, str) else tools)
             if t.strip()]
    unknown = [t for t in names if t not in TOOL_NAMES]
    if unknown or not names:
        raise ConfigError(f"unknown tools {unknown}; choose from {', '.join(TOOL_NAMES)}")
    chosen_tools: list[RetrievalTool] = names  # type: ignore[assignment]  # checked above
    settings = settings or Settings.load()
    dataset, chosen = select(dataset, questions, limit)
    with dataset_index(dataset, settings, index, on_progress=on_index_progress) as opened:
        result = RetrievalEval(opened, chosen_tools, list(ks), level).run(chosen)
    result["dataset"] = dataset.name
    return result


def graph_loss(dataset: DatasetLike, fractions: Sequence[float] = (0, 0.1, 0.2, 0.3, 0.4), *,
               ks: Sequence[int] = (2, 5), seed: int = 0,
               output: str | Path = "results/graph-loss", settings: Settings | None = None,
               questions: str | Path | None = None, limit: int | None = None,
               index: str | Path | None = None,
               on_index_progress: IndexProgressCallback | None = None,
               on_graph_progress: Callable[[int, int], None] | None = None,
               on_step: Callable[[str], None] | None = None) -> dict[str, Any]:
    """A2RAG's extraction-loss stress test: the graph is built (when needed), then a growing
    share of its entities deleted; writes ``extraction_loss.json`` and ``.png`` to
    ``output`` and returns the result with their paths (``json``, ``png``)."""
    from sleuth.eval.graphloss import extraction_loss, write
    from sleuth.graph import Graph

    if not fractions or any(not 0 <= f < 1 for f in fractions):
        raise ConfigError("fractions must be in [0, 1)")
    settings = settings or Settings.load()
    dataset, chosen = select(dataset, questions, limit)
    with dataset_index(dataset, settings, index, on_progress=on_index_progress) as opened, \
            Graph.open(opened) as graph:
        graph.build(on_progress=on_graph_progress)
        result = extraction_loss(opened, graph, chosen, list(fractions), list(ks), seed,
                                 on_step=on_step)
    data, png = write(result, Path(output))
    return {**result, "json": str(data), "png": str(png)}


def sweep(dataset: DatasetLike, param: str, values: Sequence[str] | str, *,
          agent: str = DEFAULT_AGENT, output: str | Path = "results/sweep", workers: int = 4,
          resume: bool = False, judge: bool = False, ks: Sequence[int] = (2, 5),
          settings: Settings | None = None, questions: str | Path | None = None,
          limit: int | None = None, index: str | Path | None = None,
          on_index_progress: IndexProgressCallback | None = None,
          progress: RunProgress | None = None) -> dict[str, Any]:
    """Test-time scaling: ``agent`` once per value of ``param`` (see
    :class:`~sleuth.eval.sweep.Sweep`); writes ``sweep.json`` and ``sweep.png``."""
    from sleuth.eval.sweep import Sweep
    from sleuth.llm.factory import llm_from_settings

    swept = [v.strip() for v in (values.split(",") if isinstance(values, str) else values)
             if v.strip()]
    if not swept:
        raise ConfigError("give at least one value to sweep")
    settings = settings or Settings.load()
    dataset, chosen = select(dataset, questions, limit)
    with dataset_index(dataset, settings, index, on_progress=on_index_progress) as opened:
        return Sweep(opened, settings, param, swept, agent=agent, output=Path(output),
                     workers=workers, resume=resume,
                     judge_llm=llm_from_settings(settings) if judge else None,
                     ks=ks).run(chosen, progress)
