"""Ranking written once, above the backends: what every store returns for a search.

A backend finds candidates its own way (FTS5 postings and memory-mapped vectors, SQL over
GIN and HNSW indexes) and hands them here to be scored, ranked and turned into hits, so
the backends agree to the last digit:

- exact keyword scores: counts from postings for whole-word single-token keywords, the
  rest re-scored in the chunk text (:func:`split_keywords`, :func:`rescore`), ranked with
  ties by chunk id (:func:`sleuth.store.keyword.rank`);
- BM25 (k1 1.2, b 0.75): the query's tokens, the idf and the per-term score
  (:func:`query_tokens`, :func:`bm25_idf`, :func:`bm25_term`) over the visible chunks;
- best-sentence cosine: :func:`top_chunks_by_best_sentence`;
- access: which documents an :class:`~sleuth.text.access.Access` may read
  (:func:`visible_documents`), applied before anything is ranked or counted;
- hits: :func:`keyword_hits`, :func:`bm25_hits` and :func:`semantic_hits` pick the
  snippets the same way everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

import numpy as np

from sleuth.store import keyword as kw
from sleuth.text.access import Access, restricted
from sleuth.types import Chunk, Hit

K1, B = 1.2, 0.75  # BM25 parameters
K = TypeVar("K")  # a backend's chunk key


def visible_documents(document_access: Mapping[str, tuple[str, tuple[str, ...]]],
                      access: Access | None) -> frozenset[str] | None:
    """The documents of ``document_access`` (``doc_id`` → collection, groups) that
    ``access`` may read; ``None`` when it may read all."""
    limited = restricted(access)
    if limited is None:
        return None
    return frozenset(doc_id for doc_id, (collection, groups) in document_access.items()
                     if limited.allows(collection, groups))


def split_keywords(parsed: Sequence[kw.Keyword], max_token_chars: int
                   ) -> tuple[list[kw.Keyword], list[kw.Keyword]]:
    """``(counted, rescored)``: whole-word keywords that are one token (shorter than the
    backend stores tokens) are counted exactly from postings, since their matches are
    exactly the tokens equal to them; the rest are re-scored in the text of candidates."""
    def countable(k: kw.Keyword) -> bool:
        return not k.substring and len(k.text) < max_token_chars and k.tokens == [k.text]

    return [k for k in parsed if countable(k)], [k for k in parsed if not countable(k)]


def rescore(texts: Iterable[tuple[K, str]], keywords: Sequence[kw.Keyword],
            scores: dict[K, float]) -> None:
    """Add the exact scores of ``keywords`` in each candidate ``(key, text)`` to ``scores``
    (candidates without a match are left out)."""
    for key, text in texts:
        score = kw.score_text(text.lower(), keywords)
        if score > 0:
            scores[key] = scores.get(key, 0.0) + score


def query_tokens(terms: Sequence[str], max_token_chars: int) -> list[str]:
    """BM25's query: the distinct lowercased tokens of ``terms``, cut as the backend cuts
    stored tokens."""
    return list(dict.fromkeys(
        t[:max_token_chars] for term in terms for t in kw.tokenize(term.lower())))


def bm25_idf(total: int, df: int) -> float:
    """The idf of a term in ``df`` of ``total`` chunks (FTS5's, never negative)."""
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


def bm25_term(idf: float, tf: int, length: float, average: float) -> float:
    """One term's BM25 score in a chunk of ``length`` words holding it ``tf`` times."""
    return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))


def keyword_hits(ranked: Iterable[tuple[str, float]], chunks: Mapping[str, Chunk],
                 titles: Mapping[str, str], parsed: Sequence[kw.Keyword]) -> list[Hit]:
    """Hits of ranked chunk ids; the snippets are the sentences holding a keyword."""
    hits = []
    for chunk_id, score in ranked:
        chunk = chunks[chunk_id]
        snippets = kw.matching_sentences([s.text for s in chunk.sentences], parsed)
        hits.append(Hit(chunk_id, chunk.doc_id, titles.get(chunk.doc_id, ""), score,
                        tuple(snippets)))
    return hits


def bm25_hits(ranked: Iterable[tuple[str, float]], chunks: Mapping[str, Chunk],
              titles: Mapping[str, str], tokens: Sequence[str]) -> list[Hit]:
    """Hits of BM25-ranked chunk ids (a chunk deleted meanwhile is left out); the snippets
    are the sentences holding a term, those with the most distinct terms first."""
    parsed = kw.parse_keywords(tokens)
    hits = []
    for chunk_id, score in ranked:
        chunk = chunks.get(chunk_id)
        if chunk is None:
            continue
        snippets = sorted(
            kw.matching_sentences([s.text for s in chunk.sentences], parsed),
            key=lambda text: -sum(1 for k in parsed if k.count(text.lower())))
        hits.append(Hit(chunk_id, chunk.doc_id, titles.get(chunk.doc_id, ""),
                        round(float(score), 6), tuple(snippets)))
    return hits


def semantic_hits(ranked: Sequence[tuple[int, float, list[int]]],
                  meta: Mapping[int, tuple[str, str, str, str, int]],
                  span: Callable[[int], tuple[int, int]]) -> list[Hit]:
    """Hits of :func:`top_chunks_by_best_sentence`'s ranking: ``meta`` holds each chunk
    key's (chunk_id, doc_id, title, text, start), ``span`` a sentence row's offsets in the
    document; the snippets are the chunk's best sentences."""
    hits = []
    for key, score, rows in ranked:
        chunk_id, doc_id, title, text, start = meta[key]
        snippets = []
        for row in rows:
            s_start, s_end = span(row)
            snippets.append(text[s_start - start : s_end - start])
        hits.append(Hit(chunk_id, doc_id, title, round(score, 6), tuple(snippets)))
    return hits


def top_chunks_by_best_sentence(
    scores: np.ndarray, chunk_of: np.ndarray, top_k: int, per_chunk: int = 3
) -> list[tuple[int, float, list[int]]]:
    """Exact chunk ranking by best sentence score.

    ``scores[i]`` is sentence row i's cosine (``-inf`` for dead rows) and ``chunk_of[i]`` its
    chunk key. Returns (chunk key, best score, rows of its top sentences) for the top chunks.
    Scanning sentences in descending score order, the first ``top_k`` distinct chunks met are
    exactly the top chunks by maximum; the candidate pool grows until it holds enough.
    """
    n = len(scores)
    pool = min(n, max(64, top_k * 16))
    while True:
        part = np.argpartition(-scores, pool - 1)[:pool] if pool < n else np.arange(n)
        order = part[np.argsort(-scores[part], kind="stable")]
        picked: dict[int, list[int]] = {}
        for row in order:
            if not np.isfinite(scores[row]):
                break
            key = int(chunk_of[row])
            if key in picked:
                if len(picked[key]) < per_chunk:
                    picked[key].append(int(row))
            elif len(picked) < top_k:
                picked[key] = [int(row)]
        if len(picked) >= top_k or pool >= n:
            return [(key, float(scores[rows[0]]), rows) for key, rows in picked.items()]
        pool = min(n, pool * 4)
