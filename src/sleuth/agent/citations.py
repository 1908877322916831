"""Turn the ids an answer cites (chunk ids, reference ids, document ids) into citations of
existing sources the run was shown, each with the retrieval score it was found with and the
relevance the model stated.

A citation must name what the run retrieved (:func:`shown`): a chunk or reference id no
search, read or step of the run showed (a model that copies the prompt's example
``[doc-7#0]``, or makes an id up) is no citation, and :func:`without_ids` takes it out of
the answer's text.

How citations look and are read from text is :mod:`sleuth.text.ids`; its text helpers are
re-exported here for the imports that predate it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from sleuth.llm.base import TextCallback
from sleuth.text.docview import DocumentView
from sleuth.text.ids import (
    CHUNK_ID,
    REF_ID,
    cited_ids,
    is_relevance_line,
    split_answer,
    strip_citations,
)
from sleuth.types import Citation, Step

if TYPE_CHECKING:
    from sleuth.index.read import ReadIndex
    from sleuth.tools.tracker import Tracker

__all__ = ["AnswerStream", "cited_ids", "found_by", "looks_like_id", "parse_citations",
           "resolve_sources", "shown", "split_answer", "strip_citations", "without_ids"]


def parse_citations(
    text: str, resolve: Callable[[list[str]], dict[str, Citation]]
) -> tuple[str, list[Citation]]:
    """(answer text, citations of existing sources). ``resolve`` maps cited ids (chunk ids,
    reference ids, document ids) to citations; a citation's relevance is the one the model
    stated in its Relevance line (None where it stated none), and ids scored only in the
    Relevance line count too."""
    body, scores = split_answer(text)
    candidates = cited_ids(body)
    candidates += [cid for cid in scores if cid not in candidates]
    found = resolve(candidates)
    citations = [replace(found[cid], relevance=scores.get(cid))
                 for cid in candidates if cid in found]
    return body, citations


def looks_like_id(text: str) -> bool:
    """Whether ``text`` is written as a chunk id (``a.md#3``) or a reference id."""
    return CHUNK_ID.fullmatch(text) is not None or REF_ID.fullmatch(text) is not None


def shown(cid: str, tracker: Tracker, steps: Sequence[Step]) -> bool:
    """Whether the run was shown the source ``cid`` names: a chunk some search returned or
    that was read (the ``tracker``), a reference id handed out, an id a tool's output names,
    a chunk some step showed as a passage (a bridge's), or a document one of whose chunks
    or references the run was shown. (A check's step may hold the model's own words, which
    show nothing.)"""
    if cid in tracker.refs or cid in tracker.seen_scores or tracker.was_read(cid):
        return True
    if any(_shows(s.tool_output, cid) for s in steps if s.kind in ("tool", "retrieval")):
        return True
    if any(f"=== chunk {cid} " in s.tool_output for s in steps):
        return True
    if looks_like_id(cid):
        return False
    return any(r.doc_id == cid for r in tracker.refs.values()) or any(
        c.startswith(f"{cid}#") for c in (*tracker.seen_scores, *tracker.read))


def without_ids(text: str, ids: Collection[str]) -> str:
    """``text`` with the citations of ``ids`` taken out: ``[a#0, x#9]`` becomes ``[a#0]``,
    ``[x#9]`` goes with the space before it."""
    if not ids:
        return text

    def keep(match: re.Match[str]) -> str:
        parts = [p.strip() for p in re.split(r"[,;]", match.group(2))]
        kept = [p for p in parts if p.strip("`'\" ") not in ids]
        if len(kept) == len(parts):
            return match.group(0)
        return f"{match.group(1)}[{', '.join(kept)}]" if kept else ""

    return _CITED.sub(keep, text)


_CITED = re.compile(r"(\s*)\[([^\[\]\n]{1,400})\]")


def resolve_sources(index: ReadIndex, tracker: Tracker, ids: Sequence[str]) -> dict[str, Citation]:
    """Citations for the ids that name a reference, chunk or document, each with the
    retrieval score its chunk was found with (:meth:`Tracker.found`; None where no search
    scored it)."""
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
            out[cid] = _located(Citation(ref.chunk_id or "", ref.doc_id, ref.title,
                                         ref=ref.ref,
                                         score=tracker.relevance.get(ref.chunk_id or "")),
                                v if ref.start >= 0 else None, ref.start, ref.end)
        elif cid in by_id:
            chunk = by_id[cid]
            v = view(chunk.doc_id)
            out[cid] = _located(Citation(cid, chunk.doc_id, v.document.title if v else "",
                                         score=tracker.relevance.get(cid)),
                                v, chunk.start, chunk.end)
        elif (v := view(cid)) is not None:
            out[cid] = Citation("", cid, v.document.title)
    return out


class AnswerStream:
    """The answer's text as :func:`parse_citations` gives it, passed on to ``say`` while the
    model writes it: without blanks at either end and without its ``Relevance:`` line (each
    line's start is held back until it cannot be one)."""

    def __init__(self, say: TextCallback) -> None:
        self.say = say
        self.head = ""  # the start of the current line, held back
        self.open = False  # the current line is not a Relevance line: it passes
        self.blanks = ""  # white space held until more text follows it
        self.started = False

    def feed(self, piece: str) -> None:
        out: list[str] = []
        for char in piece:
            if self.open:
                self.open = char != "\n"
                self._text(char, out)
            elif char == "\n":
                self._line_end(out)
            else:
                self.head += char
                if not _maybe_relevance(self.head):
                    self.open = True
                    self._release(out)
        if out:
            self.say("".join(out))

    def end(self) -> None:
        """The reply is complete: its last line goes on unless it is a Relevance line."""
        out: list[str] = []
        if not is_relevance_line(self.head):
            self._release(out)
        if out:
            self.say("".join(out))

    def _line_end(self, out: list[str]) -> None:
        if is_relevance_line(self.head):
            self.head = ""
        self._release(out)
        self._text("\n", out)

    def _release(self, out: list[str]) -> None:
        head, self.head = self.head, ""
        for char in head:
            self._text(char, out)

    def _text(self, char: str, out: list[str]) -> None:
        if char.isspace():
            self.blanks += char
            return
        if self.started:
            out.append(self.blanks)
        self.blanks, self.started = "", True
        out.append(char)


def _maybe_relevance(head: str) -> bool:
    """Whether a line that starts with ``head`` may be a ``Relevance:`` line."""
    word = head.lstrip().lstrip("*").lower()
    if len(word) < len("relevance"):
        return "relevance".startswith(word)
    return is_relevance_line(head) or word.rstrip("* \t") == "relevance"


def _located(citation: Citation, view: DocumentView | None, start: int,
             end: int) -> Citation:
    """``citation`` with where the character span ``[start, end)`` lies in its document:
    ``where`` as text, its first and last lines, and its first page."""
    if view is None:
        return citation
    first, last = view.line_of(start), view.line_of(max(start, end - 1))
    pages = view.pages_between(start, end)
    return replace(citation, where=view.where(start, end), lines=(first, last),
                   page=pages[0] if pages else None)


def found_by(citations: Sequence[Citation], steps: Sequence[Step]) -> list[Citation]:
    """``citations`` each with the name of the first tool whose output in ``steps`` showed
    its reference id, chunk id or (a citation of a whole document) document id; a citation
    no step showed keeps ``tool`` None."""
    return [replace(c, tool=next((s.tool_name for s in steps
                                  if _shows(s.tool_output, c.ref or c.chunk_id or c.doc_id)),
                                 None))
            if c.tool is None else c for c in citations]


def _shows(text: str, source: str) -> bool:
    """Whether ``text`` names ``source`` as a whole id (``a.md#1`` is not in ``a.md#12``)."""
    return bool(source) and source in text and re.search(
        rf"(?<![\w.\-/:#]){re.escape(source)}(?!\w)", text) is not None
