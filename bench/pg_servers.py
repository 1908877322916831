# ruff: noqa: E402
"""Many servers, one database: two ``sleuth serve http`` processes on a hot standby behind
one address, beside one server alone, and an approximate-index rebuild on the primary
picked up by both without a restart.

A primary and a streaming standby (:mod:`sleuth.testing.replica`) hold the scale bench's
corpus (``--docs`` documents of its first shard, bench/scale.py), indexed on the primary by
``sleuth index`` with the approximate index on (``vectors.ann=on``, ``--nlist`` lists).
Two servers read the standby (sessions to the primary), each with its default workers; a
round-robin TCP proxy of this file (asyncio, standard library: each new connection goes to
the next server) gives them one address. ``--clients`` (50) clients, each with an API key
of its own (the default per-key limits) and one keep-alive connection, alternate
``keyword_search`` and ``semantic_search`` (queries cut from the corpus as the scale bench
does, ``top_k`` 5) through ``/v1/tools/…`` for ``--seconds`` (20): requests/s, p50 / p95 /
max, errors (any answer but 200, or no answer), the resident memory (VmRSS) of each server
before and after. The same load on one server alone, directly.

Then, under the same load through the proxy, the approximate index is rebuilt on the
primary: ``sleuth index`` of ``--more`` further documents with another ``--rebuild-nlist``
(the store retrains when the list count changes) and the record (``ann``: sha256, nlist,
sentences) is read from the standby before and after; both servers keep answering (errors
counted), a semantic search on each after the change takes up the new record (the store
reloads it when its sha256 changes), and their RSS before and after is reported.

Each figure carries the machine's load average when it was taken (the machine is shared).
Writes ``bench/out/pg_servers.json`` and prints a summary.

Run (from the repository root):

    python bench/pg_servers.py --docs 3000 --clients 50 --seconds 20
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from _common import OUT_DIR, command_line, log, machine_facts, pct, write_json
from pg_replica import SCHEMA, Server, cli_env, load, sleuth
from scale import CORPUS_VERSION, Corpus, keyword_queries, semantic_queries

from sleuth.testing.replica import ReplicaSet

# -- a round-robin TCP proxy ---------------------------------------------------------------


class RoundRobinProxy:
    """Accepts on a free 127.0.0.1 port and pipes each new connection to the next backend
    in turn (a thread running its own asyncio loop)."""

    def __init__(self, backends: list[tuple[str, int]]) -> None:
        self._next = itertools.cycle(backends)
        self.counts = {port: 0 for _, port in backends}
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", self.port, backlog=512))
        self._server = server
        self._ready.set()
        self._loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, port = next(self._next)
        self.counts[port] += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._server.close)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


# -- the load ------------------------------------------------------------------------------


def make_queries(corpus: Corpus, shard: Path, n: int,
                 seed: int) -> list[tuple[str, dict[str, Any]]]:
    """Alternating keyword and semantic calls cut from the corpus (as bench/scale.py)."""
    docs = corpus.sample_docs([shard], n, seed)
    keyword = [("keyword_search", {"keywords": q["keywords"], "top_k": 5})
               for q in keyword_queries(corpus, docs, n, seed)]
    semantic = [("semantic_search", {"query": q["query"], "top_k": 5})
                for q in semantic_queries(docs, n, seed)]
    return [call for pair in zip(keyword, semantic, strict=False) for call in pair]


async def _client(url: str, key: str, calls: list[tuple[str, dict[str, Any]]], until: float,
                  times: list[float], errors: list[str], seed: int) -> None:
    rng = random.Random(seed)
    async with httpx.AsyncClient(base_url=url, timeout=30,
                                 headers={"Authorization": f"Bearer {key}"}) as client:
        i = rng.randrange(len(calls))
        while time.monotonic() < until:
            tool, body = calls[i % len(calls)]
            i += 1
            started = time.monotonic()
            try:
                answer = await client.post(f"/v1/tools/{tool}", json=body)
            except httpx.HTTPError as exc:
                errors.append(type(exc).__name__)
                continue
            if answer.status_code == 200:
                times.append(time.monotonic() - started)
            else:
                errors.append(str(answer.status_code))


def run_load(url: str, keys: list[str], calls: list[tuple[str, dict[str, Any]]],
             seconds: float) -> dict[str, Any]:
    """``len(keys)`` clients for ``seconds``: requests/s, latency, errors, load."""
    times: list[float] = []
    errors: list[str] = []
    before = load()

    async def everyone() -> None:
        until = time.monotonic() + seconds
        await asyncio.gather(*(_client(url, key, calls, until, times, errors, n)
                               for n, key in enumerate(keys)))

    started = time.monotonic()
    asyncio.run(everyone())
    took = time.monotonic() - started
    kinds: dict[str, int] = {}
    for e in errors:
        kinds[e] = kinds.get(e, 0) + 1
    return {"clients": len(keys), "seconds": round(took, 1), "ok": len(times),
            "req_per_s": round(len(times) / took, 1),
            "p50_ms": round(pct(times, 50) * 1000, 1) if times else None,
            "p95_ms": round(pct(times, 95) * 1000, 1) if times else None,
            "max_ms": round(max(times) * 1000, 1) if times else None,
            "errors": len(errors), "error_kinds": kinds, "load": [before, load()]}


def ann_record(rs: ReplicaSet) -> dict[str, Any] | None:
    """The approximate index as the standby holds it: the faiss record (``ann``), or the
    engine's index on ``sentences`` (its file node changes when it is rebuilt, its
    options hold the list count)."""
    rows = rs.standby.query(f'SELECT record FROM "{SCHEMA}".ann')
    if rows:
        record = rows[0][0] if isinstance(rows[0][0], dict) else json.loads(rows[0][0])
        return {"kind": "faiss", **{k: record.get(k) for k in (
            "sha256", "nlist", "sentences", "chunks", "bytes", "built")}}
    engine = rs.standby.query(
        "SELECT c.relname, pg_relation_filenode(c.oid)::text, c.reloptions::text, "
        "pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = "
        "c.relnamespace JOIN pg_index i ON i.indexrelid = c.oid JOIN pg_am a ON "
        "a.oid = c.relam WHERE n.nspname = %s AND a.amname IN ('ivfflat', 'hnsw')",
        (SCHEMA,))
    if engine:
        name, node, options, size = engine[0]
        return {"kind": "engine", "sha256": f"{name}@{node}", "nlist": options,
                "bytes": size}
    return None


def rebuild_under_load(rs: ReplicaSet, servers: list[Server], proxy_url: str,
                       keys: list[str], calls: list[tuple[str, dict[str, Any]]],
                       more: Path, env: dict[str, str], nlist: int) -> dict[str, Any]:
    """The approximate index rebuilt on the primary while the clients keep searching
    through the proxy; the record on the standby and the servers' RSS around it."""
    before = ann_record(rs)
    rss_before = [round(s.rss_mib(), 1) for s in servers]
    result: dict[str, Any] = {}

    def rebuild() -> None:
        time.sleep(2)
        started = time.monotonic()
        done = sleuth(["index", str(more), "--index", rs.primary.uri(SCHEMA)],
                      {**env, "SLEUTH_VECTORS__NLIST": str(nlist)})
        result["rebuild_s"] = round(time.monotonic() - started, 1)
        result["rebuild_exit"] = done.returncode
        result["rebuild_last_line"] = (done.stderr.strip().splitlines() or [""])[-1]
        result["replayed_after_s"] = round(rs.wait_replayed(60), 3)

    worker = threading.Thread(target=rebuild)
    worker.start()
    seconds = 30.0
    under = run_load(proxy_url, keys, calls, seconds)
    worker.join()
    after = ann_record(rs)
    picked: list[Any] = []
    for server in servers:  # a semantic search on each: it reloads a changed record
        with httpx.Client(base_url=server.url, timeout=60,
                          headers={"Authorization": f"Bearer {keys[0]}"}) as client:
            for tool, body in calls[1:8:2]:
                picked.append(client.post(f"/v1/tools/{tool}", json=body).status_code)
    time.sleep(1)
    return {**result, "load_during": under, "record_before": before, "record_after": after,
            "record_changed": (before or {}).get("sha256") != (after or {}).get("sha256"),
            "searches_after": picked, "rss_mib_before": rss_before,
            "rss_mib_after": [round(s.rss_mib(), 1) for s in servers], "load": load()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--more", type=int, default=1000, help="documents added by the rebuild")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--nlist", type=int, default=32)
    ap.add_argument("--rebuild-nlist", type=int, default=48)
    ap.add_argument("--out", type=Path, default=Path("/tmp/sleuth-replica"))
    ap.add_argument("--embedder", default="model2vec")
    ap.add_argument("--vector-search", choices=["engine", "faiss"], default=None,
                    help="postgres.vector_search (default: the setting's default)")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--json", type=Path, default=OUT_DIR / "pg_servers.json")
    args = ap.parse_args()
    corpus = Corpus(args.out / f"corpus-v{CORPUS_VERSION}", args.seed)
    shard = corpus.shards(args.docs)[0]
    more = _more_docs(corpus, args.out, args.docs, args.more)
    keys = [f"k-bench-client-{n:03d}" for n in range(args.clients)]
    env = {**cli_env(args.embedder, args.out / "data-home"), "SLEUTH_VECTORS__ANN": "on",
           "SLEUTH_VECTORS__NLIST": str(args.nlist)}
    if args.vector_search:
        env["SLEUTH_POSTGRES__VECTOR_SEARCH"] = args.vector_search
    serve_env = {**env, "SLEUTH_SERVE__API_KEYS": json.dumps(
        {f"client{n:03d}": key for n, key in enumerate(keys)})}
    calls = make_queries(corpus, shard, 200, args.seed)
    result: dict[str, Any] = {"command": command_line(), "machine": machine_facts(),
                              "docs": args.docs, "embedder": args.embedder,
                              "nlist": args.nlist, "vector_search": args.vector_search}
    with ReplicaSet(args.out / f"servers-{os.getpid()}") as rs:
        built = sleuth(["index", str(shard), "--index", rs.primary.uri(SCHEMA)], env)
        if built.returncode:
            raise SystemExit(f"sleuth index failed: {built.stderr[-2000:]}")
        rs.wait_replayed(60)
        result["record"] = ann_record(rs)
        servers = [Server(rs.standby.uri(SCHEMA), serve_env, keys[0],
                          SLEUTH_SESSIONS_STORE=rs.primary.uri(SCHEMA)) for _ in range(2)]
        proxy = RoundRobinProxy([("127.0.0.1", s.port) for s in servers])
        try:
            for server in servers:  # warm: the embedder and the approximate index
                run_load(server.url, keys[:2], calls, 3)
            result["rss_mib_idle"] = [round(s.rss_mib(), 1) for s in servers]
            log(f"one server alone, {args.clients} clients (load {load()})")
            result["one_server"] = run_load(servers[0].url, keys, calls, args.seconds)
            log(f"  {result['one_server']}")
            log(f"two servers behind the proxy (load {load()})")
            result["two_servers"] = run_load(proxy.url, keys, calls, args.seconds)
            result["two_servers"]["connections_per_server"] = dict(proxy.counts)
            log(f"  {result['two_servers']}")
            result["rss_mib_after_load"] = [round(s.rss_mib(), 1) for s in servers]
            log(f"rebuild of the approximate index on the primary (load {load()})")
            result["rebuild"] = rebuild_under_load(rs, servers, proxy.url, keys, calls, more,
                                                   env, args.rebuild_nlist)
            log(f"  {result['rebuild']}")
        finally:
            proxy.close()
            for server in servers:
                server.close()
    write_json(args.json, result)
    print(_summary(result))


