"""Writing documents: one transaction per call, documents inserted (or later parts of long
ones counted), chunks and sentences bulk-loaded with COPY, the vocabulary and summaries
upserted, the generation bumped; text made storable (PostgreSQL refuses NUL)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from sleuth.errors import StoreError
from sleuth.store import keyword as kw
from sleuth.store.base import PreparedDocument, check_vectors
from sleuth.store.postgres.schema import BUMP, MAX_TOKEN_CHARS, Connection


class _Writes:
    """Adding, replacing and deleting documents and summaries."""

    _pool: ConnectionPool[Connection]

    def write(self, docs: Sequence[PreparedDocument]) -> None:
        if not docs:
            return
        check_vectors(docs)
        n_chunks = sum(len(d.chunks) for d in docs)
        opening = [d for d in docs if d.opens]
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("DELETE FROM documents WHERE doc_id = ANY(%s)",
                         ([d.document.doc_id for d in opening],))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO documents (doc_id, title, type, path, hash, metadata, text, "
                    "n_chunks, collection, groups) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, "
                    "%s::text[])",
                    [(d.document.doc_id, _text(d.document.title), d.document.type,
                      d.document.path, d.stored_hash,
                      Jsonb(dict(d.document.metadata), dumps=_dumps),
                      _text(d.document.text), len(d.chunks), d.collection, sorted(d.groups))
                     for d in opening])
            for d in docs:  # later parts of long documents
                if not d.opens and not conn.execute(
                        "UPDATE documents SET n_chunks = n_chunks + %s, hash = %s "
                        "WHERE doc_id = %s",
                        (len(d.chunks), d.stored_hash, d.document.doc_id)).rowcount:
                    raise StoreError(f"{d.document.doc_id}: a later part of a document whose "
                                     "first part is not stored")
            ids = [r[0] for r in conn.execute(
                "SELECT nextval(pg_get_serial_sequence('chunks', 'id')) "
                "FROM generate_series(1, %s)", (n_chunks,))]
            terms = self._copy_rows(conn, docs, ids)
            conn.execute("INSERT INTO terms (term) SELECT unnest(%s::text[]) "
                         "ON CONFLICT DO NOTHING", (sorted(terms),))
            self._upsert_summaries(conn, [(d.document.doc_id, _text(d.summary),
                                           d.summary_vector)
                                          for d in docs if d.summary_vector is not None])
            conn.execute(BUMP)

    def _copy_rows(self, conn: Connection, docs: Sequence[PreparedDocument],
                   ids: list[int]) -> set[str]:
        """Bulk-load the chunks and sentences of ``docs``; the tokens met, for the vocabulary."""
        terms: set[str] = set()
        rows = iter(ids)
        with conn.cursor() as cur:
            sentences: list[tuple[str, int, int, int, np.ndarray]] = []
            with cur.copy('COPY chunks (id, chunk_id, doc_id, position, start, "end", n_tokens, '
                          "n_words, text, tokens, has_long) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["int8", "text", "text", "int4", "int4", "int4", "int4", "int4",
                                "text", "text[]", "bool"])
                for d in docs:
                    vectors = iter(np.asarray(d.vectors, dtype=np.float32))
                    for c in d.chunks:
                        row = next(rows)
                        words = kw.tokenize(c.text.lower())
                        tokens = [t[:MAX_TOKEN_CHARS] for t in words]
                        terms.update(tokens)
                        copy.write_row((row, c.chunk_id, c.doc_id, c.position, c.start, c.end,
                                        c.n_tokens, len(words), _text(c.text), tokens,
                                        any(len(t) > MAX_TOKEN_CHARS for t in words)))
                        sentences += [(c.doc_id, row, s.start, s.end, next(vectors))
                                      for s in c.sentences]
            with cur.copy('COPY sentences (doc_id, chunk, start, "end", embedding) '
                          "FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["text", "int8", "int4", "int4", "vector"])
                for sentence in sentences:
                    copy.write_row(sentence)
        return terms

    def delete(self, doc_ids: Sequence[str]) -> None:
        if not doc_ids:
            return
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("DELETE FROM documents WHERE doc_id = ANY(%s)", (list(doc_ids),))
            conn.execute(BUMP)

    def write_summaries(self, rows: Sequence[tuple[str, str, np.ndarray]]) -> None:
        with self._pool.connection() as conn, conn.transaction():
            self._upsert_summaries(conn, rows)
            conn.execute(BUMP)

    def _upsert_summaries(self, conn: Connection,
                          rows: Sequence[tuple[str, str, np.ndarray | None]]) -> None:
        """Insert or replace summaries of stored documents (others are ignored)."""
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO summaries (doc_id, text, vector) SELECT %s, %s, %b "
                "WHERE EXISTS (SELECT 1 FROM documents WHERE doc_id = %s) "
                "ON CONFLICT (doc_id) DO UPDATE SET text = excluded.text, "
                "vector = excluded.vector",
                [(doc_id, text, np.asarray(vector, dtype=np.float32), doc_id)
                 for doc_id, text, vector in rows if vector is not None])


def _dumps(value: Any) -> str:
    return json.dumps(_clean(value), default=str)


def _clean(value: Any) -> Any:
    """``value`` with :func:`_text` applied to every string in it (jsonb refuses NUL too)."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, Mapping):
        return {_text(str(k)): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _text(value: str) -> str:
    """``value`` storable in PostgreSQL, whose text cannot hold NUL: each NUL (PDF text
    extraction leaves some) becomes U+FFFD, one character for one, so offsets stay."""
    return value.replace("\x00", "\ufffd")
