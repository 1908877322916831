"""What the browser app reads of an index besides answers: the document list, a passage of a
document with the cited lines marked (and, given the claim a citation backs, the sentences of
the cited chunk that support it), the image of a PDF page (drawn in a bounded child process
and kept, :class:`PageImages`), and what became of each uploaded file.

Every function reads through the :class:`~sleuth.index.read.ReadIndex` it is given, which
:meth:`sleuth.service.service.Service.view` scopes to the caller: a document the caller may not see
is "no document", exactly like one that does not exist. Line numbers are 0-based and pages
1-based, as in :mod:`sleuth.text.docview` and the citations' ``where``.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from sleuth.errors import NotFoundError, RequestError, SleuthError
from sleuth.ingest import SUPPORTED_SUFFIXES, IngestReport, ReadLimits, Skipped, iter_documents
from sleuth.ingest.reading import SkipSource
from sleuth.ingest.sandbox import ChildFailed, OverLimit, Sandbox
from sleuth.service.pool import Quota, WorkPool
from sleuth.store.base import DocumentInfo
from sleuth.text.docview import MAX_LINE_CHARS, DocumentView
from sleuth.text.ids import CITATION
from sleuth.text.lexicon import STOPWORDS, stem, words
from sleuth.text.querytext import content_words
from sleuth.types import Chunk, Document, Sentence

if TYPE_CHECKING:
    from sleuth.index.read import ReadIndex
    from sleuth.index.write import AddReport

LIST_LIMIT, LIST_MAX = 200, 1000  # documents per page of the list: by default, at most
CONTEXT_LINES = 15  # lines shown before and after the highlighted ones
WINDOW_MAX = 400  # lines of a passage at most (a page of a PDF is shown whole)
FIRST_LINES = 200  # lines shown when nothing in the document is asked for
PAGE_ZOOM, PAGE_MAX_PIXELS = 1.5, 2000  # page images: the scale, and their longest side
RENDER_QUEUE, RENDERS_PER_KEY = 4, 2  # pages waiting to be drawn: in all, of one key
RENDER_CACHE_BYTES, RENDER_CACHE_ENTRIES = 64 << 20, 1024  # drawings and refusals kept
REFUSED_SECONDS = 600  # how long a page that could not be drawn is not tried again
TITLE_MAX = 200  # characters of a session title
SUPPORT_MAX = 2000  # characters of the claim a passage's sentences are matched against
QUOTE_WEIGHT = 2  # what a quoted string of the claim found in a sentence counts, in words
_RECORD_TYPES = {"corpus", "chunks", "json", "jsonl"}  # many documents from one file
_LINES = re.compile(r"(\d+)(?:-(\d+))?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_QUOTED = re.compile(r"[\"“”]([^\"“”\n]{2,200})[\"“”]")


# -- the document list ---------------------------------------------------------------------


def list_documents(index: ReadIndex, *, collection: str | None = None, q: str | None = None,
                   limit: int = LIST_LIMIT, offset: int = 0) -> dict[str, Any]:
    """The documents ``index`` shows, sorted by title then id: those of ``collection`` when
    given, whose title or id holds ``q`` (case-insensitive); ``limit`` of them from
    ``offset``, and how many there are in all."""
    needle = (q or "").strip().casefold()
    found = [info for info in index.document_list()
             if (collection is None or info.collection == collection)
             and (needle in info.title.casefold() or needle in info.doc_id.casefold())]
    found.sort(key=lambda info: (info.title.casefold(), info.title, info.doc_id))
    page = found[offset: offset + max(0, min(limit, LIST_MAX))]
    return {"documents": [_listed(info) for info in page], "total": len(found)}


def _listed(info: DocumentInfo) -> dict[str, Any]:
    return {"doc_id": info.doc_id, "title": info.title, "collection": info.collection,
            "type": file_type(info.type, info.path), "pages": info.pages,
            "chunks": info.chunks, "groups": list(info.groups), "updated": _modified(info.path)}


def file_type(kind: str, path: str | None) -> str:
    """What a person calls the document's type: its file's extension (``md``, ``pdf``), or
    for a record of a JSON or corpus file, the kind of source (``corpus``, ``jsonl``)."""
    suffix = Path(path).suffix.lower().lstrip(".") if path else ""
    return kind if kind in _RECORD_TYPES or not suffix else suffix


def _modified(path: str | None) -> str | None:
    """When the source file last changed (ISO, UTC), None when the server cannot see it;
    the index keeps no time of its own per document."""
    try:
        seconds = Path(path).stat().st_mtime if path else None
    except OSError:
        return None
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


# -- a passage -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Window:
    first: int
    last: int
    highlight: tuple[int, int] | None
    page: int | None


def passage(index: ReadIndex, *, doc: str | None = None, chunk: str | None = None,
            lines: str | None = None, page: int | None = None,
            support: str | None = None) -> dict[str, Any]:
    """A window of a document's numbered lines: around chunk ``chunk`` or lines ``lines``
    (``"a-b"`` or ``"a"``) with those lines highlighted, the whole of PDF page ``page``, or
    else the first lines. ``doc`` may be left out when ``chunk`` is given.

    ``support`` is the claim a citation of ``chunk`` backs (the answer's sentence, at most
    :data:`SUPPORT_MAX` characters; citation markers in it are left out). ``support`` in the
    result is then the chunk's sentence that shares the most words with it (and the next
    one where that shares as many), within the highlighted lines: their ``lines``, ``marks``
    (per line, the characters the sentences cover), ``sentences`` and the shared ``terms``.
    It is null without a chunk or claim, and where no sentence shares a word: then the
    whole highlighted chunk stands as the evidence."""
    if support is not None and len(support) > SUPPORT_MAX:
        raise RequestError(f"support is {len(support)} characters; give the claim in at most "
                           f"{SUPPORT_MAX}")
    document, found = _target(index, doc, chunk)
    view = DocumentView(document)
    span = (view.line_of(found.start), view.line_of(max(found.start, found.end - 1))) \
        if found is not None else None
    if lines is not None:
        span = _line_span(view, lines)
    backing = _support(view, found, span, support) if found is not None and support else None
    window = _window(view, span, page)
    if backing is not None and page is None and not (
            window.first <= backing["lines"][0] and backing["lines"][1] <= window.last):
        # a chunk longer than a window: the window around its supporting sentences
        around = _window(view, (backing["lines"][0], backing["lines"][1]), None)
        window = _Window(around.first, around.last, span, around.page)
    shown = [{"number": line.number, "text": _cut(line.text), "page": line.page}
             for line in view.lines(window.first, window.last)]
    pages = view.page_count or None
    image = page_image_path(document, window.page) if window.page is not None else None
    return {"doc_id": document.doc_id, "title": document.title,
            "collection": _collection(index, document.doc_id),
            "type": file_type(document.type, document.path), "pages": pages,
            "page": window.page, "chunk_id": chunk, "start_line": window.first,
            "end_line": window.last,
            "highlight": list(window.highlight) if window.highlight else None,
            "support": backing, "lines": shown, "image": image}


def _support(view: DocumentView, chunk: Chunk, span: tuple[int, int] | None,
             claim: str) -> dict[str, Any] | None:
    """The sentences of ``chunk`` within lines ``span`` that best support ``claim``, as
    :func:`passage` returns them; None where none shares a word with it."""
    terms = _claim_terms(claim)
    quotes = [q.casefold() for q in _QUOTED.findall(claim) if q.strip()]
    sentences = [s for s in chunk.sentences if span is None or (
        view.line_of(s.start) <= span[1] and view.line_of(max(s.start, s.end - 1)) >= span[0])]
    if not sentences or not (terms or quotes):
        return None
    shared = [terms & _sentence_terms(s.text) for s in sentences]
    scores = [len(held) + QUOTE_WEIGHT * sum(q in s.text.casefold() for q in quotes)
              for s, held in zip(sentences, shared, strict=True)]
    best = max(range(len(sentences)), key=lambda i: scores[i])  # the first of the best
    if scores[best] == 0:
        return None
    chosen = [best]
    if best + 1 < len(sentences) and scores[best + 1] == scores[best]:
        chosen.append(best + 1)
    picked = [sentences[i] for i in chosen]
    start, end = picked[0].start, picked[-1].end
    first, last = view.line_of(start), view.line_of(max(start, end - 1))
    by_stem = {stem(w): w for w in words(claim)}
    return {"lines": [first, last], "marks": _marks(view, picked),
            "sentences": [s.text for s in picked],
            "terms": sorted({by_stem.get(t, t) for i in chosen for t in shared[i]})}


def _claim_terms(claim: str) -> frozenset[str]:
    """The stems of a claim's content words (numbers included, whatever their length),
    without its citation markers."""
    return frozenset(stem(w) for w in content_words(CITATION.sub(" ", claim))
                     if w not in STOPWORDS and (len(w) > 2 or w.isdigit()))


def _sentence_terms(text: str) -> frozenset[str]:
    return frozenset(stem(w) for w in words(text))


def _marks(view: DocumentView, sentences: Sequence[Sentence]) -> list[dict[str, int]]:
    """Where ``sentences`` lie on their lines: per line, ``start`` and ``end`` characters of
    the line's text (end exclusive, within what :func:`passage` shows of a long line)."""
    marks: dict[int, list[int]] = {}
    for sentence in sentences:
        end = max(sentence.start, sentence.end - 1)
        for number in range(view.line_of(sentence.start), view.line_of(end) + 1):
            begin = view.line_start(number)
            width = min(len(view.line_text(number)), MAX_LINE_CHARS)
            first = min(max(0, sentence.start - begin), width)
            last = min(max(0, sentence.end - begin), width)
            if number in marks:  # two adjacent sentences on one line: one mark
                marks[number] = [min(marks[number][0], first), max(marks[number][1], last)]
            elif last > first:
                marks[number] = [first, last]
    return [{"line": n, "start": a, "end": b} for n, (a, b) in sorted(marks.items())]


