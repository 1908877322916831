"""Turning files and folders into :class:`~sleuth.types.Document` streams.

Formats are chosen by extension: markdown (``.md``, ``.markdown``), plain text (``.txt``,
``.text``, ``.rst``), HTML (``.html``, ``.htm``), JSON (``.json``: a corpus
``[{"id", "title", "text"}]`` or A-RAG ``chunks.json``, told apart by content), JSONL
(``.jsonl``, ``.ndjson``), and with the ``pdf`` extra PDF (``.pdf``, one paged document) and
Word (``.docx``). Every document's text starts with its title on the first line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from sleuth.errors import IngestError
from sleuth.ingest.html import parse_html
from sleuth.ingest.pdf import DOCX_SUFFIXES, PDF_SUFFIXES, docx_document, pdf_document
from sleuth.ingest.reading import BadStructure, SkipSource, check_regular, read_text
from sleuth.ingest.records import JsonFields, RecordItem, RecordSkip, json_records, jsonl_records
from sleuth.ingest.textfiles import markdown_title, plain_title, with_title
from sleuth.types import DocType, Document

__all__ = [
    "IngestReport",
    "JsonFields",
    "Skipped",
    "SUPPORTED_SUFFIXES",
    "has_sources",
    "iter_documents",
]

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
TEXT_SUFFIXES = frozenset({".txt", ".text", ".rst"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
JSON_SUFFIXES = frozenset({".json"})
JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson"})
SUPPORTED_SUFFIXES = (
    MARKDOWN_SUFFIXES
    | TEXT_SUFFIXES
    | HTML_SUFFIXES
    | JSON_SUFFIXES
    | JSONL_SUFFIXES
    | PDF_SUFFIXES
    | DOCX_SUFFIXES
)
DEFAULT_FIELDS = JsonFields()


@dataclass(frozen=True)
class Skipped:
    """A file, record or line that was not ingested, and why (one human-readable line)."""

    path: str
    reason: str


@dataclass
class IngestReport:
    """What :func:`iter_documents` left out: unusable sources, duplicate doc ids, and the
    number of files of each unsupported suffix found in folders (``"(none)"``: no suffix)."""

    skipped: list[Skipped] = field(default_factory=list)
    duplicates: list[Skipped] = field(default_factory=list)
    unsupported: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Source:
    """One file to read: where it is, its doc id, and whether it was named explicitly."""

    path: Path
    doc_id: str
    explicit: bool


def iter_documents(
    paths: Sequence[str | Path],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    fields: JsonFields = DEFAULT_FIELDS,
    report: IngestReport | None = None,
) -> Iterator[Document]:
    """Stream the documents found in ``paths`` (files and folders, walked recursively).

    Every path is checked before anything is read: a missing one raises :class:`IngestError`.
    Folders are walked in sorted order, skipping hidden entries, and files of unsupported
    types (counted in ``report.unsupported``); ``include``/``exclude`` globs (:func:`fnmatch`
    syntax, ``**`` allowed) are matched against the path relative to the folder, and a
    pattern without ``/`` also against the base name (or any parent folder's name, for
    ``exclude``). Files named directly are always read. Only regular files (or links to
    them) are opened: a FIFO, socket or device is skipped. Unusable files and records are
    recorded in ``report.skipped``; a later document with an already seen doc id is recorded
    in ``report.duplicates``. A JSON file of the wrong shape (or nested too deeply to parse)
    raises :class:`IngestError` when named directly, and is skipped in a folder walk.
    """
    roots = _roots(paths)
    sink = report if report is not None else IngestReport()
    return _documents(roots, tuple(include), tuple(exclude), fields, sink)


def has_sources(
    paths: Sequence[str | Path],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    report: IngestReport | None = None,
) -> bool:
    """Whether ``paths`` hold a file :func:`iter_documents` would read, found without
    opening any (a directory listing and a ``stat`` per file, up to the first one).

    A missing path raises :class:`IngestError`. When the answer is no, ``report`` says why:
    unsupported types found in folders are counted, other files recorded as skipped.
    """
    sink = report if report is not None else IngestReport()
    for root in _roots(paths):
        for source in _sources(root, tuple(include), tuple(exclude), sink):
            try:
                _check_source(source.path)
            except SkipSource as err:
                sink.skipped.append(Skipped(str(source.path), str(err)))
                continue
            return True
    return False


def _roots(paths: Sequence[str | Path]) -> list[Path]:
    """``paths`` as paths; raises :class:`IngestError` for the first that does not exist."""
    roots = [Path(p) for p in paths]
    for root in roots:
        if not root.exists():
            raise IngestError(f"no such file or folder: {root}")
    return roots


def _documents(
    roots: list[Path],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    fields: JsonFields,
    report: IngestReport,
) -> Iterator[Document]:
    seen: dict[str, str] = {}
    for root in roots:
        for source in _sources(root, include, exclude, report):
            for doc in _load(source, fields, report):
                first = seen.get(doc.doc_id)
                if first is not None:
                    reason = f"duplicate doc_id {doc.doc_id!r} (first seen in {first})"
                    report.duplicates.append(Skipped(_where(doc), reason))
                    continue
                seen[doc.doc_id] = _where(doc)
                yield doc


def _where(doc: Document) -> str:
    """Where a document came from: ``file``, ``file[index]`` or ``file:line``."""
    line = doc.metadata.get("line")
    if doc.type == "jsonl" and line is not None:
        return f"{doc.path}:{line}"
    index = doc.metadata.get("index")
    if doc.type in ("corpus", "chunks", "jsonl") and index is not None:
        return f"{doc.path}[{index}]"
    return str(doc.path)


def _sources(
    root: Path, include: tuple[str, ...], exclude: tuple[str, ...], report: IngestReport
) -> Iterator[_Source]:
    """The files under ``root`` to read (``root`` itself when it is a file)."""
    if not root.is_dir():
        yield _Source(root, root.name, explicit=True)
        return

    def on_error(err: OSError) -> None:
        report.skipped.append(Skipped(str(err.filename), f"cannot read folder: {err.strerror}"))

    for folder, dirnames, filenames in os.walk(root, onerror=on_error):
        base = Path(folder)
        rel_dir = PurePosixPath(base.relative_to(root).as_posix())
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and not _excluded(rel_dir / d, exclude)
        )
        for name in sorted(filenames):
            rel = rel_dir / name
            if not _wanted(rel, include, exclude):
                continue
            suffix = rel.suffix.lower()
            if suffix not in SUPPORTED_SUFFIXES:
                key = suffix or "(none)"
                report.unsupported[key] = report.unsupported.get(key, 0) + 1
                continue
            yield _Source(base / name, rel.as_posix().removeprefix("./"), explicit=False)


def _wanted(rel: PurePosixPath, include: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    """Whether a walked file is considered: visible, included and not excluded."""
    if rel.name.startswith("."):
        return False
    if include and not any(_matches(rel, pattern) for pattern in include):
        return False
    return not _excluded(rel, exclude)


def _excluded(rel: PurePosixPath, exclude: tuple[str, ...]) -> bool:
    """Whether ``rel`` or one of its parent folders matches an exclude pattern."""
    for pattern in exclude:
        if _matches(rel, pattern):
            return True
        if "/" not in pattern.rstrip("/") and any(
            fnmatchcase(part, pattern.rstrip("/")) for part in rel.parts[:-1]
        ):
            return True
    return False


def _matches(rel: PurePosixPath, pattern: str) -> bool:
    """Glob match on the relative POSIX path; a pattern without ``/`` also on the base name.

    ``**/`` may match no folder at all (``docs/**/*.md`` matches ``docs/a.md``), and a
    trailing ``/`` or ``/**`` means everything below that folder.
    """
    path = rel.as_posix().removeprefix("./")
    pat = pattern.strip().removeprefix("./")
    if pat.endswith("/"):
        pat += "**"
    variants = {pat, pat.replace("**/", ""), pat.replace("/**/", "/")}
    if any(fnmatchcase(path, v) for v in variants):
        return True
    return "/" not in pat and fnmatchcase(rel.name, pat)


