"""The indexer (:class:`Index`): it offers every read of :class:`~sleuth.index.read.ReadIndex`
and writes. ``Index.open(path)`` opens or creates an index; ``index.add(paths)`` ingests files
and corpora incrementally (new documents added, changed ones replaced by content hash, ones
removed from an indexed source deleted) and resumes an interrupted build; ``delete``,
``check`` and ``repair`` maintain it, and it stores the summaries that documents indexed by
an older version lack. Documents go into a collection (tenant) with access groups. The
pipeline's parts live in :mod:`sleuth.index.indexing`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sleuth.errors import StoreError
from sleuth.index.indexing import (
    BATCH_SENTENCES,
    PIPELINE_DEPTH,
    AddReport,
    IndexProgress,
    Ingestion,
    ProgressCallback,
    lead_summaries,
    resume_command,
    serialised,
    with_title,
)
from sleuth.index.pipeline import pipelined
from sleuth.ingest import IngestReport, JsonFields, ReadLimits, count_sources, iter_documents
from sleuth.store.base import (
    Problem,
    RepairReport,
)
from sleuth.text.access import (
    DEFAULT_COLLECTION,
    Access,
    check_name,
    parse_groups,
)
from sleuth.text.threads import batch_work
from sleuth.types import Document

if TYPE_CHECKING:
    pass

from sleuth.index.read import ReadIndex

__all__ = ["AddReport", "Index", "IndexProgress", "ProgressCallback"]


class Index(ReadIndex):
    """The indexer: a :class:`ReadIndex` that also adds, updates, deletes and repairs
    documents (see the module docstring)."""

    # -- ingestion ---------------------------------------------------------------------

    def add(self, paths: Sequence[str | Path], *, include: Sequence[str] = (),
            exclude: Sequence[str] = (), fields: JsonFields | None = None,
            delete_missing: bool = True, on_progress: ProgressCallback | None = None,
            batch_sentences: int = BATCH_SENTENCES, collection: str = DEFAULT_COLLECTION,
            groups: Sequence[str] | str = (), writer: Access | None = None,
            within: Sequence[Path] | None = None) -> AddReport:
        """Index ``paths`` incrementally into ``collection`` with access ``groups`` (none:
        open to the whole collection); see the module docstring.

        Files are read within ``settings.ingest``'s limits (:func:`iter_documents`; with
        ``within``, only files inside those folders). Documents are stored by
        :meth:`add_documents`; with ``delete_missing``, documents of ``collection`` whose
        source lies under ``paths`` and was not seen are removed.
        """
        self._writable()
        check_name("collection", collection)
        grant = parse_groups(groups)
        paths = [Path(p).expanduser().resolve() for p in paths]
        command = resume_command(self.location, paths, include, exclude, fields, collection,
                                 grant, delete_missing)
        ingest = IngestReport(skipped=[], duplicates=[])
        docs = iter_documents(paths, include=include, exclude=exclude,
                              fields=fields or JsonFields(), report=ingest,
                              limits=ReadLimits.of(self.settings.ingest), within=within)
        seen: set[str] = set()
        files = count_sources(paths, include=include, exclude=exclude) if on_progress else None
        report = self.add_documents(docs, collection=collection, groups=grant, writer=writer,
                                    on_progress=on_progress, batch_sentences=batch_sentences,
                                    command=command, seen=seen, ingest=ingest, files=files)
        if delete_missing:
            report.deleted = self._delete_missing(paths, seen, collection)
        return report

    def add_documents(self, docs: Iterable[Document], *, collection: str = DEFAULT_COLLECTION,
                      groups: Sequence[str] | str = (), writer: Access | None = None,
                      on_progress: ProgressCallback | None = None,
                      batch_sentences: int = BATCH_SENTENCES, command: str | None = None,
                      seen: set[str] | None = None,
                      ingest: IngestReport | None = None,
                      files: int | None = None,
                      turn: Callable[[], AbstractContextManager[object]] | None = None
                      ) -> AddReport:
        """Store ``docs`` (new ones added, changed ones replaced, by content hash) into
        ``collection`` with access ``groups``, their ids scoped by both
        (:func:`~sleuth.text.access.scoped_doc_id`).

        ``writer`` is the access of whoever writes (None: the local user, who may write
        anything): a document it could not change (:meth:`Access.may_write`) is skipped
        and reported, and so is an id that reads as another scope's when it writes into the
        default collection. ``seen`` collects the ids met; ``ingest`` is where reading
        reported what it left out (the report's ``skipped`` and ``duplicates``); ``files``
        how many files ``docs`` are read from, the total progress counts files to
        (:class:`IndexProgress`; None: unknown).

        Work is stored in batches of about ``batch_sentences`` sentences; each batch is
        committed on its own, so an interrupted build keeps every finished batch
        (``command`` is how it is resumed). A worker thread chunks and embeds the next
        batches while the store writes this one; ``on_progress`` is called from both
        threads, never from two at once. A document that cannot be chunked is reported
        and skipped.

        ``turn`` (a server's write lock, keys in turn) is held around each batch's write and
        the build's end, never while documents are chunked or embedded: another writer's
        small document is stored between two batches of a large one, not after it.
        """
        self._writable()
        check_name("collection", collection)
        run = Ingestion(self.store, self.settings.chunk.tokens, lambda: self.embedder,
                        (collection, parse_groups(groups)), writer, batch_sentences,
                        ingest if ingest is not None else IngestReport(skipped=[],
                                                                        duplicates=[]),
                        seen if seen is not None else set(), serialised(on_progress))
        run.progress.files_total = files
        run.report.resumed = command is not None and any(
            b.get("command") == command for b in self.store.build_status().get("interrupted",
                                                                              []))
        if isinstance(docs, Sequence) and not docs:  # nothing read: no build, no embedder
            return run.finished()
        held = turn or nullcontext
        self.store.begin_build(command or f"{self.location}: documents added by a program")
        try:
            self.embedder  # noqa: B018 - loaded here, not in the worker thread
            for batch in pipelined(run.batches(docs), depth=PIPELINE_DEPTH, stop=run.stop):
                with held():
                    self.store.write(batch.documents)
                self._forget()
                run.stored(batch)
        except BaseException:
            self.store.stop_build()
            raise
        with held(), batch_work():  # the approximate index is (re)built here
            self.store.finish_build()
        return run.finished()

    def _writable(self) -> None:
        if self._base is not None:
            raise StoreError("a scoped index view is read-only; add documents through the "
                             "index itself")

    def _delete_missing(self, paths: Sequence[str | Path], seen: set[str],
                        collection: str) -> list[str]:
        roots = [Path(p).resolve() for p in paths]
        owner = {doc_id: c for doc_id, (c, _) in self.store.document_access().items()}
        gone = []
        for doc_id, path in self.store.document_sources().items():
            if doc_id in seen or not path or owner.get(doc_id) != collection:
                continue
            source = Path(path).resolve()
            if any(source == root or root in source.parents for root in roots):
                gone.append(doc_id)
        self.store.delete(gone)
        self._forget()
        return gone

    def delete(self, doc_ids: Sequence[str]) -> None:
        if self._base is not None:
            raise StoreError("a scoped index view is read-only; delete through the index")
        self.store.delete(doc_ids)
        self._forget()
        self.store.finish_build()

    def _backfill_summaries(self, missing: Sequence[str], doc_ids: list[str],
                            matrix: np.ndarray) -> tuple[list[str], np.ndarray]:
        """Summarise the ``missing`` documents and store their summaries (the migration of
        an index built by a version without them); the stored ``(doc_ids, matrix)`` after."""
        for rows in lead_summaries(self.store, self.embedder, missing):
            self.store.write_summaries(rows)
        doc_ids, _, matrix = self.store.summaries(self.access)
        return doc_ids, matrix

    # -- integrity ---------------------------------------------------------------------

    def check(self, full: bool = True) -> list[Problem]:
        """The damaged parts of the index, each with its repair (empty: intact); ``full``
        adds SQLite's integrity check (reads the whole database)."""
        return self.store.check(full)

    def repair(self, on_progress: Callable[[int, int], None] | None = None) -> RepairReport:
        """Re-embed the sentence vectors that are missing or damaged from the stored text
        (with this index's embedder, title context as at indexing), rebuild a damaged
        approximate index, restore a damaged manifest from the database's copy."""
        if self._base is not None:
            raise StoreError("a scoped index view is read-only; repair the index itself")

        def embed(pairs: list[tuple[str, str]]) -> np.ndarray:
            return self.embedder.embed([with_title(title.strip(), text)
                                        for title, text in pairs])

        with batch_work():
            report = self.store.repair(embed, on_progress)
        self._forget()
        return report

