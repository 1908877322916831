"""LLM-free hybrid retrieval over an index: keyword per question entity, semantic, and a
*second hop*, fused by reciprocal rank.

``keyword`` searches each entity of the question on its own and interleaves the rankings.
``hybrid`` fuses the keyword ranking, the semantic ranking and the second hop: in the top
passage of each question entity, the names that most likely stand for the entity the
question goes through ("directed by ...", "son of ...") are looked up as pages, which
reaches the bridge passages of multi-hop questions (a film's director, a person's spouse)
whose names the question never states. :func:`best_ranking` adds the knowledge graph's PPR
where the index has a graph.

Fusion is reciprocal rank with the constant :data:`RRF_K` = 1 rather than the usual 60,
so that a chunk that one ranking puts first is not outvoted by chunks that several rankings
put fourth (BENCHMARKS.md §18 measures it and lists the other constants and weights tried).

Used by agents that retrieve without a tool-calling loop (``memory``) and by
``sleuth eval retrieval``. The question's keywords and content words come from
:mod:`sleuth.text.querytext` (re-exported here).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sleuth.index.read import ReadIndex
from sleuth.text.querytext import bridge_names, content_words, question_keywords
from sleuth.text.titles import TitleIndex
from sleuth.types import Hit

if TYPE_CHECKING:
    from sleuth.graph import Graph

__all__ = ["CorpusShape", "DocumentHit", "HybridRetriever", "best_ranking", "content_words",
           "corpus_shape", "entity_pages", "fuse", "fused_scores", "interleave",
           "passage_ranking", "question_keywords", "search_documents"]

RRF_K = 1  # reciprocal-rank constant for chunk rankings: what one ranking puts first is not
# outvoted by what several put fourth (measured and frozen: BENCHMARKS.md §18)
DEPTH = 30  # candidates per ranking before fusion
HOP_NAMES = 6  # bridge names read per seed chunk
HOP_DEPTH = 2  # chunks per bridge name
TITLE_MATCHES = 50  # documents a name's title search may narrow to

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

    def titled(self, question: str) -> list[str]:
        """BM25 within the documents whose titles the question's words name (a title field
        search, :mod:`sleuth.text.titles`); empty when it names none."""
        named = self.index.titles().match(content_words(question))
        return _ids(self.index.bm25_search(question, top_k=self.depth, doc_ids=named)) \
            if named else []

    def rankings(self, question: str, graph: Graph | None = None) -> dict[str, list[str]]:
        """The rankings fused into the hybrid ranking, by name: keyword, semantic,
        second_hop, titled, and graph (PPR mapped back to chunks) when ``graph`` is given."""
        out = {"keyword": self.keyword(question), "semantic": self.semantic(question),
               "second_hop": self.second_hop(question), "titled": self.titled(question)}
        if graph is not None:
            out["graph"] = graph.rank(question, top_k=self.depth)
        return out

    def hybrid(self, question: str, top_k: int | None = None) -> list[str]:
        """Reciprocal-rank fusion of keyword, semantic, the second hop and the title
        search."""
        fused = fuse(list(self.rankings(question).values()))
        return fused[:top_k] if top_k else fused

    def second_hop(self, question: str) -> list[str]:
        """Chunks about the entities a multi-hop question goes through: in the top chunk of
        each question entity, the names most likely to be the bridge
        (:func:`~sleuth.text.querytext.bridge_names`: "directed by Leo Fong" for "the director of
        film Blood Street"), each looked up as a page (:meth:`pages`)."""
        seeds = [ranking[0] for ranking in self._entity_rankings(question) if ranking][:3]
        hops = []
        for chunk in self.index.read(seeds).chunks:
            sentences = [s.text for s in chunk.sentences] or [chunk.text]
            names = bridge_names(question, sentences)[:HOP_NAMES]
            hops.append(interleave([self.pages(name, chunk.chunk_id) for name in names]))
        return interleave(hops)

    def pages(self, name: str, source: str = "") -> list[str]:
        """Chunks about a name, best first, never ``source`` (the chunk it was read in):
        the BM25 best chunk of the documents whose titles name it (a title field search,
        :mod:`sleuth.text.titles`), then the chunks that mention it most (keyword search)."""
        named = self.index.titles().match(content_words(name), limit=TITLE_MATCHES)
        hits = _ids(self.index.bm25_search(name, top_k=2, doc_ids=named)) if named else []
        hits += _ids(self.index.keyword_search([name], top_k=HOP_DEPTH + 1))
        return [c for c in dict.fromkeys(hits) if c != source][:HOP_DEPTH]

    def _entity_rankings(self, question: str) -> list[list[str]]:
        """Per-entity keyword rankings, computed once per question."""
        if question not in self._per_entity:
            self._per_entity = {question: [
                _ids(self.index.keyword_search([k], top_k=self.depth))
                for k in question_keywords(question)
            ]}
        return self._per_entity[question]


ENTITY_PAGES = 0.5  # a corpus of entity pages: most of its documents have a title of their
# own (pages of one work share the work's title: near 0) ...
PAGE_CHUNKS = 1.2  # ... and they are paragraphs: about one chunk per document on average (a
# manual's sections run to two or more, a book or a filing to hundreds)
WORK_CHUNKS = 10.0  # a title names a work when its documents hold more chunks than this on
# average: a book or a filing runs to a hundred chunks and more, a manual's or an
# encyclopedia's pages to one or two; the gap between is wide, the cut sits in it


@dataclass(frozen=True)
class CorpusShape:
    """What the rankings need to know of a corpus (:func:`corpus_shape`)."""

    entity_pages: bool  # documents are pages about one entity each
    title_weight: float  # weight of the title-named ranking in :func:`passage_ranking`


_SHAPES: weakref.WeakKeyDictionary[TitleIndex, CorpusShape] = weakref.WeakKeyDictionary()


def corpus_shape(index: ReadIndex) -> CorpusShape:
    """The shape of an index's corpus, decided once per version of the index.

    Entity pages: most documents have a title of their own and are a paragraph long (an
    encyclopedia's pages). The title weight is :data:`TITLE_WEIGHT` where a title
    names a work, a filing or a novel of many pages (more than :data:`WORK_CHUNKS` chunks per
    distinct title): a query that names one is about it. Where each page has a title of its
    own (a manual's sections), a query names a topic that many pages' titles share words
    with, and the title-named ranking counts as much as any other (weight 1).
    """
    titles = index.titles()
    if titles not in _SHAPES:
        stats = index.stats()
        distinct = titles.distinct_share * stats.documents
        _SHAPES[titles] = CorpusShape(
            entity_pages=titles.distinct_share > ENTITY_PAGES
            and stats.chunks <= PAGE_CHUNKS * max(stats.documents, 1),
            title_weight=TITLE_WEIGHT if stats.chunks > WORK_CHUNKS * max(distinct, 1)
            else 1.0)
    return _SHAPES[titles]


def entity_pages(index: ReadIndex) -> bool:
    """Whether the corpus is one of entity pages (:func:`corpus_shape`)."""
    return corpus_shape(index).entity_pages


def best_ranking(index: ReadIndex, question: str) -> tuple[dict[str, float], str]:
    """The best ranking Sleuth has without an LLM, as fused scores (best first) and its name.

    Which one depends on the corpus (:func:`corpus_shape`). Where most documents have a
    title of their own and are a paragraph long (pages about one entity each: an
    encyclopedia), the multi-hop ranking: ``hybrid+graph``
    (the hybrid rankings fused with the knowledge graph's PPR, mapped back to chunks) where
    the index has a graph, ``hybrid`` otherwise. Where documents are the pages or passages
    of longer works that share a title (filings, novels, a textbook) or the sections of a
    manual, questions name no entity page to follow and :func:`passage_ranking` wins
    (BENCHMARKS.md §18 and §24 measure both kinds).
    """
    if not entity_pages(index):
        return passage_ranking(index, question)[0], "passage"
    graph = index.graph()
    rankings = list(HybridRetriever(index).rankings(question, graph).values())
    return fused_scores(rankings), "hybrid" if graph is None else "hybrid+graph"


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
SEARCH_RRF_K = 5  # reciprocal-rank constant of the passage ranking
TITLE_WEIGHT = 3.0  # weight of the ranking within the documents a query's words name: a
# work the question names (a filing by company and year, a novel by its title) outranks
# pages that merely share its words (measured: BENCHMARKS.md §18)


def passage_ranking(index: ReadIndex, query: str, depth: int = SEARCH_DEPTH
                    ) -> tuple[dict[str, float], dict[str, str], float]:
    """The ranking for passages of longer works: the store's BM25 of the whole query, the
    sentence-level semantic ranking and BM25 within the documents whose titles the query
    names (a title field search, :mod:`sleuth.text.titles`; weighted :data:`TITLE_WEIGHT` where
    titles name works, so a filing the query names by company and year comes first, 1 where
    pages have titles of their own: :func:`corpus_shape`), fused by reciprocal rank with
    :data:`SEARCH_RRF_K`. Returns the fused scores (best first), the best sentence of the
    chunks that have one, and the most a chunk could score."""
    rankings: list[list[Hit]] = [
        index.bm25_search(query, top_k=depth),
        index.semantic_search(query, top_k=depth),
    ]
    weights = [1.0, 1.0]
    named = index.titles().match(content_words(query))
    if named:
        rankings.append(index.bm25_search(query, top_k=depth, doc_ids=named))
        weights.append(corpus_shape(index).title_weight)
    snippet: dict[str, str] = {}
    for hits in rankings:  # the first ranking that gives a chunk a sentence supplies it
        for h in hits:
            if h.snippets and h.chunk_id not in snippet:
                snippet[h.chunk_id] = h.snippets[0]
    scores: dict[str, float] = {}
    for hits, weight in zip(rankings, weights, strict=True):
        for rank, h in enumerate(hits, 1):
            scores[h.chunk_id] = scores.get(h.chunk_id, 0.0) + weight / (SEARCH_RRF_K + rank)
    ideal = sum(weight / (SEARCH_RRF_K + 1) for weight in weights)
    return dict(sorted(scores.items(), key=lambda pair: -pair[1])), snippet, ideal


def search_documents(index: ReadIndex, query: str, top_k: int = 10,
                     depth: int = SEARCH_DEPTH) -> list[DocumentHit]:
    """Documents for a query, one entry per document (its best chunk), ranked as
    :func:`best_ranking` ranks chunks: the multi-hop ranking in a corpus of entity pages,
    :func:`passage_ranking` otherwise (BENCHMARKS.md §18). Scores are the fused score over the most
    a chunk could get (over the first chunk's for the multi-hop ranking)."""
    snippet: dict[str, str] = {}
    if entity_pages(index):
        scores = best_ranking(index, query)[0]
        ideal = next(iter(scores.values()), 1.0)
    else:
        scores, snippet, ideal = passage_ranking(index, query, depth)
    candidates = list(scores)[:max(depth, 4 * top_k)]
    chunks = {c.chunk_id: c for c in index.read(candidates).chunks}
    best: dict[str, str] = {}
    for chunk_id in candidates:
        if chunk_id in chunks:
            best.setdefault(chunks[chunk_id].doc_id, chunk_id)
            if len(best) >= top_k:
                break
    titles = {d.doc_id: d.title for d in index.document_list(list(best))}
    out = []
    for doc_id, chunk_id in best.items():
        chunk = chunks[chunk_id]
        text = snippet.get(chunk_id) or (chunk.sentences[0].text if chunk.sentences
                                         else chunk.text[:300])
        at = chunk.text.find(text)
        start = chunk.start + at if at >= 0 else -1
        out.append(DocumentHit(doc_id, titles.get(doc_id, doc_id), chunk_id,
                               round(scores[chunk_id] / ideal, 4), text, start,
                               start + len(text) if start >= 0 else -1))
    return out
