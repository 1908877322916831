"""LLM-free retrieval recall per tool: ``keyword``, ``semantic``, ``hybrid`` and ``bm25`` (the
``bm25s`` library over the same chunks, a baseline measured in the same run). Recall is
counted on documents: a chunk retrieves its document.

``keyword`` searches each entity of the question on its own and interleaves the rankings.
``hybrid`` fuses, with equal reciprocal-rank weights, the keyword ranking, the semantic
ranking and a keyword *second hop*: multi-word names found in the top passage of each
question entity are searched in turn, which reaches the bridge passages of multi-hop
questions (a film's director, a person's spouse) whose names the question never states.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sleuth.errors import MissingDependency
from sleuth.eval.datasets import Question
from sleuth.eval.metrics import recall_at_k
from sleuth.index import Index
from sleuth.types import Hit

RetrievalTool = Literal["keyword", "semantic", "hybrid", "bm25"]
TOOL_NAMES: tuple[RetrievalTool, ...] = ("keyword", "semantic", "hybrid", "bm25")
DEPTH = 50  # candidates per ranking before fusion / cut-off
RRF_K = 60

_QUESTION_WORDS = {
    "who", "whom", "whose", "what", "which", "when", "where", "why", "how", "is", "are", "was",
    "were", "do", "does", "did", "can", "could", "will", "would", "should", "has", "have",
    "had", "in", "on", "of", "the", "a", "an", "and", "or", "both", "between", "according",
}
_STOPWORDS = _QUESTION_WORDS | {
    "to", "for", "by", "with", "from", "at", "as", "that", "this", "it", "its", "be", "first",
    "same", "than", "more", "most", "older", "younger", "earlier", "later", "born", "died",
    "film", "director", "country", "nationality", "name", "person", "place",
}
_CAPITALISED = re.compile(
    r"[A-Z0-9][\w'.:-]*(?:\s+(?:(?:of|the|de|von|van|da|di|la|le|del|du)\s+)*[A-Z0-9][\w'.:-]*)*"
)
_QUOTED = re.compile(r"[\"“]([^\"”]{2,80})[\"”]")


def question_keywords(question: str) -> list[str]:
    """Entities and noun-phrase-like spans of a question, for keyword search.

    Quoted spans and runs of capitalised words (with linking words such as "of the") are
    kept whole; a leading question word is dropped. With none found, the content words.
    """
    found: list[str] = [m.group(1).strip() for m in _QUOTED.finditer(question)]
    for match in _CAPITALISED.finditer(question):
        words = match.group(0).strip(" ?.,").split()
        while words and words[0].lower() in _QUESTION_WORDS:
            words = words[1:]
        while words and words[-1].lower() in _QUESTION_WORDS:
            words = words[:-1]
        phrase = re.sub(r"['’]s$", "", " ".join(words).strip("():"))
        if phrase and phrase.lower() not in _STOPWORDS:
            found.append(phrase)
    if not found:
        found = [w for w in re.findall(r"\w+", question) if w.lower() not in _STOPWORDS]
    return list(dict.fromkeys(found))


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


def interleave(rankings: Sequence[Sequence[str]]) -> list[str]:
    """Round-robin merge: first of each ranking, then second of each, ... (no repeats)."""
    out: dict[str, None] = {}
    for depth in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if depth < len(ranking):
                out.setdefault(ranking[depth])
    return list(out)


def fuse(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[str]:
    """Reciprocal-rank fusion: score(d) = sum over rankings of 1 / (k + rank)."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])


@dataclass
class RetrievalEval:
    """Recall@k of each tool over ``questions`` (by document id)."""

    index: Index
    tools: Sequence[RetrievalTool] = TOOL_NAMES
    ks: Sequence[int] = (2, 5, 10)

    def run(self, questions: Sequence[Question],
            on_question: Callable[[int], None] | None = None) -> dict[str, Any]:
        bm25 = _Bm25(self.index)
        rows: dict[str, list[dict[str, float]]] = {t: [] for t in self.tools}
        seconds: dict[str, list[float]] = {t: [] for t in self.tools}
        doc_of: dict[str, str] = {}
        for number, q in enumerate(questions, 1):
            if not q.gold_ids:
                continue
            rankings = self._rankings(q.question, bm25, seconds)
            for tool in self.tools:
                docs = self._docs(rankings[tool], doc_of)
                rows[tool].append({f"recall@{k}": recall_at_k(docs, q.gold_ids, k)
                                   for k in self.ks})
            if on_question:
                on_question(number)
        return {
            "questions": len(next(iter(rows.values()), [])),
            "ks": list(self.ks),
            "tools": {t: {**{key: statistics.fmean(r[key] for r in rows[t]) if rows[t] else 0.0
                             for key in (f"recall@{k}" for k in self.ks)},
                          "ms_p50": 1000 * statistics.median(seconds[t]) if seconds[t] else 0.0}
                      for t in self.tools},
        }

    def _rankings(self, question: str, bm25: _Bm25,
                  seconds: dict[str, list[float]]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        per_entity: list[list[str]] = []

        def keyword() -> list[str]:
            per_entity.extend(_ids(self.index.keyword_search([k], top_k=20))
                              for k in question_keywords(question))
            return interleave(per_entity)

        timed: dict[str, Callable[[], list[str]]] = {
            "keyword": keyword,
            "semantic": lambda: _ids(self.index.semantic_search(question, top_k=20)),
            "bm25": lambda: bm25.search(question, DEPTH),
        }
        needed = set(self.tools) | ({"keyword", "semantic"} if "hybrid" in self.tools else set())
        for tool in ("keyword", "semantic", "bm25"):
            if tool in needed:
                started = time.perf_counter()
                out[tool] = timed[tool]()
                seconds.setdefault(tool, []).append(time.perf_counter() - started)
        if "hybrid" in self.tools:
            started = time.perf_counter()
            hop = self.second_hop(question, per_entity)
            out["hybrid"] = fuse([out["keyword"], out["semantic"], hop])
            seconds["hybrid"].append(time.perf_counter() - started + seconds["keyword"][-1]
                                     + seconds["semantic"][-1])
        return out

    def second_hop(self, question: str, per_entity: Sequence[Sequence[str]]) -> list[str]:
        """Chunks about the multi-word names in each question entity's top chunk."""
        seeds = [ranking[0] for ranking in per_entity if ranking][:3]
        asked = question.lower()
        hops = []
        for chunk in self.index.read(seeds).chunks:
            body = chunk.text.split("\n", 1)[-1]
            names = list(dict.fromkeys(
                name for m in _CAPITALISED.finditer(body)
                if len(name := m.group(0).strip(" .,;:()")) > 3 and " " in name
                and name.lower() not in asked
            ))[:6]
            hops.append(interleave([_ids(self.index.keyword_search([n], top_k=2))
                                    for n in names]))
        return interleave(hops)

    def _docs(self, chunk_ids: list[str], doc_of: dict[str, str]) -> list[str]:
        missing = [c for c in chunk_ids if c not in doc_of]
        if missing:
            doc_of.update({c.chunk_id: c.doc_id for c in self.index.read(missing).chunks})
        return list(dict.fromkeys(doc_of[c] for c in chunk_ids if c in doc_of))


def _ids(hits: Sequence[Hit]) -> list[str]:
    return [h.chunk_id for h in hits]
