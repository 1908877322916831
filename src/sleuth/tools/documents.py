"""The AgenticRAG document tools: search, find, open, summarize.

``search`` finds documents (several queries in one call, merged and deduplicated) and hands
out reference ids; ``find`` and ``open`` work inside one referenced document through its
line-numbered view (:mod:`sleuth.text.docview`); ``summarize`` records notes and the references
to keep when the agent loop compacts its context.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from sleuth.errors import ToolError, ToolNotFound
from sleuth.retrieval import DocumentHit, search_documents
from sleuth.text.docview import DocumentView
from sleuth.text.ids import is_ref
from sleuth.text.tokens import count_tokens
from sleuth.tools.base import QUERY, TOP_K, Arg, ToolContext, ToolResult, tool
from sleuth.tools.corpus import StrList
from sleuth.types import Document, Reference

MAX_QUERIES = 5
SNIPPET_LINES = 4
SNIPPET_LINE_CHARS = 300
PASSAGE_BEFORE, PASSAGE_AFTER = 2, 4  # lines of context around a find match
MORE_LINES_LISTED = 15
CLI_SESSION = "cli"  # the session whose reference ids `sleuth search/find/open` share
_RECORD_TYPES = {"corpus", "chunks", "json", "jsonl"}


def resolve(ctx: ToolContext, ref: str) -> tuple[Reference, Document]:
    """The reference (or plain document id) ``ref`` and its document; a ToolError names
    what the model can use instead."""
    key = ref.strip().strip("[]`'\" ")
    found = ctx.tracker.refs.get(key)
    doc = ctx.index.document(found.doc_id if found else key)
    if doc is None:
        known = list(ctx.tracker.refs)
        hint = (f"known ids: {', '.join(known[-8:])}" if known
                else "run search first to get reference ids")
        raise ToolNotFound(f"unknown reference id {ref!r}; use a reference id from search "
                        f"results ({hint})")
    return found or Reference(key, doc.doc_id, doc.title), doc


def file_label(doc: Document) -> tuple[str, str]:
    """(file name, file type) as search results show them."""
    name = Path(doc.path).name if doc.path else doc.doc_id
    if doc.type in _RECORD_TYPES and doc.path:
        name = f"{name} (record {doc.doc_id})"
    return name, doc.type


@dataclass
class _Merged:
    hit: DocumentHit
    queries: list[int]


@tool(command="search docs", session=CLI_SESSION)
def search(
    ctx: ToolContext,
    queries: Annotated[list[str], StrList, Field(min_length=1, max_length=MAX_QUERIES), QUERY],
    top_k: Annotated[int, Field(ge=1, le=10), TOP_K] = 10,
) -> ToolResult:
    """Search the whole corpus for documents. Send up to 5 reformulations of what you need
    in one call (different wordings, names, synonyms); results of all queries are merged and
    deduplicated by document. Each result has a reference id (like turn1search3), the
    title, file name and type, the page and line numbers of its best passage, a
    line-numbered snippet and a relevance score. Use the reference id with find (search
    inside that document) or open (read it from a line). Reuse earlier results instead of
    searching again.

    Args:
        queries: 1 to 5 search queries, e.g. ["3M capital expenditure 2018",
            "purchases of property, plant and equipment"].
        top_k: Results per query (1-10).
    """
    queries = [q.strip() for q in queries if q.strip()]
    if not queries:
        raise ToolError("search needs at least one non-empty query")
    merged: dict[str, _Merged] = {}
    for number, query in enumerate(queries, 1):
        hits = search_documents(ctx.index, query, top_k=top_k)
        ctx.tracker.found({hit.chunk_id: hit.score for hit in hits})
        for hit in hits:
            entry = merged.get(hit.doc_id)
            if entry is None:
                merged[hit.doc_id] = _Merged(hit, [number])
            else:
                entry.queries.append(number)
                if hit.score > entry.hit.score:
                    entry.hit = hit
    if not merged:
        return ToolResult(f"No documents match {queries}. Try other words.", {"results": []})
    ranked = sorted(merged.values(), key=lambda m: (-m.hit.score, -len(m.queries)))
    lines = [f"Search results for {len(queries)} "
             f"quer{'y' if len(queries) == 1 else 'ies'} ({len(ranked)} "
             f"document{'' if len(ranked) == 1 else 's'}):"]
    lines += [f"  q{i}: {q}" for i, q in enumerate(queries, 1)]
    results = []
    for entry in ranked:
        hit = entry.hit
        doc = ctx.index.document(hit.doc_id)
        if doc is None:
            continue
        ref = ctx.tracker.new_ref(hit.doc_id, hit.title, hit.chunk_id, hit.start, hit.end,
                                  hit.score)
        view = DocumentView(doc)
        name, kind = file_label(doc)
        where = view.where(hit.start, hit.end) if hit.start >= 0 else ""
        matched = ", ".join(f"q{i}" for i in entry.queries)
        lines.append(f"\n[{ref.ref}] {doc.title} | file: {name} | type: {kind}"
                     f"{' | ' + where if where else ''} | score: {hit.score:.3f} | "
                     f"matched: {matched}")
        lines.append(_snippet(view, hit))
        results.append({"ref": ref.ref, "doc_id": doc.doc_id, "title": doc.title,
                        "file": name, "type": kind, "chunk_id": hit.chunk_id,
                        "where": where, "page": view.page_of(hit.start) if hit.start >= 0
                        else None, "score": hit.score, "snippet": hit.snippet,
                        "queries": entry.queries})
    return ToolResult("\n".join(lines), {"queries": queries, "results": results})


def _snippet(view: DocumentView, hit: DocumentHit) -> str:
    """The snippet's lines, numbered; on long lines only the part around the snippet."""
    if hit.start < 0:
        return "    " + " ".join(hit.snippet.split())[:SNIPPET_LINE_CHARS * 2]
    first = view.line_of(hit.start)
    last = min(view.line_of(max(hit.start, hit.end - 1)), first + SNIPPET_LINES - 1)
    out = []
    for line in view.lines(first, last):
        begin = view.line_start(line.number)
        lo, hi = max(0, hit.start - begin), min(len(line.text), hit.end - begin)
        lo = max(0, min(lo, hi - SNIPPET_LINE_CHARS))
        part = " ".join(line.text[lo:lo + SNIPPET_LINE_CHARS].split())
        head = "…" if lo > 0 else ""
        tail = "…" if lo + SNIPPET_LINE_CHARS < len(line.text) else ""
        out.append(f"    {line.number}: {head}{part}{tail}")
    return "\n".join(out)


