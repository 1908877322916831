"""The candidates for Sleuth's LLM-free ranking, each measured on the same questions (issue 25).

Every ranking the fusion can use is computed once per question (keyword per entity,
semantic, the second hop as shipped and as it was before, the title field search, BM25,
the knowledge graph's PPR), then each candidate fusion is scored by Recall@2/5/10 over the
gold passages. The shipped ranking (``sleuth.retrieval.best_ranking``) is one of the rows;
the others are the ones tried on the way, kept so their effect stays measurable. On a
corpus of passages of longer works (see ``best_ranking``) the rows are the passage
ranking's candidates instead. With
``--reranker nanoranker`` (the only re-ranker with weights on PyPI found here; install it
yourself) its order of the shipped top 10 is scored too, alone and fused.

    python bench/ranking.py --dataset 2wiki
    python bench/ranking.py --dataset financebench --level doc
    python bench/ranking.py --dataset path/to/folder --index path/to/its/index

A dev set's name (``2wiki``, ``medical``, ``novel``, ``financebench``, ``pgdocs``,
``javadoc``) takes its questions and its dev index (``_common.dev_index``, with the
knowledge graph where the project's runs build one: 2Wiki, GraphRAG-Bench), built on first
use and cached; ``--index`` overrides it.

Latencies: ``sleuth eval retrieval`` times the shipped rankings end to end; the rows here
are fusions of cached rankings, so only the components' own p50 is printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import (
    DEV_CORPORA,
    DEV_SETS,
    OUT_DIR,
    add_data_option,
    dev_questions,
    resolve_index,
)

from sleuth.eval.datasets import Dataset, Question, doc_key, load_dataset
from sleuth.eval.metrics import recall_at_k
from sleuth.index.read import ReadIndex
from sleuth.retrieval import HybridRetriever, entity_pages, interleave
from sleuth.text.querytext import CAPITALISED


def old_second_hop(index: ReadIndex, retriever: HybridRetriever, question: str) -> list[str]:
    """The second hop before issue 25: every run of capitalised words of each entity's top
    chunk (in order, across sentence ends), searched by keyword, top 2 each."""
    seeds = [r[0] for r in retriever._entity_rankings(question) if r][:3]
    hops = []
    for chunk in index.read(seeds).chunks:
        body = chunk.text.split("\n", 1)[-1]
        names = list(dict.fromkeys(
            n for m in CAPITALISED.finditer(body)
            if len(n := m.group(0).strip(" .,;:()")) > 3 and " " in n))
        names = [n for n in names if n.lower() not in question.lower()][:6]
        hops.append(interleave([[h.chunk_id for h in index.keyword_search([n], top_k=2)]
                                for n in names]))
    return interleave(hops)


def components(index: ReadIndex, question: str, graph: Any) -> tuple[dict[str, list[str]],
                                                                      dict[str, float]]:
    retriever = HybridRetriever(index)
    steps: dict[str, Callable[[], list[str]]] = {
        "keyword": lambda: retriever.keyword(question),
        "semantic": lambda: retriever.semantic(question),
        "second_hop": lambda: retriever.second_hop(question),
        "old_second_hop": lambda: old_second_hop(index, retriever, question),
        "titled": lambda: retriever.titled(question),
        "bm25": lambda: [h.chunk_id for h in index.bm25_search(question, top_k=30)],
    }
    if graph is not None:
        steps["graph"] = lambda: graph.rank(question, top_k=30)
    out, seconds = {}, {}
    for name, step in steps.items():
        started = time.perf_counter()
        out[name] = step()
        seconds[name] = time.perf_counter() - started
    return out, seconds


def fused(parts: dict[str, list[str]], weights: dict[str, float], k: float) -> list[str]:
    scores: dict[str, float] = {}
    for name, weight in weights.items():
        for rank, chunk_id in enumerate(parts.get(name, ()), 1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (k + rank)
    return sorted(scores, key=lambda c: -scores[c])


SHIPPED = {"keyword": 1, "semantic": 1, "second_hop": 1, "titled": 1}
CANDIDATES: list[tuple[str, dict[str, float], float]] = [
    ("hybrid before issue 25 (old hop, k 60)",
     {"keyword": 1, "semantic": 1, "old_second_hop": 1}, 60),
    ("hybrid+graph before issue 25 (old hop, k 60)",
     {"keyword": 1, "semantic": 1, "old_second_hop": 1, "graph": 1}, 60),
    ("new second hop, k 60", {"keyword": 1, "semantic": 1, "second_hop": 1}, 60),
    ("new second hop + graph, k 60",
     {"keyword": 1, "semantic": 1, "second_hop": 1, "graph": 1}, 60),
    ("new second hop, k 1", {"keyword": 1, "semantic": 1, "second_hop": 1}, 1),
    ("new second hop + graph, k 1",
     {"keyword": 1, "semantic": 1, "second_hop": 1, "graph": 1}, 1),
    ("hop and graph weighted 2, k 1",
     {"keyword": 1, "semantic": 1, "second_hop": 2, "graph": 2}, 1),
    ("+ store BM25 of the whole question, k 1",
     {"keyword": 1, "semantic": 1, "second_hop": 1, "graph": 1, "bm25": 1, "titled": 1}, 1),
    ("shipped hybrid (+ title field search, k 1)", SHIPPED, 1),
    ("shipped hybrid+graph", {**SHIPPED, "graph": 1}, 1),
]


# Corpora of passages of longer works (FinanceBench pages, GraphRAG-Bench): the passage
# ranking's fusions. "titled" is BM25 within the documents the question's words name.
PASSAGE_CANDIDATES: list[tuple[str, dict[str, float], float]] = [
    ("store BM25 (FTS5) alone", {"bm25": 1}, 60),
    ("semantic alone", {"semantic": 1}, 60),
    ("BM25 + semantic, k 60", {"bm25": 1, "semantic": 1}, 60),
    ("BM25 + semantic, k 5", {"bm25": 1, "semantic": 1}, 5),
    ("+ titled, k 60 (issue 5's fusion; titles now matched as shipped)",
     {"bm25": 1, "semantic": 1, "titled": 1}, 60),
    ("titled weighted 2, k 60", {"bm25": 1, "semantic": 1, "titled": 2}, 60),
    ("titled weighted 3, k 1", {"bm25": 1, "semantic": 1, "titled": 3}, 1),
    ("shipped passage ranking (titled weighted 3, k 5)",
     {"bm25": 1, "semantic": 1, "titled": 3}, 5),
    ("shipped for pages with titles of their own (titled weight 1, k 5: a manual)",
     {"bm25": 1, "semantic": 1, "titled": 1}, 5),
    ("titled weight 0.5, k 5", {"bm25": 1, "semantic": 1, "titled": 0.5}, 5),
    ("titled weight 0.5, k 60", {"bm25": 1, "semantic": 1, "titled": 0.5}, 60),
    ("+ the multi-hop rankings, k 5", {"bm25": 1, "semantic": 1, "titled": 3, "keyword": 1,
                                       "second_hop": 1, "graph": 1}, 5),
]


def dev_dataset(args: argparse.Namespace) -> Dataset:
    """The dataset of ``--dataset``; for a dev set, ``args.index`` becomes its dev index
    when none is given (built on first use and cached)."""
    if args.dataset not in DEV_SETS:
        return load_dataset(args.dataset, args.questions)
    corpus = DEV_SETS[args.dataset].corpus
    args.index = resolve_index(args.index, corpus, args.data, graph=DEV_CORPORA[corpus].graph)
    return load_dataset(args.questions or dev_questions(args.dataset, args.data))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True,
                        help=f"a dev set ({', '.join(DEV_SETS)}) or a dataset folder")
    parser.add_argument("--index", default=None,
                        help="index folder (required for a dataset folder) [the dev index]")
    parser.add_argument("--questions", default=None, help="another question file")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--level", choices=("page", "doc"), default="page")
    parser.add_argument("--k", default="2,5,10", help="comma-separated cut-offs")
    parser.add_argument("--reranker", choices=("nanoranker",), default=None)
    parser.add_argument("--out", default=str(OUT_DIR / "ranking"))
    add_data_option(parser)
    args = parser.parse_args()
    ks = tuple(int(k) for k in args.k.split(","))
    if args.dataset not in DEV_SETS and args.index is None:
        parser.error("--index is required with a dataset folder (or name a dev set)")
    dataset = dev_dataset(args)
    questions: list[Question] = [q for q in dataset.questions
                                 if (q.gold_docs if args.level == "doc" else q.gold_ids)]
    if args.limit:
        questions = questions[:args.limit]
    index = ReadIndex.open(args.index)
    graph = index.graph()
    pages = entity_pages(index)
    rows = list(CANDIDATES if pages else PASSAGE_CANDIDATES)
    if graph is None:
        rows = [c for c in rows if "graph" not in c[1]]
    doc_of: dict[str, str] = {}
    recalls: dict[str, list[dict[int, float]]] = {name: [] for name, _, _ in rows}
    timing: dict[str, list[float]] = {}
    rerank_rows: dict[str, list[dict[int, float]]] = {}
    for number, q in enumerate(questions, 1):
        parts, seconds = components(index, q.question, graph)
        for name, value in seconds.items():
            timing.setdefault(name, []).append(value)
        gold = q.gold_docs if args.level == "doc" else q.gold_ids
        rankings = {name: fused(parts, weights, k) for name, weights, k in rows}
        if args.reranker:
            top = rankings[rows[-1][0]][:10]
            rankings.update(rerank(index, q.question, top, rankings[rows[-1][0]]))
        for name, ranking in rankings.items():
            missing = [c for c in ranking[:60] if c not in doc_of]
            if missing:
                doc_of.update({c.chunk_id: c.doc_id for c in index.read(missing).chunks})
            docs = list(dict.fromkeys(doc_of[c] for c in ranking[:60] if c in doc_of))
            if args.level == "doc":
                docs = list(dict.fromkeys(doc_key(d) for d in docs))
            row = {k: recall_at_k(docs, gold, k) for k in ks}
            (recalls if name in recalls else rerank_rows).setdefault(name, []).append(row)
        if number % 100 == 0:
            print(f"{number}/{len(questions)}", flush=True)
    table = {name: {f"R@{k}": round(100 * statistics.fmean(r[k] for r in rs), 1) for k in ks}
             for name, rs in {**recalls, **rerank_rows}.items()}
    ms = {name: round(1000 * statistics.median(v), 1) for name, v in timing.items()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = Path(args.dataset).name
    (out / f"{name}-{args.level}.json").write_text(json.dumps(
        {"dataset": name, "questions": len(questions), "level": args.level, "rankings": table,
         "component_ms_p50": ms}, indent=2))
    print(f"{name}: {len(questions)} questions, {args.level} level")
    print("| ranking | " + " | ".join(f"R@{k}" for k in ks) + " |")
    print("|---|" + "---|" * len(ks))
    for row_name, values in table.items():
        print(f"| {row_name} | " + " | ".join(f"{values[f'R@{k}']:.1f}" for k in ks) + " |")
    print("component p50 ms: " + ", ".join(f"{k} {v}" for k, v in ms.items()))


def rerank(index: ReadIndex, question: str, top: list[str],
           shipped: list[str]) -> dict[str, list[str]]:
    """The re-ranker's order of the shipped top 10, alone and fused with the shipped order."""
    from nanoranker import rank  # an optional candidate: not a dependency of Sleuth

    texts = {c.chunk_id: c.text for c in index.read(top).chunks}
    by_text = {text: chunk_id for chunk_id, text in texts.items()}
    order = [by_text[text] for text, _ in rank(question, list(texts.values()), top_n=len(texts),
                                                normalize_scores=False)]
    return {"nanoranker order of the shipped top 10": order + shipped[10:],
            "shipped fused with nanoranker, k 1": fused(
                {"a": shipped, "b": order}, {"a": 1, "b": 1}, 1)}


if __name__ == "__main__":
    main()
