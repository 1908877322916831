"""Checking an index on PostgreSQL: what the database's own constraints do not guarantee.

PostgreSQL keeps each write whole, but rows can still disagree with each other after a
partial restore, a hand-run ``DELETE``, a dropped constraint or a table reloaded without
its neighbours. The check compares:

- row counts against the record the store keeps: ``documents.n_chunks`` against the chunk
  rows (in total always; per document with ``full``);
- the vector column as declared (``vector(dim) NOT NULL``: then no sentence can lack a
  vector or have another dimension); where it is not, every row is read (``full``);
- every chunk's sentences (``full``): a chunk without any, or text of a chunk that no
  sentence covers (sentences tile their chunk, whitespace aside: one deleted leaves a gap);
- orphans (``full``): sentences of a chunk or document that no longer exists, chunks and
  summaries of a missing document;
- the approximate index's record (:mod:`sleuth.store.postgres.ann`) against the rows it
  covers: its parts' size, its ``covered`` id against the ids ever drawn, the stored
  sentences it claims to cover against those it holds, and (``full``) its checksum;
- with ``postgres.vector_search = "engine"``, the engine's IVFFlat index
  (:mod:`sleuth.store.postgres.engine_ann`) present and valid where the store wants one.

Each finding is a :class:`~sleuth.store.base.Problem` naming the table and what to do.
``repair`` rebuilds a damaged or stale approximate index (either kind); rows are restored
by indexing their documents again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np
from psycopg_pool import ConnectionPool

from sleuth.settings import PostgresSettings, VectorSettings
from sleuth.store.base import Problem, RepairReport
from sleuth.store.postgres import ann as pg_ann
from sleuth.store.postgres import engine_ann
from sleuth.store.postgres.schema import Connection, _redacted

SHOWN = 3  # document or chunk ids named in one problem

# sentences whose neighbour in their chunk leaves text between them, or that do not start
# (end) where their chunk does: the gap's text (None where offsets overlap or miss an edge)
GAPS = """
SELECT c.chunk_id, CASE WHEN s.prev_end IS NOT NULL AND s.start >= s.prev_end
                        THEN substr(c.text, s.prev_end - c.start + 1, s.start - s.prev_end)
                   END
FROM (SELECT chunk, doc_id, start, "end",
             lag("end") OVER w AS prev_end, lead(start) OVER w AS next_start
      FROM sentences WINDOW w AS (PARTITION BY chunk ORDER BY start)) s
JOIN chunks c ON c.id = s.chunk AND c.doc_id = s.doc_id
WHERE (s.prev_end IS NULL AND s.start <> c.start)
   OR (s.next_start IS NULL AND s."end" <> c."end")
   OR (s.prev_end IS NOT NULL AND (s.start < s.prev_end
       OR substr(c.text, s.prev_end - c.start + 1, s.start - s.prev_end) ~ '\\S'))
