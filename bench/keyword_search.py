"""keyword_search at scale: the indexed search vs the brute-force reference scan.

Builds (or reuses) an embedded Sleuth index of N synthetic ~1,000-token chunks (see
bench/_synth.py: Zipf English-like text, real ``chunk_document`` chunking, random unit
sentence vectors instead of model embeddings, written with ``LocalStore.write``), then:

* times ``Index.keyword_search(keywords, top_k)`` over a fixed-seed set of agent-style
  queries (warm: one warm-up pass, then ``--repeats`` timed passes);
* times ``sleuth.store.keyword.brute_force`` over all (chunk_id, text) pairs held in memory
  on a subset of queries, and checks the indexed top-k equals it exactly (ids and scores);
* reports, per query, how many chunks contain a keyword (the store's candidate set) and a
  stage breakdown of the store's keyword_search (diagnostic: mirrors the current
  LocalStore internals and is skipped when they are not there).

Run: python bench/keyword_search.py [--n 100000] [--rebuild]
"""

import argparse
import math  # noqa: E402
import os
import random  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from _common import (  # noqa: E402
    CACHE_DIR,
    OUT_DIR,
    command_line,
    log,
    machine_facts,
    machine_md,
    md_table,
    pct,
    source_fingerprint,
    summary_ms,
    write_json,
)
from _synth import Vocab, ensure_index  # noqa: E402

import sleuth.store.local.store as local_store  # noqa: E402
from sleuth import Index  # noqa: E402
from sleuth.store import keyword as kw  # noqa: E402

CATEGORIES = [
    # (name, how many, description)
    ("entity", 16, "one capitalised entity name, rank log-uniform in [500, V]"),
    ("entity2", 6, "a two-word entity name as one phrase keyword"),
    ("word", 10, "one lowercase mid/low-frequency word, rank log-uniform in [1,000, V]"),
    ("phrase", 6, "a 2-word phrase cut from a random chunk (both words rank >= 300)"),
    ("entity+word", 10, "entity name + mid/low-frequency word (2 keywords)"),
    ("three", 6, "entity + two mid/low-frequency words (3 keywords)"),
    ("common", 6, "a common word (rank 100-1,000) alone or with an entity"),
]


def _loguniform_rank(rng: random.Random, lo: int, hi: int) -> int:
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _pick(rng: random.Random, vocab: Vocab, kinds: set[str], lo: int, hi: int) -> str:
    hi = min(hi, len(vocab.items) - 1)
    while True:
        r = _loguniform_rank(rng, lo, hi)
        # walk to the nearest item of the wanted kind
        for j in range(r, min(r + 500, len(vocab.items))):
            if vocab.kinds[j] in kinds:
                return vocab.items[j]