def _target(index: ReadIndex, doc: str | None,
            chunk: str | None) -> tuple[Document, Chunk | None]:
    """The document asked for and the chunk, when one is."""
    if chunk is None:
        if doc is None:
            raise RequestError("name the passage: give doc (a document id) or chunk (a "
                               "chunk id)")
        return _document(index, doc), None
    found = index.read([chunk]).chunks
    if not found or (doc is not None and found[0].doc_id != doc):
        where = f" in document {doc!r}" if doc is not None else ""
        raise NotFoundError(f"no chunk {chunk!r}{where} in the index")
    return _document(index, found[0].doc_id), found[0]


def _document(index: ReadIndex, doc_id: str) -> Document:
    document = index.document(doc_id)
    if document is None:
        raise NotFoundError(f"no document {doc_id!r} in the index")
    return document


def _line_span(view: DocumentView, lines: str) -> tuple[int, int]:
    """``"a-b"`` (or ``"a"``) as 0-based inclusive lines of ``view``, in order, the end
    clamped; lines the document does not have are not found (404)."""
    match = _LINES.fullmatch(lines.strip())
    if match is None:
        raise RequestError(f"invalid lines {lines!r}: give a line or a range, such as 120 or "
                           "120-131 (0-based)")
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) else first
    first, last = min(first, last), max(first, last)
    if first >= view.line_count:
        raise NotFoundError(f"line {first} is past the end of {view.document.doc_id!r} "
                           f"({view.line_count} lines, numbered 0–{view.line_count - 1})")
    return first, min(last, view.line_count - 1)