ORDER BY c.chunk_id
"""


class _Integrity:
    """``check`` and ``repair`` of :class:`~sleuth.store.postgres.store.PostgresStore`."""

    _pool: ConnectionPool[Connection]
    _ann: pg_ann.DatabaseAnn
    _vector_settings: VectorSettings
    _connections: PostgresSettings
    schema: str
    location: str

    _dim: Callable[[], int]  # (the store's)

    def check(self, full: bool = True) -> list[Problem]:
        """What is damaged, each with what to do (empty: intact). Always: chunk rows against
        the documents' counts, the vector column's declaration, the approximate index's
        record against its parts and the rows it covers; ``full`` adds per-document counts,
        every chunk's sentences, orphans, unenforced vectors and the index's checksum (each
        reads a whole table)."""
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            problems = self._check_counts(conn, full)
            problems += self._check_vectors(conn, full)
            if full:
                problems += self._check_sentences(conn)
                problems += self._check_orphans(conn)
            problems += self._check_ann(conn, full)
            problems += self._check_engine(conn)
        return problems

    # -- the parts ---------------------------------------------------------------------

    def _reindex(self, what: str) -> str:
        """The repair of damaged documents: delete them and index their sources again."""
        return (f"index {what} again (DELETE FROM \"{self.schema}\".documents WHERE doc_id "
                f"IN (...), then `sleuth index SOURCES --store '{_redacted(self.location)}'`)")

    def _check_counts(self, conn: Connection, full: bool) -> list[Problem]:
        """Chunk rows against ``documents.n_chunks``: in total, and per document (``full``)."""
        row = conn.execute("SELECT (SELECT coalesce(sum(n_chunks), 0) FROM documents), "
                           "(SELECT count(*) FROM chunks)").fetchone()
        recorded, stored = (int(row[0]), int(row[1])) if row else (0, 0)
        if not full:
            if recorded == stored:
                return []
            return [Problem("chunks", f"holds {stored} rows but the documents record "
                            f"{recorded} chunks", self._reindex("the documents named by "
                                                                "`sleuth check`"))]
        rows = conn.execute(
            "SELECT d.doc_id, d.n_chunks, count(c.id) FROM documents d LEFT JOIN chunks c "
            "ON c.doc_id = d.doc_id GROUP BY d.doc_id, d.n_chunks "
            "HAVING count(c.id) <> d.n_chunks ORDER BY d.doc_id").fetchall()
        if not rows and recorded == stored:
            return []
        named = ", ".join(f"{d} ({n} of {want})" for d, want, n in rows[:SHOWN])
        return [Problem("chunks", f"holds {stored} rows but the documents record {recorded} "
                        f"chunks; {len(rows)} documents miss chunks or have extra ones"
                        + (f": {named}" if named else ""),
                        self._reindex("those documents"))]

    def _check_vectors(self, conn: Connection, full: bool) -> list[Problem]:
        """``sentences.embedding`` declared ``vector(dim) NOT NULL``; where not, (``full``)
        the sentences without a vector or with one of another dimension."""
        dim = self._dim()
        row = conn.execute(
            "SELECT t.typname, a.atttypmod, a.attnotnull FROM pg_attribute a JOIN pg_type t "
            "ON t.oid = a.atttypid WHERE a.attrelid = 'sentences'::regclass "
            "AND a.attname = 'embedding' AND NOT a.attisdropped").fetchone()
        if row is None:
            return [Problem("sentences.embedding", "is missing: no sentence has a vector",
                            "rebuild the index (`sleuth index` into a new schema)")]
        if row[0] == "vector" and row[1] == dim and row[2]:
            return []
        problems = [Problem("sentences.embedding", f"is declared {row[0]}({row[1]})"
                            f"{' NOT NULL' if row[2] else ''}, not vector({dim}) NOT NULL: "
                            "sentences may lack vectors",
                            f"ALTER TABLE \"{self.schema}\".sentences ALTER COLUMN embedding "
                            f"TYPE vector({dim}), ALTER COLUMN embedding SET NOT NULL once "
                            "the rows are sound")]
        if full:
            counts = conn.execute(
                "SELECT count(*) FILTER (WHERE embedding IS NULL), count(*) FILTER "
                "(WHERE vector_dims(embedding) <> %s), array_agg(DISTINCT c.doc_id) FILTER "
                "(WHERE embedding IS NULL OR vector_dims(embedding) <> %s) FROM sentences s "
                "LEFT JOIN chunks c ON c.id = s.chunk", (dim, dim)).fetchone()
            if counts and (counts[0] or counts[1]):
                docs = sorted(d for d in counts[2] or [] if d)
                problems.append(Problem(
                    "sentences", f"{counts[0]} sentences have no vector and {counts[1]} one "
                    f"of another dimension than {dim} (documents {', '.join(docs[:SHOWN])})",
                    self._reindex("those documents")))
        return problems

    def _check_sentences(self, conn: Connection) -> list[Problem]:
        """Every chunk with sentences, and its text covered by them (whitespace aside)."""
        problems = []
        empty = conn.execute(
            "SELECT count(*), (array_agg(c.chunk_id ORDER BY c.chunk_id))[1:%s] FROM chunks c "
            "WHERE NOT EXISTS (SELECT 1 FROM sentences s WHERE s.chunk = c.id)",
            (SHOWN,)).fetchone()
        if empty and empty[0]:
            problems.append(Problem(
                "sentences", f"{empty[0]} chunks have no sentences (nor vectors), so semantic "
                f"search never finds them: {', '.join(empty[1])}",
                self._reindex("their documents")))
        gaps = sorted({chunk for chunk, gap in conn.execute(GAPS)
                       if gap is None or gap.strip()})  # Python's whitespace, not only ASCII
        if gaps:
            problems.append(Problem(
                "sentences", f"{len(gaps)} chunks have text that no sentence covers (sentences "
                f"and their vectors deleted): {', '.join(gaps[:SHOWN])}",
                self._reindex("their documents")))
        return problems

    def _check_orphans(self, conn: Connection) -> list[Problem]:
        """Rows of chunks or documents that no longer exist."""
        row = conn.execute(
            "SELECT (SELECT count(*) FROM sentences s WHERE NOT EXISTS (SELECT 1 FROM chunks c "
            "WHERE c.id = s.chunk AND c.doc_id = s.doc_id)), "
            "(SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM documents d "
            "WHERE d.doc_id = c.doc_id)), "
            "(SELECT count(*) FROM summaries m WHERE NOT EXISTS (SELECT 1 FROM documents d "
            "WHERE d.doc_id = m.doc_id))").fetchone()
        sentences, chunks, summaries = (int(v) for v in row) if row else (0, 0, 0)
        problems = []
        where = {"sentences": "NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = t.chunk AND "
                              "c.doc_id = t.doc_id)",
                 "chunks": "NOT EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = t.doc_id)",
                 "summaries": "NOT EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = t.doc_id)"}
        for table, n, of in (("sentences", sentences, "chunks or documents"),
                             ("chunks", chunks, "documents"),
                             ("summaries", summaries, "documents")):
            if n:
                problems.append(Problem(
                    table, f"holds {n} orphaned rows, of {of} that no longer exist",
                    f"DELETE FROM \"{self.schema}\".{table} t WHERE {where[table]}"))
        return problems

    def _check_ann(self, conn: Connection, full: bool) -> list[Problem]:
        """The approximate index's record against its parts and the sentence rows."""
        row = conn.execute("SELECT record, (SELECT coalesce(sum(length(data)), 0) FROM "
                           "ann_parts) FROM ann").fetchone()
        if row is None or not isinstance(row[0], dict):
            return []
        record: dict[str, Any] = row[0]
        covered, held = int(record.get("covered") or 0), int(record.get("sentences") or 0)
        drawn = conn.execute("SELECT coalesce(max(id), 0) FROM sentences").fetchone()
        sequence = conn.execute(
            "SELECT last_value FROM pg_sequences WHERE sequencename = 'sentences_id_seq' "
            "AND schemaname = %s", (self.schema,)).fetchone()
        highest = max(int(drawn[0]) if drawn else 0,
                      int(sequence[0]) if sequence and sequence[0] is not None else 0)
        within = conn.execute("SELECT count(*) FROM sentences WHERE id <= %s",
                              (covered,)).fetchone()
        stored = int(within[0]) if within else 0
        found = []
        if int(row[1]) != record.get("bytes"):
            found.append(f"its parts (ann_parts) hold {row[1]} bytes of the "
                         f"{record.get('bytes')} its record names")
        if covered > highest:
            found.append(f"is stale: its record covers sentence ids up to {covered} but "
                         f"sentences were only numbered up to {highest}, so it was built over "
                         "other rows than exist (sentences written from now on would be "
                         "missed by semantic search)")
        if stored > held:
            found.append(f"is stale: it holds {held} sentence vectors but {stored} stored "
                         "sentences fall within the rows it covers, so it was built over fewer "
                         f"rows than exist ({stored - held} missed by semantic search)")
        if full and not found and self._ann_digest(conn) != record.get("sha256"):
            found.append("does not match its checksum")
        return [Problem("ann", f"(the approximate index) {what}",
                        f"sleuth index --repair --store '{_redacted(self.location)}'")
                for what in found]

    def _check_engine(self, conn: Connection) -> list[Problem]:
        """With ``postgres.vector_search = "engine"``: the engine's IVFFlat index present and
        valid where the store should have one (else every search scans exactly)."""
        if self._connections.vector_search != "engine":
            return []
        found = engine_ann.find(conn, self.schema)
        if found.state == "valid":
            return []
        sentences = conn.execute("SELECT count(*) FROM sentences").fetchone()
        if not engine_ann.wanted(self._vector_settings, int(sentences[0]) if sentences else 0):
            return []
        what = {"missing": "is missing", "invalid": "is invalid (an interrupted build)",
                "other": f"is not the expected index: {found.detail}"}[found.state]
        return [Problem(engine_ann.INDEX, f"(the engine's vector index) {what}, so semantic "
                        "searches scan every sentence",
                        f"sleuth index --repair --store '{_redacted(self.location)}'")]

    def _ann_digest(self, conn: Connection) -> str:
        """The sha256 of the stored parts, read one part at a time."""
        digest = hashlib.sha256()
        parts = [int(r[0]) for r in conn.execute("SELECT part FROM ann_parts ORDER BY part")]
        for part in parts:
            data = conn.execute("SELECT data FROM ann_parts WHERE part = %s",
                                (part,)).fetchone()
            if data is not None:
                digest.update(data[0])
        return digest.hexdigest()

    def repair(self, embed: Callable[[list[tuple[str, str]]], np.ndarray],
               on_progress: Callable[[int, int], None] | None = None) -> RepairReport:
        """Rebuild the approximate index where :meth:`check` finds it damaged or stale (rows
        of documents are restored by indexing the documents again, as their problems say)."""
        report = RepairReport()
        with self._pool.connection() as conn:
            with conn.transaction():
                broken = self._check_engine(conn)
            if broken:
                engine_ann.update(conn, self.schema, self._vector_settings, self._connections)
                report.ann_rebuilt = True
            with conn.transaction():
                damaged = self._check_ann(conn, full=True)
            if damaged:
                with conn.transaction():
                    conn.execute("DELETE FROM ann")
                    conn.execute("DELETE FROM ann_parts")
                self._ann.update(conn, self._vector_settings)
                report.ann_rebuilt = True
        return report
