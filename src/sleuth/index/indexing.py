"""The ingestion pipeline's parts that need no index: records, batching, embedding, summaries.

:meth:`sleuth.index.write.Index.add` drives the pipeline (read, chunk, embed, write, resume);
this module holds the pieces it is made of, as plain functions over documents, chunks and
an embedder: the report and progress records, the split of long documents into parts
(:func:`parts`), the embedding of one batch with its documents' summaries (:func:`prepare`),
the extractive summary (:func:`summarize`), the content hash that tells a changed document
(:func:`digest`), the pages that copy another (:class:`Copies`) and the command line that
resumes an interrupted build.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from sleuth.embed import Embedder
from sleuth.index.pipeline import Stopped
from sleuth.ingest import IngestReport, JsonFields, Skipped, iter_chunks
from sleuth.store.base import PARTIAL, PreparedDocument, Store
from sleuth.text.access import DEFAULT_COLLECTION, Access, looks_scoped, restricted, scoped_doc_id
from sleuth.text.threads import batch_work
from sleuth.types import Chunk, DocType, Document

BATCH_SENTENCES = 2048
PIPELINE_DEPTH = 2  # batches embedded ahead of the one being written
SUMMARY_SENTENCES = 3  # central sentences in a document's extractive summary
SUMMARY_CHARS = 600
SUMMARY_MIN_WORDS = 6
BACKFILL_BATCH = 256  # documents summarised per embedding call when older ones lack one

Grant = tuple[str, tuple[str, ...]]  # (collection, access groups) of the documents added


@dataclass
class IndexProgress:
    """Counters reported after every stored batch, each file begun and each embedding
    batch (and once at the end). ``files`` counts the source files read so far (a file
    whose documents are all read, or that was skipped), of ``files_total`` (counted from
    the listing before reading; None where the documents came from no files): what a
    progress bar's total, percentage and time left are of."""

    documents_seen: int = 0
    documents_indexed: int = 0
    documents_unchanged: int = 0
    chunks: int = 0
    sentences: int = 0
    done: bool = False
    files: int = 0
    files_total: int | None = None