@tool(command="find", session=CLI_SESSION)
def find(
    ctx: ToolContext,
    ref: Annotated[str, Field(min_length=1, max_length=200)],
    patterns: Annotated[list[str], StrList, Field(min_length=1, max_length=10), QUERY],
    mode: Annotated[Literal["lexical", "semantic"], Arg(flag="semantic")] = "lexical",
) -> ToolResult:
    """Search inside one document from the search results. lexical mode (default) finds
    case-insensitive occurrences of each pattern, e.g. a metric name or a term; semantic
    mode finds the document's sentences closest in meaning to each pattern. Returns up to 2
    line-numbered passages per pattern, plus the line numbers of further matches, so you can
    open the document right there.

    Args:
        ref: A reference id from search results, e.g. "turn1search2".
        patterns: Words or phrases to look for, e.g. ["capital expenditure",
            "property, plant and equipment"].
        mode: "lexical" (exact, case-insensitive) or "semantic" (by meaning).
    """
    reference, doc = resolve(ctx, ref)
    view = DocumentView(doc)
    cap = ctx.output_cap(ctx.index.settings.agent.find_token_cap)
    shown: set[tuple[int, int]] = set()
    blocks = [f"[{reference.ref}] {doc.title}: find {mode} in {view.line_count} lines"]
    tokens = count_tokens(blocks[0])
    found_any = False
    truncated = False
    matches_data = []
    for pattern in (p.strip() for p in patterns):
        if not pattern:
            continue
        lines = (_lexical_lines(doc, view, pattern) if mode == "lexical"
                 else _semantic_lines(ctx, doc, view, pattern))
        matches_data.append({"pattern": pattern, "lines": lines[:50]})
        if not lines:
            blocks.append(f'\npattern "{pattern}": no match')
            continue
        found_any = True
        blocks.append(f'\npattern "{pattern}": {len(lines)} match'
                      f'{"es" if len(lines) != 1 else ""}')
        passages = 0
        for line in lines:
            if passages == 2:
                break
            span = (max(0, line - PASSAGE_BEFORE), line + PASSAGE_AFTER)
            if any(a <= line <= b for a, b in shown):
                continue  # already shown in full (deduplicated)
            text = view.render(*span, max_chars=SNIPPET_LINE_CHARS * 2)
            cost = count_tokens(text)
            if tokens + cost > cap:
                truncated = True
                break
            shown.add(span)
            tokens += cost
            blocks.append(text)
            passages += 1
        rest = [n for n in lines if not any(a <= n <= b for a, b in shown)]
        if rest:
            listed = ", ".join(str(n) for n in rest[:MORE_LINES_LISTED])
            more = f" (+{len(rest) - MORE_LINES_LISTED} more)" if len(rest) > \
                MORE_LINES_LISTED else ""
            blocks.append(f"  more matches at lines {listed}{more}")
        if truncated:
            break
    if truncated:
        blocks.append(f"\n(output cut at ≈{cap} tokens; use fewer patterns or open)")
    if not found_any:
        blocks.append("\nNo pattern matched. Try other wordings, mode=\"semantic\", or open.")
    text = "\n".join(blocks)
    return ToolResult(text, {"ref": reference.ref, "doc_id": doc.doc_id, "mode": mode,
                             "matches": matches_data, "truncated": truncated})


def _lexical_lines(doc: Document, view: DocumentView, pattern: str) -> list[int]:
    """Lines holding a case-insensitive occurrence of ``pattern`` (title line excluded)."""
    lowered, needle = doc.text.lower(), pattern.lower()
    out: list[int] = []
    at = lowered.find(needle, len(doc.title) + 1)
    while at != -1:
        line = view.line_of(at)
        if not out or out[-1] != line:
            out.append(line)
        at = lowered.find(needle, at + max(1, len(needle)))
    return out


