# ruff: noqa: E402
"""semantic_search latency at >= 200k sentence vectors, plus real query latency with MiniLM.

1. Builds (or reuses) a synthetic index (bench/_synth.py; random unit float32 sentence
   vectors, dim 384 - timing does not depend on their values) with >= ``--sentences``
   sentence vectors and times ``store.semantic_search(query_vector, top_k)`` over random
   unit query vectors (warm; the first, cold call that loads the vectors is reported apart),
   with a stage breakdown (matrix product / best-sentence ranking / SQLite lookups).
2. On the real 2Wiki index (MiniLM: the 2Wiki dev index, ``_common.dev_index``, built on
   first use and cached) times ``Index.semantic_search(question)`` end to end, split into
   query encoding and store search.
3. Optionally (``--large-index``, default the keyword benchmark's 100k-chunk index when it
   exists) times store.semantic_search on that much larger vector set.

Run: python bench/semantic.py
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    CACHE_DIR,
    OUT_DIR,
    add_data_option,
    command_line,
    data_root,
    dev_index_meta,
    load_minilm,
    log,
    machine_facts,
    machine_md,
    md_table,
    resolve_index,
    summary_ms,
    wiki_questions,
    write_json,
)
from _synth import DIM, ensure_index

from sleuth import Index
from sleuth.store.base import top_chunks_by_best_sentence

SENTENCES_PER_DOC_ESTIMATE = 25.0  # measured by bench/_synth.py: ~25.7 per chunk


def unit_queries(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, DIM), dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def time_store(index: Index, queries: np.ndarray, top_k: int, warmup: int
               ) -> dict[str, Any]:
    store: Any = index.store
    t0 = time.perf_counter()
    store.semantic_search(queries[0], top_k)
    cold = time.perf_counter() - t0
    for q in queries[1 : 1 + warmup]:
        store.semantic_search(q, top_k)
    samples = []
    for q in queries:
        t0 = time.perf_counter()
        store.semantic_search(q, top_k)
        samples.append(time.perf_counter() - t0)
    # stage breakdown (same functions LocalStore.semantic_search calls)
    vectors = store._load_vectors()
    mm, rank, rest = [], [], []
    for q in queries[: min(len(queries), 50)]:
        t0 = time.perf_counter()
        scores = vectors.scores(q)
        t1 = time.perf_counter()
        ranked = top_chunks_by_best_sentence(scores, vectors.chunk_of, top_k)
        t2 = time.perf_counter()
        rows = {int(vectors.sentence_of[r]) for _, _, rr in ranked for r in rr}
        store._sentence_spans(rows)
        store._chunk_meta([k for k, _, _ in ranked])
        t3 = time.perf_counter()
        mm.append(t1 - t0)
        rank.append(t2 - t1)
        rest.append(t3 - t2)
    n_vec = int(sum(len(m) for m in vectors.matrices))
    return {
        "vectors": n_vec, "segments": len(vectors.matrices),
        "cold_first_call_ms": round(cold * 1e3, 1),
        "warm": summary_ms(samples),
        "breakdown_median_ms": {
            "scores_matrix_product": round(statistics.median(mm) * 1e3, 3),
            "top_chunks_by_best_sentence": round(statistics.median(rank) * 1e3, 3),
            "sqlite_spans_and_chunk_meta": round(statistics.median(rest) * 1e3, 3),
        },
    }


def time_real(index: Index, questions: list[str], top_k: int) -> dict[str, Any]:
    emb = index.embedder
    for q in questions[:5]:
        index.semantic_search(q, top_k)
    total, enc, search = [], [], []
    for q in questions:
        t0 = time.perf_counter()
        index.semantic_search(q, top_k)
        total.append(time.perf_counter() - t0)
    for q in questions:
        t0 = time.perf_counter()
        v = emb.embed([q])[0]
        t1 = time.perf_counter()
        index.store.semantic_search(v, top_k)
        t2 = time.perf_counter()
        enc.append(t1 - t0)
        search.append(t2 - t1)
    return {"index_semantic_search": summary_ms(total), "encode_query": summary_ms(enc),
            "store_semantic_search": summary_ms(search)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", type=int, default=200_000,
                    help="minimum sentence vectors in the synthetic index")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--index", type=Path, default=None,
                    help="synthetic index folder (default <bench cache>/synthetic/sem-<docs>)")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--real-index", type=Path, default=None,
                    help="real MiniLM 2Wiki index [the 2Wiki dev index, built if missing]")
    ap.add_argument("--no-real", action="store_true", help="skip the real-index part")
    ap.add_argument("--large-index", type=Path, default=CACHE_DIR / "kw-100k",
                    help="extra, larger index to time too if it exists")
    ap.add_argument("--large-queries", type=int, default=20)
    ap.add_argument("--out", type=Path, default=OUT_DIR / "semantic.json")
    add_data_option(ap)
    args = ap.parse_args()

    facts = machine_facts()
    log(f"machine: {facts['cpu_model']}, {facts['cores']} cores, {facts['ram_gib']} GiB")
    n_docs = math.ceil(args.sentences / SENTENCES_PER_DOC_ESTIMATE)
    path = args.index or CACHE_DIR / f"sem-{n_docs}"
    build, reused = ensure_index(path, n_docs, args.seed, args.rebuild, log=log)
    if build["sentences"] < args.sentences:
        raise SystemExit(f"index has {build['sentences']} sentences < {args.sentences}; "
                         "raise --sentences")
    queries = unit_queries(args.queries, args.seed + 5)
    with Index.open(path) as index:
        synthetic = time_store(index, queries, args.top_k, warmup=5)
    log(f"synthetic: {synthetic}")

    large = None
    if args.large_index and (args.large_index / "manifest.json").is_file():
        with Index.open(args.large_index) as index:
            large = time_store(index, unit_queries(args.large_queries, args.seed + 6),
                               args.top_k, warmup=2)
            large["index"] = str(args.large_index)
        log(f"large: {large}")

    real = None
    if not args.no_real:
        embedder, load_s = load_minilm()
        started = time.time()
        args.real_index = resolve_index(args.real_index, "2wiki", args.data)
        meta = dev_index_meta(args.real_index)
        wiki_build = {"seconds": meta.get("seconds")}
        wiki_reused = meta.get("finished", 0) < started
        qs = [q["question"] for q in json.loads(wiki_questions(data_root(args.data))
                                                .read_text())][: args.queries]
        with Index.open(args.real_index, embedder=embedder) as index:
            stats = index.stats()
            real = time_real(index, qs, args.top_k)
        real.update({"index": str(args.real_index), "model_load_s": round(load_s, 2),
                     "chunks": stats.chunks, "sentences": stats.sentences,
                     "build": wiki_build, "reused": wiki_reused, "queries": len(qs)})
        log(f"real: {real}")

    result = {"benchmark": "semantic", "command": command_line(), "machine": facts,
              "index": str(path), "index_reused": reused, "build": build,
              "top_k": args.top_k, "synthetic": synthetic, "large": large, "real": real}
    facts["loadavg_end"] = os.getloadavg()
    write_json(args.out, result)
    print(report(result))
    log(f"wrote {args.out}")


def report(r: dict[str, Any]) -> str:
    s, b = r["synthetic"], r["build"]
    rows = [[f"synthetic, {s['vectors']:,} sentence vectors ({b['chunks']:,} chunks)",
             s["warm"]["p50_ms"], s["warm"]["p95_ms"], s["warm"]["mean_ms"],
             s["cold_first_call_ms"]]]
    if r["large"]:
        g = r["large"]
        rows.append([f"synthetic, {g['vectors']:,} sentence vectors (keyword bench index)",
                     g["warm"]["p50_ms"], g["warm"]["p95_ms"], g["warm"]["mean_ms"],
                     g["cold_first_call_ms"]])
    lines = [
        "## semantic_search latency", "",
        f"- Command: `{r['command']}`",
        machine_md(r["machine"]),
        f"- Synthetic index `{r['index']}` ({'reused' if r['index_reused'] else 'built now'}"
        f"): random unit float32 sentence vectors (dim 384), not model embeddings; query "
        f"vectors are random unit vectors; top_k={r['top_k']}; warm (after 5 warm-up "
        "queries); the cold first call (loads the sentence→chunk map from SQLite and "
        "memory-maps the vectors) is shown apart.", "",
        md_table(["store.semantic_search(vector)", "p50 ms", "p95 ms", "mean ms",
                  "cold first call ms"], rows), "",
        "Stage medians (synthetic index): "
        + ", ".join(f"{k} {v} ms" for k, v in s["breakdown_median_ms"].items()),
    ]
    if r["large"]:
        lines.append("Stage medians (large index): " + ", ".join(
            f"{k} {v} ms" for k, v in r["large"]["breakdown_median_ms"].items()))
    if r["real"]:
        x = r["real"]
        lines += [
            "",
            f"Real index `{x['index']}` (2Wiki, bundled MiniLM, {x['chunks']:,} chunks, "
            f"{x['sentences']:,} sentence vectors), first {x['queries']} questions, "
            f"model load {x['model_load_s']} s (not included):", "",
            md_table(["measure", "p50 ms", "p95 ms", "mean ms"], [
                ["Index.semantic_search(question) end to end",
                 *[x["index_semantic_search"][k] for k in ("p50_ms", "p95_ms", "mean_ms")]],
                ["  of which: encode query (MiniLM)",
                 *[x["encode_query"][k] for k in ("p50_ms", "p95_ms", "mean_ms")]],
                ["  of which: store.semantic_search",
                 *[x["store_semantic_search"][k] for k in ("p50_ms", "p95_ms", "mean_ms")]],
            ]),
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
