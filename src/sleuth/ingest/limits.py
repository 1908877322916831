"""Bounds on reading one source: every file is a possible attacker.

A file's cost must not be the attacker's to choose. Each document is held to a size on disk,
to the text it may expand to (a 63 KB PDF can inflate to 21 MB of text, a 52 KB ``.docx``
to 17 MB of XML), to a depth of nesting (measured on the tree the HTML parser builds; the
parser's cost grows with the square of the depth, so a page whose tags show it far deeper is
refused before it is parsed: :mod:`sleuth.ingest.nesting`) and, for the parsers written in C
(HTML, PDF, ``.docx``), to a wall-clock time in a child process that is stopped past it
(:mod:`sleuth.ingest.sandbox`). A source over a limit is reported and skipped with the
limit's name, like any other unusable file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sleuth.ingest.nesting import source_depth
from sleuth.ingest.reading import SkipSource

if TYPE_CHECKING:
    from sleuth.settings import IngestSettings

MB = 1 << 20
# A page is parsed unless its tags show it nested more than SOURCE_MARGIN times max_depth:
# the tree the parser builds is what max_depth bounds, the estimate from the tags only keeps
# the parser from a page that would cost it minutes (a margin, so that no page the parser
# would build within the limit is refused by an estimate; 1,024 nested <div> parse in ms)
SOURCE_MARGIN = 4


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
        """:class:`SkipSource` for ``what`` nested ``depth`` elements deep, over ``max_depth``."""
        if depth > self.max_depth:
            raise SkipSource(f"{what} is nested more than {self.max_depth} elements deep "
                             f"(ingest.max_depth)")

    def check_source_depth(self, source: str) -> None:
        """:class:`SkipSource` for an HTML page whose tags nest it more than
        :data:`SOURCE_MARGIN` times ``max_depth`` deep, before it is parsed."""
        bound = SOURCE_MARGIN * self.max_depth
        if source_depth(source, bound) > bound:
            self.check_depth(bound + 1, "HTML page")


NO_LIMITS = ReadLimits()