def _semantic_lines(ctx: ToolContext, doc: Document, view: DocumentView,
                    pattern: str) -> list[int]:
    """Lines of the document's sentences most similar to ``pattern``, best first."""
    hits = ctx.index.semantic_search(pattern, top_k=5, doc_ids=[doc.doc_id])
    chunks = {c.chunk_id: c for c in ctx.index.read([h.chunk_id for h in hits]).chunks}
    ranked: list[tuple[float, int]] = []
    for hit in hits:
        chunk = chunks.get(hit.chunk_id)
        for rank, sentence in enumerate(hit.snippets):
            at = chunk.text.find(sentence) if chunk else -1
            if chunk is not None and at >= 0:
                ranked.append((hit.score - 0.001 * rank, view.line_of(chunk.start + at)))
    ranked.sort(key=lambda item: -item[0])
    return list(dict.fromkeys(line for _, line in ranked))


@tool(command="open", session=CLI_SESSION)
def open(  # noqa: A001  (the tool's name in the AgenticRAG paper)
    ctx: ToolContext,
    ref: Annotated[str, Field(min_length=1, max_length=200)],
    line: Annotated[int, Field(ge=0)] = 0,
) -> ToolResult:
    """Read a document from the search results as numbered lines, a window at a time
    (1,800 lines by default), starting at line 0 or at a line you choose (e.g. near a match
    from find or a snippet). The header says which lines you are viewing of how many; open
    again with a later line to continue.

    Args:
        ref: A reference id from search results, e.g. "turn1search2".
        line: The first line to show (0 = the beginning).
    """
    reference, doc = resolve(ctx, ref)
    view = DocumentView(doc)
    total = view.line_count
    if line >= total:
        raise ToolError(f"line {line} is past the end of {reference.ref} ({total} lines, "
                        f"numbered 0–{total - 1}); open a line between 0 and {total - 1}")
    window = ctx.index.settings.agent.open_window
    cap = ctx.output_cap(ctx.index.settings.agent.token_budget // 4)
    last = min(total - 1, line + window - 1)
    rendered = view.rendered_lines(line, last)
    cut = False
    if count_tokens("\n".join(rendered)) > cap:  # rare: very long lines, small contexts
        tokens = 0
        for i, text in enumerate(rendered):
            tokens += count_tokens(text)
            if i and tokens > cap:
                rendered, last, cut = rendered[:i], line + i - 1, True
                break
    name, kind = file_label(doc)
    pages = view.pages_between(view.line_start(line), view.line_start(last) + 1)
    where = f", pages {pages[0]}–{pages[-1]}" if len(pages) > 1 else \
        (f", page {pages[0]}" if pages else "")
    header = (f"[{reference.ref}] {doc.title} ({name}, {kind}{where})\n"
              f"Viewing lines [{line}–{last}] of {total} lines")
    if cut:
        header += f" (window cut at ≈{cap} tokens)"
    if last < total - 1:
        header += f"; open line {last + 1} to continue"
    text = header + "\n" + "\n".join(rendered)
    begin, end = view.line_start(line), view.line_start(last) + len(view.line_text(last))
    shown = [cid for cid, start, stop in ctx.index.chunk_spans(doc.doc_id)
             if start < end and stop > begin]
    for chunk_id in shown:  # the window showed these chunks: they count as read
        ctx.tracker.mark_read(chunk_id)
    return ToolResult(text, {"ref": reference.ref, "doc_id": doc.doc_id, "first": line,
                             "last": last, "lines": total, "chunks": shown})


@tool
def summarize(
    ctx: ToolContext,
    notes: Annotated[str, Field(min_length=1, max_length=20_000)],
    keep_refs: Annotated[list[str], StrList, Field(max_length=50)] = [],  # noqa: B006
) -> ToolResult:
    """Free context space when the conversation gets long: write down what you have found
    so far (facts, numbers, where they are) and list the reference ids or chunk ids whose
    tool output must stay visible. Tool output about other references is then removed from
    the conversation; your notes and every reference id remain valid.

    Args:
        notes: Your findings so far, with the reference ids they come from.
        keep_refs: Reference ids (e.g. "turn1search2") or chunk ids to keep in full.
    """
    keep = [r.strip().strip("[]`'\" ") for r in keep_refs if r.strip()]
    unknown = [r for r in keep if not is_ref(r) and r not in ctx.tracker.refs
               and not ctx.tracker.was_read(r) and r not in ctx.tracker.seen_scores]
    text = (f"Notes recorded. Keeping the output of: {', '.join(keep) or 'nothing'}; other "
            "tool output is removed from the conversation.")
    if unknown:
        text += f" (not ids seen in this session: {', '.join(unknown)})"
    return ToolResult(text, {"notes": notes, "keep_refs": keep}, tokens=0)


DOCUMENT_TOOLS = (search, find, open, summarize)
