"""Reading rows: counts, documents, chunks (with their sentences and neighbours, in one
query), summaries and a document's vectors, each filtered by the access condition inside
its SQL."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from psycopg_pool import ConnectionPool

from sleuth.store.base import DocumentInfo, StoreStats
from sleuth.store.postgres.schema import Connection
from sleuth.text.access import Access, restricted
from sleuth.types import Chunk, Document, Sentence

PAGE = 500  # chunks per query of iter_chunks

CHUNK_COLUMNS = (
    'c.chunk_id, c.doc_id, c.position, c.start, c."end", c.n_tokens, c.text, '
    "ARRAY(SELECT s.start FROM sentences s WHERE s.chunk = c.id ORDER BY s.id), "
    'ARRAY(SELECT s."end" FROM sentences s WHERE s.chunk = c.id ORDER BY s.id), '
    "(SELECT p.chunk_id FROM chunks p WHERE p.doc_id = c.doc_id "
    "AND p.position = c.position - 1), "
    "(SELECT n.chunk_id FROM chunks n WHERE n.doc_id = c.doc_id "
    "AND n.position = c.position + 1)"
)
VISIBLE_CHUNKS = "chunks c JOIN documents d ON d.doc_id = c.doc_id"


class _Reads:
    """The public reads of rows."""

    manifest: dict[str, Any]
    _pool: ConnectionPool[Connection]

    def stats(self, access: Access | None = None) -> StoreStats:
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            docs = conn.execute(f"SELECT count(*) FROM documents d WHERE {where}",
                                params).fetchone()
            chunks = conn.execute(f"SELECT count(*) FROM {VISIBLE_CHUNKS} WHERE {where}",
                                  params).fetchone()
            sentences = conn.execute(
                f"SELECT count(*) FROM sentences s JOIN {VISIBLE_CHUNKS} ON c.id = s.chunk "
                f"WHERE {where}", params).fetchone()
        return StoreStats(documents=_first(docs), chunks=_first(chunks),
                          sentences=_first(sentences), manifest=dict(self.manifest))

    def document_hashes(self) -> dict[str, str]:
        with self._pool.connection() as conn:
            return dict(conn.execute("SELECT doc_id, hash FROM documents").fetchall())

    def document_sources(self) -> dict[str, str | None]:
        with self._pool.connection() as conn:
            return dict(conn.execute("SELECT doc_id, path FROM documents").fetchall())

    def document_access(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        with self._pool.connection() as conn:
            return {doc_id: (collection, tuple(groups)) for doc_id, collection, groups
                    in conn.execute("SELECT doc_id, collection, groups FROM documents")}

    def visible_documents(self, access: Access | None) -> frozenset[str] | None:
        if restricted(access) is None:
            return None
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            return frozenset(r[0] for r in conn.execute(
                f"SELECT d.doc_id FROM documents d WHERE {where}", params))

    def _titles(self, doc_ids: set[str]) -> dict[str, str]:
        if not doc_ids:
            return {}
        with self._pool.connection() as conn:
            return dict(conn.execute("SELECT doc_id, title FROM documents "
                                     "WHERE doc_id = ANY(%s)", (sorted(doc_ids),)).fetchall())

    def document_titles(self, access: Access | None = None) -> dict[str, str]:
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            return dict(conn.execute(f"SELECT d.doc_id, d.title FROM documents d WHERE {where}",
                                     params).fetchall())

    def document_list(self, access: Access | None = None,
                      doc_ids: Sequence[str] | None = None) -> list[DocumentInfo]:
        where, params = _access_sql(access)
        if doc_ids is not None:
            where, params = f"{where} AND d.doc_id = ANY(%s::text[])", [*params, list(doc_ids)]
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT d.doc_id, d.title, d.type, d.path, d.collection, d.groups, d.n_chunks, "
                "CASE jsonb_typeof(d.metadata->'pages') WHEN 'array' THEN "
                "jsonb_array_length(d.metadata->'pages') END FROM documents d "
                f"WHERE {where} ORDER BY d.doc_id", params).fetchall()
        return [DocumentInfo(doc_id, title, kind, path, collection, tuple(groups), chunks, pages)
                for doc_id, title, kind, path, collection, groups, chunks, pages in rows]

    def chunk_spans(self, doc_id: str,
                    access: Access | None = None) -> list[tuple[str, int, int]]:
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            return [(r[0], r[1], r[2]) for r in conn.execute(
                f'SELECT c.chunk_id, c.start, c."end" FROM {VISIBLE_CHUNKS} '
                f"WHERE c.doc_id = %s AND {where} ORDER BY c.position", [doc_id, *params])]

    def get_chunks(self, chunk_ids: Sequence[str],
                   access: Access | None = None) -> dict[str, Chunk]:
        if not chunk_ids:
            return {}
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {CHUNK_COLUMNS} FROM {VISIBLE_CHUNKS} "
                f"WHERE c.chunk_id = ANY(%s) AND {where}",
                [list(dict.fromkeys(chunk_ids)), *params]).fetchall()
        return {row[0]: _chunk(row) for row in rows}

    def summaries(self, access: Access | None = None
                  ) -> tuple[list[str], list[str], np.ndarray]:
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT s.doc_id, s.text, s.vector FROM summaries s JOIN documents d "
                f"ON d.doc_id = s.doc_id WHERE {where} ORDER BY s.doc_id", params,
                binary=True).fetchall()
        matrix = np.stack([r[2] for r in rows]) if rows else np.zeros((0, self._dim()),
                                                                      dtype=np.float32)
        return [r[0] for r in rows], [r[1] for r in rows], matrix

    def document_vectors(self, doc_id: str) -> np.ndarray:
        """The sentence vectors of a document, one row per sentence in document order (the
        rows of its :class:`PreparedDocument`); empty for an unknown document."""
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT s.embedding FROM sentences s JOIN chunks c ON c.id = s.chunk "
                "WHERE c.doc_id = %s ORDER BY c.position, s.id", (doc_id,),
                binary=True).fetchall()
        return np.stack([r[0] for r in rows]) if rows else np.zeros((0, self._dim()),
                                                                    dtype=np.float32)

    def get_document(self, doc_id: str, access: Access | None = None) -> Document | None:
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT d.doc_id, d.title, d.text, d.type, d.path, d.metadata FROM documents d "
                f"WHERE d.doc_id = %s AND {where}", [doc_id, *params]).fetchone()
        if row is None:
            return None
        return Document(row[0], row[1], row[2], row[3], row[4], row[5])

    def iter_chunks(self) -> Iterator[Chunk]:
        """Every chunk in (doc_id, position) order, read a page at a time."""
        after: tuple[str, int] = ("", -1)
        while True:
            with self._pool.connection() as conn:
                rows = conn.execute(
                    f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE (c.doc_id, c.position) > "
                    "(%s, %s) ORDER BY c.doc_id, c.position LIMIT %s", [*after, PAGE]).fetchall()
            yield from (_chunk(row) for row in rows)
            if len(rows) < PAGE:
                return
            after = (rows[-1][1], rows[-1][2])

    def _dim(self) -> int:
        return int((self.manifest.get("embedder") or {}).get("dim") or 0)


def _access_sql(access: Access | None) -> tuple[str, list[Any]]:
    """A condition on documents ``d`` true exactly for those ``access`` allows (see
    :meth:`Access.allows`), and its parameters."""
    limited = restricted(access)
    if limited is None:
        return "TRUE", []
    clauses: list[str] = []
    params: list[Any] = []
    if limited.collections is not None:
        clauses.append("d.collection = ANY(%s::text[])")
        params.append(sorted(limited.collections))
    if limited.groups is not None:
        clauses.append("(cardinality(d.groups) = 0 OR d.groups && %s::text[])")
        params.append(sorted(limited.groups))
    return " AND ".join(clauses), params


def _chunk(row: tuple[Any, ...]) -> Chunk:
    chunk_id, doc_id, position, start, end, n_tokens, text, starts, ends, prev, nxt = row
    sentences = tuple(Sentence(text[s - start : e - start], s, e)
                      for s, e in zip(starts, ends, strict=True))
    return Chunk(chunk_id, doc_id, position, text, start, end, n_tokens, sentences, prev, nxt)


def _first(row: tuple[Any, ...] | None) -> int:
    return int(row[0]) if row else 0