def make_queries(index: Index, vocab: Vocab, seed: int, n_docs: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    V = len(vocab.items)
    lex = {"real", "word"}
    queries: list[dict[str, Any]] = []
    rank_of = {w: i for i, w in enumerate(vocab.items)}
    for cat, count, _ in CATEGORIES:
        for _ in range(count):
            if cat == "entity":
                q = [_pick(rng, vocab, {"entity"}, 500, V)]
            elif cat == "entity2":
                q = [_pick(rng, vocab, {"entity2"}, 500, V)]
            elif cat == "word":
                q = [_pick(rng, vocab, lex, 1000, V)]
            elif cat == "phrase":
                q = [_phrase(index, rng, rank_of, n_docs)]
            elif cat == "entity+word":
                q = [_pick(rng, vocab, {"entity"}, 500, V), _pick(rng, vocab, lex, 1000, V)]
            elif cat == "three":
                q = [_pick(rng, vocab, {"entity", "entity2"}, 500, V),
                     _pick(rng, vocab, lex, 1000, V), _pick(rng, vocab, lex, 1000, V)]
            else:  # common
                w = _pick(rng, vocab, {"real"}, 100, 1000)
                q = [w] if rng.random() < 0.5 else [_pick(rng, vocab, {"entity"}, 500, V), w]
            queries.append({"category": cat, "keywords": q,
                            "ranks": [rank_of.get(k) for k in q]})
    return queries


def _phrase(index: Index, rng: random.Random, rank_of: dict[str, int], n_docs: int) -> str:
    while True:
        doc = rng.randrange(n_docs)
        chunks = index.store.get_chunks([f"syn-{doc:07d}#0"])
        if not chunks:
            continue
        words = re.findall(r"[A-Za-z]+", next(iter(chunks.values())).text)
        for _ in range(50):
            i = rng.randrange(len(words) - 1)
            a, b = words[i], words[i + 1]
            if rank_of.get(a.lower(), rank_of.get(a, 10**9)) >= 300 and rank_of.get(
                    b.lower(), rank_of.get(b, 10**9)) >= 300:
                text = next(iter(chunks.values())).text
                if re.search(rf"(?<!\w){re.escape(a)} {re.escape(b)}(?!\w)", text):
                    return f"{a} {b}"


def candidate_count(index: Index, keywords: list[str], n_chunks: int) -> int:
    """Chunks the store's token index says contain any keyword (None -> all chunks)."""
    store: Any = index.store
    parsed = kw.parse_keywords(keywords)
    if hasattr(store, "_candidates"):  # SQLite FTS5 store
        c = store._candidates(parsed)
    elif hasattr(store, "_keyword"):  # older tantivy store
        c = store._keyword.candidates(parsed)
    else:
        return -1
    return n_chunks if c is None else len(c)


def breakdown(index: Index, keywords: list[str], top_k: int) -> dict[str, Any] | None:
    """One instrumented run of LocalStore.keyword_search's stages (FTS5 store), same calls."""
    store: Any = index.store
    countable = getattr(local_store, "_countable", None)
    if countable is None or not all(hasattr(store, a) for a in ("_top", "_candidates")):
        return None
    t0 = time.perf_counter()
    parsed = kw.parse_keywords(keywords, "word")
    scores: dict[int, float] = {}
    rescore, postings_rows = [], 0
    for k in parsed:
        if countable(k):
            for rowid, count in store.db.execute(
                "SELECT doc, count(*) FROM keyword_postings WHERE term=? GROUP BY doc",
                (k.text,),
            ):
                postings_rows += 1
                scores[rowid] = scores.get(rowid, 0.0) + count * k.weight
        else:
            rescore.append(k)
    t1 = time.perf_counter()
    rescored = 0
    if rescore:
        for rowid, text in store._candidate_texts(store._candidates(rescore)):
            rescored += 1
            score = kw.score_text(text.lower(), rescore)
            if score > 0:
                scores[rowid] = scores.get(rowid, 0.0) + score
    t2 = time.perf_counter()
    ranked = store._top(scores, top_k)
    t3 = time.perf_counter()
    chunks = store.get_chunks([cid for cid, _ in ranked])
    store._titles({c.doc_id for c in chunks.values()})
    for cid, _ in ranked:
        kw.matching_sentences([s.text for s in chunks[cid].sentences], parsed)
    t4 = time.perf_counter()
    return {
        "counted_from_postings": [k.text for k in parsed if countable(k)],
        "rescored_keywords": [k.text for k in rescore],
        "postings_docs": postings_rows, "rescored_chunks": rescored,
        "postings_ms": (t1 - t0) * 1e3, "rescore_ms": (t2 - t1) * 1e3,
        "top_ids_ms": (t3 - t2) * 1e3, "hits_ms": (t4 - t3) * 1e3,
        "total_ms": (t4 - t0) * 1e3,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000, help="synthetic chunks (documents)")
    ap.add_argument("--seed", type=int, default=20240601, help="corpus seed")
    ap.add_argument("--query-seed", type=int, default=7, help="query-set seed")
    ap.add_argument("--index", type=Path, default=None,
                    help="index folder (default <bench cache>/synthetic/kw-<n/1000>k)")
    ap.add_argument("--rebuild", action="store_true", help="rebuild even if cached")
    ap.add_argument("--repeats", type=int, default=3, help="timed passes over the queries")
    ap.add_argument("--brute", type=int, default=8, help="queries also run by brute force")
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--out", type=Path, default=OUT_DIR / "keyword.json")
    args = ap.parse_args()
    index_path = args.index or CACHE_DIR / f"kw-{args.n // 1000}k"

    facts = machine_facts()
    log(f"machine: {facts['cpu_model']}, {facts['cores']} cores, {facts['ram_gib']} GiB, "
        f"src {facts['git']}")
    build, reused = ensure_index(index_path, args.n, args.seed, args.rebuild, log=log)
    log(f"index {'reused' if reused else 'built'}: {build}")

    index = Index.open(index_path)
    stats = index.stats()
    vocab = Vocab.build(args.seed)
    queries = make_queries(index, vocab, args.query_seed, args.n)
    for q in queries:
        q["chunks_containing_a_keyword"] = candidate_count(index, q["keywords"], stats.chunks)

    log("warm-up pass")
    for q in queries:
        index.keyword_search(q["keywords"], top_k=args.top_k)
    samples: list[float] = []
    per_query: list[list[float]] = [[] for _ in queries]
    for rep in range(args.repeats):
        for i, q in enumerate(queries):
            t0 = time.perf_counter()
            hits = index.keyword_search(q["keywords"], top_k=args.top_k)
            dt = time.perf_counter() - t0
            samples.append(dt)
            per_query[i].append(dt)
            if rep == 0:
                q["hits"] = [(h.chunk_id, h.score) for h in hits]
        log(f"timed pass {rep + 1}/{args.repeats}: p50 {pct(samples, 50) * 1e3:.2f} ms")
    for q, ts in zip(queries, per_query, strict=True):
        q["latency_ms_median"] = round(statistics.median(ts) * 1e3, 3)
    indexed = summary_ms(samples)

    log("per-query stage breakdown")
    for q in queries:
        b = breakdown(index, q["keywords"], args.top_k)
        q["breakdown"] = b and {k: (round(v, 3) if isinstance(v, float) else v)
                                for k, v in b.items()}

    # brute-force subset: first query of each category, then more in order
    picks: list[int] = []
    for cat, _, _ in CATEGORIES:
        picks.append(next(i for i, q in enumerate(queries) if q["category"] == cat))
    for i in range(len(queries)):
        if len(picks) >= args.brute:
            break
        if i not in picks:
            picks.append(i)
    picks = picks[: args.brute]
    log("loading all (chunk_id, text) pairs for brute force")
    t0 = time.perf_counter()
    corpus = list(index.store.db.execute("SELECT chunk_id, text FROM chunks"))  # type: ignore[attr-defined]
    load_s = time.perf_counter() - t0
    corpus_chars = sum(len(t) for _, t in corpus)
    log(f"loaded {len(corpus):,} chunks ({corpus_chars / 1e6:.0f} M chars) in {load_s:.1f} s")
    brute_rows = []
    mismatches = 0
    for i in picks:
        q = queries[i]
        t0 = time.perf_counter()
        expected = kw.brute_force(corpus, q["keywords"], args.top_k)
        bt = time.perf_counter() - t0
        got = [tuple(h) for h in q["hits"]]
        ok = got == [tuple(e) for e in expected]
        mismatches += 0 if ok else 1
        brute_rows.append({"query": i, "keywords": q["keywords"], "brute_s": round(bt, 3),
                           "indexed_ms": q["latency_ms_median"], "equal": ok,
                           "expected": expected, "got": got})
        log(f"brute {q['keywords']}: {bt:.2f} s, equal={ok}")
    brute_p50 = pct([r["brute_s"] for r in brute_rows], 50)
    sub_indexed_p50 = pct([r["indexed_ms"] / 1e3 for r in brute_rows], 50)

    cats = {}
    for cat, _, desc in CATEGORIES:
        qs = [q for q in queries if q["category"] == cat]
        cats[cat] = {"description": desc, "n": len(qs),
                     "p50_ms": round(pct([q["latency_ms_median"] for q in qs], 50), 3),
                     "max_ms": round(max(q["latency_ms_median"] for q in qs), 3),
                     "chunks_containing_median": pct(
                         [q["chunks_containing_a_keyword"] for q in qs], 50)}
    cand = [q["chunks_containing_a_keyword"] for q in queries]
    bds = [q["breakdown"] for q in queries if q["breakdown"]]
    bd_sum = None
    if bds:
        bd_sum = {k: round(sum(b[k] for b in bds), 1)
                  for k in ("postings_ms", "rescore_ms", "top_ids_ms", "hits_ms", "total_ms")}
        bd_sum["postings_docs"] = sum(b["postings_docs"] for b in bds)
        bd_sum["rescored_chunks"] = sum(b["rescored_chunks"] for b in bds)
    speedup = brute_p50 / indexed["p50_ms"] * 1e3 if indexed["p50_ms"] else None
    facts["loadavg_end"] = os.getloadavg()
    result = {
        "benchmark": "keyword", "command": command_line(), "machine": facts,
        "store_fingerprint": source_fingerprint(),
        "index": str(index_path), "index_reused": reused, "build": build,
        "stats": {"documents": stats.documents, "chunks": stats.chunks,
                  "sentences": stats.sentences},
        "top_k": args.top_k, "repeats": args.repeats,
        "indexed": indexed, "by_category": cats,
        "chunks_containing_a_keyword": {
            "min": min(cand), "p50": pct(cand, 50), "p95": pct(cand, 95), "max": max(cand),
            "mean": round(statistics.fmean(cand), 1)},
        "breakdown_sum_ms": bd_sum,
        "brute_force": {"corpus_load_s": round(load_s, 2), "corpus_chars": corpus_chars,
                        "n": len(brute_rows), "p50_s": round(brute_p50, 3),
                        "indexed_p50_ms_same_queries": round(sub_indexed_p50 * 1e3, 3),
                        "mismatches": mismatches, "rows": brute_rows},
        "speedup_p50_brute_over_p50_indexed": round(speedup, 1) if speedup else None,
        "speedup_same_subset": round(brute_p50 / sub_indexed_p50, 1) if sub_indexed_p50 else None,
        "targets": {"indexed_p50_le_20ms": indexed["p50_ms"] <= 20,
                    "speedup_ge_100x": bool(speedup and speedup >= 100),
                    "exact_on_subset": mismatches == 0},
        "queries": queries,
    }
    write_json(args.out, result)
    print(report(result))
    log(f"wrote {args.out}")


def report(r: dict[str, Any]) -> str:
    b, ix, bf = r["build"], r["indexed"], r["brute_force"]
    c = r["chunks_containing_a_keyword"]
    lines = [
        "## keyword_search at scale", "",
        f"- Command: `{r['command']}`",
        machine_md(r["machine"]),
        f"- Index: `{r['index']}` ({'reused from cache' if r['index_reused'] else 'built now'}): "
        f"{r['stats']['chunks']:,} chunks, {r['stats']['sentences']:,} sentences; "
        f"{b['tokens_per_chunk_mean']} o200k tokens/chunk (min {b['tokens_per_chunk_min']}, "
        f"max {b['tokens_per_chunk_max']}), {b['chars_per_chunk_mean']:.0f} chars/chunk, "
        f"{b['index_bytes_on_disk'] / 2**30:.2f} GiB on disk",
        f"- Build: {b['seconds_wall_total']} s wall (store.write {b['seconds_store_write']} s "
        f"= {b['store_write_chunks_per_s']} chunks/s, finish_build {b['seconds_finish_build']} s;"
        f" text generated and cut by chunk_document in {b['generator_workers']} worker "
        "processes). Sentence vectors are random unit float32 (dim 384), not model "
        "embeddings: keyword search never reads them.",
        f"- Queries: {len(r['queries'])} fixed-seed agent-style queries, top_k={r['top_k']}, "
        f"warm cache, 1 warm-up pass + {r['repeats']} timed passes", "",
        md_table(["measure", "value"], [
            ["indexed keyword_search p50", f"{ix['p50_ms']:.2f} ms"],
            ["indexed keyword_search p95", f"{ix['p95_ms']:.2f} ms"],
            ["indexed keyword_search mean", f"{ix['mean_ms']:.2f} ms"],
            [f"brute_force p50 ({bf['n']} queries)", f"{bf['p50_s']:.3f} s"],
            ["speed-up p50 brute / p50 indexed", f"{r['speedup_p50_brute_over_p50_indexed']}×"],
            ["speed-up on the brute-force subset only (p50 / p50)",
             f"{r['speedup_same_subset']}×"],
            ["exact (ids + scores) on brute-force subset",
             f"{bf['n'] - bf['mismatches']}/{bf['n']} equal"],
            ["chunks containing a keyword, p50 / p95 / max",
             f"{c['p50']:.0f} / {c['p95']:.0f} / {c['max']:,}"],
        ]), "",
        "By query category (latency = per-query median of the timed passes):", "",
        md_table(["category", "n", "p50 ms", "max ms", "median chunks containing", "what"],
                 [[k, v["n"], f"{v['p50_ms']:.2f}", f"{v['max_ms']:.2f}",
                   f"{v['chunks_containing_median']:.0f}", v["description"]]
                  for k, v in r["by_category"].items()]), "",
    ]
    s = r["breakdown_sum_ms"]
    if s:
        lines += [
            "Where the time goes (one instrumented run per query, summed over all queries):",
            "",
            md_table(["stage", "total ms"], [
                [f"single-token keywords counted from FTS5 postings ({s['postings_docs']:,} "
                 "chunk rows)", s["postings_ms"]],
                [f"phrases etc.: FTS5 candidates + text fetch + exact count "
                 f"({s['rescored_chunks']:,} chunks)", s["rescore_ms"]],
                ["chunk ids of top-k contenders", s["top_ids_ms"]],
                ["top-k chunks, titles, snippets", s["hits_ms"]],
                ["total", s["total_ms"]],
            ]), "",
        ]
    t = r["targets"]
    lines.append(
        f"Targets: indexed p50 ≤ 20 ms: {'MET' if t['indexed_p50_le_20ms'] else 'MISSED'}; "
        f"≥ 100× brute force: {'MET' if t['speedup_ge_100x'] else 'MISSED'}; "
        f"exact: {'MET' if t['exact_on_subset'] else 'MISSED'}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
