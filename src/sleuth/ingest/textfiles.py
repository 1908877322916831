"""Titles for markdown and plain-text files, and the title-first-line rule for all documents."""

from __future__ import annotations

import re

_ATX = re.compile(r"^[ ]{0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})")
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)
PLAIN_TITLE_MAX = 120
DERIVED_TITLE_MAX = 100


def one_line(text: str) -> str:
    """Collapse all whitespace (newlines included) to single spaces and strip."""
    return " ".join(text.split())


def markdown_title(text: str) -> str | None:
    """Front-matter ``title:``, else the first ``#`` heading, else the first ATX heading."""
    front = _front_matter_title(text)
    if front:
        return front
    first_any: str | None = None
    for level, heading in _atx_headings(text):
        if level == 1:
            return heading
        if first_any is None:
            first_any = heading
    return first_any


def _front_matter_title(text: str) -> str | None:
    if not text.startswith("---\n"):
        return None
    close = text.find("\n---", 4)
    if close == -1:
        return None
    match = _FRONT_TITLE.search(text, 4, close)
    if not match:
        return None
    return one_line(match.group(1).strip("'\"")) or None


def _atx_headings(text: str) -> list[tuple[int, str]]:
    """``(level, text)`` of every ATX heading outside fenced code blocks."""
    headings: list[tuple[int, str]] = []
    fence: str | None = None
    for line in text.split("\n"):
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker[0]
            elif marker[0] == fence:
                fence = None
            continue
        if fence is not None:
            continue
        match = _ATX.match(line)
        if match and match.group(2).strip():
            headings.append((len(match.group(1)), one_line(match.group(2))))
    return headings


def plain_title(text: str) -> str | None:
    """The first non-empty line when it is at most :data:`PLAIN_TITLE_MAX` characters."""
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped:
            return stripped if len(stripped) <= PLAIN_TITLE_MAX else None
    return None


def derived_title(text: str) -> str:
    """A title for text that has none: its first non-empty line, cut to ~100 characters."""
    for line in text.split("\n"):
        stripped = one_line(line)
        if stripped:
            return stripped[:DERIVED_TITLE_MAX].rstrip()
    return ""


def with_title(title: str, text: str) -> str:
    """``text`` with ``title`` as its first line (prepended unless it is there already).

    Leading blank lines are dropped first. A first line that is the title as a markdown
    heading (``# Title``) counts as the title already being there.
    """
    body = text.lstrip("\n")
    first = body.split("\n", 1)[0]
    if _same_line(first, title):
        return body
    return f"{title}\n{body}"


def _same_line(line: str, title: str) -> bool:
    plain = one_line(line)
    match = _ATX.match(plain)
    if match:
        plain = one_line(match.group(2))
    return plain == one_line(title)
