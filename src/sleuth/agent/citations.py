"""Parse the ids an answer cites (chunk ids, reference ids, document ids), and the relevance
the model gave each."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from sleuth.docview import DocumentView
from sleuth.types import Citation

if TYPE_CHECKING:
    from sleuth.agent.tracker import Tracker
    from sleuth.index import Index

_BRACKETS = re.compile(r"\[([^\[\]\n]{1,400})\]")
_RELEVANCE_LINE = re.compile(r"^\s*\**relevance\**\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
_PAIR = re.compile(r"([^\s,;=:()]+(?:\s*#\s*\d+)?)\s*[=:(]\s*([01](?:\.\d+)?|\.\d+)\)?")


def split_answer(text: str) -> tuple[str, dict[str, float]]:
    """The answer without its ``Relevance:`` line, and the scores that line gave."""
    scores: dict[str, float] = {}
    for match in _RELEVANCE_LINE.finditer(text):
        for cid, value in _PAIR.findall(match.group(1)):
            scores[cid.strip("`[] ").replace(" ", "")] = min(1.0, max(0.0, float(value)))
    body = _RELEVANCE_LINE.sub("", text).strip()
    if not body and text.strip():  # the whole reply sat on the Relevance line: keep it
        body = re.sub(r"^\s*\**relevance\**\s*:\s*", "", text.strip(), flags=re.IGNORECASE)
    return body, scores


_CITATION = re.compile(r"\s*\[[^\[\]\n]*(?:#\d+|turn\d+search\d+)[^\[\]\n]*\]")


def strip_citations(text: str) -> str:
    """The answer without its ``[chunk id]`` citation brackets and ``Relevance:`` line, for
    scoring against gold answers (EM/F1 would otherwise count the ids as wrong tokens)."""
    return _CITATION.sub("", split_answer(text)[0]).strip()


def cited_ids(text: str) -> list[str]:
    """Ids inside square brackets, in order of first appearance (``[a, b]`` gives both)."""
    out: list[str] = []
    for group in _BRACKETS.findall(text):
        for part in re.split(r"[,;]", group):
            cid = part.strip().strip("`'\" ")
            if cid and cid not in out:
                out.append(cid)
    return out


def parse_citations(
    text: str, resolve: Callable[[list[str]], dict[str, Citation]]
) -> tuple[str, list[Citation]]:
    """(answer text, citations of existing sources). ``resolve`` maps cited ids (chunk ids,
    reference ids, document ids) to citations; relevance defaults to 1.0 when the model
    gave none, and ids scored only in the Relevance line count too."""
    body, scores = split_answer(text)
    candidates = cited_ids(body)
    candidates += [cid for cid in scores if cid not in candidates]
    found = resolve(candidates)
    citations = [replace(found[cid], relevance=scores.get(cid, 1.0))
                 for cid in candidates if cid in found]
    return body, citations


def resolve_sources(index: Index, tracker: Tracker, ids: Sequence[str]) -> dict[str, Citation]:
    """Citations (relevance 1.0) for the ids that name a reference, chunk or document."""
    views: dict[str, DocumentView | None] = {}

    def view(doc_id: str) -> DocumentView | None:
        if doc_id not in views:
            doc = index.document(doc_id)
            views[doc_id] = DocumentView(doc) if doc else None
        return views[doc_id]

    out: dict[str, Citation] = {}
    chunks = index.read([i for i in ids if i not in tracker.refs]).chunks
    by_id = {c.chunk_id: c for c in chunks}
    for cid in ids:
        ref = tracker.refs.get(cid)
        if ref is not None:
            v = view(ref.doc_id)
            where = v.where(ref.start, ref.end) if v and ref.start >= 0 else None
            out[cid] = Citation(ref.chunk_id or "", ref.doc_id, ref.title, 1.0, ref.ref, where)
        elif cid in by_id:
            chunk = by_id[cid]
            v = view(chunk.doc_id)
            out[cid] = Citation(cid, chunk.doc_id, v.document.title if v else "", 1.0, None,
                                v.where(chunk.start, chunk.end) if v else None)
        elif (v := view(cid)) is not None:
            out[cid] = Citation("", cid, v.document.title, 1.0)
    return out
