"""Turning files and folders into :class:`~sleuth.types.Document` streams.

Formats are chosen by extension: markdown (``.md``, ``.markdown``), plain text (``.txt``,
``.text``, ``.rst``), HTML (``.html``, ``.htm``), JSON (``.json``: a corpus
``[{"id", "title", "text"}]`` or A-RAG ``chunks.json``, told apart by content), JSONL
(``.jsonl``, ``.ndjson``), and with the ``pdf`` extra PDF (``.pdf``, one paged document) and
Word (``.docx``). Every document's text starts with its title on the first line.

The HTML pages of a folder lose the site name their titles share
(:func:`~sleuth.text.titles.site_affixes` over the ``<title>`` of the folder's first
:data:`SITE_SAMPLE` pages, read without parsing).

Every file is held to :class:`~sleuth.ingest.limits.ReadLimits` (size, expanded text, nesting);
HTML, PDF and ``.docx`` are parsed in a child process bounded in time and memory
(:mod:`sleuth.ingest.sandbox`). A file in a folder that is a link to a file outside that
folder is skipped and reported, and with ``within`` no file outside those folders is read.
"""

from __future__ import annotations

import contextlib
import html
import itertools
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from sleuth.errors import IngestError
from sleuth.ingest.limits import NO_LIMITS, ReadLimits
from sleuth.ingest.pdf import (
    DOCX_SUFFIXES,
    PDF_SUFFIXES,
    require_parser,
)
from sleuth.ingest.reading import (
    BadStructure,
    SkipSource,
    check_regular,
    read_text,
)
from sleuth.ingest.records import JsonFields, RecordItem, RecordSkip, json_records, jsonl_records
from sleuth.ingest.sandbox import Sandbox
from sleuth.ingest.textfiles import markdown_title, plain_title, with_title
from sleuth.text.titles import site_affixes, without_site
from sleuth.types import DocType, Document

