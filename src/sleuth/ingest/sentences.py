"""Rule-based sentence segmentation: layout blocks first, then Punkt (``nupunkt``) inside each.

Punkt decides boundaries at sentence-final punctuation and knows abbreviations ("Dr.", "U.S.",
"e.g."), decimals and initials. It cannot see layout, so before it runs the text is cut into
*blocks* that no sentence may cross:

* a blank line (paragraph break) always ends a block;
* a markdown ATX heading line (``# Title``) is a block of its own;
* a line that starts with a list marker (``-``, ``*``, ``1.``, ``(a)``...) starts a new block;
* a single newline ends a block when the line before it looks like a heading: it has no
  sentence-final or continuing punctuation, at most eight words, is short compared to the
  paragraph's wrap width (under 60% of its longest line, counting at least 50 columns), and
  the next line does not start in lower case.

Hard-wrapped prose (Project Gutenberg wraps at ~70 columns) is therefore not split at every
newline: its lines are nearly full width, and a line that breaks mid-sentence is followed by
lower case or ends with a comma far more often than not.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from sleuth.types import Sentence

_MD_HEADING = re.compile(r"[ ]{0,3}#{1,6}(?:[ \t]|$)")
_LIST_MARKER = re.compile(
    r"[ \t]*(?:[-*+•–—·]|\(?\d{1,3}[.)]|\(?[A-Za-z][.)]|\(?[ivxlIVXL]{1,5}[.)])[ \t]"
)
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")
_CONTINUES = frozenset(".!?:;,\"')]}…”’»-–—")
_HEADING_MAX_WORDS = 8
_MIN_WRAP_WIDTH = 50
_SHORT_LINE_RATIO = 0.6


@lru_cache(maxsize=1)
def _punkt() -> Any:
    import nupunkt

    return nupunkt.load_default_model()


def split_sentences(text: str, start: int = 0, end: int | None = None) -> list[Sentence]:
    """Split ``text[start:end]`` into sentences whose offsets index ``text`` itself.

    Every result satisfies ``text[s.start:s.end] == s.text``; sentences carry no surrounding
    whitespace and empty ones are dropped. See the module docstring for the layout rules.
    """
    stop = len(text) if end is None else min(end, len(text))
    begin = max(0, start)
    out: list[Sentence] = []
    for block_start, block_end in _blocks(text, begin, stop):
        out.extend(_punkt_sentences(text, block_start, block_end))
    return out


def _punkt_sentences(text: str, start: int, end: int) -> Iterator[Sentence]:
    """Run Punkt over one block and yield tight sentences with absolute offsets."""
    block = text[start:end]
    for s, e in _punkt().span_tokenize(block):
        a, b = _tighten(block, s, e)
        if b > a:
            yield Sentence(block[a:b], start + a, start + b)


def _tighten(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` so it neither starts nor ends with whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _blocks(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Yield the layout blocks of ``text[start:end]`` (absolute offsets)."""
    for para_start, para_end in _paragraphs(text, start, end):
        yield from _line_blocks(text, para_start, para_end)


def _paragraphs(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Cut ``text[start:end]`` at blank lines, skipping whitespace-only pieces."""
    pos = start
    for match in _BLANK_LINE.finditer(text, start, end):
        if text[pos : match.start()].strip():
            yield pos, match.start()
        pos = match.end()
    if text[pos:end].strip():
        yield pos, end


def _line_blocks(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Cut one paragraph at heading, markdown-heading and list-item line breaks."""
    lines = _lines(text, start, end)
    if len(lines) == 1:
        yield start, end
        return
    width = max(_MIN_WRAP_WIDTH, max(len(text[a:b].rstrip()) for a, b in lines))
    block_start = start
    for (a, b), (c, d) in zip(lines, lines[1:], strict=False):
        if _cut_between(text[a:b], text[c:d], width):
            if text[block_start:b].strip():
                yield block_start, b
            block_start = c
    if text[block_start:end].strip():
        yield block_start, end


def _lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each line of ``text[start:end]``, without the newline."""
    spans: list[tuple[int, int]] = []
    pos = start
    while True:
        nl = text.find("\n", pos, end)
        if nl == -1:
            spans.append((pos, end))
            return spans
        spans.append((pos, nl))
        pos = nl + 1


def _cut_between(line: str, next_line: str, width: int) -> bool:
    """Whether the newline between ``line`` and ``next_line`` ends a block."""
    if _MD_HEADING.match(line) or _MD_HEADING.match(next_line):
        return True
    if _LIST_MARKER.match(next_line):
        return True
    return _is_heading_like(line, width) and not next_line.lstrip()[:1].islower()


def _is_heading_like(line: str, width: int) -> bool:
    """A short line without punctuation that would end or continue a sentence."""
    stripped = line.strip()
    if not stripped or stripped[-1] in _CONTINUES:
        return False
    if stripped.count(" ") >= _HEADING_MAX_WORDS:
        return False
    return len(stripped) < _SHORT_LINE_RATIO * width
