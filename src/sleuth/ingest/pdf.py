"""Binary documents: PDF (PyMuPDF), with its pages mapped, and Word ``.docx`` (python-docx).

Both libraries come with the ``pdf`` extra and are imported only when such a file is read;
without them the file is skipped with the install hint. A PDF's text is its title line and
then each page's ``page.get_text()`` ending in a newline, so every page starts on a line of
its own; ``metadata["pages"]`` holds one ``[start, end]`` character span per page (blank
pages included, so numbering stays true) and ``metadata["page_count"]`` their number.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sleuth.errors import MissingDependency
from sleuth.ingest.limits import NO_LIMITS, ReadLimits
from sleuth.ingest.reading import SkipSource, normalise_newlines, read_bytes
from sleuth.ingest.textfiles import one_line, with_title
from sleuth.types import Document

__all__ = ["DOCX_SUFFIXES", "PDF_SUFFIXES", "docx_document", "pdf_document",
           "require_parser"]

PDF_SUFFIXES = frozenset({".pdf"})
DOCX_SUFFIXES = frozenset({".docx"})
EXTRA = "pdf"
TITLE_MAX = 200
# Metadata titles that name the authoring tool or file rather than the document.
_NOT_A_TITLE = re.compile(
    r"^(untitled|no title|document\d*$|microsoft \w+ - )|\.(docx?|pdf|rtf|txt|indd|pptx?|xlsx?)$",
    re.IGNORECASE,
)
ERROR_MAX = 120


def pdf_document(path: Path, doc_id: str, limits: ReadLimits = NO_LIMITS) -> Document:
    """One PDF as a paged document; raises :class:`SkipSource` when it cannot be used or
    its text runs past ``limits.max_chars``."""
    try:
        import pymupdf
    except ImportError:
        raise SkipSource(str(MissingDependency("pymupdf", EXTRA))) from None
    data = read_bytes(path)
    limits.check_size(len(data))
    if not data:
        raise SkipSource("empty file (0 bytes)")
    with _quiet(pymupdf):
        pages, raw_title = _pdf_pages(pymupdf, data, limits)
    title = pdf_title(raw_title) or path.stem
    offset, spans = len(title) + 1, []
    for page in pages:
        spans.append([offset, offset + len(page)])
        offset += len(page)
    text = "\n".join([title, "".join(pages)])
    metadata = {"pages": spans, "page_count": len(spans)}
    return Document(doc_id, title, text, "pdf", str(path), metadata)


def _pdf_pages(pymupdf: Any, data: bytes, limits: ReadLimits) -> tuple[list[str], str]:
    """Each page's text, newline-terminated, and the metadata title.

    A damaged file MuPDF can repair (as a viewer would) is read; one that yields no pages
    or no text after repair is reported as unreadable.
    """
    damaged = "not a readable PDF (damaged or truncated; {} recovered)"
    try:
        pdf = pymupdf.open(stream=data, filetype="pdf")
    except Exception as err:  # MuPDF raises assorted errors on broken files
        raise SkipSource(f"not a readable PDF ({_brief(err)})") from None
    with pdf:
        if pdf.needs_pass:
            raise SkipSource("encrypted PDF (needs a password; decrypt it first)")
        if pdf.page_count == 0:
            if pdf.is_repaired:
                raise SkipSource(damaged.format("no pages"))
            raise SkipSource("PDF has no pages")
        pages: list[str] = []
        chars = 0
        for number in range(pdf.page_count):
            try:
                page_text = pdf.load_page(number).get_text()
            except Exception as err:
                raise SkipSource(f"not a readable PDF (page {number + 1}: {_brief(err)})") from None
            pages.append(_page_text(str(page_text)))
            chars += len(pages[-1])
            limits.check_chars(chars, "PDF text")
        if not any(page.strip() for page in pages):
            if pdf.is_repaired:
                raise SkipSource(damaged.format("no text"))
            raise SkipSource("PDF has no extractable text (scanned images? run OCR first)")
        return pages, str((pdf.metadata or {}).get("title") or "")


def _page_text(text: str) -> str:
    """A page's text with ``\\n`` newlines, ending in one so the next page starts a line."""
    text = normalise_newlines(text)
    return text if text.endswith("\n") else text + "\n"


def pdf_title(raw: str) -> str | None:
    """A PDF metadata title when it names the document (not a tool, file name or number)."""
    title = one_line(raw)
    letters = sum(ch.isalpha() for ch in title)
    if letters < 3 or len(title) > TITLE_MAX or _NOT_A_TITLE.search(title):
        return None
    return title