def _more_docs(corpus: Corpus, out: Path, docs: int, more: int) -> Path:
    """``more`` documents of the corpus after the first ``docs`` (a file of their own)."""
    path = out / f"more-{docs}-{more}.jsonl"
    if not path.is_file():
        source = corpus.shards(docs + more)[0]
        with source.open() as fh:
            lines = fh.readlines()[docs:docs + more]
        path.write_text("".join(lines))
    return path


def _summary(r: dict[str, Any]) -> str:
    one, two, rb = r["one_server"], r["two_servers"], r["rebuild"]

    def line(name: str, x: dict[str, Any]) -> str:
        return (f"{name}: {x['req_per_s']} req/s, p50 {x['p50_ms']} ms, p95 {x['p95_ms']} ms, "
                f"max {x['max_ms']} ms, {x['errors']} errors {x['error_kinds']} "
                f"(load {x['load']})")

    return "\n".join([
        f"corpus: {r['docs']} documents ({r['embedder']}, vector_search "
        f"{r['vector_search'] or 'default'}), approximate index {r['record']}",
        f"RSS idle per server: {r['rss_mib_idle']} MiB; after the loads "
        f"{r['rss_mib_after_load']} MiB",
        line(f"one server, {one['clients']} clients", one),
        line(f"two servers behind the proxy, {two['clients']} clients", two),
        f"rebuild: {rb.get('rebuild_s')} s (exit {rb.get('rebuild_exit')}), record "
        f"{(rb['record_before'] or {}).get('sha256', '')[:12]} -> "
        f"{(rb['record_after'] or {}).get('sha256', '')[:12]} "
        f"(nlist {(rb['record_before'] or {}).get('nlist')} -> "
        f"{(rb['record_after'] or {}).get('nlist')}), searches after {rb['searches_after']}",
        line("  load during the rebuild (proxy)", rb["load_during"]),
        f"  RSS per server before {rb['rss_mib_before']} MiB, after {rb['rss_mib_after']} MiB",
    ])


if __name__ == "__main__":
    main()
