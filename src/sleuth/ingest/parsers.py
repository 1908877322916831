"""The formats whose parsers are C code, one file each as a document: HTML (lexbor), PDF
(MuPDF), Word ``.docx`` (python-docx on libxml2). Held to :class:`ReadLimits`; the time
bound is the sandbox's, which calls :func:`parse_file` in its child process.
"""

from __future__ import annotations

from pathlib import Path

from sleuth.ingest.html import NAVIGATION, parse_html
from sleuth.ingest.limits import NO_LIMITS, ReadLimits
from sleuth.ingest.pdf import docx_document, pdf_document
from sleuth.ingest.reading import SkipSource, decode_utf8, normalise_newlines, read_bytes
from sleuth.ingest.textfiles import with_title
from sleuth.types import Document


def parse_file(path: Path, doc_id: str, kind: str, limits: ReadLimits = NO_LIMITS) -> Document:
    """One HTML, PDF or ``.docx`` file as a document, held to ``limits`` (the sandbox's
    work: call it through :class:`~sleuth.ingest.sandbox.Sandbox` for a time bound)."""
    if kind == "pdf":
        return pdf_document(path, doc_id, limits)
    if kind == "docx":
        return docx_document(path, doc_id, limits)
    data = read_bytes(path)
    limits.check_size(len(data))
    if not data:
        raise SkipSource("empty file (0 bytes)")
    source = normalise_newlines(decode_utf8(data))
    limits.check_source_depth(source)
    page = parse_html(source, limits)
    if page.navigation is not None:
        raise SkipSource(f"HTML page of navigation only ({NAVIGATION[page.navigation]}): it "
                         "repeats what the site's other pages say")
    if not page.text.strip():
        raise SkipSource("HTML page has no visible text")
    limits.check_chars(len(page.text), "visible text")
    title = page.title or path.stem
    return Document(doc_id, title, with_title(title, page.text), "html", str(path), {})