def _window(view: DocumentView, span: tuple[int, int] | None, page: int | None) -> _Window:
    """The lines to show: PDF page ``page`` whole; else ``span`` with context (at most
    :data:`WINDOW_MAX` lines); else the first :data:`FIRST_LINES`."""
    if page is not None:
        if not view.page_count:
            raise NotFoundError(f"no page {page} in {view.document.doc_id!r}: it has no "
                                "pages (it is not a PDF); leave page out")
        if page > view.page_count:
            raise NotFoundError(f"no page {page} in {view.document.doc_id!r} (it has "
                                f"{view.page_count})")
        first, last = view.page_lines(page)
        return _Window(first, last, span, page)
    if span is None:
        last = min(view.line_count, FIRST_LINES) - 1
        return _Window(0, last, None, view.page_of(0) if view.page_count else None)
    first = max(0, span[0] - CONTEXT_LINES)
    last = min(view.line_count - 1, span[1] + CONTEXT_LINES, first + WINDOW_MAX - 1)
    return _Window(first, last, span, view.page_of(view.line_start(span[0])))


def _cut(text: str) -> str:
    if len(text) <= MAX_LINE_CHARS:
        return text
    return text[:MAX_LINE_CHARS] + f" …[{len(text) - MAX_LINE_CHARS} more chars]"


