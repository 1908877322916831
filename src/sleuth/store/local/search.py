"""Searching: semantic (exact, or approximate candidates re-scored exactly), keyword
(single tokens counted from the FTS5 postings, the rest from FTS5 candidates' text) and
BM25 (FTS5's, or computed over the visible chunks or within documents), each turning its
ranked chunk rows into hits through the reads of :class:`~sleuth.store.local.reads._Reads`.

Under an access that hides documents, the keyword and BM25 searches spend on a hidden
chunk no more than SQLite's step over it inside one statement: an FTS5 query's matches are
tested against a byte mask of the visible rowids (per access and generation) as SQLite
meets them, only the visible ones come back (as one text), and only visible chunks' text
is read and matched, counts included (a term's postings hold every tenant's chunks, so
they are read only without an access). Before, a search for a word only another tenant
held took twice as long as one for a word nobody held: the time told whether they held it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from sleuth.settings import VectorSettings
from sleuth.store import keyword as kw
from sleuth.store import ranking
from sleuth.store.local import ann
from sleuth.store.local.database import MAX_TOKEN_CHARS, _batches, _PerGeneration, _reads
from sleuth.store.local.reads import _Reads, _Visible
from sleuth.store.local.vectors import _Vectors
from sleuth.text.access import Access
from sleuth.types import Hit

MAX_EXPANSION = 5000  # substring terms per keyword token before falling back to a scan
MAX_BM25_WITHIN = 5000  # chunks scored by a document-restricted BM25
MAX_CANDIDATES = 5000  # approximate candidates asked for before a search settles exactly
# A term in at least this many chunks keeps its per-chunk counts in memory (per generation):
# reading a common word's postings ("of": 4,200 chunks of 2Wiki) took 7 ms, most of a search
COMMON_TERM_CHUNKS = 256
POSTINGS_CACHE_SIZE = 2_000_000  # cached (chunk, count) pairs at most: about 24 MB
# Under an access, a keyword's visible candidates are narrowed token by token until at most
# this many are left; their text settles the rest.
FEW_CANDIDATES = 64


class _Search(_Reads):
    """``semantic_search``, ``keyword_search`` and ``bm25_search``."""

    _vector_settings: VectorSettings
    _postings: _PerGeneration[tuple[np.ndarray, np.ndarray]]  # common terms' (rows, counts)
    _masks: _PerGeneration[bytes]  # access key → a byte per chunk rowid: 1 if visible

    @_reads
    def semantic_search(self, query: np.ndarray, top_k: int,
                        doc_ids: Sequence[str] | None = None,
                        access: Access | None = None) -> list[Hit]:
        vectors = self._load_vectors()
        if not len(vectors.chunk_of):
            return []
        query = np.asarray(query, dtype=np.float32)
        cache_key, allowed = self._allowed(vectors, doc_ids, access)
        if vectors.ann is None:
            ranked = vectors.ranked(query, top_k, allowed)
        else:
            ranked = self._approximate(vectors, vectors.ann, query, top_k, cache_key, allowed)
        if not ranked:
            return []
        sentence_rows = {int(vectors.sentence_of[r]) for _, _, rows in ranked for r in rows}
        spans = self._sentence_spans(sentence_rows)
        return ranking.semantic_hits(ranked, self._chunk_meta([key for key, _, _ in ranked]),
                                     lambda row: spans[int(vectors.sentence_of[row])])

    def _allowed(self, vectors: _Vectors, doc_ids: Sequence[str] | None,
                 access: Access | None) -> tuple[str | None, np.ndarray | None]:
        """The vector rows a search may return (None: all) and the access key they are
        cached under (None when a ``doc_ids`` restriction makes them per query)."""
        visible = self._visible_for(access)
        mask = None if visible is None else vectors.visible(visible.key, visible.rows)
        if doc_ids is None:
            return (None if visible is None else visible.key), mask
        marks = ",".join("?" * len(doc_ids))
        doc_rows = np.fromiter((r[0] for r in self.db.execute(
            f"SELECT id FROM chunks WHERE doc_id IN ({marks})", list(doc_ids))),
            dtype=np.int64)
        in_docs = np.isin(vectors.chunk_of, doc_rows)
        return None, (in_docs if mask is None else in_docs & mask)

    def _approximate(self, vectors: _Vectors, approx: ann.AnnIndex, query: np.ndarray,
                     top_k: int, key: str | None,
                     allowed: np.ndarray | None) -> list[tuple[int, float, list[int]]]:
        """The exact ranking of the chunks of approximate candidates (every sentence of a
        candidate's chunk scored, so a hit's score is exact; plus the rows the index lacks),
        asking for more until they span ``top_k`` chunks; restrictions to few rows are
        searched exactly."""
        selector = None
        if allowed is not None:
            rows, selector = vectors.filtered(key, allowed)
            if selector is None:
                return vectors.ranked_among(rows, query, top_k)
        k = max(top_k * 16, self._vector_settings.ef_search)
        while k <= MAX_CANDIDATES:
            found = vectors.rows_of(approx.search(query, k, self._vector_settings.nprobe,
                                                              selector))
            rows = vectors.with_siblings(np.union1d(found, vectors.tail))
            if allowed is not None:  # the selector filtered already: belt and braces
                rows = rows[allowed[rows]]
            ranked = vectors.ranked_among(rows, query, top_k)
            if len(ranked) >= top_k:
                return ranked
            if k >= approx.size:
                break
            k *= 4
        # fewer than top_k chunks among the candidates: only an exact scan can say why
        return vectors.ranked(query, top_k, allowed)

    @_reads
    def keyword_search(self, keywords: Sequence[str], top_k: int,
                       mode: kw.KeywordMode = "word",
                       access: Access | None = None) -> list[Hit]:
        parsed = kw.parse_keywords(keywords, mode)
        counted, rescored = ranking.split_keywords(parsed, MAX_TOKEN_CHARS)
        visible = self._visible_for(access)
        scores = self._keyword_scores(counted, rescored) if visible is None else \
            self._visible_keyword_scores(counted, rescored, visible)
        ranked = self._top(scores, top_k)
        chunks = self.get_chunks([cid for cid, _ in ranked])
        return ranking.keyword_hits(ranked, chunks,
                                    self._titles({c.doc_id for c in chunks.values()}), parsed)

    @_reads
    def bm25_search(self, terms: Sequence[str], top_k: int,
                    doc_ids: Sequence[str] | None = None,
                    access: Access | None = None) -> list[Hit]:
        """FTS5's BM25 over the chunk tokens (the terms joined by OR); under a restricting
        ``access``, BM25 computed over the visible chunks alone."""
        tokens = ranking.query_tokens(terms, MAX_TOKEN_CHARS)
        if not tokens or (doc_ids is not None and not doc_ids):
            return []
        visible = self._visible_for(access)
        if visible is not None:
            ranked = self._bm25_visible(tokens, visible, doc_ids, top_k)
        elif doc_ids is not None:
            ranked = self._bm25_within(tokens, doc_ids, top_k)
        else:
            query = " OR ".join('"' + t.replace('"', '""') + '"' for t in tokens)
            ranked = self.db.execute(
                "SELECT rowid, -bm25(keyword) FROM keyword WHERE keyword MATCH ? "
                "ORDER BY bm25(keyword) LIMIT ?", (query, top_k)).fetchall()
        ids = self._chunk_ids([r for r, _ in ranked])
        by_id = [(ids[rowid], score) for rowid, score in ranked if rowid in ids]
        chunks = self.get_chunks([chunk_id for chunk_id, _ in by_id])
        return ranking.bm25_hits(by_id, chunks,
                                 self._titles({c.doc_id for c in chunks.values()}), tokens)

    def _keyword_scores(self, counted: Sequence[kw.Keyword],
                        rescored: Sequence[kw.Keyword]) -> dict[int, float]:
        """Exact scores over every chunk: ``counted`` from the postings, ``rescored`` in
        the text of FTS5's candidates."""
        rows, counts = [], []
        for k in counted:
            found, occurrences = self._term_postings(k.text)
            rows.append(found)
            counts.append(occurrences * k.weight)
        scores = _summed(rows, counts)
        if rescored:
            ranking.rescore(self._candidate_texts(self._candidates(rescored)), rescored,
                            scores)
        return scores

    def _visible_keyword_scores(self, counted: Sequence[kw.Keyword],
                                rescored: Sequence[kw.Keyword],
                                visible: _Visible) -> dict[int, float]:
        """Exact scores over the visible chunks, at a cost that does not grow with the
        hidden chunks that hold a keyword (see the module docstring)."""
        allowed = self._allowed_mask(visible)
        rows, counts = [], []
        for k in counted:
            found, occurrences = self._visible_counts(k, visible.key, allowed)
            rows.append(found)
            counts.append(occurrences * k.weight)
        scores = _summed(rows, counts)
        if rescored:
            candidates = self._visible_candidates(rescored, allowed)
            ranking.rescore(self._candidate_texts(
                sorted(visible.rows) if candidates is None else candidates.tolist()),
                rescored, scores)
        return scores

    def _allowed_mask(self, visible: _Visible) -> bytes:
        """One byte per chunk rowid, 1 where the chunk is visible (cached per generation
        and access): SQLite tests a matched rowid against it without a step in Python."""
        def compute() -> bytes:
            top = self.db.execute("SELECT max(id) FROM chunks").fetchone()[0] or 0
            mask = np.zeros(top + 1, dtype=np.uint8)
            mask[np.fromiter(visible.rows, dtype=np.int64, count=len(visible.rows))] = 1
            return mask.tobytes()

        return self._masks.get(self.generation(), visible.key, compute)

    def _matching(self, query: str, allowed: bytes) -> np.ndarray:
        """The visible chunk rowids (ascending) that an FTS5 query matches. SQLite drops
        the hidden ones as it meets them and hands the rest over as one text."""
        found = self.db.execute(
            "SELECT group_concat(rowid) FROM keyword WHERE keyword MATCH ? "
            "AND substr(?, rowid + 1, 1) = x'01'", (query, allowed)).fetchone()[0]
        if not found:
            return _NONE
        return np.sort(np.fromstring(found, dtype=np.int64, sep=","))

    def _visible_counts(self, k: kw.Keyword, key: str,
                        allowed: bytes) -> tuple[np.ndarray, np.ndarray]:
        """(visible chunk rowids, occurrences) of the stored token ``k`` matches (see
        :func:`sleuth.store.keyword.stored_token`), counted in the visible chunks' text;
        kept for the generation when the access sees it in many chunks."""
        def compute() -> tuple[np.ndarray, np.ndarray]:
            rows = self._matching(_phrase([k.text]), allowed)
            counted = {rowid: k.count(text.lower())
                       for rowid, text in self._candidate_texts(rows.tolist())}
            return rows, np.array([counted.get(r, 0) for r in rows.tolist()], dtype=np.float64)

        def keep(found: tuple[np.ndarray, np.ndarray],
                 held: Iterable[tuple[np.ndarray, np.ndarray]]) -> bool:
            return len(found[0]) >= COMMON_TERM_CHUNKS and \
                len(found[0]) + sum(len(r) for r, _ in held) <= POSTINGS_CACHE_SIZE

        return self._postings.get(self.generation(), f"{key}\x00{k.text}", compute, keep)

    def _visible_candidates(self, keywords: Sequence[kw.Keyword],
                            allowed: bytes) -> np.ndarray | None:
        """The visible chunks that may match a keyword (``None``: scan them all), each
        keyword's tokens looked up one at a time (a phrase's FTS5 match would walk a
        common token's postings as far as the hidden chunks holding a rare one)."""
        found = []
        for k in keywords:
            tokens = [t[:MAX_TOKEN_CHARS] for t in k.tokens]
            if not tokens:
                return None
            rows: np.ndarray | None = None
            for token in sorted(tokens, key=len, reverse=True):  # the rarer ones first
                query = _phrase([token])
                if k.substring:
                    terms = self._expansions(token)
                    if terms is None:
                        return None
                    # a token no term of the vocabulary (every tenant's words) contains is
                    # in no chunk and stands for itself: the same statement either way
                    query = " OR ".join(_phrase([t]) for t in terms or [token])
                matched = self._matching(query, allowed)
                rows = matched if rows is None else np.intersect1d(rows, matched)
                if len(rows) <= FEW_CANDIDATES:  # their text settles it
                    break
            if rows is not None:
                found.append(rows)
        return np.unique(np.concatenate(found)) if found else _NONE

    def _expansions(self, token: str) -> list[str] | None:
        """The indexed terms that contain ``token`` (``None``: too many to list)."""
        terms = [r[0] for r in self.db.execute(
            "SELECT term FROM keyword_terms WHERE instr(term, ?) > 0 LIMIT ?",
            (token, MAX_EXPANSION + 1))]
        return None if len(terms) > MAX_EXPANSION else terms

    def _term_postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(chunk rowids, occurrences) of one token; a common term's are kept in memory for
        the snapshot's generation. Called inside a snapshot."""
        def keep(found: tuple[np.ndarray, np.ndarray],
                 held: Iterable[tuple[np.ndarray, np.ndarray]]) -> bool:
            return len(found[0]) >= COMMON_TERM_CHUNKS and \
                len(found[0]) + sum(len(r) for r, _ in held) <= POSTINGS_CACHE_SIZE

        return self._postings.get(self.generation(), term, lambda: self._read_postings(term),
                                  keep)

    def _read_postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        found = self.db.execute("SELECT doc, count(*) FROM keyword_postings WHERE term=? "
                                "GROUP BY doc", (term,)).fetchall()
        pairs = np.array(found, dtype=np.int64).reshape(-1, 2)
        return pairs[:, 0].copy(), pairs[:, 1].astype(np.float64)

    def _top(self, scores: dict[int, float], top_k: int) -> list[tuple[str, float]]:
        """Top ``top_k`` by score, ties by chunk id: ids are fetched only for the contenders."""
        if not scores:
            return []
        ordered = sorted(scores.values(), reverse=True)
        floor = ordered[min(top_k, len(ordered)) - 1]
        contenders = [rowid for rowid, score in scores.items() if score >= floor]
        ids = self._chunk_ids(contenders)
        return kw.rank(((ids[r], scores[r]) for r in contenders if r in ids), top_k)

    def _chunk_ids(self, rowids: list[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for start in range(0, len(rowids), 900):
            part = rowids[start : start + 900]
            marks = ",".join("?" * len(part))
            out.update(self.db.execute(
                f"SELECT id, chunk_id FROM chunks WHERE id IN ({marks})", part
            ).fetchall())
        return out

    def _candidates(self, keywords: Sequence[kw.Keyword]) -> list[int] | None:
        """Rowids of chunks that may match any keyword; ``None`` means scan everything."""
        clauses = []
        for k in keywords:
            tokens = [t[:MAX_TOKEN_CHARS] for t in k.tokens]
            if not tokens:
                return None
            if not k.substring:
                clauses.append(_phrase(tokens))
                continue
            groups = []
            for token in tokens:
                terms = self._expansions(token)
                if terms is None:
                    return None
                if not terms:
                    break
                groups.append("(" + " OR ".join(_phrase([t]) for t in terms) + ")")
            else:
                clauses.append("(" + " AND ".join(groups) + ")")
        if not clauses:
            return []
        query = " OR ".join(clauses)
        return [r[0] for r in self.db.execute(
            "SELECT rowid FROM keyword WHERE keyword MATCH ?", (query,)
        )]

    def _candidate_texts(self, rowids: list[int] | None) -> Iterator[tuple[int, str]]:
        if rowids is None:
            yield from self.db.execute("SELECT id, text FROM chunks")
            return
        for start in range(0, len(rowids), 900):
            part = rowids[start : start + 900]
            marks = ",".join("?" * len(part))
            yield from self.db.execute(
                f"SELECT id, text FROM chunks WHERE id IN ({marks})", part
            )

    def _sentence_spans(self, ids: set[int]) -> dict[int, tuple[int, int]]:
        out: dict[int, tuple[int, int]] = {}
        id_list = sorted(ids)
        for start in range(0, len(id_list), 900):
            part = id_list[start : start + 900]
            marks = ",".join("?" * len(part))
            for sid, s, e in self.db.execute(
                f"SELECT id, start, end FROM sentences WHERE id IN ({marks})", part
            ):
                out[sid] = (s, e)
        return out

    def _chunk_meta(self, rowids: list[int]) -> dict[int, tuple[str, str, str, str, int]]:
        marks = ",".join("?" * len(rowids))
        rows = self.db.execute(
            "SELECT c.id, c.chunk_id, c.doc_id, d.title, c.text, c.start FROM chunks c "
            f"JOIN documents d ON d.doc_id = c.doc_id WHERE c.id IN ({marks})", rowids
        ).fetchall()
        return {r[0]: (r[1], r[2], r[3], r[4], r[5]) for r in rows}

    def _bm25_visible(self, tokens: list[str], visible: _Visible,
                      doc_ids: Sequence[str] | None, top_k: int) -> list[tuple[int, float]]:
        """BM25 (k1 1.2, b 0.75) with N, document frequencies and the average length
        counted over the visible chunks only; term counts come from the visible chunks'
        text (:meth:`_visible_counts`), never from postings that hold hidden chunks."""
        if not visible.rows:
            return []
        total = len(visible.rows)
        avg = visible.words / total or 1.0
        allowed: frozenset[int] | set[int] = visible.rows
        if doc_ids is not None:
            wanted = sorted(set(doc_ids) & visible.docs)
            allowed = {r for part in _batches(wanted) for (r,) in self.db.execute(
                f"SELECT id FROM chunks WHERE doc_id IN ({','.join('?' * len(part))})", part)}
        mask = self._allowed_mask(visible)
        idf: dict[str, float] = {}
        counts: dict[int, dict[str, int]] = {}
        for token in tokens:
            rows, occurrences = self._visible_counts(kw.stored_token(token, MAX_TOKEN_CHARS),
                                                     visible.key, mask)
            if not len(rows):
                continue
            idf[token] = ranking.bm25_idf(total, len(rows))
            for rowid, n in zip(rows.tolist(), occurrences.tolist(), strict=True):
                if rowid in allowed:
                    counts.setdefault(rowid, {})[token] = int(n)
        lengths = {rowid: n for part in _batches(sorted(counts)) for rowid, n in self.db.execute(
            f"SELECT id, n_words FROM chunks WHERE id IN ({','.join('?' * len(part))})", part)}
        scored = [(rowid, sum(ranking.bm25_term(idf[t], n, lengths.get(rowid, 0), avg)
                              for t, n in tf.items())) for rowid, tf in counts.items()]
        scored.sort(key=lambda item: (-item[1], item[0]))
        return scored[:top_k]

    def _bm25_within(self, tokens: list[str], doc_ids: Sequence[str],
                     top_k: int) -> list[tuple[int, float]]:
        """BM25 (k1 1.2, b 0.75, FTS5's idf over the whole index) scored directly on the
        chunks of ``doc_ids``; an FTS5 query restricted to rowids costs ~100x more."""
        total = self.db.execute("SELECT count(*) FROM chunks").fetchone()[0] or 1
        marks = ",".join("?" * len(tokens))
        df = dict(self.db.execute(
            f"SELECT term, doc FROM keyword_terms WHERE term IN ({marks})", tokens).fetchall())
        idf = {t: ranking.bm25_idf(total, df[t]) for t in tokens if df.get(t)}
        if not idf:
            return []
        rows: list[tuple[int, str]] = []
        ids = list(dict.fromkeys(doc_ids))
        for start in range(0, len(ids), 900):
            part = ids[start : start + 900]
            rows += self.db.execute(
                f"SELECT id, text FROM chunks WHERE doc_id IN ({','.join('?' * len(part))})",
                part).fetchall()
            if len(rows) >= MAX_BM25_WITHIN:
                break
        counted = [(rowid, Counter(kw.tokenize(text.lower()))) for rowid, text in
                   rows[:MAX_BM25_WITHIN]]
        lengths = [sum(c.values()) for _, c in counted]
        avg = (sum(lengths) / len(lengths)) if lengths else 1.0
        scored = []
        for (rowid, counts), length in zip(counted, lengths, strict=True):
            score = sum(ranking.bm25_term(w, counts[t], length, avg) for t, w in idf.items()
                        if counts[t])
            if score > 0:
                scored.append((rowid, score))
        scored.sort(key=lambda item: -item[1])
        return scored[:top_k]


_NONE = np.zeros(0, dtype=np.int64)


def _phrase(tokens: Sequence[str]) -> str:
    """An FTS5 phrase of index tokens (which hold no quote: they are ``\\w`` runs)."""
    return '"' + " ".join(tokens) + '"'


def _summed(rows: list[np.ndarray], scores: list[np.ndarray]) -> dict[int, float]:
    """Scores summed per row over several (rows, scores) arrays, as a dict."""
    if not rows:
        return {}
    ids, where = np.unique(np.concatenate(rows), return_inverse=True)
    total = np.bincount(where, weights=np.concatenate(scores), minlength=len(ids))
    return dict(zip(ids.tolist(), total.tolist(), strict=True))
