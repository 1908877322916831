"""keyword_search at scale: indexed (tantivy candidates + exact rescoring) vs brute force.

Builds (or reuses) an embedded Sleuth index of N synthetic ~1,000-token chunks (see
bench/_synth.py: Zipf English-like text, real ``chunk_document`` chunking, random unit
sentence vectors instead of model embeddings, written with ``LocalStore.write``), then:

* times ``Index.keyword_search(keywords, top_k)`` over a fixed-seed set of agent-style
  queries (warm: one warm-up pass, then ``--repeats`` timed passes);
* times ``sleuth.store.keyword.brute_force`` over all (chunk_id, text) pairs held in memory
  on a subset of queries, and checks the indexed top-k equals it exactly (ids and scores);
* reports candidate-set sizes and a per-query time breakdown (tantivy candidates /
  SQLite fetch + exact rescoring / the rest).

Run: python bench/keyword.py [--n 100000] [--rebuild]
"""

# This file is named like the stdlib module ``keyword`` (imported by collections,
# dataclasses, ...). A script's folder is sys.path[0]; move it to the end so the stdlib wins.
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0] or ".") == _HERE:
    sys.path.append(sys.path.pop(0))

import argparse  # noqa: E402
import math  # noqa: E402
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
    summary_ms,
    write_json,
)
from _synth import Vocab, ensure_index  # noqa: E402

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


def breakdown(index: Index, keywords: list[str], top_k: int) -> dict[str, float]:
    """One instrumented run of LocalStore.keyword_search's stages (same code path)."""
    store: Any = index.store
    t0 = time.perf_counter()
    parsed = kw.parse_keywords(keywords, "word")
    cands = store._keyword.candidates(parsed)
    t1 = time.perf_counter()
    pairs = list(store._candidate_texts(cands))
    t2 = time.perf_counter()
    lowered = [(cid, text.lower()) for cid, text in pairs]
    t3 = time.perf_counter()
    scored = [(cid, kw.score_text(low, parsed)) for cid, low in lowered]
    t4 = time.perf_counter()
    ranked = kw.rank(scored, top_k)
    # The same scores with a literal-first pattern (what a fix would do; see the report).
    alt = [(k, re.compile(rf"{re.escape(k.text)}(?<!\w{re.escape(k.text)})(?!\w)"))
           for k in parsed]
    t5 = time.perf_counter()
    alt_scored = [(cid, float(sum(sum(1 for _ in p.finditer(low)) * k.weight
                                  for k, p in alt))) for cid, low in lowered]
    t6 = time.perf_counter()
    same = alt_scored == scored
    t7 = time.perf_counter()
    chunks = store.get_chunks([cid for cid, _ in ranked])
    for cid, _ in ranked:
        kw.matching_sentences([s.text for s in chunks[cid].sentences], parsed)
    t8 = time.perf_counter()
    return {
        "candidates": len(pairs),
        "tantivy_candidates_ms": (t1 - t0) * 1e3,
        "sqlite_fetch_ms": (t2 - t1) * 1e3,
        "lower_ms": (t3 - t2) * 1e3,
        "regex_count_ms": (t4 - t3) * 1e3,
        "finalize_top_k_ms": (t8 - t7) * 1e3,
        "alt_literal_first_regex_ms": (t6 - t5) * 1e3,
        "alt_scores_identical": same,
    }