def _collection(index: ReadIndex, doc_id: str) -> str | None:
    return next((info.collection for info in index.document_list([doc_id])), None)


# -- page images -----------------------------------------------------------------------------


def page_image_path(document: Document, page: int) -> str | None:
    """The URL path of PDF page ``page``'s image, None where none can be rendered (not a
    PDF, PyMuPDF missing, the original file gone)."""
    if document.type != "pdf" or not _renderable(document):
        return None
    return "/v1/page-image?" + urlencode({"doc": document.doc_id, "page": page})


def _renderable(document: Document) -> bool:
    return bool(document.path) and Path(str(document.path)).is_file() and \
        importlib.util.find_spec("pymupdf") is not None


@dataclass(frozen=True)
class PageSource:
    """The file a page image is drawn from, and what the drawing is cached under: the
    file's identity (resolved path, size, change time in ns) with the page and scale, so a
    changed file is drawn again."""

    doc_id: str
    page: int
    path: Path
    key: tuple[str, int, int, int, float, int]


def page_source(index: ReadIndex, doc_id: str, page: int) -> PageSource:
    """Where PDF page ``page`` of document ``doc_id`` is drawn from; NotFoundError when the
    document is no PDF, has no such page, or its file or PyMuPDF is missing."""
    document = _document(index, doc_id)
    pages = DocumentView(document).page_count
    if document.type != "pdf" or not pages:
        raise NotFoundError(f"{doc_id!r} is not a PDF: it has no page images")
    if not 1 <= page <= pages:
        raise NotFoundError(f"no page {page} in {doc_id!r} (it has {pages})")
    if importlib.util.find_spec("pymupdf") is None:
        raise NotFoundError("page images need PyMuPDF on the server: pip install "
                            "'sleuth-rag[pdf]'")
    path = Path(str(document.path or "")).resolve()
    try:
        found = path.stat() if document.path and path.is_file() else None
    except OSError:
        found = None
    if found is None:
        raise NotFoundError(f"the original file of {doc_id!r} is no longer on the server")
    return PageSource(doc_id, page, path, (str(path), found.st_size, found.st_mtime_ns, page,
                                           PAGE_ZOOM, PAGE_MAX_PIXELS))


@dataclass(frozen=True)
class _Refused:
    """A page that could not be drawn, and until when that answer stands."""

    error: RequestError
    until: float


def _standing(refused: _Refused) -> RequestError:
    """The error of a page that could not be drawn, saying how long it stands."""
    left = max(1, math.ceil(refused.until - time.monotonic()))
    return type(refused.error)(f"{refused.error}; not tried again for {left} s")


