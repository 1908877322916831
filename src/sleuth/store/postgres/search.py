"""Searching: keyword (single tokens counted from the token arrays, the rest from GIN
candidates' text), semantic (approximate candidates, from the engine's IVFFlat index or the
process's faiss inverted file, re-scored exactly in SQL, or an exact scan) and BM25
computed over the visible chunks' token arrays.

The access condition is part of every statement, so a hidden chunk is never counted, read
or matched in Python; and a statement's shape depends on the query alone (a substring that
no term of the shared vocabulary contains still gets its condition), so the plan
PostgreSQL picks does not say whether another tenant's chunks hold a word."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sleuth.settings import PostgresSettings, VectorSettings
from sleuth.store import keyword as kw
from sleuth.store import ranking
from sleuth.store.postgres import ann as pg_ann
from sleuth.store.postgres import engine_ann
from sleuth.store.postgres.reads import VISIBLE_CHUNKS, _access_sql, _first, _Reads
from sleuth.store.postgres.schema import MAX_TOKEN_CHARS, Connection
from sleuth.store.ranking import K1, B, top_chunks_by_best_sentence
from sleuth.text.access import Access, restricted
from sleuth.types import Hit

MAX_EXPANSION = 5000  # vocabulary terms per substring token before falling back to a scan
PER_CHUNK = 3  # snippets of a semantic hit: the chunk's best sentences


class _Search(_Reads):
    """``keyword_search``, ``semantic_search`` and ``bm25_search``."""

    _vector_settings: VectorSettings
    _connections: PostgresSettings
    _ann: pg_ann.DatabaseAnn
    _engine: engine_ann.EngineSearch

    def keyword_search(self, keywords: Sequence[str], top_k: int,
                       mode: kw.KeywordMode = "word",
                       access: Access | None = None) -> list[Hit]:
        parsed = kw.parse_keywords(keywords, mode)
        if not parsed or top_k <= 0:
            return []
        where, params = _access_sql(access)
        counted, rescored = ranking.split_keywords(parsed, MAX_TOKEN_CHARS)
        scores: dict[str, float] = {}
        with self._pool.connection() as conn:
            if counted:
                terms = [k.text for k in counted]
                for chunk_id, score in conn.execute(
                    "SELECT c.chunk_id, (SELECT sum(cardinality(array_positions(c.tokens, k.t))"
                    " * k.w) FROM unnest(%s::text[], %s::int[]) AS k(t, w)) "
                    f"FROM {VISIBLE_CHUNKS} WHERE c.tokens && %s::text[] AND {where}",
                    [terms, [k.weight for k in counted], terms, *params],
                ):
                    scores[chunk_id] = float(score)
            if rescored:
                clause, cparams = self._candidates(conn, rescored)
                ranking.rescore(conn.execute(
                    f"SELECT c.chunk_id, c.text FROM {VISIBLE_CHUNKS} "
                    f"WHERE ({clause}) AND {where}", [*cparams, *params]), rescored, scores)
        ranked = kw.rank(scores.items(), top_k)
        chunks = self.get_chunks([chunk_id for chunk_id, _ in ranked])
        return ranking.keyword_hits(ranked, chunks,
                                    self._titles({c.doc_id for c in chunks.values()}), parsed)

    def _candidates(self, conn: Connection,
                    keywords: Sequence[kw.Keyword]) -> tuple[str, list[Any]]:
        """A condition on chunks ``c`` true for every chunk that may match a keyword."""
        clauses: list[str] = []
        params: list[Any] = []
        for k in keywords:
            tokens = [t[:MAX_TOKEN_CHARS] for t in k.tokens]
            if not tokens:
                return "TRUE", []
            if not k.substring:  # every token of a whole-word match is a whole text token
                clauses.append("c.tokens @> %s::text[]")
                params.append(tokens)
                continue
            clauses.append("c.has_long")  # a cut token may hide any substring
            expansions = []
            for token in k.tokens:
                terms = [] if len(token) > MAX_TOKEN_CHARS else [r[0] for r in conn.execute(
                    "SELECT term FROM terms WHERE strpos(term, %s) > 0 LIMIT %s",
                    (token, MAX_EXPANSION + 1))]
                if len(terms) > MAX_EXPANSION:
                    return "TRUE", []
                # a token in no term of the vocabulary (every tenant's words) is in no
                # chunk: it stands for itself, so the statement and its plan are the same
                # whether or not hidden chunks hold a term that contains it
                expansions.append(terms or [token])
            clauses.append("(" + " AND ".join(["c.tokens && %s::text[]"] * len(expansions))
                           + ")")
            params += expansions
        return " OR ".join(clauses), params

    def semantic_search(self, query: np.ndarray, top_k: int,
                        doc_ids: Sequence[str] | None = None,
                        access: Access | None = None) -> list[Hit]:
        if top_k <= 0 or (doc_ids is not None and not doc_ids):
            return []
        vector = np.asarray(query, dtype=np.float32)
        where, params = _access_sql(access)
        if doc_ids is not None:
            where += " AND c.doc_id = ANY(%s)"
            params.append(list(dict.fromkeys(doc_ids)))
        pool = max(64, top_k * 16)
        with self._pool.connection() as conn:
            exact = doc_ids is not None or self._vector_settings.ann == "off"
            search = self._in_engine if self._connections.vector_search == "engine" \
                else self._with_faiss
            rows, ranked = search(conn, vector, where, params, pool, top_k, exact, access)
            meta = {r[0]: r[1:] for r in conn.execute(
                'SELECT c.id, c.chunk_id, c.doc_id, d.title, c.text, c.start '
                f"FROM {VISIBLE_CHUNKS} WHERE c.id = ANY(%s)", ([key for key, _, _ in ranked],))}
        return ranking.semantic_hits(ranked, meta, lambda i: (rows[i][2], rows[i][3]))

    def _with_faiss(self, conn: Connection, vector: np.ndarray, where: str, params: list[Any],
                    pool: int, top_k: int, exact: bool, access: Access | None
                    ) -> tuple[list[tuple[int, float, int, int]],
                               list[tuple[int, float, list[int]]]]:
        """The search of ``postgres.vector_search = "faiss"``: candidates from the mapped
        inverted file (within the visible chunks under a restriction) re-scored exactly in
        SQL; an exact scan without it, or when a restriction leaves few sentences."""
        loaded = None if exact else self._ann.current(conn)
        selector = None
        if loaded is not None and where != "TRUE":
            key = restricted(access).key  # type: ignore[union-attr]
            generation = _first(conn.execute("SELECT value FROM generation").fetchone())
            selector = self._ann.filter(loaded, key, generation,
                                        lambda: self._visible_chunks(conn, where, params))
            if selector is None:  # few visible sentences: scanning them is cheaper
                loaded = None
        if loaded is None:  # exact: every visible sentence
            rows = self._exact(conn, vector, where, params, pool)
            return rows, _ranked(rows, top_k)
        return self._approximate(conn, loaded, vector, where, params, pool, top_k, selector)

    def _in_engine(self, conn: Connection, vector: np.ndarray, where: str, params: list[Any],
                   pool: int, top_k: int, exact: bool, access: Access | None = None
                   ) -> tuple[list[tuple[int, float, int, int]],
                              list[tuple[int, float, list[int]]]]:
        """The search of ``postgres.vector_search = "engine"``: the best ``pool`` visible
        sentences in the lists of the engine's IVFFlat index nearest to the query, scored
        exactly (:mod:`sleuth.store.postgres.engine_ann`); an exact scan without the index,
        or when the candidates span fewer than ``top_k`` chunks."""
        found = None if exact else self._engine.usable(conn, self._vector_settings)
        if found is not None:
            source = "sentences s" if where == "TRUE" else \
                f"sentences s JOIN {VISIBLE_CHUNKS} ON c.id = s.chunk"
            rows = self._engine.candidates(
                conn, vector, source, where, params, pool,
                engine_ann.probes(self._vector_settings, found.lists))
            ranked = _ranked(rows, top_k)
            if len(ranked) >= top_k:
                return rows, ranked
        rows = self._exact(conn, vector, where, params, pool)
        return rows, _ranked(rows, top_k)

    def _approximate(self, conn: Connection, loaded: pg_ann.Loaded, vector: np.ndarray,
                     where: str, params: list[Any], pool: int, top_k: int, selector: Any
                     ) -> tuple[list[tuple[int, float, int, int]],
                                list[tuple[int, float, list[int]]]]:
        """The best ``pool`` sentences of the chunks the approximate index proposes (every
        sentence of a candidate's chunk scored exactly, with the sentences written since
        it was built), asking it for more until they span ``top_k`` chunks."""
        settings = self._vector_settings
        k = max(top_k * 16, settings.ef_search)
        while True:
            labels = loaded.index.search(vector, k, settings.nprobe, selector)
            rows = self._rescored(conn, vector, where, params, labels, loaded.covered, pool)
            ranked = _ranked(rows, top_k)
            if len(ranked) >= top_k:
                return rows, ranked
            if k >= loaded.index.size:
                break
            k *= 4
        # fewer than top_k chunks among the candidates: only an exact scan can say why
        rows = self._exact(conn, vector, where, params, pool)
        return rows, _ranked(rows, top_k)

    def _rescored(self, conn: Connection, vector: np.ndarray, where: str, params: list[Any],
                  labels: np.ndarray, covered: int, limit: int
                  ) -> list[tuple[int, float, int, int]]:
        """(chunk key, cosine, start, end) of the ``limit`` best visible sentences of the
        chunks ``labels`` and of the sentences with ``id > covered``."""
        source = f"sentences s JOIN {VISIBLE_CHUNKS} ON c.id = s.chunk"
        columns = 's.chunk, -(s.embedding <#> %b) AS score, s.start, s."end", s.id'
        rows = conn.execute(  # driven by the candidates, whatever the filter's estimate
            "WITH found AS MATERIALIZED (SELECT unnest(%s::bigint[]) AS chunk) "
            f"SELECT {columns} FROM found JOIN {source} ON s.chunk = found.chunk "
            f"WHERE {where} UNION ALL SELECT {columns} FROM {source} "
            f"WHERE s.id > %s AND {where} ORDER BY score DESC, id LIMIT %s",
            [np.unique(labels).tolist(), vector, *params, vector, covered, *params,
             limit]).fetchall()
        conn.commit()
        return [(int(r[0]), float(r[1]), int(r[2]), int(r[3])) for r in rows]

    def _exact(self, conn: Connection, vector: np.ndarray, where: str, params: list[Any],
               limit: int) -> list[tuple[int, float, int, int]]:
        """(chunk key, cosine, start, end) of the ``limit`` visible sentences nearest to
        ``vector``, best first, by a scan."""
        source = "sentences s" if where == "TRUE" else \
            f"sentences s JOIN {VISIBLE_CHUNKS} ON c.id = s.chunk"
        rows = conn.execute(
            f'SELECT s.chunk, -(s.embedding <#> %b), s.start, s."end" FROM {source} '
            f"WHERE {where} ORDER BY (s.embedding <#> %b) + 0, s.id LIMIT %s",
            [vector, *params, vector, limit]).fetchall()
        conn.commit()
        return [(int(r[0]), float(r[1]), int(r[2]), int(r[3])) for r in rows]

    def _visible_chunks(self, conn: Connection, where: str, params: list[Any]) -> np.ndarray:
        ids = conn.execute(f"SELECT c.id FROM {VISIBLE_CHUNKS} WHERE {where}",
                           params).fetchall()
        return np.array([r[0] for r in ids], dtype=np.int64)

    def bm25_search(self, terms: Sequence[str], top_k: int,
                    doc_ids: Sequence[str] | None = None,
                    access: Access | None = None) -> list[Hit]:
        """BM25 (k1 1.2, b 0.75) over the visible chunks: N, document frequencies and the
        average length counted on them; term counts from the token arrays."""
        tokens = ranking.query_tokens(terms, MAX_TOKEN_CHARS)
        if not tokens or top_k <= 0 or (doc_ids is not None and not doc_ids):
            return []
        where, params = _access_sql(access)
        with self._pool.connection() as conn:
            total, words = conn.execute(
                f"SELECT count(*), coalesce(sum(c.n_words), 0) FROM {VISIBLE_CHUNKS} "
                f"WHERE {where}", params).fetchone() or (0, 0)
            if not total:
                return []
            idf = {}
            for token, df in conn.execute(
                f"SELECT t, (SELECT count(*) FROM {VISIBLE_CHUNKS} WHERE c.tokens @> ARRAY[t] "
                f"AND {where}) FROM unnest(%s::text[]) AS t", [*params, tokens],
            ):
                if df:
                    idf[token] = ranking.bm25_idf(total, df)
            if not idf:
                return []
            within = ""
            if doc_ids is not None:
                within = " AND c.doc_id = ANY(%s)"
                params = [*params, list(dict.fromkeys(doc_ids))]
            ranked = conn.execute(
                "SELECT c.chunk_id, (SELECT sum(q.idf * q.tf * %s / (q.tf + %s * (%s + %s * "
                "c.n_words / %s))) FROM (SELECT u.idf, cardinality(array_positions(c.tokens, "
                "u.t)) AS tf FROM unnest(%s::text[], %s::float8[]) AS u(t, idf)) q "
                f"WHERE q.tf > 0) AS score FROM {VISIBLE_CHUNKS} "
                f"WHERE c.tokens && %s::text[] AND {where}{within} "
                "ORDER BY score DESC, c.chunk_id LIMIT %s",
                [K1 + 1, K1, 1 - B, B, float(words) / total or 1.0, list(idf),
                 list(idf.values()), list(idf), *params, top_k]).fetchall()
        chunks = self.get_chunks([r[0] for r in ranked])
        return ranking.bm25_hits(ranked, chunks, self._titles({c.doc_id for c in chunks.values()}),
                                 tokens)


def _ranked(rows: list[tuple[int, float, int, int]], top_k: int
            ) -> list[tuple[int, float, list[int]]]:
    """The ``top_k`` chunks of sentence ``rows`` (chunk key, score, ...) by their best
    sentence, with the rows of their best PER_CHUNK sentences."""
    if not rows:
        return []
    return top_chunks_by_best_sentence(np.array([r[1] for r in rows], dtype=np.float64),
                                       np.array([r[0] for r in rows], dtype=np.int64),
                                       top_k, PER_CHUNK)
