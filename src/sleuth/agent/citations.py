"""Turn the ids an answer cites (chunk ids, reference ids, document ids) into citations of
existing sources, with the relevance the model gave each.

How citations look and are read from text is :mod:`sleuth.ids`; its text helpers are
re-exported here for the imports that predate it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from sleuth.docview import DocumentView
from sleuth.ids import cited_ids, split_answer, strip_citations
from sleuth.types import Citation

if TYPE_CHECKING:
    from sleuth.index import ReadIndex
    from sleuth.tracker import Tracker

__all__ = ["cited_ids", "parse_citations", "resolve_sources", "split_answer", "strip_citations"]


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


def resolve_sources(index: ReadIndex, tracker: Tracker, ids: Sequence[str]) -> dict[str, Citation]:
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