@contextmanager
def _quiet(pymupdf: Any) -> Iterator[None]:
    """Keep MuPDF from printing errors and warnings about broken files to stderr."""
    tools = pymupdf.TOOLS
    errors = tools.mupdf_display_errors()
    warnings = tools.mupdf_display_warnings() if hasattr(tools, "mupdf_display_warnings") else None
    tools.mupdf_display_errors(False)
    if warnings is not None:
        tools.mupdf_display_warnings(False)
    try:
        yield
    finally:
        tools.mupdf_display_errors(errors)
        if warnings is not None:
            tools.mupdf_display_warnings(warnings)
        tools.reset_mupdf_warnings()


_PARSERS = {"pdf": ("pymupdf", "pymupdf"), "docx": ("docx", "python-docx")}


def require_parser(kind: str) -> None:
    """:class:`SkipSource` with the install hint when the library reading ``kind`` (``pdf``,
    ``docx``; others need none) is missing."""
    if kind not in _PARSERS:
        return
    module, package = _PARSERS[kind]
    try:
        __import__(module)
    except ImportError:
        raise SkipSource(str(MissingDependency(package, EXTRA))) from None


# A .docx's XML may be this many times the size of the file (zipped XML of real documents is
# 5-20 times smaller than itself; a zip bomb is hundreds of times)
DOCX_EXPANSION = 100


def docx_document(path: Path, doc_id: str, limits: ReadLimits = NO_LIMITS) -> Document:
    """One Word ``.docx`` file; paragraphs and table rows (cells joined by `` | ``) in order.
    Its unzipped parts may be :data:`DOCX_EXPANSION` times the file and at most twice
    ``limits.max_chars`` bytes (a zip bomb is skipped before anything is unzipped)."""
    try:
        import docx
    except ImportError:
        raise SkipSource(str(MissingDependency("python-docx", EXTRA))) from None
    data = read_bytes(path)
    limits.check_size(len(data))
    if not data:
        raise SkipSource("empty file (0 bytes)")
    _check_unzipped(data, limits)
    try:
        word = docx.Document(io.BytesIO(data))
        blocks, heading = _docx_blocks(word)
        core_title = one_line(word.core_properties.title or "")
    except Exception as err:  # a zip, XML or package error from a broken file
        raise SkipSource(f"not a readable .docx ({_brief(err)})") from None
    body = "\n\n".join(blocks)
    if not body.strip():
        raise SkipSource(".docx has no text")
    limits.check_chars(len(body), ".docx text")
    title = core_title or heading or path.stem
    return Document(doc_id, title, with_title(title, body), "docx", str(path), {})


def _check_unzipped(data: bytes, limits: ReadLimits) -> None:
    """:class:`SkipSource` for a ``.docx`` whose parts unzip to more than its limits allow
    (read from the zip's directory: nothing is unzipped)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unzipped = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, ValueError, OSError) as err:
        raise SkipSource(f"not a readable .docx ({_brief(err)})") from None
    allowed = min(DOCX_EXPANSION * len(data), 2 * limits.max_chars)
    if unzipped > allowed:
        raise SkipSource(f".docx unzips to {unzipped:,} bytes, more than the {allowed:,} "
                         f"its size allows ({DOCX_EXPANSION}x the file, at most twice "
                         "ingest.max_chars)")


def _docx_blocks(word: Any) -> tuple[list[str], str | None]:
    """Non-empty paragraphs and tables in document order, and the first heading or title.
    Style names are looked up once per style (python-docx looks one up per paragraph, in
    time growing with the styles: minutes for a file of 50,000 paragraphs)."""
    blocks: list[str] = []
    heading: str | None = None
    names = {style.style_id: style.name or "" for style in word.styles}
    for item in word.iter_inner_content():
        if hasattr(item, "rows"):
            block = "\n".join(row for row in map(_table_row, item.rows) if row)
        else:
            block = normalise_newlines(item.text).strip()
            style = names.get(item._p.style, "")
            if block and heading is None and style.startswith(("Heading", "Title")):
                heading = one_line(block)
        if block:
            blocks.append(block)
    return blocks, heading


def _table_row(row: Any) -> str:
    """A table row as one line; a merged cell (repeated by python-docx) appears once."""
    cells: list[str] = []
    previous = None
    for cell in row.cells:
        if cell._tc is previous:
            continue
        previous = cell._tc
        cells.append(one_line(cell.text))
    return " | ".join(cells) if any(cells) else ""


def _brief(err: Exception) -> str:
    """An exception as a short one-line reason."""
    message = one_line(str(err)) or type(err).__name__
    return message if len(message) <= ERROR_MAX else message[: ERROR_MAX - 1] + "…"
