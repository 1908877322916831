"""LLM-free retrieval recall per tool: ``keyword``, ``semantic``, ``hybrid`` (see
:mod:`sleuth.retrieval`), ``search`` (the document search tool's ranking) and ``bm25`` (the
``bm25s`` library over the same chunks, a baseline measured in the same run).

Recall is counted on the indexed documents (a chunk retrieves its document): at level
``page`` (the default; for corpora of pages or passages these are the gold ids) or at level
``doc``, where ids are grouped by :func:`~sleuth.eval.datasets.doc_key` (FinanceBench pages
``<DOC>#p<N>`` → ``<DOC>``) and the gold is the question's document.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sleuth.errors import MissingDependency
from sleuth.eval.datasets import Question, doc_key
from sleuth.eval.metrics import recall_at_k
from sleuth.index.write import Index
from sleuth.retrieval import DEPTH as RANK_DEPTH
from sleuth.retrieval import HybridRetriever, best_ranking, fuse, search_documents

RetrievalTool = Literal["keyword", "semantic", "hybrid", "search", "bm25", "graph",
                        "hybrid+graph", "progressive", "best"]
TOOL_NAMES: tuple[RetrievalTool, ...] = ("keyword", "semantic", "hybrid", "search", "bm25",
                                         "graph", "hybrid+graph", "progressive", "best")
DEFAULT_TOOLS: tuple[RetrievalTool, ...] = ("keyword", "semantic", "hybrid", "search", "bm25",
                                            "best")
Level = Literal["page", "doc"]
DEPTH = 50  # bm25 candidates before the cut-off

@dataclass
class _Bm25:
    """A BM25 baseline over the index's chunks (the ``bm25s`` library)."""

    index: Index
    retriever: Any = None
    chunk_ids: list[str] = field(default_factory=list)

    def build(self) -> None:
        try:
            import bm25s
        except ImportError:
            raise MissingDependency("bm25s", "eval") from None
        chunks = list(self.index.store.iter_chunks())
        self.chunk_ids = [c.chunk_id for c in chunks]
        tokens = bm25s.tokenize([c.text for c in chunks], stopwords="en", show_progress=False)
        self.retriever = bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)

    def search(self, query: str, k: int) -> list[str]:
        import bm25s

        if self.retriever is None:
            self.build()
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        k = min(k, len(self.chunk_ids))
        docs, _ = self.retriever.retrieve(tokens, k=k, show_progress=False)
        return [self.chunk_ids[int(i)] for i in docs[0]]


@dataclass
class RetrievalEval:
    """Recall@k of each tool over ``questions`` (by document id)."""

    index: Index
    tools: Sequence[RetrievalTool] = DEFAULT_TOOLS
    ks: Sequence[int] = (2, 5, 10)
    level: Level = "page"
    _graph: Any = field(default=None, repr=False)
    stages: dict[str, int] = field(default_factory=dict)  # progressive: questions per stage
    methods: dict[str, int] = field(default_factory=dict)  # best: questions per ranking

    def run(self, questions: Sequence[Question],
            on_question: Callable[[int], None] | None = None) -> dict[str, Any]:
        bm25 = _Bm25(self.index)
        rows: dict[str, list[dict[str, float]]] = {t: [] for t in self.tools}
        seconds: dict[str, list[float]] = {t: [] for t in self.tools}
        doc_of: dict[str, str] = {}
        for number, q in enumerate(questions, 1):
            gold = q.gold_docs if self.level == "doc" else q.gold_ids
            if not gold:
                continue
            rankings = self._rankings(q.question, bm25, seconds)
            for tool in self.tools:
                docs = self._docs(rankings[tool], doc_of)
                if self.level == "doc":
                    docs = list(dict.fromkeys(doc_key(d) for d in docs))
                rows[tool].append({f"recall@{k}": recall_at_k(docs, gold, k)
                                   for k in self.ks})
            if on_question:
                on_question(number)
        return {
            **({"stages": dict(self.stages)} if self.stages else {}),
            **({"best": dict(self.methods)} if self.methods else {}),
            "questions": len(next(iter(rows.values()), [])),
            "level": self.level,
            "ks": list(self.ks),
            "tools": {t: {**{key: statistics.fmean(r[key] for r in rows[t]) if rows[t] else 0.0
                             for key in (f"recall@{k}" for k in self.ks)},
                          "ms_p50": 1000 * statistics.median(seconds[t]) if seconds[t] else 0.0}
                      for t in self.tools},
        }

    def _rankings(self, question: str, bm25: _Bm25,
                  seconds: dict[str, list[float]]) -> dict[str, list[str]]:
        retriever = HybridRetriever(self.index)
        timed: dict[str, Callable[[], list[str]]] = {
            "keyword": lambda: retriever.keyword(question),
            "semantic": lambda: retriever.semantic(question),
            "bm25": lambda: bm25.search(question, DEPTH),
        }
        needed = set(self.tools)
        out: dict[str, list[str]] = {}
        for tool in ("keyword", "semantic", "bm25"):
            if tool in needed:
                started = time.perf_counter()
                out[tool] = timed[tool]()
                seconds.setdefault(tool, []).append(time.perf_counter() - started)
        if "search" in self.tools:  # chunk ids of each document's best chunk, in order
            started = time.perf_counter()
            out["search"] = [h.chunk_id for h in search_documents(self.index, question,
                                                                  top_k=max(self.ks))]
            seconds["search"].append(time.perf_counter() - started)
        if "graph" in self.tools:
            started = time.perf_counter()
            out["graph"] = self.graph().rank(question, top_k=RANK_DEPTH)
            seconds["graph"].append(time.perf_counter() - started)
        for tool, graph in (("hybrid", None), ("hybrid+graph", True)):
            if tool in self.tools:  # the whole fused ranking, timed as the agent pays for it
                started = time.perf_counter()
                parts = HybridRetriever(self.index).rankings(
                    question, self.graph() if graph else None)
                out[tool] = fuse(list(parts.values()))
                seconds[tool].append(time.perf_counter() - started)
        if "best" in self.tools:  # what the default agent and hybrid_search get
            started = time.perf_counter()
            scores, method = best_ranking(self.index, question)
            out["best"] = list(scores)
            seconds["best"].append(time.perf_counter() - started)
            self.methods[method] = self.methods.get(method, 0) + 1
        if "progressive" in self.tools:  # A2RAG's staged retrieval; the stage is counted
            started = time.perf_counter()
            out["progressive"], stage = self.graph().progressive(question, top_k=max(self.ks))
            self.stages[stage] = self.stages.get(stage, 0) + 1
            seconds["progressive"].append(time.perf_counter() - started)
        return out

    def graph(self) -> Any:
        """The index's knowledge graph, brought up to date (offline extractor) on first use."""
        if self._graph is None:
            from sleuth.graph import Graph

            self._graph = Graph.open(self.index)
            self._graph.build()
        return self._graph

    def _docs(self, chunk_ids: list[str], doc_of: dict[str, str]) -> list[str]:
        missing = [c for c in chunk_ids if c not in doc_of]
        if missing:
            doc_of.update({c.chunk_id: c.doc_id for c in self.index.read(missing).chunks})
        return list(dict.fromkeys(doc_of[c] for c in chunk_ids if c in doc_of))
