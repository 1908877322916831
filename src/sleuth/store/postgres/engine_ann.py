"""The PostgreSQL store's semantic search inside the engine: pgvector's IVFFlat index on the
sentence vectors, so a serving process holds no approximate index of its own
(``postgres.vector_search = "engine"``; the default stays the faiss inverted file of
:mod:`sleuth.store.postgres.ann`, memory-mapped: bench/pg_engine.py measured this search
at several times its cost on the scale bench's corpus, for the same recall).

Why this index (bench/pg_engine.py, pgvector 0.8 on the scale bench's corpus, beside the
faiss inverted file): pgvector's HNSW, on ``halfvec`` and on binary-quantised vectors
re-ranked exactly, found too few of the exact top 10 on these vectors (0.956 at best on 39k
sentences with ``ef_search`` 1,000, falling with size; the bit index below 0.7); IVFFlat with
the faiss index's lists (about 2·√sentences, ``vectors.nlist``) and probes (6 % of them,
``vectors.nprobe``) finds what faiss finds, because it is the same method on the float
vectors instead of 8-bit codes. Its distances are exact, so the candidates need no
re-scoring: the statement is the exact scan's, with the index allowed to drive it. The
index uses cosine operators although the search orders by inner product (the same order for
the unit vectors stored): pgvector's k-means then normalises its centroids, where with
inner-product operators a few long centroids drew most vectors into a few lists, and a
search probing 10 of 393 lists read a third of the index (bench/pg_engine.py, 100k chunks).

One index, ``sentences_engine_ivf`` in the index schema, its comment a JSON record
(``lists``, ``trained_on``: the sentences its k-means saw). PostgreSQL files every later
insert into its nearest list and removes deleted rows, so sentences written since the build
are found as soon as their transaction commits. The build creates it when the store wants
an approximate index (``vectors.ann`` 'on', or 'auto' from ``vectors.ann_min_sentences``
sentences) and it is missing, invalid (an interrupted build), of another ``nlist`` than
configured, or trained on fewer than a quarter of the sentences now stored (its lists no
longer fit them); it drops it where none is wanted (it slows every insert). A search that
finds none scans exactly and says once in the log why.

The access filter is part of the statement that walks the index: a hidden chunk's sentence
is never a candidate. ``ivfflat.iterative_scan = relaxed_order`` lets a restricted search
probe more lists until the pool holds visible sentences; when the candidates still span
fewer than ``top_k`` chunks the caller scans the visible sentences exactly.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import psycopg

from sleuth.settings import PostgresSettings, VectorSettings
from sleuth.store.local import ann

log = logging.getLogger(__name__)

INDEX = "sentences_engine_ivf"
RETRAIN_GROWTH = 4.0  # stored sentences / sentences its lists were trained on: rebuild above
MAX_PROBES = 4  # an iterative (restricted) scan probes at most this many times the probes

Connection = psycopg.Connection[tuple[Any, ...]]
State = Literal["valid", "invalid", "missing", "other"]


def definition(lists: int) -> str:
    """The index's DDL in the current schema (``search_path``)."""
    return (f"CREATE INDEX {INDEX} ON sentences USING ivfflat (embedding vector_cosine_ops) "
            f"WITH (lists = {lists})")


@dataclass(frozen=True)
class Found:
    """The index as the catalog has it: its state, lists, what it was trained on, size."""

    state: State
    lists: int = 0
    trained_on: int = 0
    bytes: int = 0
    detail: str = ""


def find(conn: Connection, schema: str) -> Found:
    """Whether ``schema`` holds the index, valid (usable and kept in step), invalid (an
    interrupted build), or an index of that name on something else."""
    row = conn.execute(
        "SELECT i.indisvalid AND i.indisready, pg_relation_size(c.oid), "
        "pg_get_indexdef(c.oid), obj_description(c.oid, 'pg_class') FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_index i ON i.indexrelid = c.oid "
        "WHERE n.nspname = %s AND c.relname = %s", (schema, INDEX)).fetchone()
    if row is None:
        return Found("missing")
    text = str(row[2])
    try:
        record = json.loads(row[3] or "{}")
        lists, trained_on = int(record["lists"]), int(record["trained_on"])
    except (ValueError, KeyError, TypeError):
        return Found("other", bytes=int(row[1]), detail=f"{text} (no record of its lists)")
    if "USING ivfflat (embedding vector_cosine_ops)" not in text \
            or f"lists='{lists}'" not in text:
        return Found("other", lists, trained_on, int(row[1]), text)
    return Found("valid" if row[0] else "invalid", lists, trained_on, int(row[1]), text)


def wanted(settings: VectorSettings, sentences: int) -> bool:
    """Whether a store of ``sentences`` searches through an approximate index at all."""
    return settings.ann == "on" or (settings.ann == "auto"
                                    and sentences >= settings.ann_min_sentences)


def probes(settings: VectorSettings, lists: int) -> int:
    """Lists probed per search: ``vectors.nprobe`` or the faiss index's share of them."""
    return min(lists, settings.nprobe or max(ann.MIN_PROBES, round(ann.PROBE_SHARE * lists)))


