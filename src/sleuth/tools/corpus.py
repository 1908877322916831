"""The A-RAG hierarchical retrieval tools: keyword_search, semantic_search, chunk_read."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field

from sleuth.retrieval import best_ranking
from sleuth.text.lexicon import stem, words
from sleuth.text.querytext import content_words, identifier_terms
from sleuth.text.tokens import count_tokens
from sleuth.tools.base import QUERY, TOP_K, ToolContext, ToolResult, tool
from sleuth.types import Chunk, Hit

MAX_SNIPPETS = 5


def _as_list(value: object) -> object:
    """Small models often send one string where a list is expected: accept it."""
    return [value] if isinstance(value, str) else value


StrList = BeforeValidator(_as_list)


def _format_hits(ctx: ToolContext, hits: Sequence[Hit], header: str) -> ToolResult:
    ctx.tracker.found({hit.chunk_id: hit.score for hit in hits})
    if ctx.full_chunks:
        by_id = {c.chunk_id: c for c in ctx.index.read([h.chunk_id for h in hits]).chunks}
        blocks = []
        for h in hits:
            if ctx.tracker.was_read(h.chunk_id):
                blocks.append(f"=== chunk {h.chunk_id} (score: {h.score:g}): shown before, "
                              "not repeated ===")
            elif h.chunk_id in by_id:
                blocks.append(_chunk_block(by_id[h.chunk_id], score=h.score))
                ctx.tracker.mark_read(h.chunk_id)
        text = header + "\n\n" + "\n\n".join(blocks)
        return ToolResult(text, {"hits": [h.to_dict() for h in hits]})
    lines = [header]
    for rank, hit in enumerate(hits, 1):
        read = " (already read)" if ctx.tracker.was_read(hit.chunk_id) else ""
        lines.append(f"[{rank}] chunk_id: {hit.chunk_id} | score: {hit.score:g} | "
                     f"title: {hit.title}{read}")
        for snippet in hit.snippets[:MAX_SNIPPETS]:
            lines.append(f"    - {' '.join(snippet.split())}")
        if len(hit.snippets) > MAX_SNIPPETS:
            lines.append(f"    (+{len(hit.snippets) - MAX_SNIPPETS} more matching sentences)")
    return ToolResult("\n".join(lines), {"hits": [h.to_dict() for h in hits]})


@tool(command="search keyword")
def keyword_search(
    ctx: ToolContext,
    keywords: Annotated[list[str], StrList, Field(min_length=1, max_length=10), QUERY],
    top_k: Annotated[int, Field(ge=1, le=20), TOP_K] = 5,
    mode: Literal["word", "substring"] = "word",
) -> ToolResult:
    """Exact keyword search over the corpus. Best for names, entities, dates, numbers and
    technical terms you expect to appear verbatim. Matching is case-insensitive on whole
    words; each chunk is scored by the sum over keywords of (occurrences x keyword length),
    so longer, more specific keywords weigh more. Returns chunk ids with the sentences that
    contain a keyword; read promising chunks in full with chunk_read.

    Args:
        keywords: Keywords or short phrases, e.g. ["Marie Curie", "Nobel Prize"]. Prefer
            specific terms over common words.
        top_k: Number of chunks to return (1-20).
        mode: "word" matches whole words only (default); "substring" also matches inside
            words.
    """
    hits = ctx.index.keyword_search(keywords, top_k=top_k, mode=mode)
    if not hits:
        return ToolResult(
            f"No chunk contains any of {keywords}. Try other spellings, fewer or shorter "
            "keywords, or semantic_search.",
            {"hits": []},
        )
    return _format_hits(ctx, hits, f"Found {len(hits)} chunks for keywords {keywords}:")


@tool(command="search semantic")
def semantic_search(
    ctx: ToolContext,
    query: Annotated[str, Field(min_length=1, max_length=2000), QUERY],
    top_k: Annotated[int, Field(ge=1, le=20), TOP_K] = 5,
) -> ToolResult:
    """Meaning-based search over the corpus. Best for concepts, descriptions and questions
    whose exact wording is unknown. Compares the query with every sentence of the corpus by
    embedding similarity and ranks chunks by their best-matching sentence. Returns chunk ids
    with the matched sentences; read promising chunks in full with chunk_read.

    Args:
        query: A natural-language description of the information you need.
        top_k: Number of chunks to return (1-20).
    """
    hits = ctx.index.semantic_search(query, top_k=top_k)
    if not hits:
        return ToolResult("The index holds no sentences to search.", {"hits": []})
    return _format_hits(ctx, hits, f"Top {len(hits)} chunks for query {query!r}:")


def _chunk_block(chunk: Chunk, *, score: float | None = None) -> str:
    links = f"prev: {chunk.prev_id or 'none'}, next: {chunk.next_id or 'none'}"
    scored = f", score: {score:g}" if score is not None else ""
    return f"=== chunk {chunk.chunk_id} (document {chunk.doc_id}{scored}; {links}) ===\n" \
           f"{chunk.text}"


@tool(command="read")
def chunk_read(
    ctx: ToolContext,
    chunk_ids: Annotated[list[str], StrList, Field(min_length=1, max_length=10)],
    adjacent: Annotated[int, Field(ge=0, le=2)] = 0,
) -> ToolResult:
    """Read the full text of chunks found by keyword_search or semantic_search. Use it on
    the most promising chunk ids; set adjacent=1 to also read the chunks just before and
    after each one for surrounding context. Chunks you have already read are not repeated.

    Args:
        chunk_ids: Chunk ids exactly as returned by the search tools.
        adjacent: Also read this many neighbouring chunks on each side (0-2).
    """
    result = ctx.index.read(chunk_ids, adjacent=adjacent)
    blocks: list[str] = []
    tokens = 0
    fresh: list[str] = []
    repeated: list[str] = []
    for chunk in result.chunks:
        if ctx.tracker.was_read(chunk.chunk_id):
            repeated.append(chunk.chunk_id)
            blocks.append(f"=== chunk {chunk.chunk_id}: this chunk has been read before "
                          "(content not repeated) ===")
            continue
        ctx.tracker.mark_read(chunk.chunk_id)
        fresh.append(chunk.chunk_id)
        block = _chunk_block(chunk)
        tokens += count_tokens(block)
        blocks.append(block)
    if result.unknown:
        blocks.append(f"Unknown chunk ids: {', '.join(result.unknown)}. Use ids exactly as "
                      "returned by keyword_search or semantic_search.")
    data = {
        "chunks": [{"chunk_id": c.chunk_id, "doc_id": c.doc_id, "text": c.text,
                    "prev_id": c.prev_id, "next_id": c.next_id} for c in result.chunks],
        "read": fresh, "already_read": repeated, "unknown": result.unknown,
    }
    return ToolResult("\n\n".join(blocks), data, tokens)


@tool
def naive_embedding_search(
    ctx: ToolContext,
    query: Annotated[str, Field(min_length=1, max_length=2000), QUERY],
    top_k: Annotated[int, Field(ge=1, le=10), TOP_K] = 5,
) -> ToolResult:
    """Search the corpus by meaning and get the full text of the most relevant chunks.
    Chunks are ranked by the embedding similarity of their best-matching sentence to the
    query. Search again with a different query if the results do not answer the question.

    Args:
        query: A natural-language description of the information you need.
        top_k: Number of chunks to return (1-10).
    """
    hits = ctx.index.semantic_search(query, top_k=top_k)
    if not hits:
        return ToolResult("The index holds no sentences to search.", {"hits": []})
    full = ToolContext(ctx.index, ctx.tracker, full_chunks=True)
    return _format_hits(full, hits, f"Top {len(hits)} chunks for query {query!r}:")


@tool(command="search hybrid")
def hybrid_search(
    ctx: ToolContext,
    query: Annotated[str, Field(min_length=1, max_length=2000), QUERY],
    top_k: Annotated[int, Field(ge=1, le=10), TOP_K] = 5,
) -> ToolResult:
    """Search with Sleuth's strongest ranking and get the text of the best chunks (of a long
    chunk, its sentences that match the query best, with its id for chunk_read). On pages
    about one entity each: exact keyword search for each name in the query, meaning-based
    search, a second hop to the entity the question goes through, and the knowledge graph
    when one is built; on longer documents: BM25, meaning-based search and the documents
    the query names by title. Ask it the whole question; chunks already shown are not
    repeated.

    Args:
        query: The question, or a description of the information you need.
        top_k: Number of chunks to return (1-10).
    """
    scores, method = best_ranking(ctx.index, query)
    top = dict(list(scores.items())[:top_k])
    if not top:
        return ToolResult(f"No chunks match {query!r}.", {"hits": [], "method": method})
    best = next(iter(top.values()))
    text, hits = hybrid_passages(ctx, query, {c: round(f / best, 3) for c, f in top.items()},
                                 method)
    return ToolResult(text, {"hits": hits, "method": method})


def hybrid_passages(ctx: ToolContext, query: str, ranked: Mapping[str, float], method: str,
                    whole: int = 0) -> tuple[str, list[dict[str, object]]]:
    """hybrid_search's text for the chunks ``ranked`` (id: score, best first) and its hits: a
    chunk shown before by its id only, the ``whole`` best of the others whole (up to
    :data:`WHOLE_CHARS`: the default agent's first answer, BENCHMARKS §32), the rest by the
    passages of :func:`lead_block`."""
    chunks = {c.chunk_id: c for c in ctx.index.read(list(ranked)).chunks}
    weights = sentence_weights(chunks.values())
    blocks: list[str] = []
    hits: list[dict[str, object]] = []
    ctx.tracker.found({c: score for c, score in ranked.items() if c in chunks})
    for chunk_id, score in ranked.items():
        chunk = chunks.get(chunk_id)
        if chunk is None:
            continue
        hits.append({"chunk_id": chunk_id, "doc_id": chunk.doc_id, "score": score})
        if ctx.tracker.was_read(chunk_id):
            blocks.append(f"=== chunk {chunk_id} (score: {score:g}): shown before, not "
                          "repeated ===")
            continue
        chars, whole = (WHOLE_CHARS if whole > 0 else LEAD_CHARS), whole - 1
        blocks.append(lead_block(ctx, chunk, score, chars=chars, query=query, weights=weights))
    text = f"Top {len(hits)} chunks ({method} ranking) for {query!r}:\n\n" + "\n\n".join(blocks)
    return text, hits


LEAD_CHARS = 800  # about 200 tokens of each chunk in hybrid_search's results
WHOLE_CHARS = 6000  # of a chunk shown whole (a manual's chunk is 1,000 tokens at most)


def lead_block(ctx: ToolContext, chunk: Chunk, score: float | None = None,
               chars: int = LEAD_CHARS, query: str | None = None,
               weights: Mapping[str, float] | None = None) -> str:
    """The chunk's text, or up to ``chars`` of it with a pointer to the rest (a small
    model's prompt stays short; the rest is one chunk_read away): its first sentences, or,
    for a ``query``, the few runs of sentences that cover most of it (:func:`_passages`; a
    manual's chunk holds a dozen settings, and the one asked about is rarely the first, its
    default two sentences after its name). Only a chunk shown whole counts as read."""
    if len(chunk.text) <= chars:
        ctx.tracker.mark_read(chunk.chunk_id)
        return _chunk_block(chunk, score=score)
    spans = _passages(chunk, query, chars, weights) if query else []
    if not spans:
        spans = [(0, chunk.text.rfind(". ", 0, chars) + 1 or chars)]
    pieces = [("[...] " if start else "") + chunk.text[start:end].strip()
              for start, end in spans]
    shown = replace(chunk, text=" ".join(pieces))
    rest = count_tokens(chunk.text) - sum(count_tokens(chunk.text[a:b]) for a, b in spans)
    return (f"{_chunk_block(shown, score=score)}\n[... {max(rest, 0)} more tokens: "
            f"chunk_read {chunk.chunk_id}]")


PASSAGES = 2  # runs of sentences a long chunk is shown by, for a query
FADE = 0.7  # what a word of the query counts for in each later sentence of a run


def sentence_weights(chunks: Iterable[Chunk]) -> dict[str, float]:
    """Each word stem's rarity among the sentences of ``chunks``, ``log(1 + n / df)``: what
    tells one sentence of a search's results from the others ("random_page_cost" weighs
    more than "default", which a manual's settings chapter says in every paragraph)."""
    counts: Counter[str] = Counter()
    n = 0
    for chunk in chunks:
        texts = [s.text for s in chunk.sentences] or [chunk.text]
        counts.update(w for text in texts for w in sentence_stems(text))
        n += len(texts)
    return {word: math.log(1 + n / df) for word, df in counts.items()}


@lru_cache(maxsize=4096)  # a search's sentences: weighed, then matched to the query
def sentence_stems(text: str) -> frozenset[str]:
    """The crude stems of every word of ``text``, function words too."""
    return frozenset(stem(w) for w in words(text))


def _passages(chunk: Chunk, query: str, chars: int,
              weights: Mapping[str, float] | None = None) -> list[tuple[int, int]]:
    """Up to :data:`PASSAGES` runs of whole sentences of ``chunk.text`` (offsets in it),
    none longer than ``chars // PASSAGES`` but a run of one long sentence, that cover most
    of the query: its content words weighted by ``weights`` (:func:`sentence_weights`; the
    chunk's own when None), an identifier of the query ("random_page_cost",
    "pg_stat_statements.max") 3, each counted once, where it first appears in the run,
    and less the later that is (:data:`FADE` a sentence): the best run starts where the
    query does ("random_page_cost (floating point)", then its default), not at the
    sentences before it. The best run, then the best that does not overlap it; in text
    order, ``[]`` when no sentence shares a word with the query."""
    weights = weights if weights is not None else sentence_weights([chunk])
    wanted = {stem(w) for w in content_words(query)}
    exact = [t.lower() for t in identifier_terms(query)]
    spans = [(s.start - chunk.start, s.end - chunk.start) for s in chunk.sentences]
    found = [sentence_stems(s.text) & wanted for s in chunk.sentences]
    named = [{t for t in exact if t in s.text.lower()} for s in chunk.sentences]
    width = chars // PASSAGES
    runs = []
    for first in range(len(spans)):
        gained: dict[str, float] = {}
        last = first - 1
        while last + 1 < len(spans) and (last < first or
                                         spans[last + 1][1] - spans[first][0] <= width):
            last += 1
            fade = FADE ** (last - first)
            for w in found[last]:
                gained.setdefault(w, fade * weights.get(w, 1.0))
            for t in named[last]:
                gained.setdefault("=" + t, fade * 3.0)
        score = math.fsum(gained.values())  # exact: the same whatever the set order
        if score > 0:
            runs.append((-score, first, last))
    chosen: list[tuple[int, int]] = []
    for _, first, last in sorted(runs):
        if all(last < a or first > b for a, b in chosen):
            chosen.append((first, last))
            if len(chosen) == PASSAGES:
                break
    return [(spans[a][0], min(spans[b][1], spans[a][0] + 2 * width)) for a, b in sorted(chosen)]


CORPUS_TOOLS = (keyword_search, semantic_search, chunk_read, naive_embedding_search,
                hybrid_search)