def _load(source: _Source, fields: JsonFields, report: IngestReport) -> Iterator[Document]:
    """Documents of one file; unusable files and records go to ``report.skipped``."""
    try:
        items = _parse(source, fields)
    except SkipSource as err:
        report.skipped.append(Skipped(str(source.path), str(err)))
        return
    except BadStructure as err:
        if source.explicit:
            raise IngestError(f"{source.path}: {err}") from None
        report.skipped.append(Skipped(str(source.path), str(err)))
        return
    for item in items:
        if isinstance(item, RecordSkip):
            report.skipped.append(Skipped(item.where, item.reason))
        else:
            yield item


def _check_source(path: Path) -> None:
    """Raise :class:`SkipSource` for a file that is not read at all: missing, not a regular
    file (a FIFO, socket, device), or of an unsupported type."""
    check_regular(path)
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        supported = ", ".join(sorted(SUPPORTED_SUFFIXES))
        raise SkipSource(f"unsupported file type {suffix or '(none)'!r} (supported: {supported})")


def _parse(source: _Source, fields: JsonFields) -> Iterator[RecordItem]:
    """Parse one file by its extension; raises :class:`SkipSource` or :class:`BadStructure`."""
    path = source.path
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        _check_source(path)  # raises: not a regular file, or an unsupported type
    if suffix in PDF_SUFFIXES:
        return iter([pdf_document(path, source.doc_id)])
    if suffix in DOCX_SUFFIXES:
        return iter([docx_document(path, source.doc_id)])
    text = read_text(path)
    if suffix in JSON_SUFFIXES:
        return json_records(path, text, fields)
    if suffix in JSONL_SUFFIXES:
        return jsonl_records(path, text, fields)
    return iter([_file_document(source, suffix, text)])


def _file_document(source: _Source, suffix: str, text: str) -> Document:
    """A markdown, plain-text or HTML file as one document, its title on the first line."""
    kind: DocType
    if suffix in HTML_SUFFIXES:
        page = parse_html(text)
        if not page.text.strip():
            raise SkipSource("HTML page has no visible text")
        kind, title, body = "html", page.title, page.text
    elif suffix in MARKDOWN_SUFFIXES:
        kind, title, body = "markdown", markdown_title(text), text
    else:
        kind, title, body = "text", plain_title(text), text
    title = title or source.path.stem
    return Document(source.doc_id, title, with_title(title, body), kind, str(source.path), {})