__all__ = [
    "IngestReport",
    "JsonFields",
    "ReadLimits",
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
SITE_SAMPLE = 200  # pages of a folder whose titles say what the site's name is
_HEAD_BYTES = 16384  # where a page's <title> is looked for
_TITLE = re.compile(r"<title[^>]*>([^<]{1,500})</title", re.IGNORECASE)


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
    """One file to read: where it is, its doc id, whether it was named explicitly, and the
    file it is (a link resolved), the one that is opened."""

    path: Path
    doc_id: str
    explicit: bool
    real: Path


@dataclass(frozen=True)
class _Reading:
    """How one call reads its sources: the fields of JSON records, the limits, the folders
    every file must lie in (None: the folder walked), and the child that parses."""

    fields: JsonFields
    limits: ReadLimits
    within: tuple[Path, ...] | None
    sandbox: Sandbox
    owned: bool  # the sandbox is this call's own, stopped at its end


def iter_documents(
    paths: Sequence[str | Path],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    fields: JsonFields = DEFAULT_FIELDS,
    report: IngestReport | None = None,
    limits: ReadLimits = NO_LIMITS,
    within: Sequence[Path] | None = None,
    sandbox: Sandbox | None = None,
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

    Each file is held to ``limits``. A file found in a folder is read only when it resolves
    (its links followed) to a file inside that folder, and with ``within`` (a server's
    ``document_roots``) every file, named or found, must resolve inside one of those folders;
    others are reported and skipped. HTML, PDF and .docx are parsed by ``sandbox`` (one
    started for this call, and stopped after it, when none is given).
    """
    roots = _roots(paths)
    sink = report if report is not None else IngestReport()
    confine = None if within is None else tuple(Path(w).resolve() for w in within)
    reading = _Reading(fields, limits, confine, sandbox or Sandbox(limits), sandbox is None)
    return _documents(roots, tuple(include), tuple(exclude), sink, reading)


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


def count_sources(paths: Sequence[str | Path], *, include: Sequence[str] = (),
                  exclude: Sequence[str] = ()) -> int:
    """How many files :func:`iter_documents` would open in ``paths``, counted from the
    directory listing alone (no file opened): the total a progress bar counts to."""
    sink = IngestReport()
    return sum(1 for root in _roots(paths)
               for _ in _sources(root, tuple(include), tuple(exclude), sink))


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
    report: IngestReport,
    reading: _Reading,
) -> Iterator[Document]:
    seen: dict[str, str] = {}
    with reading.sandbox if reading.owned else contextlib.nullcontext():
        for root in roots:
            sources = _sources(root, include, exclude, report)
            sample = list(itertools.islice(sources, SITE_SAMPLE))
            site = site_affixes([title for source in sample
                                 if (title := _head_title(source, reading))])
            for source in itertools.chain(sample, sources):
                for doc in _load(source, reading, report):
                    doc = _without_site(doc, site)
                    first = seen.get(doc.doc_id)
                    if first is not None:
                        reason = f"duplicate doc_id {doc.doc_id!r} (first seen in {first})"
                        report.duplicates.append(Skipped(_where(doc), reason))
                        continue
                    seen[doc.doc_id] = _where(doc)
                    yield doc


def _head_title(source: _Source, reading: _Reading) -> str | None:
    """The ``<title>`` of an HTML page, read from its first bytes by a regular expression
    (no parser: it only tells what titles share); ``None`` for other files."""
    if source.path.suffix.lower() not in HTML_SUFFIXES:
        return None
    try:
        _confine(source, reading.within)
        check_regular(source.real)
        with open(source.real, "rb") as file:
            head = file.read(_HEAD_BYTES).decode("utf-8", "replace")
    except (OSError, SkipSource):
        return None
    match = _TITLE.search(head)
    return " ".join(html.unescape(match.group(1)).split()) if match else None


def _without_site(doc: Document, site: tuple[str, str]) -> Document:
    """An HTML page without its site's title prefix and suffix, in its title and on its
    text's first line (the title's)."""
    title = without_site(doc.title, site) if doc.type == "html" else doc.title
    if title == doc.title:
        return doc
    body = doc.text.split("\n", 1)[1] if doc.text.startswith(doc.title + "\n") else doc.text
    return replace(doc, title=title, text=with_title(title, body))


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
        yield _Source(root, root.name, explicit=True, real=root.resolve())
        return
    top = root.resolve()

    def on_error(err: OSError) -> None:
        report.skipped.append(Skipped(str(err.filename), f"cannot read folder: {err.strerror}"))

    for folder, dirnames, filenames in os.walk(root, onerror=on_error):
        base = Path(folder)
        rel_dir = PurePosixPath(base.relative_to(root).as_posix())
        if GENERATED_SOURCES in dirnames and SPHINX_MARKERS & set(filenames):
            dirnames.remove(GENERATED_SOURCES)
            report.skipped.append(Skipped(str(base / GENERATED_SOURCES), "a Sphinx build's "
                                          "copies of its pages' sources (the pages are read)"))
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
            path = base / name
            real = path.resolve()
            if real != top and top not in real.parents:
                report.skipped.append(Skipped(str(path), f"a link to a file outside {root} "
                                              "(not followed)"))
                continue
            yield _Source(path, rel.as_posix().removeprefix("./"), explicit=False, real=real)


# A Sphinx HTML build ships each page's reStructuredText beside it (``_sources/x.rst.txt``):
# read too, every page would be indexed twice, once without its rendering
GENERATED_SOURCES = "_sources"
SPHINX_MARKERS = frozenset({"searchindex.js", "objects.inv"})


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


def _load(source: _Source, reading: _Reading, report: IngestReport) -> Iterator[Document]:
    """Documents of one file; unusable files and records go to ``report.skipped``."""
    try:
        _confine(source, reading.within)
        items = _parse(source, reading)
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
            continue
        try:
            reading.limits.check_chars(len(item.text), f"record {item.doc_id!r}"
                                       if item.type in ("corpus", "chunks", "jsonl") else "text")
        except SkipSource as err:
            report.skipped.append(Skipped(_where(item), str(err)))
            continue
        yield item


def _confine(source: _Source, within: tuple[Path, ...] | None) -> None:
    """:class:`SkipSource` unless ``source`` resolves inside one of ``within``."""
    if within is not None and not any(source.real == w or w in source.real.parents
                                      for w in within):
        raise SkipSource("resolves to a file outside the folders that may be indexed "
                         "(serve.document_roots)")


def _check_source(path: Path) -> None:
    """Raise :class:`SkipSource` for a file that is not read at all: missing, not a regular
    file (a FIFO, socket, device), or of an unsupported type."""
    check_regular(path)
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        supported = ", ".join(sorted(SUPPORTED_SUFFIXES))
        raise SkipSource(f"unsupported file type {suffix or '(none)'!r} (supported: {supported})")


# Formats whose parser runs in the sandbox, by suffix
_SANDBOXED = {**dict.fromkeys(HTML_SUFFIXES, "html"), **dict.fromkeys(PDF_SUFFIXES, "pdf"),
              **dict.fromkeys(DOCX_SUFFIXES, "docx")}


def _parse(source: _Source, reading: _Reading) -> Iterator[RecordItem]:
    """Parse one file by its extension; raises :class:`SkipSource` or :class:`BadStructure`."""
    path = source.path
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        _check_source(path)  # raises: not a regular file, or an unsupported type
    kind = _SANDBOXED.get(suffix)
    if kind is not None:
        require_parser(kind)  # the child has what this process has: say so before starting it
        check_regular(source.real)
        reading.limits.check_size(source.real.stat().st_size)
        doc = reading.sandbox.parse(source.real, source.doc_id, kind)
        return iter([replace(doc, path=str(path))])
    if suffix in JSON_SUFFIXES | JSONL_SUFFIXES:
        text = read_text(source.real)
        records = json_records if suffix in JSON_SUFFIXES else jsonl_records
        return records(path, text, reading.fields)
    reading.limits.check_size(_size(source.real))
    text = read_text(source.real)
    return iter([_text_document(source, suffix, text)])


def _size(path: Path) -> int:
    check_regular(path)
    return path.stat().st_size


def _text_document(source: _Source, suffix: str, text: str) -> Document:
    """A markdown or plain-text file as one document, its title on the first line."""
    kind: DocType
    if suffix in MARKDOWN_SUFFIXES:
        kind, title = "markdown", markdown_title(text)
    else:
        kind, title = "text", plain_title(text)
    title = title or source.path.stem
    return Document(source.doc_id, title, with_title(title, text), kind, str(source.path), {})
