"""LLM-free hybrid retrieval over an index: keyword per question entity, semantic, and a
keyword *second hop*, fused by reciprocal rank.

``keyword`` searches each entity of the question on its own and interleaves the rankings.
``hybrid`` fuses, with equal reciprocal-rank weights, the keyword ranking, the semantic
ranking and the second hop: multi-word names found in the top passage of each question
entity are searched in turn, which reaches the bridge passages of multi-hop questions (a
film's director, a person's spouse) whose names the question never states.

Used by agents that retrieve without a tool-calling loop (``memory``) and by
``sleuth eval retrieval``. The question's keywords and content words come from
:mod:`sleuth.querytext` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sleuth.index import ReadIndex
from sleuth.querytext import content_words, multiword_names, question_keywords
from sleuth.types import Hit

__all__ = ["DocumentHit", "HybridRetriever", "best_ranking", "content_words", "fuse",
           "fused_scores", "interleave", "question_keywords", "search_documents"]

RRF_K = 60
DEPTH = 20  # candidates per ranking before fusion

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
    return list(fused_scores(rankings, k))


def fused_scores(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """The reciprocal-rank fusion scores, best first."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return dict(sorted(scores.items(), key=lambda pair: -pair[1]))


@dataclass
class HybridRetriever:
    """Chunk rankings for a question from one index (chunk ids, best first)."""

    index: ReadIndex
    depth: int = DEPTH
    _per_entity: dict[str, list[list[str]]] = field(default_factory=dict, repr=False)

    def keyword(self, question: str) -> list[str]:
        """Each question entity searched alone, the rankings interleaved."""
        return interleave(self._entity_rankings(question))

    def semantic(self, question: str) -> list[str]:
        return _ids(self.index.semantic_search(question, top_k=self.depth))

    def hybrid(self, question: str, top_k: int | None = None) -> list[str]:
        """RRF of keyword, semantic and the second hop."""
        fused = fuse([self.keyword(question), self.semantic(question),
                      self.second_hop(question)])
        return fused[:top_k] if top_k else fused

    def second_hop(self, question: str) -> list[str]:
        """Chunks about the multi-word names in each question entity's top chunk."""
        seeds = [ranking[0] for ranking in self._entity_rankings(question) if ranking][:3]
        asked = question.lower()
        hops = []
        for chunk in self.index.read(seeds).chunks:
            body = chunk.text.split("\n", 1)[-1]
            names = [n for n in multiword_names(body) if n.lower() not in asked][:6]
            hops.append(interleave([_ids(self.index.keyword_search([n], top_k=2))
                                    for n in names]))
        return interleave(hops)

    def _entity_rankings(self, question: str) -> list[list[str]]:
        """Per-entity keyword rankings, computed once per question."""
        if question not in self._per_entity:
            self._per_entity = {question: [
                _ids(self.index.keyword_search([k], top_k=self.depth))
                for k in question_keywords(question)
            ]}
        return self._per_entity[question]


def best_ranking(index: ReadIndex, question: str) -> tuple[dict[str, float], str]:
    """The best ranking Sleuth has without an LLM, as fused scores (best first) and its name:
    ``hybrid+graph`` (the hybrid rankings fused with the knowledge graph's PPR, mapped back
    to chunks) where the index has a graph, ``hybrid`` otherwise. On held-out 2Wiki
    questions their R@5 is 85.8 and 80.9 (BENCHMARKS.md)."""
    retriever = HybridRetriever(index)
    rankings = [retriever.keyword(question), retriever.semantic(question),
                retriever.second_hop(question)]
    graph = index.graph()
    if graph is None:
        return fused_scores(rankings), "hybrid"
    return fused_scores([*rankings, graph.rank(question, top_k=DEPTH)]), "hybrid+graph"


def _ids(hits: Sequence[Hit]) -> list[str]:
    return [h.chunk_id for h in hits]


@dataclass(frozen=True)
class DocumentHit:
    """A document found by :func:`search_documents`: its best chunk and best sentence."""

    doc_id: str
    title: str
    chunk_id: str
    score: float
    snippet: str  # the best-matching sentence of the best chunk
    start: int  # the snippet's character span in the document (-1 when not located)
    end: int


SEARCH_DEPTH = 30  # chunks per ranking before fusion


def search_documents(index: ReadIndex, query: str, top_k: int = 10,
                     depth: int = SEARCH_DEPTH) -> list[DocumentHit]:
    """Documents for a query: the store's BM25, the sentence-level semantic ranking and BM25
    within the documents whose titles the query names (a title field search, see
    :mod:`sleuth.titles`), fused by reciprocal rank over chunks, then one entry per document
    (its best chunk). Scores are the fused score over its maximum.
    """
    rankings: list[list[Hit]] = [
        index.bm25_search(query, top_k=depth),
        index.semantic_search(query, top_k=depth),
    ]
    named = index.titles().match(content_words(query))
    if named:
        rankings.append(index.bm25_search(query, top_k=depth, doc_ids=named))
    snippet: dict[str, str] = {}
    for hits in rankings:  # the first ranking that gives a chunk a sentence supplies it
        for h in hits:
            if h.snippets and h.chunk_id not in snippet:
                snippet[h.chunk_id] = h.snippets[0]
    doc_of = {h.chunk_id: (h.doc_id, h.title) for hits in rankings for h in hits}
    ideal = sum(1.0 / (RRF_K + 1) for _ in rankings)
    scores: dict[str, float] = {}
    for hits in rankings:
        for rank, h in enumerate(hits, 1):
            scores[h.chunk_id] = scores.get(h.chunk_id, 0.0) + 1.0 / (RRF_K + rank)
    best: dict[str, str] = {}
    for chunk_id in sorted(scores, key=lambda c: -scores[c]):
        best.setdefault(doc_of[chunk_id][0], chunk_id)
        if len(best) >= top_k:
            break
    chunks = {c.chunk_id: c for c in index.read(list(best.values())).chunks}
    out = []
    for doc_id, chunk_id in best.items():
        chunk = chunks.get(chunk_id)
        text = snippet.get(chunk_id, "")
        at = chunk.text.find(text) if chunk is not None and text else -1
        start = chunk.start + at if chunk is not None and at >= 0 else -1
        if chunk is not None and not text:
            text = chunk.sentences[0].text if chunk.sentences else chunk.text[:300]
        out.append(DocumentHit(doc_id, doc_of[chunk_id][1], chunk_id,
                               round(scores[chunk_id] / ideal, 4), text, start,
                               start + len(text) if start >= 0 else -1))
    return out
