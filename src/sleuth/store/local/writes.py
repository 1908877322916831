"""Writing documents: their rows (documents, chunks, sentences, keyword postings, summaries)
committed in one transaction with the segment that holds their vectors, and deleting them
(their chunk rows logged dead, so readers mark their vectors)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from sleuth.errors import StoreError
from sleuth.store import keyword as kw
from sleuth.store.base import PreparedDocument, check_vectors
from sleuth.store.local.database import MAX_TOKEN_CHARS
from sleuth.store.local.segments import _Segments
from sleuth.text.access import encode_groups


class _Writes(_Segments):
    """Adding, replacing and deleting documents and summaries."""

    def write(self, docs: Sequence[PreparedDocument]) -> None:
        if not docs:
            return
        n_chunks = sum(len(d.chunks) for d in docs)
        n_sents = sum(len(c.sentences) for d in docs for c in d.chunks)
        check_vectors(docs)
        chunk_row, sent_row, seg = self._reserve(n_chunks, n_sents, segment=n_sents > 0)
        rows = self._rows(docs, chunk_row, sent_row)
        checksum = None
        try:
            if seg is not None:
                chunk_of = np.fromiter((row[1] for row in rows["sentences"]), dtype=np.int64,
                                       count=n_sents)
                checksum = self._write_segment(
                    seg, np.concatenate([d.vectors for d in docs]),
                    np.arange(sent_row, sent_row + n_sents, dtype=np.int64), chunk_of)
            self._commit_rows(docs, rows, seg, checksum)
        except BaseException:
            if seg is not None:
                self._abandon(seg)
            raise

    def _rows(self, docs: Sequence[PreparedDocument], chunk_row: int,
              sent_row: int) -> dict[str, list[Any]]:
        chunks: list[tuple[Any, ...]] = []
        sentences: list[tuple[int, int, int, int]] = []
        chunk_text: list[tuple[int, str, str]] = []
        for d in docs:
            for c in d.chunks:
                chunks.append((chunk_row, c.chunk_id, c.doc_id, c.position, c.start, c.end,
                               c.n_tokens, c.text, len(kw.tokenize(c.text.lower()))))
                chunk_text.append((chunk_row, c.chunk_id, c.text))
                for s in c.sentences:
                    sentences.append((sent_row, chunk_row, s.start, s.end))
                    sent_row += 1
                chunk_row += 1
        return {"chunks": chunks, "sentences": sentences, "chunk_text": chunk_text}

    def _commit_rows(self, docs: Sequence[PreparedDocument], rows: dict[str, list[Any]],
                     seg: int | None, checksum: str | None) -> None:
        with self._transaction() as w:
            generation = self._bump(w)
            opening = [d for d in docs if d.opens]
            self._drop_docs(w, [d.document.doc_id for d in opening], generation)
            w.executemany(
                "INSERT INTO documents VALUES (?,?,?,?,?,?,?,?,?,?)",
                [(d.document.doc_id, d.document.title, d.document.type, d.document.path,
                  d.stored_hash, json.dumps(dict(d.document.metadata), default=str),
                  d.document.text, len(d.chunks), d.collection, encode_groups(d.groups))
                 for d in opening],
            )
            for d in docs:
                if not d.opens and not w.execute(
                        "UPDATE documents SET n_chunks = n_chunks + ?, hash = ? WHERE doc_id=?",
                        (len(d.chunks), d.stored_hash, d.document.doc_id)).rowcount:
                    raise StoreError(f"{d.document.doc_id}: a later part of a document whose "
                                     "first part is not stored")
            w.executemany("INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?)", rows["chunks"])
            w.executemany("INSERT INTO sentences VALUES (?,?,?,?)", rows["sentences"])
            w.executemany(
                "INSERT INTO keyword (rowid, tokens) VALUES (?, ?)",
                [(rowid, _tokens(text)) for rowid, _, text in rows["chunk_text"]],
            )
            self._insert_summaries(w, [(d.document.doc_id, d.summary, d.summary_vector)
                                       for d in docs if d.summary_vector is not None])
            if seg is not None:
                w.execute("INSERT INTO segments VALUES (?, ?, ?)",
                          (seg, len(rows["sentences"]), checksum))
                w.execute("DELETE FROM pending WHERE seg=?", (seg,))

    @staticmethod
    def _drop_docs(w: sqlite3.Connection, doc_ids: Sequence[str], generation: int) -> None:
        """Inside a transaction: remove documents, their chunks, sentences and postings;
        their chunk rows are logged dead at ``generation`` (readers mark their vectors)."""
        for doc_id in doc_ids:
            old = w.execute("SELECT id, text FROM chunks WHERE doc_id=?", (doc_id,)).fetchall()
            if not old:
                w.execute("DELETE FROM documents WHERE doc_id=?", (doc_id,))
                w.execute("DELETE FROM summaries WHERE doc_id=?", (doc_id,))
                continue
            w.executemany(  # a contentless FTS5 row is deleted by replaying its tokens
                "INSERT INTO keyword (keyword, rowid, tokens) VALUES ('delete', ?, ?)",
                [(rowid, _tokens(text)) for rowid, text in old],
            )
            w.executemany("INSERT OR REPLACE INTO dead_chunks VALUES (?, ?)",
                          [(rowid, generation) for rowid, _ in old])
            w.execute(
                "DELETE FROM sentences WHERE chunk IN (SELECT id FROM chunks WHERE doc_id=?)",
                (doc_id,),
            )
            w.execute("DELETE FROM chunks WHERE doc_id=?", (doc_id,))
            w.execute("DELETE FROM documents WHERE doc_id=?", (doc_id,))
            w.execute("DELETE FROM summaries WHERE doc_id=?", (doc_id,))

    def delete(self, doc_ids: Sequence[str]) -> None:
        if not doc_ids:
            return
        with self._transaction() as w:
            self._drop_docs(w, doc_ids, self._bump(w))

    def write_summaries(self, rows: Sequence[tuple[str, str, np.ndarray]]) -> None:
        with self._transaction() as w:
            self._insert_summaries(w, rows)
            self._bump(w)

    @staticmethod
    def _insert_summaries(w: sqlite3.Connection,
                          rows: Sequence[tuple[str, str, np.ndarray | None]]) -> None:
        w.executemany(
            "INSERT OR REPLACE INTO summaries VALUES (?, ?, ?)",
            [(doc_id, text, np.asarray(vector, dtype=np.float32).tobytes())
             for doc_id, text, vector in rows if vector is not None])


def _tokens(text: str) -> str:
    """The FTS5 document for a chunk: its lowercased ``\\w+`` tokens, space-separated."""
    return " ".join(t[:MAX_TOKEN_CHARS] for t in kw.tokenize(text.lower()))
