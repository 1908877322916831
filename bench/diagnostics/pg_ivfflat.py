"""pgvector's IVFFlat index against the HNSW index the PostgreSQL store uses, on a schema
that ``bench/scale.py --stores postgres --keep`` left in ``--out/pgdata``.

Builds an IVFFlat index on the schema's ``sentences.embedding`` (``--lists``; timed, with
``maintenance_work_mem`` 4GB and the server's parallel maintenance workers), then, inside
a transaction that drops the HNSW index and is rolled back (the HNSW index stays), runs
``--queries`` semantic queries at each ``--probes`` value: the nearest ``--pool``
sentences by the index, ranked into chunks by their best sentence as the store ranks them,
scored as recall@10 against the exact chunk ranking of every stored vector; latency is the
SQL query alone. The IVFFlat index is dropped at the end unless ``--keep-index``.

Run::

    python bench/diagnostics/pg_ivfflat.py --out /tmp/s3 --size 100000 --lists 630 \\
        --probes 5,10,20,40
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import command_line, log, machine_facts, md_table, summary_ms, write_json
from scale import (
    Corpus,
    StoreSide,
    exact_top,
    pg_blocks,
    pg_settings,
    semantic_queries,
    start_postgres,
)

from sleuth import Settings
from sleuth.embed import load_embedder
from sleuth.store.base import top_chunks_by_best_sentence

RECALL_K = 10


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="the scale bench's work folder")
    ap.add_argument("--size", type=int, default=100_000, help="chunks of the kept schema")
    ap.add_argument("--embedder", default="model2vec", help="the schema's embedder tag")
    ap.add_argument("--lists", type=int, default=630, help="IVFFlat lists (pgvector: ~√rows)")
    ap.add_argument("--probes", default="5,10,20,40", help="ivfflat.probes values to time")
    ap.add_argument("--queries", type=int, default=60, help="semantic queries per setting")
    ap.add_argument("--pool", type=int, default=160,
                    help="sentences fetched per query (the store's 16 x top_k)")
    ap.add_argument("--seed", type=int, default=20240601, help="the corpus seed")
    ap.add_argument("--pg-shared-buffers", default="8GB")
    ap.add_argument("--keep-index", action="store_true", help="leave the IVFFlat index")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()

    import psycopg
    from pgvector.psycopg import register_vector

    url, server = start_postgres(args.out / "pgdata", args.pg_shared_buffers or None)
    schema = StoreSide.schema(args.embedder, args.size)
    settings = Settings.load()
    embedder = load_embedder(settings.embed.model_copy(update={"model": args.embedder}))
    corpus = Corpus(args.out / "corpus-v2", args.seed)
    shards = sorted((args.out / "corpus-v2").glob("part-*.jsonl"))
    docs = corpus.sample_docs(shards, args.queries * 2, args.seed + 11)
    texts = [q["query"] for q in semantic_queries(docs, args.queries, args.seed + 12)]
    vectors = embedder.embed(texts)
    log(f"exact ranking of {len(texts)} queries over {schema}")
    truth = exact_top(vectors, pg_blocks(url, schema, embedder.dim), RECALL_K)

    result: dict[str, Any] = {"command": command_line(), "machine": machine_facts(),
                              "postgres": pg_settings(url), "schema": schema,
                              "lists": args.lists, "pool": args.pool, "settings": []}
    with psycopg.connect(url) as conn:
        conn.execute(f'SET search_path = "{schema}", public')
        register_vector(conn)
        conn.execute("SET maintenance_work_mem = '4GB'")
        result["sentences"] = conn.execute("SELECT count(*) FROM sentences").fetchone()[0]
        log(f"building IVFFlat ({args.lists} lists) on {result['sentences']:,} sentences")
        t0 = time.perf_counter()
        conn.execute("CREATE INDEX sentences_ivfflat ON sentences USING ivfflat "
                     f"(embedding vector_ip_ops) WITH (lists = {int(args.lists)})")
        conn.commit()
        result["build_s"] = round(time.perf_counter() - t0, 1)
        result["index_mib"] = round(conn.execute(
            "SELECT pg_relation_size('sentences_ivfflat')").fetchone()[0] / 2**20, 1)
        conn.execute("DROP INDEX sentences_embedding")  # rolled back below
        for probes in (int(p) for p in args.probes.split(",")):
            conn.execute(f"SET LOCAL ivfflat.probes = {probes}")
            sql = ("SELECT chunk, -(embedding <#> %s) FROM sentences "
                   "ORDER BY embedding <#> %s LIMIT %s")
            for v in vectors[:5]:  # warm-up
                conn.execute(sql, (v, v, args.pool)).fetchall()
            latency, recall = [], []
            for v, keys in zip(vectors, truth, strict=True):
                t0 = time.perf_counter()
                rows = conn.execute(sql, (v, v, args.pool)).fetchall()
                latency.append(time.perf_counter() - t0)
                ranked = top_chunks_by_best_sentence(
                    np.array([r[1] for r in rows]), np.array([r[0] for r in rows]),
                    RECALL_K, 1)
                recall.append(len({k for k, _, _ in ranked} & set(keys)) / max(1, len(keys)))
            row = {"probes": probes, "recall_at_10": round(float(np.mean(recall)), 4),
                   **summary_ms(latency)}
            log(str(row))
            result["settings"].append(row)
        conn.rollback()  # the HNSW index is back
        if not args.keep_index:
            conn.execute(f'SET search_path = "{schema}", public')
            conn.execute("DROP INDEX sentences_ivfflat")
            conn.commit()
    server.cleanup()
    print(f"IVFFlat on {schema}: {result['sentences']:,} sentences, {args.lists} lists, "
          f"built in {result['build_s']} s, {result['index_mib']} MiB")
    print(md_table(["probes", "recall@10", "p50 ms", "p95 ms"],
                   [[s["probes"], f"{s['recall_at_10']:.3f}", s["p50_ms"], s["p95_ms"]]
                    for s in result["settings"]]))
    if args.json:
        write_json(args.json, result)


if __name__ == "__main__":
    main()
