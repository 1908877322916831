"""Bounds on reading one source: every file is a possible attacker.

A file's cost must not be the attacker's to choose. Each document is held to a size on disk,
to the text it may expand to (a 63 KB PDF can inflate to 21 MB of text, a 52 KB ``.docx``
to 17 MB of XML), to a depth of nesting (the HTML parser's cost grows with the square of the
depth) and, for the parsers written in C (HTML, PDF, ``.docx``), to a wall-clock time in a
child process that is stopped past it (:mod:`sleuth.ingest.sandbox`). A source over a
limit is reported and skipped with the limit's name, like any other unusable file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sleuth.ingest.reading import SkipSource

if TYPE_CHECKING:
    from sleuth.settings import IngestSettings

MB = 1 << 20


@dataclass(frozen=True)
class ReadLimits:
    """What one source may cost (``settings.ingest``; see :class:`IngestSettings`)."""

    max_file_bytes: int = 200 * MB
    max_chars: int = 10_000_000
    max_depth: int = 256
    parse_seconds: float = 60.0
    parse_memory_bytes: int = 2048 * MB

    @classmethod
    def of(cls, settings: IngestSettings) -> ReadLimits:
        return cls(max_file_bytes=int(settings.max_file_mb * MB), max_chars=settings.max_chars,
                   max_depth=settings.max_depth, parse_seconds=settings.parse_seconds,
                   parse_memory_bytes=settings.parse_memory_mb * MB)

    def check_size(self, size: int) -> None:
        """:class:`SkipSource` for a file of ``size`` bytes over ``max_file_bytes``."""
        if size > self.max_file_bytes:
            raise SkipSource(f"file of {size / MB:.1f} MB is over the limit of "
                             f"{self.max_file_bytes / MB:g} MB (ingest.max_file_mb)")

    def check_chars(self, chars: int, what: str = "text") -> None:
        """:class:`SkipSource` for a document whose text runs past ``max_chars``."""
        if chars > self.max_chars:
            raise SkipSource(f"{what} expands to more than {self.max_chars:,} characters "
                             f"(ingest.max_chars)")

    def check_depth(self, depth: int, what: str) -> None:
        if depth > self.max_depth:
            raise SkipSource(f"{what} is nested more than {self.max_depth} elements deep "
                             f"(ingest.max_depth)")


NO_LIMITS = ReadLimits()

# Elements that never hold others, or whose end tag may be left out (the next sibling closes
# them): neither deepens a page however often it appears.
_FLAT = frozenset({
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
    "source", "track", "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "tbody", "thead",
    "tfoot", "option", "optgroup", "colgroup", "caption", "rb", "rt", "rp", "html", "head",
    "body"})
_RAW = re.compile(r"<!--.*?(?:-->|$)|<(script|style|textarea|title)\b.*?(?:</\1\s*>|$)",
                  re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<(/?)([A-Za-z][^\s/<>]*)[^<>]*>")


def html_depth(source: str, stop: int) -> int:
    """An upper bound of the element nesting of an HTML page, counted from its tags in one
    linear pass (comments and raw-text elements left out), stopping once it passes
    ``stop``. End tags that close nothing open count for nothing; elements of :data:`_FLAT`
    are not counted."""
    depth = deepest = 0
    for match in _TAG.finditer(_RAW.sub(" ", source)):
        if match.group(2).lower() in _FLAT:
            continue
        if match.group(1):
            depth = max(0, depth - 1)
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > stop:
                break
    return deepest