def what_if_literal_first(index: Index, queries: list[dict[str, Any]], top_k: int,
                          repeats: int, corpus: list[tuple[str, str]],
                          picks: list[int]) -> dict[str, Any]:
    """End-to-end latency if parse_keywords compiled ``k(?<!\\wk)(?!\\w)`` instead of
    ``(?<!\\w)k(?!\\w)`` (same matches; the literal comes first so ``re`` can use its fast
    literal search). Patched in this process only, src/ is unchanged; results are checked
    to be identical to the unpatched run."""
    original = kw.parse_keywords

    def patched(keywords: Any, mode: kw.KeywordMode = "word") -> list[kw.Keyword]:
        out = []
        for k in original(keywords, mode):
            if not k.substring:
                e = re.escape(k.text)
                k = kw.Keyword(k.text, k.weight, False, re.compile(rf"{e}(?<!\w{e})(?!\w)"))
            out.append(k)
        return out

    kw.parse_keywords = patched  # type: ignore[assignment]
    try:
        for q in queries:
            index.keyword_search(q["keywords"], top_k=top_k)
        samples, same = [], 0
        for rep in range(repeats):
            for q in queries:
                t0 = time.perf_counter()
                hits = index.keyword_search(q["keywords"], top_k=top_k)
                samples.append(time.perf_counter() - t0)
                if rep == 0:
                    same += [(h.chunk_id, h.score) for h in hits] == [tuple(h) for h in q["hits"]]
        brute, brute_same = [], 0
        for i in picks:
            t0 = time.perf_counter()
            expected = kw.brute_force(corpus, queries[i]["keywords"], top_k)
            brute.append(time.perf_counter() - t0)
            brute_same += [tuple(e) for e in expected] == [tuple(h) for h in queries[i]["hits"]]
    finally:
        kw.parse_keywords = original  # type: ignore[assignment]
    return {**summary_ms(samples), "identical_results": same,
            "brute_p50_s": round(pct(brute, 50), 3), "brute_identical": brute_same,
            "brute_n": len(brute)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000, help="synthetic chunks (documents)")
    ap.add_argument("--seed", type=int, default=20240601, help="corpus seed")
    ap.add_argument("--query-seed", type=int, default=7, help="query-set seed")
    ap.add_argument("--index", type=Path, default=None,
                    help="index folder (default /tmp/sleuth-bench/kw-<n/1000>k)")
    ap.add_argument("--rebuild", action="store_true", help="rebuild even if cached")
    ap.add_argument("--repeats", type=int, default=3, help="timed passes over the queries")
    ap.add_argument("--brute", type=int, default=8, help="queries also run by brute force")
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--out", type=Path, default=OUT_DIR / "keyword.json")
    ap.add_argument("--no-what-if", action="store_true",
                    help="skip the what-if pass with a literal-first count pattern")
    args = ap.parse_args()
    index_path = args.index or CACHE_DIR / f"kw-{args.n // 1000}k"

    facts = machine_facts()
    log(f"machine: {facts['cpu_model']}, {facts['cores']} cores, {facts['ram_gib']} GiB")
    build, reused = ensure_index(index_path, args.n, args.seed, args.rebuild, log=log)
    log(f"index {'reused' if reused else 'built'}: {build}")

    index = Index.open(index_path)
    stats = index.stats()
    vocab = Vocab.build(args.seed)
    queries = make_queries(index, vocab, args.query_seed, args.n)

    # candidate-set sizes (tantivy stage only)
    for q in queries:
        c = index.store._keyword.candidates(kw.parse_keywords(q["keywords"]))  # type: ignore[attr-defined]
        q["candidates"] = stats.chunks if c is None else len(c)

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
        log(f"timed pass {rep + 1}/{args.repeats}: p50 {pct(samples, 50) * 1e3:.1f} ms")
    for q, ts in zip(queries, per_query, strict=True):
        q["latency_ms_median"] = round(statistics.median(ts) * 1e3, 3)
    indexed = summary_ms(samples)

    log("per-query stage breakdown")
    for q in queries:
        q["breakdown_ms"] = {k: (round(v, 3) if isinstance(v, float) else v)
                             for k, v in breakdown(index, q["keywords"], args.top_k).items()}

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
    whatif = None
    if not args.no_what_if:
        whatif = what_if_literal_first(index, queries, args.top_k, args.repeats,
                                       corpus, picks)
        log(f"what-if literal-first pattern: p50 {whatif['p50_ms']:.1f} ms, "
            f"identical results {whatif['identical_results']}/{len(queries)}, "
            f"brute force p50 {whatif['brute_p50_s']:.2f} s")
    sub_indexed_p50 = pct([r["indexed_ms"] / 1e3 for r in brute_rows], 50)

    cats = {}
    for cat, _, desc in CATEGORIES:
        qs = [q for q in queries if q["category"] == cat]
        cats[cat] = {"description": desc, "n": len(qs),
                     "p50_ms": round(pct([q["latency_ms_median"] for q in qs], 50), 3),
                     "max_ms": round(max(q["latency_ms_median"] for q in qs), 3),
                     "candidates_median": pct([q["candidates"] for q in qs], 50)}
    cand = [q["candidates"] for q in queries]
    bd_keys = ["tantivy_candidates_ms", "sqlite_fetch_ms", "lower_ms", "regex_count_ms",
               "finalize_top_k_ms", "alt_literal_first_regex_ms"]
    bd_sum = {k: round(sum(q["breakdown_ms"][k] for q in queries), 1) for k in bd_keys}
    total_cands = sum(q["breakdown_ms"]["candidates"] for q in queries)
    per_cand_us = {
        "sqlite_fetch_us": round(bd_sum["sqlite_fetch_ms"] * 1e3 / max(total_cands, 1), 2),
        "lower_us": round(bd_sum["lower_ms"] * 1e3 / max(total_cands, 1), 2),
        "regex_count_us": round(bd_sum["regex_count_ms"] * 1e3 / max(total_cands, 1), 2),
        "alt_literal_first_regex_us": round(
            bd_sum["alt_literal_first_regex_ms"] * 1e3 / max(total_cands, 1), 2),
    }
    alt_identical = all(q["breakdown_ms"]["alt_scores_identical"] for q in queries)
    speedup = brute_p50 / indexed["p50_ms"] * 1e3 if indexed["p50_ms"] else None
    result = {
        "benchmark": "keyword", "command": command_line(), "machine": facts,
        "index": str(index_path), "index_reused": reused, "build": build,
        "stats": {"documents": stats.documents, "chunks": stats.chunks,
                  "sentences": stats.sentences},
        "top_k": args.top_k, "repeats": args.repeats,
        "indexed": indexed, "by_category": cats,
        "candidates": {"min": min(cand), "p50": pct(cand, 50), "p95": pct(cand, 95),
                       "max": max(cand), "mean": round(statistics.fmean(cand), 1)},
        "breakdown_sum_ms": bd_sum, "breakdown_per_candidate": per_cand_us,
        "alt_literal_first_scores_identical": alt_identical,
        "what_if_literal_first_end_to_end": whatif,
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
    lines = [
        "## keyword_search at scale", "",
        f"- Command: `{r['command']}`",
        machine_md(r["machine"]),
        f"- Index: `{r['index']}` ({'reused from cache' if r['index_reused'] else 'built now'}): "
        f"{r['stats']['chunks']:,} chunks, {r['stats']['sentences']:,} sentences; "
        f"{b['tokens_per_chunk_mean']} o200k tokens/chunk (min {b['tokens_per_chunk_min']}, "
        f"max {b['tokens_per_chunk_max']}), {b['chars_per_chunk_mean']:.0f} chars/chunk, "
        f"{b['index_bytes_on_disk'] / 2**30:.2f} GiB on disk",
        f"- Build: {b['seconds_wall_total']} s wall (store.write {b['seconds_store_write']} s, "
        f"finish_build {b['seconds_finish_build']} s; text generated + chunked with "
        f"chunk_document by {b['generator_workers']} worker processes). Sentence vectors are "
        "random unit float32 (dim 384), not model embeddings: keyword search never reads them.",
        f"- Queries: {len(r['queries'])} fixed-seed agent-style queries, top_k={r['top_k']}, "
        f"warm cache, 1 warm-up pass + {r['repeats']} timed passes", "",
        md_table(["measure", "value"], [
            ["indexed keyword_search p50", f"{ix['p50_ms']:.1f} ms"],
            ["indexed keyword_search p95", f"{ix['p95_ms']:.1f} ms"],
            ["indexed keyword_search mean", f"{ix['mean_ms']:.1f} ms"],
            [f"brute force p50 ({bf['n']} queries)", f"{bf['p50_s']:.2f} s"],
            ["speed-up p50 brute / p50 indexed", f"{r['speedup_p50_brute_over_p50_indexed']}×"],
            ["speed-up on the brute-force subset only (p50/p50)",
             f"{r['speedup_same_subset']}×"],
            ["exact (ids + scores) on brute-force subset",
             f"{bf['n'] - bf['mismatches']}/{bf['n']} equal"],
            ["candidate set size p50 / p95 / max",
             f"{r['candidates']['p50']:.0f} / {r['candidates']['p95']:.0f} / "
             f"{r['candidates']['max']:,}"],
        ]), "",
        "By query category (latency = per-query median of the timed passes):", "",
        md_table(["category", "n", "p50 ms", "max ms", "median candidates", "what"],
                 [[c, v["n"], f"{v['p50_ms']:.1f}", f"{v['max_ms']:.1f}",
                   f"{v['candidates_median']:.0f}", v["description"]]
                  for c, v in r["by_category"].items()]), "",
        "Where the time goes (all queries, one instrumented run each, per candidate chunk):",
        "",
        md_table(["stage", "total ms", "µs / candidate"], [
            ["tantivy candidates", r["breakdown_sum_ms"]["tantivy_candidates_ms"], ""],
            ["SQLite fetch of candidate texts", r["breakdown_sum_ms"]["sqlite_fetch_ms"],
             r["breakdown_per_candidate"]["sqlite_fetch_us"]],
            ["text.lower()", r["breakdown_sum_ms"]["lower_ms"],
             r["breakdown_per_candidate"]["lower_us"]],
            ["exact count regex `(?<!\\w)k(?!\\w)` (current)",
             r["breakdown_sum_ms"]["regex_count_ms"],
             r["breakdown_per_candidate"]["regex_count_us"]],
            ["top-k chunks + snippets", r["breakdown_sum_ms"]["finalize_top_k_ms"], ""],
            ["(what-if) literal-first regex `k(?<!\\wk)(?!\\w)`",
             r["breakdown_sum_ms"]["alt_literal_first_regex_ms"],
             r["breakdown_per_candidate"]["alt_literal_first_regex_us"]],
        ]), "",
        f"What-if scores identical to the current pattern on every candidate: "
        f"{r['alt_literal_first_scores_identical']}", "",
        *(_what_if_lines(r["what_if_literal_first_end_to_end"], r["indexed"],
                         len(r["queries"]), r["brute_force"]["p50_s"])),
        "Targets: indexed p50 ≤ 20 ms: "
        f"{'MET' if r['targets']['indexed_p50_le_20ms'] else 'MISSED'}"
        f"; ≥ 100× brute force: {'MET' if r['targets']['speedup_ge_100x'] else 'MISSED'}; "
        f"exact: {'MET' if r['targets']['exact_on_subset'] else 'MISSED'}",
    ]
    return "\n".join(lines)


def _what_if_lines(w: dict[str, Any] | None, ix: dict[str, Any], n: int,
                   brute_p50_s: float) -> list[str]:
    if not w:
        return []
    return [
        "What-if (bench-only monkeypatch of `parse_keywords`, src unchanged): the same "
        "queries with the literal-first word pattern:", "",
        md_table(["measure", "current src", "literal-first pattern"], [
            ["p50", f"{ix['p50_ms']:.1f} ms", f"{w['p50_ms']:.1f} ms"],
            ["p95", f"{ix['p95_ms']:.1f} ms", f"{w['p95_ms']:.1f} ms"],
            ["mean", f"{ix['mean_ms']:.1f} ms", f"{w['mean_ms']:.1f} ms"],
            [f"brute_force p50 ({w['brute_n']} queries, same scorer)", f"{brute_p50_s:.2f} s",
             f"{w['brute_p50_s']:.2f} s"],
            ["speed-up p50 brute / p50 indexed (same scorer)",
             f"{brute_p50_s * 1e3 / ix['p50_ms']:.0f}×",
             f"{w['brute_p50_s'] * 1e3 / w['p50_ms']:.0f}×"],
            ["results identical to current (indexed; brute force)", "",
             f"{w['identical_results']}/{n}; {w['brute_identical']}/{w['brute_n']}"],
        ]), "",
    ]


if __name__ == "__main__":
    main()