class PageImages:
    """PDF pages drawn as PNGs, each at most once in a while: in one child process bounded
    like parsing (``ingest.parse_seconds``, ``ingest.parse_memory_mb``, niced), one page at
    a time, on a thread of its own with at most :data:`RENDER_QUEUE` waiting (so pages
    being drawn never hold the threads searches run on), each key holding at most
    :data:`RENDERS_PER_KEY` of them. Drawings are kept, most recently used, up to
    :data:`RENDER_CACHE_BYTES`; a page that could not be drawn (over a limit, or broken)
    answers the same error for :data:`REFUSED_SECONDS` without being tried again."""

    def __init__(self, limits: ReadLimits) -> None:
        self.sandbox = Sandbox(limits, preload=("pymupdf",))
        self.pool = WorkPool(1, RENDER_QUEUE, name="render")
        self.quota = Quota(RENDERS_PER_KEY, "page images being drawn",
                           "page images per key", lambda: self.pool.seconds)
        self._kept: OrderedDict[tuple[Any, ...], bytes | _Refused] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.drawn = 0  # pages sent to the child to be drawn, whatever came of it

    async def image(self, source: PageSource, key: str) -> bytes:
        """The page of ``source`` for the caller of API key ``key``: from the cache, else
        drawn on the render thread (TooMany, 429, past the key's share; Busy, 503, when the
        queue is full)."""
        kept = self.kept(source)
        if kept is not None:
            return kept
        give_back = self.quota.take(key)
        try:
            return await self.pool.run(lambda: self.render(source))
        finally:
            give_back()

    def render(self, source: PageSource) -> bytes:
        """The page of ``source`` from the cache, else drawn in the child now (waiting for
        the one before it); RequestError (400) past a limit, NotFoundError when it cannot
        be drawn, SleuthError (500) when the child cannot be started."""
        kept = self.kept(source)
        if kept is not None:
            return kept
        where = f"page {source.page} of {source.doc_id!r}"
        with self._lock:
            self.drawn += 1
        try:
            png = self.sandbox.render(source.path, source.page, PAGE_ZOOM, PAGE_MAX_PIXELS)
        except ChildFailed as why:  # the server's fault, not the page's: not kept
            raise SleuthError(f"{where} cannot be drawn now: {why}") from None
        except OverLimit as why:
            refused = _Refused(RequestError(f"{where} is too costly to draw: {why}"),
                               time.monotonic() + REFUSED_SECONDS)
        except SkipSource as why:
            refused = _Refused(NotFoundError(f"{where} cannot be drawn from its file: {why}"),
                               time.monotonic() + REFUSED_SECONDS)
        else:
            self._keep(source, png)
            return png
        self._keep(source, refused)
        raise _standing(refused)

    def kept(self, source: PageSource) -> bytes | None:
        """The drawing of ``source`` when it is kept; its error while that stands; None when
        it must be drawn."""
        with self._lock:
            entry = self._kept.get(source.key)
            if entry is None:
                return None
            if isinstance(entry, bytes):
                self._kept.move_to_end(source.key)
                return entry
            if entry.until <= time.monotonic():
                del self._kept[source.key]
                return None
        raise _standing(entry)

    def _keep(self, source: PageSource, entry: bytes | _Refused) -> None:
        """Keep ``entry``, dropping the least recently used past the cache's bounds."""
        with self._lock:
            old = self._kept.pop(source.key, None)
            self._bytes -= len(old) if isinstance(old, bytes) else 0
            self._kept[source.key] = entry
            self._bytes += len(entry) if isinstance(entry, bytes) else 0
            while len(self._kept) > RENDER_CACHE_ENTRIES or self._bytes > RENDER_CACHE_BYTES:
                _, dropped = self._kept.popitem(last=False)
                self._bytes -= len(dropped) if isinstance(dropped, bytes) else 0

    def close(self) -> None:
        """Stop drawing: the child is killed, waiting pages abandoned."""
        self.pool.close()
        self.sandbox.close()


# -- sessions and uploads --------------------------------------------------------------------


def check_title(title: str) -> str:
    """A session title as given, without surrounding white space; RequestError unless it is
    1 to :data:`TITLE_MAX` characters on one line (a final newline is dropped, as the
    published pattern's ``$`` allows one)."""
    line = title.removesuffix("\n")
    if _CONTROL.search(line) or not line.strip() or len(title) > TITLE_MAX:
        raise RequestError(f"a session title is 1 to {TITLE_MAX} characters on one line")
    return line.strip()


def unsupported(name: str) -> str | None:
    """Why a file called ``name`` cannot be indexed by its type, None when it can."""
    suffix = Path(name).suffix.lower()
    if suffix in SUPPORTED_SUFFIXES:
        return None
    return (f"unsupported file type {suffix or '(none)'!r} (supported: "
            f"{', '.join(sorted(SUPPORTED_SUFFIXES))})")


