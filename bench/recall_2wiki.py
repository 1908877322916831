# ruff: noqa: E402
"""LLM-free retrieval recall on 2WikiMultihopQA, plus a keyword-exactness check.

Opens the 2Wiki dev index (the FULL corpus.json with the bundled MiniLM:
``_common.dev_index("2wiki")``, built on first use and cached) and, for each question in
questions.json, computes
Recall@k of the gold passages (``supporting_passage_ids``) by doc_id for

(a) Sleuth: ``Index.semantic_search(question, top_k=k)`` (best-sentence ranking of chunks;
    the doc_id of each hit), k = 2, 5, 10;
(b) baseline: plain passage-level dense retrieval with the same model - one vector per
    passage embedded as "title\\ntext", cosine top-k by passage.

Recall@k per question = |gold ∩ retrieved docs| / |gold|, averaged; "all gold" = share of
questions whose gold passages are all retrieved.

(c) exactness: 50 fixed-seed keyword queries built from question words and entity names;
``Index.keyword_search(..., top_k=10)`` must equal ``brute_force`` over the index's chunks
(ids and scores).

Run: python bench/recall_2wiki.py [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
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
    wiki_corpus,
    wiki_questions,
    write_json,
)

from sleuth import Index
from sleuth.store.keyword import brute_force

KS = (2, 5, 10)
STOP = set(
    [
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "where",
        "when",
        "why",
        "how",
        "is",
        "was",
        "are",
        "were",
        "the",
        "a",
        "an",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "and",
        "or",
        "did",
        "does",
        "do",
        "film",
        "song",
        "album",
        "book",
        "director",
        "performer",
        "father",
        "mother",
        "wife",
        "husband",
        "born",
        "died",
        "place",
        "date",
        "first",
        "same",
        "country",
        "older",
        "younger",
        "earlier",
        "later",
        "than",
        "both",
        "that",
        "this",
        "these",
        "those",
        "has",
        "have",
        "had",
        "be",
        "been",
        "it",
        "its",
        "as",
        "his",
        "her",
        "their",
        "he",
        "she",
        "they",
    ]
)


def recall(gold: list[str], retrieved: list[str]) -> float:
    g = set(gold)
    return len(g & set(retrieved)) / len(g) if g else float("nan")


def passage_vectors(
    embedder: Any, corpus: list[dict[str, Any]], cache: Path, source: Path
) -> tuple[np.ndarray, float, bool]:
    """One unit vector per passage ("title\\ntext"), cached by model name and corpus size."""
    meta = cache.with_suffix(".json")
    key = {
        "model": embedder.name,
        "n": len(corpus),
        "corpus": str(source),
        "input": "title\\ntext",
    }
    if cache.is_file() and meta.is_file() and json.loads(meta.read_text()).get("key") == key:
        info = json.loads(meta.read_text())
        return np.load(cache), info["seconds"], True
    texts = [f"{p['title']}\n{p['text']}" for p in corpus]
    t0 = time.perf_counter()
    m = embedder.embed(texts)
    seconds = time.perf_counter() - t0
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, m)
    meta.write_text(json.dumps({"key": key, "seconds": seconds}))
    return m, seconds, False


def keyword_queries(questions: list[dict[str, Any]], n: int, seed: int) -> list[list[str]]:
    """Entity names (capitalised runs) and content words from the questions."""
    rng = random.Random(seed)
    out: list[list[str]] = []
    while len(out) < n:
        q = rng.choice(questions)["question"]
        ents = [
            m.strip()
            for m in re.findall(r"(?:[A-Z][\w'.-]*\s?){1,4}", q)
            if m.strip().split()[0].lower() not in STOP
        ]
        words = [
            w for w in re.findall(r"[A-Za-z][\w'-]+", q) if w.lower() not in STOP and len(w) > 3
        ]
        ents = [re.sub(r"['’]s$", "", e) for e in ents]
        words = [re.sub(r"['’]s$", "", w) for w in words]
        kind = rng.random()
        if kind < 0.4 and ents:
            pick = [rng.choice(ents)]
        elif kind < 0.7 and words:
            pick = rng.sample(words, min(len(words), rng.randint(1, 3)))
        elif ents and words:
            pick = [rng.choice(ents), rng.choice(words)]
        else:
            continue
        out.append(list(dict.fromkeys(pick)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--index", type=Path, default=None,
                    help="an index of the 2Wiki corpus [the 2Wiki dev index]")
    ap.add_argument("--limit", type=int, default=None, help="first N questions only")
    ap.add_argument("--keyword-queries", type=int, default=50)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", type=Path, default=OUT_DIR / "recall_2wiki.json")
    add_data_option(ap)
    args = ap.parse_args()
    data = data_root(args.data)

    facts = machine_facts()
    log(f"machine: {facts['cpu_model']}, {facts['cores']} cores, {facts['ram_gib']} GiB")
    embedder, load_s = load_minilm()
    started = time.time()
    args.index = resolve_index(args.index, "2wiki", data)
    meta = dev_index_meta(args.index)
    reused = meta.get("state") == "complete" and meta.get("finished", 0) < started
    corpus = json.loads(wiki_corpus(data).read_text(encoding="utf-8"))
    questions = json.loads(wiki_questions(data).read_text(encoding="utf-8"))
    if args.limit:
        questions = questions[: args.limit]
    ids = [p["id"] for p in corpus]

    log("passage-level baseline vectors")
    P, p_seconds, p_cached = passage_vectors(
        embedder, corpus, CACHE_DIR / "2wiki-passages-minilm.npy", wiki_corpus(data)
    )

    index = Index.open(args.index, embedder=embedder)
    stats = index.stats()
    seconds = meta.get("seconds")
    build = {"seconds": seconds, "sentences_per_s":
             round(stats.sentences / seconds, 1) if seconds else None}
    rows = []
    t_sleuth = t_base = 0.0
    log(f"scoring {len(questions)} questions")
    for q in questions:
        gold = q["supporting_passage_ids"]
        row: dict[str, Any] = {"id": q["id"], "type": q.get("type"), "gold": gold}
        t0 = time.perf_counter()
        for k in KS:
            hits = index.semantic_search(q["question"], top_k=k)
            docs = list(dict.fromkeys(h.doc_id for h in hits))
            row[f"sleuth@{k}"] = recall(gold, docs)
            row[f"sleuth_docs@{k}"] = docs
        t1 = time.perf_counter()
        v = embedder.embed([q["question"]])[0]
        order = np.argsort(-(P @ v), kind="stable")[: max(KS)]
        t2 = time.perf_counter()
        for k in KS:
            row[f"dense@{k}"] = recall(gold, [ids[i] for i in order[:k]])
        row["dense_docs@10"] = [ids[i] for i in order[:10]]
        t_sleuth += t1 - t0
        t_base += t2 - t1
        rows.append(row)

    def mean(key: str, subset: list[dict[str, Any]] = rows) -> float:
        return round(statistics.fmean(r[key] for r in subset), 4)

    def all_gold(key: str, subset: list[dict[str, Any]] = rows) -> float:
        return round(statistics.fmean(1.0 if r[key] == 1.0 else 0.0 for r in subset), 4)

    summary = {
        m: {f"recall@{k}": mean(f"{m}@{k}") for k in KS}
        | {f"all_gold@{k}": all_gold(f"{m}@{k}") for k in KS}
        for m in ("sleuth", "dense")
    }
    by_type = {}
    for t in sorted({r["type"] for r in rows}):
        sub = [r for r in rows if r["type"] == t]
        by_type[t] = {
            "n": len(sub),
            "sleuth@5": mean("sleuth@5", sub),
            "dense@5": mean("dense@5", sub),
        }
    wins = sum(r["sleuth@5"] > r["dense@5"] for r in rows)
    losses = sum(r["sleuth@5"] < r["dense@5"] for r in rows)

    log("keyword exactness check")
    chunks = [(c.chunk_id, c.text) for c in index.store.iter_chunks()]
    kq = keyword_queries(questions, args.keyword_queries, args.seed)
    kw_rows, kw_times = [], []
    for keywords in kq:
        t0 = time.perf_counter()
        got = [(h.chunk_id, h.score) for h in index.keyword_search(keywords, top_k=10)]
        kw_times.append(time.perf_counter() - t0)
        expected = brute_force(chunks, keywords, 10)
        kw_rows.append({"keywords": keywords, "equal": got == expected, "hits": len(got)})
    kw_equal = sum(r["equal"] for r in kw_rows)
    index.close()

    result = {
        "benchmark": "recall_2wiki",
        "command": command_line(),
        "machine": facts,
        "index": str(args.index),
        "index_reused": reused,
        "index_build": build,
        "model_load_s": round(load_s, 2),
        "stats": {
            "documents": stats.documents,
            "chunks": stats.chunks,
            "sentences": stats.sentences,
        },
        "questions": len(rows),
        "summary": summary,
        "by_type": by_type,
        "sleuth_vs_dense_at5": {
            "better": wins,
            "worse": losses,
            "equal": len(rows) - wins - losses,
        },
        "baseline_passage_embedding_s": round(p_seconds, 1),
        "baseline_vectors_cached": p_cached,
        "query_seconds": {
            "sleuth_3_searches_total": round(t_sleuth, 1),
            "dense_total": round(t_base, 1),
        },
        "keyword_exactness": {
            "queries": len(kw_rows),
            "equal": kw_equal,
            "latency": summary_ms(kw_times),
            "rows": kw_rows,
        },
        "target_sleuth_recall5_ge_dense": summary["sleuth"]["recall@5"]
        >= summary["dense"]["recall@5"],
        "per_question": rows,
    }
    facts["loadavg_end"] = os.getloadavg()
    write_json(args.out, result)
    print(report(result))
    log(f"wrote {args.out}")


def report(r: dict[str, Any]) -> str:
    s, d = r["summary"]["sleuth"], r["summary"]["dense"]
    table = [
        [
            f"Recall@{k}",
            f"{s[f'recall@{k}']:.4f}",
            f"{d[f'recall@{k}']:.4f}",
            f"{s[f'recall@{k}'] - d[f'recall@{k}']:+.4f}",
        ]
        for k in KS
    ]
    table += [
        [
            f"all gold found @{k}",
            f"{s[f'all_gold@{k}']:.4f}",
            f"{d[f'all_gold@{k}']:.4f}",
            f"{s[f'all_gold@{k}'] - d[f'all_gold@{k}']:+.4f}",
        ]
        for k in KS
    ]
    b, ke = r["index_build"], r["keyword_exactness"]
    w = r["sleuth_vs_dense_at5"]
    return "\n".join(
        [
            "## Retrieval recall on 2WikiMultihopQA (no LLM)",
            "",
            f"- Command: `{r['command']}`",
            machine_md(r["machine"]),
            f"- Index `{r['index']}` ({'reused from cache' if r['index_reused'] else 'built now'}"
            f"): full corpus, {r['stats']['documents']:,} passages -> {r['stats']['chunks']:,} "
            f"chunks, {r['stats']['sentences']:,} sentence vectors, bundled MiniLM; build "
            f"{b['seconds']} s ({b['sentences_per_s']} sentences/s)",
            f"- Questions: {r['questions']} (dev split); gold = supporting_passage_ids; recall by "
            "doc_id",
            "",
            md_table(
                [
                    "metric",
                    "Sleuth semantic_search (best sentence)",
                    "passage-level dense (same MiniLM)",
                    "difference",
                ],
                table,
            ),
            "",
            f"Per question at k=5: Sleuth better on {w['better']}, worse on {w['worse']}, equal on "
            f"{w['equal']}.",
            "",
            md_table(
                ["question type", "n", "Sleuth R@5", "dense R@5"],
                [[t, v["n"], v["sleuth@5"], v["dense@5"]] for t, v in r["by_type"].items()],
            ),
            "",
            f"Keyword exactness on the real corpus: {ke['equal']}/{ke['queries']} queries equal "
            f"brute force (ids and scores, top_k=10); keyword_search p50 "
            f"{ke['latency']['p50_ms']:.2f} ms over {r['stats']['chunks']:,} chunks.",
            "",
            "Target Sleuth Recall@5 ≥ dense baseline: "
            + ("MET" if r["target_sleuth_recall5_ge_dense"] else "MISSED"),
        ]
    )


if __name__ == "__main__":
    main()
