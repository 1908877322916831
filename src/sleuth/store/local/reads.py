"""Reading rows: counts and build state, documents, chunks, summaries and a document's
vectors, each in one snapshot, and what a restricting access may see (its documents and
chunk rows, cached per generation) that every read filters on."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sleuth.store import ranking
from sleuth.store.base import DocumentInfo, StoreStats
from sleuth.store.local.database import _batches, _Database, _PerGeneration, _reads
from sleuth.store.local.lease import Lease
from sleuth.store.local.vectors import _Vectors
from sleuth.text.access import Access, decode_groups, restricted
from sleuth.types import Chunk, Document, Sentence


@dataclass
class _Visible:
    """What one restricting access may see: documents, chunk rows and their totals."""

    key: str  # the access's key
    docs: frozenset[str]
    rows: frozenset[int]  # chunk rowids
    words: int  # total words of the visible chunks (BM25's average length)


class _Reads(_Database):
    """The public reads of rows and the access filter."""

    _lease: Lease
    _visible: _PerGeneration[_Visible]  # access key → what it may see, per generation
    _load_vectors: Callable[[], _Vectors]  # the vectors at this snapshot (_Segments)

    # -- counts and state --------------------------------------------------------------

    @_reads
    def stats(self, access: Access | None = None) -> StoreStats:
        q = self.db.execute
        manifest = {**self.manifest, "build": self.build_status()}
        record = self._meta("ann")
        if record:
            manifest["ann"] = json.loads(record)
        visible = self._visible_for(access)
        if visible is not None:
            rows = sorted(visible.rows)
            sentences = sum(q(f"SELECT count(*) FROM sentences WHERE chunk IN "
                              f"({','.join('?' * len(part))})", part).fetchone()[0]
                            for part in _batches(rows))
            return StoreStats(len(visible.docs), len(visible.rows), sentences,
                              manifest=manifest)
        return StoreStats(
            documents=q("SELECT count(*) FROM documents").fetchone()[0],
            chunks=q("SELECT count(*) FROM chunks").fetchone()[0],
            sentences=q("SELECT count(*) FROM sentences").fetchone()[0],
            manifest=manifest,
        )

    @_reads
    def build_status(self) -> dict[str, Any]:
        """The state of the builds: ``complete``, ``running`` (a live process is writing)
        or ``interrupted`` (a build's process ended before it finished: re-running its
        ``command`` resumes it), with the builds behind it; ``empty`` before any build."""
        rows = self.db.execute("SELECT owner, host, pid, command, started FROM builds "
                               "WHERE finished IS NULL ORDER BY id").fetchall()
        running: list[dict[str, Any]] = []
        interrupted: list[dict[str, Any]] = []
        for owner, host, pid, command, started in rows:
            entry = {"command": command, "started": started, "host": host, "pid": pid}
            (running if self._lease.alive(owner) else interrupted).append(entry)
        last = self.db.execute("SELECT max(finished) FROM builds").fetchone()[0]
        state = "interrupted" if interrupted else "running" if running else \
            "complete" if last or self.db.execute(
                "SELECT 1 FROM documents LIMIT 1").fetchone() else "empty"
        return {"state": state, "running": running, "interrupted": interrupted,
                "finished": last}

    @_reads
    def document_hashes(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT doc_id, hash FROM documents").fetchall())

    @_reads
    def document_sources(self) -> dict[str, str | None]:
        return dict(self.db.execute("SELECT doc_id, path FROM documents").fetchall())

    @_reads
    def document_access(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        return {doc_id: (collection, decode_groups(groups)) for doc_id, collection, groups
                in self.db.execute("SELECT doc_id, collection, groups FROM documents")}

    @_reads
    def visible_documents(self, access: Access | None) -> frozenset[str] | None:
        visible = self._visible_for(access)
        return None if visible is None else visible.docs

    def _visible_for(self, access: Access | None) -> _Visible | None:
        """The visible rows of a restricting ``access`` (cached per generation); None when
        all are. Called inside a snapshot."""
        access = restricted(access)
        if access is None:
            return None
        return self._visible.get(self.generation(), access.key,
                                 lambda: self._compute_visible(access))

    def _compute_visible(self, access: Access) -> _Visible:
        docs = ranking.visible_documents(self.document_access(), access) or frozenset()
        rows: set[int] = set()
        words = 0
        for part in _batches(sorted(docs)):
            for rowid, n_words in self.db.execute(
                    f"SELECT id, n_words FROM chunks WHERE doc_id IN "
                    f"({','.join('?' * len(part))})", part):
                rows.add(rowid)
                words += n_words
        return _Visible(access.key, docs, frozenset(rows), words)

    # -- documents and chunks ----------------------------------------------------------

    def _titles(self, doc_ids: set[str]) -> dict[str, str]:
        if not doc_ids:
            return {}
        ids = sorted(doc_ids)
        marks = ",".join("?" * len(ids))
        return dict(self.db.execute(
            f"SELECT doc_id, title FROM documents WHERE doc_id IN ({marks})", ids
        ).fetchall())

    @_reads
    def document_titles(self, access: Access | None = None) -> dict[str, str]:
        titles = dict(self.db.execute("SELECT doc_id, title FROM documents").fetchall())
        visible = self._visible_for(access)
        if visible is None:
            return titles
        return {doc_id: title for doc_id, title in titles.items() if doc_id in visible.docs}

    @_reads
    def document_list(self, access: Access | None = None,
                      doc_ids: Sequence[str] | None = None) -> list[DocumentInfo]:
        visible = self._visible_for(access)
        query = ("SELECT doc_id, title, type, path, collection, groups, n_chunks, "
                 "CASE json_type(metadata, '$.pages') WHEN 'array' THEN "
                 "json_array_length(metadata, '$.pages') END FROM documents")
        if doc_ids is None:
            rows = self.db.execute(query).fetchall()
        else:
            rows = [row for part in _batches(sorted(set(doc_ids))) for row in self.db.execute(
                f"{query} WHERE doc_id IN ({','.join('?' * len(part))})", part)]
        return sorted((DocumentInfo(doc_id, title, kind, path, collection,
                                    decode_groups(groups), chunks, pages)
                       for doc_id, title, kind, path, collection, groups, chunks, pages in rows
                       if visible is None or doc_id in visible.docs),
                      key=lambda info: info.doc_id)

    def _hidden(self, doc_id: str, access: Access | None) -> bool:
        visible = self._visible_for(access)
        return visible is not None and doc_id not in visible.docs

    @_reads
    def chunk_spans(self, doc_id: str,
                    access: Access | None = None) -> list[tuple[str, int, int]]:
        if self._hidden(doc_id, access):
            return []
        return [(r[0], r[1], r[2]) for r in self.db.execute(
            "SELECT chunk_id, start, end FROM chunks WHERE doc_id=? ORDER BY position",
            (doc_id,))]

    @_reads
    def get_chunks(self, chunk_ids: Sequence[str],
                   access: Access | None = None) -> dict[str, Chunk]:
        visible = self._visible_for(access)
        ids = list(dict.fromkeys(chunk_ids))
        out: dict[str, Chunk] = {}
        for start in range(0, len(ids), 900):
            part = ids[start : start + 900]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                "SELECT id, chunk_id, doc_id, position, start, end, n_tokens, text FROM chunks "
                f"WHERE chunk_id IN ({marks})", part
            ).fetchall()
            for row in rows:
                if visible is None or row[0] in visible.rows:
                    out[row[1]] = self._chunk(row)
        return out

    @_reads
    def document_vectors(self, doc_id: str) -> np.ndarray:
        """The sentence vectors of a document, one row per sentence in document order (the
        rows of its PreparedDocument); empty for an unknown document."""
        ids = np.array([r[0] for r in self.db.execute(
            "SELECT s.id FROM sentences s JOIN chunks c ON c.id = s.chunk WHERE c.doc_id = ? "
            "ORDER BY c.position, s.id", (doc_id,))], dtype=np.int64)
        dim = int((self.manifest.get("embedder") or {}).get("dim") or 0)
        if not len(ids):
            return np.zeros((0, dim), dtype=np.float32)
        vectors = self._load_vectors()
        order = np.argsort(vectors.sentence_of, kind="stable")
        rows = order[np.searchsorted(vectors.sentence_of, ids, sorter=order)]
        offsets = np.cumsum([0] + [len(m) for m in vectors.matrices])
        segs = np.searchsorted(offsets, rows, side="right") - 1
        return np.stack([np.asarray(vectors.matrices[s][r - offsets[s]])
                         for s, r in zip(segs, rows, strict=True)]).astype(np.float32)

    @_reads
    def summaries(self, access: Access | None = None
                  ) -> tuple[list[str], list[str], np.ndarray]:
        rows = self.db.execute(
            "SELECT s.doc_id, s.text, s.vector FROM summaries s JOIN documents d "
            "ON d.doc_id = s.doc_id ORDER BY s.doc_id").fetchall()
        visible = self._visible_for(access)
        if visible is not None:
            rows = [r for r in rows if r[0] in visible.docs]
        dim = int((self.manifest.get("embedder") or {}).get("dim") or 0)
        matrix = np.stack([np.frombuffer(r[2], dtype=np.float32) for r in rows]) if rows \
            else np.zeros((0, dim), dtype=np.float32)
        return [r[0] for r in rows], [r[1] for r in rows], matrix

    def _chunk(self, row: tuple[Any, ...]) -> Chunk:
        rowid, chunk_id, doc_id, position, start, end, n_tokens, text = row
        sentences = tuple(
            Sentence(text[s - start : e - start], s, e)
            for s, e in self.db.execute(
                "SELECT start, end FROM sentences WHERE chunk=? ORDER BY id", (rowid,)
            )
        )
        neighbours = dict(self.db.execute(
            "SELECT position, chunk_id FROM chunks WHERE doc_id=? AND position IN (?, ?)",
            (doc_id, position - 1, position + 1),
        ).fetchall())
        return Chunk(chunk_id, doc_id, position, text, start, end, n_tokens, sentences,
                     neighbours.get(position - 1), neighbours.get(position + 1))

    @_reads
    def get_document(self, doc_id: str, access: Access | None = None) -> Document | None:
        if self._hidden(doc_id, access):
            return None
        row = self.db.execute(
            "SELECT doc_id, title, text, type, path, metadata FROM documents WHERE doc_id=?",
            (doc_id,),
        ).fetchone()
        if row is None:
            return None
        return Document(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]))

    def iter_chunks(self) -> Iterator[Chunk]:
        """Every chunk in document order, read a page at a time (each page one snapshot)."""
        after: tuple[str, int] = ("", -1)
        while True:
            page = self._chunk_page(after)
            if not page:
                return
            yield from page
            after = (page[-1].doc_id, page[-1].position)

    @_reads
    def _chunk_page(self, after: tuple[str, int], size: int = 500) -> list[Chunk]:
        rows = self.db.execute(
            "SELECT id, chunk_id, doc_id, position, start, end, n_tokens, text FROM chunks "
            "WHERE (doc_id, position) > (?, ?) ORDER BY doc_id, position LIMIT ?",
            (*after, size)).fetchall()
        return [self._chunk(row) for row in rows]