@dataclass
class AddReport:
    """What one ``Index.add`` call did."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0
    deleted: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    duplicates: list[Skipped] = field(default_factory=list)
    unsupported: dict[str, int] = field(default_factory=dict)  # suffix -> files in folders
    resumed: bool = False
    chunks: int = 0
    sentences: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": len(self.added), "updated": len(self.updated), "unchanged": self.unchanged,
            "deleted": len(self.deleted), "chunks": self.chunks, "sentences": self.sentences,
            "resumed": self.resumed,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "duplicates": [{"path": s.path, "reason": s.reason} for s in self.duplicates],
            "unsupported": dict(self.unsupported),
        }


ProgressCallback = Callable[[IndexProgress], None]


@dataclass
class Batch:
    """Documents embedded and ready for the store."""

    documents: list[PreparedDocument]
    chunks: int
    sentences: int


def serialised(callback: ProgressCallback | None) -> ProgressCallback:
    """``callback`` behind a lock: progress comes from the embedding thread and the writer."""
    lock = threading.Lock()

    def report(progress: IndexProgress) -> None:
        if callback is not None:
            with lock:
                callback(progress)

    return report


@dataclass(frozen=True)
class Part:
    """Chunks of one document to store together: all of them, or a part of a long one."""

    doc: Document
    digest: str
    chunks: list[Chunk]
    opens: bool
    closes: bool


def parts(chunks: Iterator[Chunk], sentences: int) -> Iterator[tuple[list[Chunk], bool]]:
    """``chunks`` in consecutive parts of about ``sentences`` sentences, each with whether
    it is the last (at least one chunk each; no chunks: one empty last part, so the
    document row is stored)."""
    part: list[Chunk] = []
    size = 0
    ready: list[Chunk] | None = None  # a full part, held until we know if more follow
    for chunk in chunks:
        if ready is not None:
            yield ready, False
            ready = None
        part.append(chunk)
        size += len(chunk.sentences)
        if size >= sentences:
            ready, part, size = part, [], 0
    if ready is not None:
        if part:
            yield ready, False
        else:
            yield ready, True
            return
    yield part, True


def digest(doc: Document, grant: Grant, chunk_tokens: int, embedder: str | None) -> str:
    """The content hash of a document as indexed: a change of any input rewrites it."""
    payload: list[Any] = [doc.text, doc.title, doc.type, doc.path, chunk_tokens, embedder]
    if grant != (DEFAULT_COLLECTION, ()):  # so a change of groups rewrites the document
        payload.append(list(grant))
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()


def prepare(embedder: Embedder, pending: list[Part], progress: IndexProgress,
            on_progress: ProgressCallback, grant: Grant) -> Batch:
    """Embed the sentences of ``pending`` document parts, and the summaries of the
    documents they open (from the opening part's sentences), ready to store."""
    inputs = [embed_inputs(p.doc, p.chunks) for p in pending]
    flat = [t for group in inputs for t in group]

    def embedded(n: int) -> None:
        progress.sentences += n
        on_progress(progress)

    with batch_work():
        matrix = embedder.embed(flat, on_batch=embedded)
    groups, row = [], 0
    for group in inputs:
        groups.append(matrix[row : row + len(group)])
        row += len(group)
    opening = [i for i, p in enumerate(pending) if p.opens]
    summaries = {i: summarize(pending[i].doc, pending[i].chunks, groups[i]) for i in opening}
    with batch_work():
        opened = embedder.embed([summaries[i] for i in opening])
    blended = {i: blend(vector, groups[i]) for i, vector in zip(opening, opened, strict=True)}
    prepared = [PreparedDocument(p.doc, p.digest, p.chunks, vectors, summaries.get(i, ""),
                                 blended.get(i), *grant, opens=p.opens, closes=p.closes)
                for i, (p, vectors) in enumerate(zip(pending, groups, strict=True))]
    return Batch(prepared, sum(len(p.chunks) for p in pending), len(flat))


def embed_inputs(doc: Document, chunks: Sequence[Chunk]) -> list[str]:
    """Sentences to embed, each prefixed with its document title for context."""
    title = doc.title.strip()
    return [with_title(title, s.text) for chunk in chunks for s in chunk.sentences]


def summarize(doc: Document, chunks: Sequence[Chunk], vectors: np.ndarray | None = None) -> str:
    """A short extractive summary: the title and the document's most central sentences
    (closest to the mean of its sentence ``vectors``), in document order; without vectors,
    its first sentences."""
    sentences = [s.text for c in chunks for s in c.sentences]
    title = doc.title.strip()
    if not sentences:
        return (title + "\n" + " ".join(doc.text[:SUMMARY_CHARS].split())).strip()
    if vectors is None or len(vectors) != len(sentences):
        central = list(range(min(SUMMARY_SENTENCES, len(sentences))))
    else:  # central among sentences of some length (not headings or list numbers)
        centroid = vectors.mean(axis=0)
        scores = vectors @ centroid
        scores[[len(s.split()) < SUMMARY_MIN_WORDS for s in sentences]] -= 2.0
        central = sorted(int(i) for i in np.argsort(-scores)[:SUMMARY_SENTENCES])
    body = " ".join(" ".join(sentences[i].split()) for i in central)[:SUMMARY_CHARS]
    return f"{title}\n{body}".strip() if title else body


def lead_summaries(store: Store, embedder: Embedder, doc_ids: Sequence[str]
                   ) -> Iterator[list[tuple[str, str, np.ndarray]]]:
    """Summaries of documents indexed by a version without them, a batch at a time:
    ``(doc_id, text, vector)`` from each document's first chunk (the lead: no sentence
    vectors needed)."""
    for start in range(0, len(doc_ids), BACKFILL_BATCH):
        rows = []
        for doc_id in doc_ids[start : start + BACKFILL_BATCH]:
            doc = store.get_document(doc_id)
            if doc is None:
                continue
            first = store.chunk_spans(doc_id)[:1]
            chunks = list(store.get_chunks([c for c, _, _ in first]).values())
            rows.append((doc_id, summarize(doc, chunks)))
        if rows:
            with batch_work():
                embedded = embedder.embed([text for _, text in rows])
            yield [(doc_id, text, vector)
                   for (doc_id, text), vector in zip(rows, embedded, strict=True)]


def blend(summary: np.ndarray, sentences: np.ndarray) -> np.ndarray:
    """A document's summary vector: its summary's embedding averaged with the centroid of
    its sentence vectors (the centroid keeps topics of long documents that three sentences
    miss), unit length."""
    if not len(sentences):
        return summary
    centroid = sentences.mean(axis=0)
    vector: np.ndarray = summary + centroid / max(1e-9, float(np.linalg.norm(centroid)))
    return (vector / max(1e-9, float(np.linalg.norm(vector)))).astype(np.float32)


def with_title(title: str, text: str) -> str:
    """A sentence as it is embedded: prefixed with its document's title for context."""
    return f"{title}: {text}" if title and not text.startswith(title) else text


def resume_command(location: str, paths: Sequence[str | Path], include: Sequence[str],
                   exclude: Sequence[str], fields: JsonFields | None, collection: str,
                   groups: Sequence[str], delete_missing: bool) -> str:
    """The ``sleuth index`` command line that repeats an ``add`` (and resumes it)."""
    args = ["sleuth", "index", *map(str, paths), "--index", location]
    for flag, values in (("--include", include), ("--exclude", exclude)):
        for value in values:
            args += [flag, value]
    given, default = fields or JsonFields(), JsonFields()
    for flag, value, standard in (("--id-field", given.id, default.id),
                                  ("--title-field", given.title, default.title),
                                  ("--text-field", given.text, default.text)):
        if value != standard:
            args += [flag, value]
    if collection != DEFAULT_COLLECTION:
        args += ["--collection", collection]
    if groups:
        args += ["--groups", ",".join(groups)]
    if not delete_missing:
        args.append("--keep-missing")
    return shlex.join(args)


def identity(embedder: Embedder) -> dict[str, Any]:
    """The embedder as an index's manifest records it."""
    return {"name": embedder.name, "dim": embedder.dim, "title_context": True}


def refusal(doc_id: str, collection: str, writer: Access | None,
            stored: dict[str, tuple[str, tuple[str, ...]]]) -> str | None:
    """Why ``writer`` may not write document ``doc_id`` (None: it may). The answer does
    not depend on whether a document it cannot read exists unless the id was made to
    reach outside the writer's scope."""
    if restricted(writer) is None:
        return None
    assert writer is not None
    if collection == DEFAULT_COLLECTION and looks_scoped(doc_id):
        return ("not written: ids of the form NAME:... or NAME~GROUP:... name a "
                "collection's documents; give this document another id")
    held = stored.get(doc_id)
    if held is not None and not writer.may_write(*held):
        return ("not written: a document with this id is held by groups this key does "
                "not hold")
    return None


# Documents that are pages of a site or files of a folder: one whose text another has already
# given is a copy (a page saved under two names, a "current" page that is the latest
# release's). Records of a corpus (JSON, JSONL) keep their ids whatever their text.
PAGE_TYPES: frozenset[DocType] = frozenset({"html", "markdown", "text", "pdf", "docx"})


class Copies:
    """The pages of one write whose text another page already has, in this write or, for
    a page new to the index, among the pages of the same collection and groups that are
    indexed (whose file, if they came from one, is still there: a page moved is not its
    own copy). Each text is indexed once; the later copies are reported as duplicates."""

    def __init__(self, store: Store, grant: Grant) -> None:
        self.store, self.grant = store, grant
        self.met: dict[str, str] = {}  # hash of a page's text -> where it was met first
        self.stored_titles: dict[str, list[str]] | None = None  # title -> indexed pages

    def original(self, doc: Document, known: bool) -> str | None:
        """Where the text of ``doc`` (a page already indexed under its id when ``known``)
        was met first, or None (then it is this page's from now on)."""
        if doc.type not in PAGE_TYPES:
            return None
        key = hashlib.sha256(doc.text.encode()).hexdigest()
        first = self.met.get(key) or (None if known else self.indexed(doc, key))
        if first is None:
            self.met[key] = doc.path or doc.doc_id
        return first

    def indexed(self, doc: Document, key: str) -> str | None:
        """Where an indexed page of the same title and text as ``doc`` comes from."""
        if self.stored_titles is None:
            same = {doc_id for doc_id, grant in self.store.document_access().items()
                    if grant == self.grant}
            self.stored_titles = {}
            for doc_id, title in self.store.document_titles().items():
                if doc_id in same:
                    self.stored_titles.setdefault(title, []).append(doc_id)
        for doc_id in self.stored_titles.get(doc.title, ()):
            held = self.store.get_document(doc_id)
            if (held is None or doc_id == doc.doc_id or held.type not in PAGE_TYPES
                    or hashlib.sha256(held.text.encode()).hexdigest() != key
                    or (held.path and not Path(held.path).is_file())):
                continue
            return held.path or doc_id
        return None


class Ingestion:
    """One :meth:`Index.add_documents` call: its report, its progress and the batches it
    embeds (in the pipeline's worker thread) for the store to write."""

    def __init__(self, store: Store, chunk_tokens: int, embedder: Callable[[], Embedder],
                 grant: Grant, writer: Access | None, batch_sentences: int,
                 ingest: IngestReport, seen: set[str], on_progress: ProgressCallback) -> None:
        self.store, self.chunk_tokens, self.embedder = store, chunk_tokens, embedder
        self.grant, self.writer = grant, writer
        self.batch_sentences, self.ingest, self.seen = batch_sentences, ingest, seen
        self.on_progress = on_progress
        self.report = AddReport()
        self.progress = IndexProgress()
        self.known = store.document_hashes()
        self.stored_access = store.document_access() if restricted(writer) else {}
        self.copies = Copies(store, grant)
        self.stop = threading.Event()  # set when the writer stops (Ctrl-C): embedding too
        self.files: set[str] = set()  # the source files met: documents read or skipped
        self.noted = 0  # the report's skipped and duplicate entries counted in ``files``

    def step_progress(self, done: IndexProgress) -> None:
        if self.stop.is_set():
            raise Stopped
        self.on_progress(done)

    def batches(self, docs: Iterable[Document]) -> Iterator[Batch]:
        """Documents chunked and embedded, a batch at a time; a document longer than a
        batch goes in parts (see PreparedDocument)."""
        pending: list[Part] = []
        for doc in docs:
            for part in self.parts_of(doc):
                pending.append(part)
                if sum(len(c.sentences) for p in pending for c in p.chunks) \
                        >= self.batch_sentences:
                    yield self.prepared(pending)
                    pending = []
        if pending:
            yield self.prepared(pending)

    def prepared(self, pending: list[Part]) -> Batch:
        return prepare(self.embedder(), pending, self.progress, self.step_progress,
                       self.grant)

    def parts_of(self, doc: Document) -> list[Part]:
        """What of ``doc`` is to be stored (nothing when it is unchanged or refused)."""
        self.met(doc.path or doc.doc_id)
        collection, groups = self.grant
        doc = replace(doc, doc_id=scoped_doc_id(collection, doc.doc_id, groups))
        refused = refusal(doc.doc_id, collection, self.writer, self.stored_access)
        if refused:
            self.ingest.skipped.append(Skipped(doc.path or doc.doc_id, refused))
            return []
        original = self.copies.original(doc, known=doc.doc_id in self.known)
        if original is not None:
            self.ingest.duplicates.append(Skipped(doc.path or doc.doc_id, "the same text "
                                                  f"as {original} (a page is indexed once)"))
            return []
        self.seen.add(doc.doc_id)
        self.progress.documents_seen += 1
        store = self.store
        hashed = digest(doc, self.grant, self.chunk_tokens,
                        store.manifest.get("embedder", {}).get("name"))
        stored = self.known.get(doc.doc_id)
        if stored == hashed:
            self.report.unchanged += 1
            self.progress.documents_unchanged += 1
            return []
        done = len(store.chunk_spans(doc.doc_id)) if stored == PARTIAL + hashed \
            else 0  # a long document interrupted after its first parts: resumed
        try:
            split = list(parts(islice(iter_chunks(doc, self.chunk_tokens), done, None),
                               self.batch_sentences))
        except Exception as err:  # noqa: BLE001 - one bad document, not the run
            self.ingest.skipped.append(Skipped(doc.path or doc.doc_id,
                                               f"could not be chunked ({err})"))
            return []
        (self.report.updated if doc.doc_id in self.known else self.report.added).append(
            doc.doc_id)
        out = []
        for part, last in split:
            out.append(Part(doc, hashed, part, opens=not done, closes=last))
            done += len(part)
        return out

    def met(self, path: str) -> None:
        """Count the file ``path`` and the files skipped before it; on a new file, the files
        before it are read: progress is reported."""
        left = [*self.ingest.skipped, *self.ingest.duplicates]
        before = len(self.files)
        for item in left[self.noted:]:
            self.files.add(_RECORD.sub("", item.path))
        self.noted = len(left)
        self.files.add(path)
        if len(self.files) > before:
            self.progress.files = len(self.files) - 1  # the last is being read
            self.step_progress(self.progress)

    def stored(self, batch: Batch) -> None:
        self.progress.documents_indexed += sum(d.closes for d in batch.documents)
        self.progress.chunks += batch.chunks
        self.report.chunks += batch.chunks
        self.report.sentences += batch.sentences
        self.on_progress(self.progress)

    def finished(self) -> AddReport:
        self.report.skipped, self.report.duplicates, self.report.unsupported = (
            self.ingest.skipped, self.ingest.duplicates, self.ingest.unsupported)
        self.progress.done = True
        self.progress.files = self.progress.files_total or len(self.files)
        self.on_progress(self.progress)
        return self.report


# where a skipped record lies in its file: ``file[3]`` (a JSON array), ``file:12`` (JSONL)
_RECORD = re.compile(r"(?:\[\d+\]|:\d+)$")