def file_statuses(index: ReadIndex, files: Sequence[tuple[str, Path | str]],
                  report: AddReport) -> list[dict[str, Any]]:
    """What became of each uploaded file, ``(name as uploaded, saved path or why it was
    refused)``: ``indexed`` (new or changed), ``unchanged`` or ``error``, with its document
    id (the first, for a file of records) and chunks."""
    changed = {*report.added, *report.updated}
    reasons = {_real(s.path): s.reason for s in report.skipped}
    by_path: dict[str, list[DocumentInfo]] = {}
    if any(isinstance(saved, Path) for _, saved in files):
        for info in index.document_list():  # paths as stored: absolute on both sides
            by_path.setdefault(_real(info.path or ""), []).append(info)
    out: list[dict[str, Any]] = []
    for name, saved in files:
        if isinstance(saved, str):
            out.append({"name": name, "status": "error", "error": saved})
            continue
        where = _real(str(saved))
        docs = by_path.get(where, [])
        if not docs:
            reason = reasons.get(where) or next(
                (r for p, r in reasons.items() if p.startswith((where + "[", where + ":"))),
                "no document could be read from it")
            out.append({"name": name, "status": "error", "error": reason})
            continue
        status = "indexed" if any(d.doc_id in changed for d in docs) else "unchanged"
        out.append({"name": name, "status": status, "doc_id": docs[0].doc_id,
                    "chunks": sum(d.chunks for d in docs), "documents": len(docs)})
    return out


def _real(path: str) -> str:
    """``path`` made absolute (a relative one read from the working folder, which is
    resolved; no file system calls), so a document stored under a relative path (a server
    started with a relative ``--index``) matches the upload saved there."""
    return os.path.abspath(path) if path else path


def read_each(paths: Sequence[Path], sandbox: Sandbox) -> tuple[list[Document], IngestReport]:
    """The documents of uploaded files, each file read on its own (in ``sandbox``, within its
    limits): a file that cannot be read at all (a JSON file of the wrong shape) is reported
    as skipped with its reason instead of failing the others; a doc id already read from
    another file is a duplicate. When no file gave a document, the first such error is
    raised (the request is refused as a whole, as for one bad file)."""
    report = IngestReport(skipped=[], duplicates=[])
    docs: list[Document] = []
    seen: dict[str, str] = {}
    failed: list[SleuthError] = []
    for path in paths:
        try:
            found = list(iter_documents([path], report=report, limits=sandbox.limits,
                                        sandbox=sandbox))
        except SleuthError as err:
            failed.append(err)
            report.skipped.append(Skipped(str(path), str(err)))
            continue
        for doc in found:
            if doc.doc_id in seen:
                report.duplicates.append(Skipped(str(path), f"duplicate doc_id {doc.doc_id!r} "
                                                            f"(first seen in {seen[doc.doc_id]})"))
                continue
            seen[doc.doc_id] = str(path)
            docs.append(doc)
    if failed and not docs:
        raise failed[0]
    return docs, report


def upload_answer(answer: dict[str, Any], files: Sequence[tuple[str, Path | str]],
                  statuses: list[dict[str, Any]], folder: Path) -> dict[str, Any]:
    """The answer to an upload: ``answer`` (the indexing report) with ``files``' statuses;
    the saved files no document came from removed (a refused file leaves nothing), and the
    server ``folder`` they were saved in left out of every path and reason."""
    remove_uploads([path for (_, path), status in zip(files, statuses, strict=True)
                    if isinstance(path, Path) and status["status"] == "error"])
    for status in statuses:
        if "error" in status:
            status["error"] = without_folder(status["error"], folder)
    for kind in ("skipped", "duplicates"):
        answer[kind] = [{"path": without_folder(s["path"], folder),
                         "reason": without_folder(s["reason"], folder)} for s in answer[kind]]
    return {**answer, "files": statuses}


def remove_uploads(paths: Sequence[Path]) -> None:
    """Delete saved uploads that no document came from."""
    for path in paths:
        path.unlink(missing_ok=True)


def without_folder(text: str, folder: Path) -> str:
    """``text`` without the server folder uploads are saved in (a tenant learns only the
    names it uploaded)."""
    for form in {str(folder.resolve()), str(folder)}:
        text = text.replace(form + "/", "").replace(form, "uploads")
    return text
