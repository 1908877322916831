"""A document as numbered lines, with its pages mapped to line ranges.

Line numbers are 0-based (``open`` shows ``Viewing lines [0–1799] of 3000 lines``); pages
are 1-based for people. A paged document (a PDF) carries ``metadata["pages"]``: one
``[start, end]`` character span per page, in page order, each starting on a line boundary.
The view is derived from the stored text alone, so it is the same on every read.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field

from sleuth.types import Document

MAX_LINE_CHARS = 2000  # a line longer than this is shown cut, with a marker


@dataclass(frozen=True)
class Line:
    number: int
    text: str
    page: int | None


@dataclass
class DocumentView:
    """Numbered lines of one document and where its pages fall."""

    document: Document
    _starts: list[int] = field(default_factory=list, repr=False)
    _pages: list[tuple[int, int]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        text = self.document.text
        self._starts = [0]
        position = text.find("\n")
        while position != -1:
            self._starts.append(position + 1)
            position = text.find("\n", position + 1)
        if text.endswith("\n"):
            self._starts.pop()
        self._pages = [(int(s), int(e)) for s, e in self.document.metadata.get("pages") or []]
        self._page_offsets = [s for s, _ in self._pages]
        self._page_first_lines = {self.line_of(s): i + 1 for i, s in
                                  enumerate(self._page_offsets)}

    @property
    def line_count(self) -> int:
        return len(self._starts)

    @property
    def page_count(self) -> int:
        return len(self._pages)

    def line_start(self, number: int) -> int:
        """The character offset where line ``number`` starts."""
        return self._starts[number]

    def line_of(self, offset: int) -> int:
        """The line holding character ``offset``."""
        return max(0, bisect.bisect_right(self._starts, offset) - 1)

    def page_of(self, offset: int) -> int | None:
        """The 1-based page holding character ``offset`` (``None`` for unpaged documents)."""
        if not self._pages:
            return None
        return max(0, bisect.bisect_right(self._page_offsets, offset) - 1) + 1

    def pages_between(self, start: int, end: int) -> list[int]:
        """The pages a character span ``[start, end)`` touches, in order."""
        first, last = self.page_of(start), self.page_of(max(start, end - 1))
        return list(range(first, last + 1)) if first and last else []

    def page_lines(self, page: int) -> tuple[int, int]:
        """The ``[first, last]`` lines of a 1-based page."""
        start, end = self._pages[page - 1]
        return self.line_of(start), self.line_of(max(start, end - 1))

    def line_text(self, number: int) -> str:
        text = self.document.text
        start = self._starts[number]
        end = self._starts[number + 1] - 1 if number + 1 < len(self._starts) else len(text)
        return text[start:end].rstrip("\n")

    def lines(self, first: int, last: int) -> Iterator[Line]:
        """Lines ``first..last`` (inclusive, clamped to the document)."""
        for number in range(max(0, first), min(last, self.line_count - 1) + 1):
            yield Line(number, self.line_text(number), self.page_of(self._starts[number]))

    def render(self, first: int, last: int, *, max_chars: int = MAX_LINE_CHARS) -> str:
        """Lines as ``N: text``, with a ``--- page P ---`` marker where a page starts."""
        return "\n".join(self.rendered_lines(first, last, max_chars=max_chars))

    def rendered_lines(self, first: int, last: int, *,
                       max_chars: int = MAX_LINE_CHARS) -> list[str]:
        """:meth:`render` one line at a time (a page marker joins the line it precedes)."""
        out: list[str] = []
        for line in self.lines(first, last):
            text = line.text
            if len(text) > max_chars:
                text = text[:max_chars] + f" …[{len(line.text) - max_chars} more chars]"
            page = self._page_first_lines.get(line.number)
            marker = f"--- page {page} ---\n" if page is not None else ""
            out.append(f"{marker}{line.number}: {text}")
        return out

    def where(self, start: int, end: int) -> str:
        """``page 3, lines 120–131`` (or ``lines 120–131`` for unpaged documents)."""
        first, last = self.line_of(start), self.line_of(max(start, end - 1))
        lines = f"lines {first}–{last}" if last != first else f"line {first}"
        pages = self.pages_between(start, end)
        if not pages:
            return lines
        label = f"page {pages[0]}" if len(pages) == 1 else f"pages {pages[0]}–{pages[-1]}"
        return f"{label}, {lines}"