def stale(found: Found, settings: VectorSettings, sentences: int) -> str | None:
    """Why an index must be built again (None: it serves)."""
    if found.state != "valid":
        return found.state
    if settings.nlist is not None and found.lists != ann.lists_for(found.trained_on,
                                                                    settings.nlist):
        return f"of {found.lists} lists, not the {settings.nlist} configured"
    if sentences > RETRAIN_GROWTH * max(found.trained_on, 1):
        return (f"trained on {found.trained_on} sentences of the {sentences} stored: its "
                "lists no longer fit them")
    return None


def update(conn: Connection, schema: str, vectors: VectorSettings, engine: PostgresSettings,
           on_progress: Callable[[str], None] | None = None) -> dict[str, Any] | None:
    """Create the index where the store wants it and it is missing or stale, drop it where
    not wanted; what was done (None: nothing)."""
    say = on_progress or (lambda _: None)
    sentences = int(conn.execute("SELECT count(*) FROM sentences").fetchone()[0])  # type: ignore[index]
    found = find(conn, schema)
    conn.commit()
    if not sentences or not wanted(vectors, sentences):
        if found.state == "missing":
            return None
        drop(conn)
        return {"dropped": found.state}
    why = stale(found, vectors, sentences)
    if why is None:
        return None
    lists = ann.lists_for(sentences, vectors.nlist)
    started = time.perf_counter()
    say(f"building the engine's vector index (IVFFlat, {lists} lists, {sentences:,} sentences)")
    with conn.transaction():
        conn.execute(f"DROP INDEX IF EXISTS {INDEX}")  # invalid, stale or of another kind
        conn.execute("SELECT set_config('maintenance_work_mem', %s, true), "
                     "set_config('statement_timeout', '0', true)",  # a build takes minutes
                     (f"{engine.engine_build_memory_mb}MB",))
        conn.execute(definition(lists))
        conn.execute(f"COMMENT ON INDEX {INDEX} IS " + _literal(
            json.dumps({"lists": lists, "trained_on": sentences})))
    seconds = round(time.perf_counter() - started, 1)
    log.info("built %s (%s lists) over %s sentences in %s s (%s)", INDEX, lists, sentences,
             seconds, why)
    return {"built": INDEX, "replaced": why, "lists": lists, "sentences": sentences,
            "seconds": seconds}


def _literal(text: str) -> str:
    """``text`` as an SQL string literal (COMMENT takes no parameters)."""
    return "'" + text.replace("'", "''") + "'"


def drop(conn: Connection) -> None:
    """Drop the index where there is one (the store searches with faiss, or exactly)."""
    conn.execute(f"DROP INDEX IF EXISTS {INDEX}")
    conn.commit()


class EngineSearch:
    """Candidates from the engine's index for one store; remembers (per process) whether it
    said that the index is missing, to say it once."""

    def __init__(self, schema: str) -> None:
        self._schema = schema
        self._warned = False

    def usable(self, conn: Connection, settings: VectorSettings) -> Found | None:
        """The index when it exists and is valid (else searches are exact; said once where
        the store should have it, by the planner's estimate of the sentences)."""
        found = find(conn, self._schema)
        if found.state == "valid":
            self._warned = False
            return found
        estimate = conn.execute("SELECT reltuples FROM pg_class WHERE oid = "
                                "'sentences'::regclass").fetchone()
        conn.commit()
        if not self._warned and wanted(settings, int(estimate[0]) if estimate else 0):
            self._warned = True
            log.warning("postgres.vector_search is 'engine' but %s is %s in schema %s: "
                        "semantic searches scan exactly until `sleuth index` builds it",
                        INDEX, found.state, self._schema)
        return None

    def candidates(self, conn: Connection, vector: np.ndarray, source: str, where: str,
                   params: list[Any], pool: int, probed: int
                   ) -> list[tuple[int, float, int, int]]:
        """(chunk key, cosine, start, end) of the ``pool`` visible sentences nearest to
        ``vector`` in the ``probed`` lists nearest to it (more where a restriction leaves
        too few there), best first."""
        conn.execute("SELECT set_config('ivfflat.probes', %s, true), "
                     "set_config('ivfflat.iterative_scan', 'relaxed_order', true), "
                     "set_config('ivfflat.max_probes', %s, true)",
                     (str(probed), str(MAX_PROBES * probed)))
        rows = conn.execute(  # relaxed order: candidates ordered again by their score
            "WITH found AS MATERIALIZED (SELECT s.chunk, -(s.embedding <#> %b) AS score, "
            f's.start, s."end", s.id FROM {source} WHERE {where} '
            "ORDER BY s.embedding <=> %b LIMIT %s) "
            'SELECT chunk, score, start, "end" FROM found ORDER BY score DESC, id',
            [vector, *params, vector, pool]).fetchall()
        conn.commit()
        return [(int(r[0]), float(r[1]), int(r[2]), int(r[3])) for r in rows]
