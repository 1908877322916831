# ruff: noqa: E402
"""The HTTP server under load: throughput and latency of concurrent tool calls and asks.

Starts ``sleuth serve http`` on 127.0.0.1 over a built index (a real server process, one
uvicorn worker) and, with an async HTTP client:

1. ``--searches`` keyword_search, semantic_search and search calls each, ``--concurrency``
   (50) in flight at once, queries drawn from the dataset's questions;
2. ``--asks`` blocking ``/v1/ask`` calls with the ``naive-rag`` agent, ``--ask-concurrency``
   in flight, answered by the scripted OpenAI-compatible server (no model time: this
   measures Sleuth's own overhead around the LLM).

With ``--acl`` every workload runs twice in the same server: with an admin key (no
filtering) and with a tenant's key whose collection holds every document (so results are
the same, but every query goes through the access-control path: visible rows, BM25
statistics over them). The ratio is the cost of access control.

Reports, per workload: requests, errors (any non-2xx), throughput (requests/s over the wall
time of the workload) and latency p50 / p95 / max. Run:

    python bench/serve_load.py            # the 2Wiki dev index and its dev questions
    python bench/serve_load.py --acl --index PATH --questions questions.json

The index is the 2Wiki dev index (``_common.dev_index``, built on first use and cached)
unless ``--index`` names another.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from _common import (
    OUT_DIR,
    add_data_option,
    command_line,
    data_root,
    machine_facts,
    machine_md,
    md_table,
    pct,
    resolve_index,
    wiki_questions,
    write_json,
)

from sleuth.testing.fake import FakeLLMServer, reply


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


ADMIN_KEY, TENANT_KEY = "bench-admin", "bench-tenant"
KEYS = {"admin": ADMIN_KEY, "tenant": {"key": TENANT_KEY, "collection": "default"}}


def start_server(index: str, port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, "-m", "sleuth", "serve", "http", "--index", index, "--port",
         str(port)], env={**env, "SLEUTH_SERVE__API_KEYS": json.dumps(KEYS)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/status", timeout=2,
                         headers={"X-API-Key": ADMIN_KEY}).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.5)
        if process.poll() is not None:
            raise SystemExit(f"server exited: {process.stderr.read().decode()[-2000:]}"
                             if process.stderr else "server exited")
    process.kill()
    raise SystemExit("server did not answer /v1/status within 120 s")


async def workload(client: httpx.AsyncClient, requests: list[tuple[str, dict[str, Any]]],
                   concurrency: int) -> dict[str, Any]:
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    errors: list[str] = []

    async def one(path: str, body: dict[str, Any]) -> None:
        async with gate:
            started = time.perf_counter()
            try:
                response = await client.post(path, json=body)
                if response.status_code >= 300:
                    errors.append(f"{response.status_code} {response.text[:120]}")
            except httpx.HTTPError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(one(path, body) for path, body in requests))
    wall = time.perf_counter() - started
    return {"requests": len(requests), "errors": len(errors), "error_samples": errors[:3],
            "wall_s": wall, "throughput_rps": len(requests) / wall,
            "p50_ms": 1000 * pct(latencies, 50), "p95_ms": 1000 * pct(latencies, 95),
            "max_ms": 1000 * max(latencies)}


async def run(base: str, questions: list[str], args: argparse.Namespace,
              key: str) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=args.concurrency + 10)
    async with httpx.AsyncClient(base_url=base, timeout=300, limits=limits,
                                 headers={"X-API-Key": key}) as client:
        await client.post("/v1/tools/semantic_search", json={"query": "warm up"})
        out: dict[str, Any] = {}
        picks = [questions[i % len(questions)] for i in range(args.searches)]
        out["keyword_search"] = await workload(client, [
            ("/v1/tools/keyword_search", {"keywords": q.rstrip("?").split()[-3:], "top_k": 5})
            for q in picks], args.concurrency)
        out["semantic_search"] = await workload(client, [
            ("/v1/tools/semantic_search", {"query": q, "top_k": 5}) for q in picks],
            args.concurrency)
        out["search"] = await workload(client, [
            ("/v1/tools/search", {"queries": [q], "top_k": 5}) for q in picks],
            args.concurrency)
        out["ask (naive-rag, scripted LLM)"] = await workload(client, [
            ("/v1/ask", {"question": q, "agent": "naive-rag"}) for q in picks[:args.asks]],
            args.ask_concurrency)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", default=None,
                        help="index folder or dev corpus name [the 2Wiki dev index]")
    parser.add_argument("--questions", default=None,
                        help="a questions.json [the data root's 2Wiki dev questions]")
    parser.add_argument("--searches", type=int, default=200, help="calls per search tool")
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--asks", type=int, default=40)
    parser.add_argument("--ask-concurrency", type=int, default=10)
    parser.add_argument("--acl", action="store_true",
                        help="run every workload as admin and as a tenant (access control)")
    add_data_option(parser)
    args = parser.parse_args()
    args.index = str(resolve_index(args.index, "2wiki", args.data))
    path = Path(args.questions) if args.questions else wiki_questions(data_root(args.data))
    questions = [r["question"] for r in json.loads(path.read_text())]
    passes = [("admin", ADMIN_KEY)] + ([("tenant", TENANT_KEY)] if args.acl else [])
    fake = FakeLLMServer([reply("A scripted answer.")] * (len(passes) * args.asks + 5))
    env = {**os.environ, "SLEUTH_BASE_URL": fake.base_url, "SLEUTH_MODEL": "fake-model"}
    port = free_port()
    with fake:
        server = start_server(args.index, port, env)
        try:
            results = {who: asyncio.run(run(f"http://127.0.0.1:{port}", questions, args, key))
                       for who, key in passes}
        finally:
            server.terminate()
            server.wait(timeout=30)
    rows = [[name if len(passes) == 1 else f"{name} ({who})", r["requests"], r["errors"],
             f"{r['throughput_rps']:.1f}", f"{r['p50_ms']:.0f}", f"{r['p95_ms']:.0f}",
             f"{r['max_ms']:.0f}"]
            for who, by_name in results.items() for name, r in by_name.items()]
    print(machine_md(machine_facts()))
    print(f"command: {command_line()}\n")
    print(f"concurrency {args.concurrency} (searches), {args.ask_concurrency} (asks)\n")
    print(md_table(["workload", "requests", "errors", "req/s", "p50 ms", "p95 ms", "max ms"],
                   rows))
    if args.acl:
        print("\ntenant / admin p50 latency: " + ", ".join(
            f"{name} {r['p50_ms'] / results['admin'][name]['p50_ms']:.2f}x"
            for name, r in results["tenant"].items()))
    write_json(OUT_DIR / "serve_load.json", {"args": vars(args), "results": results})


if __name__ == "__main__":
    main()
