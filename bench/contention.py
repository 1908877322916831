# ruff: noqa: E402
"""Sleuth on a busy machine: every workload quiet, then beside one and two busy processes.

A busy process is ``python -c "while True: pass"``: it keeps one core busy at the same
priority as Sleuth, like a compile or a notebook beside it. For each number of busy
processes (``--busy``, default 0,1,2) and each source tree (this checkout's ``src``, and with
``--baseline SRC`` an older one, e.g. a ``git worktree`` of the commit before a change), a
fresh worker process runs each workload, so old and new are measured in the same run under
the same load:

- ``retrieval``: ``Index.keyword_search`` (a question's last three words, as in
  ``serve_load.py``), ``Index.semantic_search`` and the ``search`` tool (``Service.call_tool``)
  for ``--queries`` distinct dev questions, after 5 others to warm up; p50 / p95 ms.
- ``build``: indexing throughput (sentences/s) of the first ``--build-passages`` 2Wiki
  passages with MiniLM and of ``--fast-passages`` with model2vec, into fresh indexes.
- ``llm``: the local model (``--llm-model``, started the way ``sleuth ask`` starts it):
  generation tokens/s (a streamed completion of 64 tokens), then the ``full`` agent on one
  question (``--agent-steps`` steps at most): seconds per LLM call and the prompt tokens
  llama.cpp actually processed per call (its own log; cached tokens are not processed).
- ``http``: ``sleuth serve http`` with ``--clients`` (50) concurrent clients sending
  ``--http-requests`` (400) distinct dev questions to each of keyword_search,
  semantic_search and search; requests/s, p50 / p95 ms, errors (any non-2xx). The client
  runs on the same machine.

Every call has a deadline, so a configuration that collapses is reported as such instead
of stalling the run. Run (about 25 minutes with a baseline on 2 cores):

    git worktree add /tmp/sleuth-base <commit>
    python bench/contention.py --baseline /tmp/sleuth-base/src --json bench/out/contention.json

The index is the 2Wiki dev index (``dev_index("2wiki")``, built on first use and cached)
unless ``--index`` names another.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from _common import (
    REPO,
    add_data_option,
    command_line,
    data_root,
    machine_facts,
    machine_md,
    md_table,
    pct,
    resolve_index,
    wiki_corpus,
    wiki_questions,
    write_json,
)

WORKLOADS = ("retrieval", "build", "llm", "http")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def questions(n: int, data: Path | None) -> list[str]:
    return [r["question"] for r in json.loads(wiki_questions(data_root(data)).read_text())][:n]


def keywords(question: str) -> list[str]:
    return question.rstrip("?").split()[-3:]


# -- workers (run in a fresh process, with PYTHONPATH pointing at the source tree) -----------

def retrieval_worker(args: argparse.Namespace) -> dict[str, Any]:
    from sleuth import Index
    from sleuth.service.service import Service
    from sleuth.settings import Settings

    qs = questions(args.queries, args.data)
    service = Service(args.index, Settings.load(index=args.index))
    index: Any = Index.open(args.index)
    calls = {
        "keyword_search": lambda q: index.keyword_search(keywords(q), top_k=5),
        "semantic_search": lambda q: index.semantic_search(q, top_k=5),
        "search": lambda q: service.call_tool("search", {"queries": [q], "top_k": 5}),
    }
    out: dict[str, Any] = {}
    for name, call in calls.items():
        # warm up (model load) on other questions
        for q in questions(args.queries + 5, args.data)[-5:]:
            call(q)
        seconds = []
        for q in qs:
            started = time.perf_counter()
            call(q)
            seconds.append(time.perf_counter() - started)
        out[name] = {"calls": len(seconds), "p50_ms": 1000 * pct(seconds, 50),
                     "p95_ms": 1000 * pct(seconds, 95)}
    service.close()
    index.close()
    return out


def build_worker(args: argparse.Namespace) -> dict[str, Any]:
    from sleuth import Index
    from sleuth.settings import Settings

    records = json.loads(wiki_corpus(data_root(args.data)).read_text())
    out: dict[str, Any] = {}
    for model, passages in (("minilm", args.build_passages), ("model2vec", args.fast_passages)):
        with tempfile.TemporaryDirectory() as tmp:
            corpus = Path(tmp) / "corpus.json"
            corpus.write_text(json.dumps(records[:passages]))
            settings = Settings.load(index=str(Path(tmp) / "idx"), embed={"model": model})
            Index.open(settings=settings, create=True).close()  # model load and distil: apart
            started = time.perf_counter()
            with Index.open(settings=settings) as index:
                index.add([corpus])
                sentences = index.stats().sentences
            seconds = time.perf_counter() - started
        out[model] = {"passages": passages, "sentences": sentences, "seconds": seconds,
                      "sentences_per_s": sentences / seconds}
    return out


_TIMINGS = re.compile(r"prompt eval time = +([\d.]+) ms / +(\d+) tokens.*\n.*?"
                      r"eval time = +([\d.]+) ms / +(\d+) tokens")


def llm_worker(args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    import sleuth
    from sleuth import Index
    from sleuth.llm import local
    from sleuth.settings import Settings

    logfile = local.home() / "server.log"
    server = local.shared_server(args.llm_model, 16384)
    out: dict[str, Any] = {"command": _server_command(server)}
    rates = []
    for _ in range(2):
        rates.append(_generation_rate(httpx, server.base_url, args.deadline))
    out["generation"] = {"tokens_per_s": statistics.median(r["tokens_per_s"] for r in rates),
                         "runs": rates}
    time.sleep(1)  # the server logs a request's timings just after its last byte
    offset = logfile.stat().st_size
    steps: list[dict[str, Any]] = []
    result: dict[str, Any] = {}

    def on_step(step: Any) -> None:
        steps.append({"tool": step.tool_name, "at_s": time.perf_counter() - started})

    def run() -> None:
        try:
            settings = Settings.load(index=args.index, agent={"max_steps": args.agent_steps})
            with Index.open(args.index, settings=settings) as index:
                answer = sleuth.ask(questions(1, args.data)[0], index=index, agent="full",
                                    settings=settings, on_step=on_step)
            result["answer"] = {"llm_calls": answer.llm_calls,
                                "prompt_tokens": answer.prompt_tokens,
                                "completion_tokens": answer.completion_tokens,
                                "seconds": answer.seconds}
        except Exception as exc:  # noqa: BLE001 - reported, the run goes on
            result["error"] = f"{type(exc).__name__}: {exc}"[:300]

    started = time.perf_counter()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(args.agent_deadline)
    if worker.is_alive():
        result["error"] = f"no answer within {args.agent_deadline} s"
        server.stop()
    calls = [{"processed_prompt_tokens": int(m[1]), "prompt_ms": float(m[0]),
              "generated_tokens": int(m[3]), "generation_ms": float(m[2])}
             for m in _TIMINGS.findall(logfile.read_bytes()[offset:].decode(errors="replace"))]
    out["agent"] = {**result, "steps": steps, "calls": calls,
                    "seconds_per_call": [round((c["prompt_ms"] + c["generation_ms"]) / 1000, 2)
                                         for c in calls]}
    server.stop()
    return out


def _server_command(server: Any) -> str:
    try:
        return " ".join(Path(f"/proc/{server.process.pid}/cmdline").read_bytes()
                        .decode().split("\0")[1:]).strip()
    except (OSError, AttributeError):
        return "?"


def _generation_rate(httpx: Any, base_url: str, deadline: float) -> dict[str, Any]:
    """Tokens/s of a streamed 64-token completion (after its first token, so prompt time is
    apart), stopped at ``deadline`` seconds."""
    body = {"model": "local", "stream": True, "max_tokens": 64, "temperature": 0,
            "messages": [{"role": "user", "content": "Write a long story about a lighthouse "
                          "keeper and a storm. Do not stop early."}]}
    times: list[float] = []
    started = time.perf_counter()
    with httpx.stream("POST", f"{base_url}/chat/completions", json=body,
                      timeout=deadline + 30) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and '"content"' in line:
                times.append(time.perf_counter())
            if time.perf_counter() - started > deadline:
                break
    if len(times) < 2:
        return {"tokens": len(times), "tokens_per_s": 0.0, "first_token_s": None}
    return {"tokens": len(times), "tokens_per_s": (len(times) - 1) / (times[-1] - times[0]),
            "first_token_s": round(times[0] - started, 2)}


def http_worker(args: argparse.Namespace) -> dict[str, Any]:
    import httpx
    from serve_load import free_port, start_server, workload

    port = free_port()
    server = start_server(args.index, port, dict(os.environ))
    # distinct queries, as distinct clients would send
    qs = questions(args.http_requests, args.data)
    try:
        async def run() -> dict[str, Any]:
            limits = httpx.Limits(max_connections=args.clients + 10)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120,
                                         limits=limits, headers={"X-API-Key": "bench-admin"}
                                         ) as client:
                await asyncio.gather(*(  # every server process loads its model first
                    client.post("/v1/tools/semantic_search", json={"query": f"warm up {i}"})
                    for i in range(16)))
                picks = qs
                out: dict[str, Any] = {}
                for name, body in (("keyword_search", lambda q: {"keywords": keywords(q),
                                                                 "top_k": 5}),
                                   ("semantic_search", lambda q: {"query": q, "top_k": 5}),
                                   ("search", lambda q: {"queries": [q], "top_k": 5})):
                    out[name] = await workload(client, [(f"/v1/tools/{name}", body(q))
                                                        for q in picks], args.clients)
                return out

        return asyncio.run(run())
    finally:
        server.terminate()
        server.wait(timeout=30)


# -- the orchestrator ------------------------------------------------------------------------

def spin(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def run_worker(workload: str, src: Path, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src), "SLEUTH_LLM__LOCAL_MODEL": args.llm_model}
    for name in ("SLEUTH_BASE_URL", "SLEUTH_MODEL", "SLEUTH_API_KEY"):
        env.pop(name, None)  # the local model, as a new user without an endpoint has it
    command = [sys.executable, str(Path(__file__)), "--worker", workload, "--index", args.index,
               *_passed(args)]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True,
                          timeout=args.worker_timeout)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1][:300] if done.stderr else
                f"exit {done.returncode}", "wall_s": time.perf_counter() - started}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


def _passed(args: argparse.Namespace) -> list[str]:
    return ["--queries", str(args.queries), "--build-passages", str(args.build_passages),
            "--fast-passages", str(args.fast_passages), "--llm-model", args.llm_model,
            "--agent-steps", str(args.agent_steps), "--deadline", str(args.deadline),
            "--agent-deadline", str(args.agent_deadline), "--clients", str(args.clients),
            "--http-requests", str(args.http_requests),
            *(["--data", str(args.data)] if args.data else [])]


def table(results: dict[str, Any], sources: list[str], busy: list[int]) -> str:
    rows = []

    def cell(source: str, b: int, workload: str, *path: str, fmt: str = "{:.1f}") -> str:
        value: Any = results.get(source, {}).get(str(b), {}).get(workload, {})
        if "error" in value:
            return "error"
        for key in path:
            value = value.get(key, {}) if isinstance(value, dict) else {}
        return fmt.format(value) if isinstance(value, (int, float)) else "–"

    measures = [
        ("keyword_search p50 / p95 ms", "retrieval", "keyword_search"),
        ("semantic_search p50 / p95 ms", "retrieval", "semantic_search"),
        ("search p50 / p95 ms", "retrieval", "search"),
    ]
    for label, workload, name in measures:
        for source in sources:
            rows.append([label, source, *[
                f"{cell(source, b, workload, name, 'p50_ms')} / "
                f"{cell(source, b, workload, name, 'p95_ms')}" for b in busy]])
    for model in ("minilm", "model2vec"):
        for source in sources:
            rows.append([f"build {model} sentences/s", source,
                         *[cell(source, b, "build", model, "sentences_per_s", fmt="{:.0f}")
                           for b in busy]])
    for source in sources:
        rows.append(["local model generation tokens/s", source,
                     *[cell(source, b, "llm", "generation", "tokens_per_s") for b in busy]])
    for source in sources:
        rows.append(["agent: s per LLM call (processed prompt tokens)", source,
                     *[_agent_cell(results.get(source, {}).get(str(b), {}).get("llm", {}))
                       for b in busy]])
    for name in ("keyword_search", "semantic_search", "search"):
        for source in sources:
            rows.append([f"HTTP 50 clients {name}: req/s, p50 / p95 ms", source, *[
                _http_cell(results.get(source, {}).get(str(b), {}).get("http", {}).get(name))
                for b in busy]])
    return md_table(["measure", "code", *[f"{b} busy" for b in busy]], rows)


def _agent_cell(llm: dict[str, Any]) -> str:
    agent = llm.get("agent") or {}
    calls = agent.get("calls") or []
    if not calls:
        return agent.get("error", llm.get("error", "–"))[:60]
    text = ", ".join(f"{(c['prompt_ms'] + c['generation_ms']) / 1000:.1f} "
                     f"({c['processed_prompt_tokens']})" for c in calls)
    return text + (" (timed out)" if "within" in str(agent.get("error", "")) else "")


def _http_cell(r: dict[str, Any] | None) -> str:
    if not r:
        return "–"
    errors = f", {r['errors']} errors" if r["errors"] else ""
    return f"{r['throughput_rps']:.0f}, {r['p50_ms']:.0f} / {r['p95_ms']:.0f}{errors}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", default=None,
                        help="an index folder or dev corpus name [the 2Wiki dev index]")
    parser.add_argument("--baseline", type=Path, help="an older src/ to measure beside this one")
    parser.add_argument("--busy", default="0,1,2", help="busy processes per condition")
    parser.add_argument("--only", default=",".join(WORKLOADS), help="workloads to run")
    parser.add_argument("--queries", type=int, default=80)
    parser.add_argument("--build-passages", type=int, default=300)
    parser.add_argument("--fast-passages", type=int, default=3000)
    parser.add_argument("--llm-model", default="0.5b")
    parser.add_argument("--agent-steps", type=int, default=3)
    parser.add_argument("--deadline", type=float, default=60.0, help="s per generation")
    parser.add_argument("--agent-deadline", type=float, default=240.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--http-requests", type=int, default=400)
    parser.add_argument("--worker-timeout", type=float, default=900.0)
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--worker", choices=WORKLOADS, help=argparse.SUPPRESS)
    add_data_option(parser)
    args = parser.parse_args()
    args.index = str(resolve_index(args.index, "2wiki", args.data))
    if args.worker:
        worker = {"retrieval": retrieval_worker, "build": build_worker, "llm": llm_worker,
                  "http": http_worker}[args.worker]
        print(json.dumps(worker(args)))
        return
    busy = [int(b) for b in args.busy.split(",")]
    sources = {"new": REPO / "src", **({"baseline": args.baseline} if args.baseline else {})}
    facts = machine_facts()
    results: dict[str, Any] = {name: {} for name in sources}
    for b in busy:
        spinners = spin(b)
        try:
            time.sleep(1)
            for workload in args.only.split(","):
                for name, src in sources.items():  # old and new back to back, same load
                    log(f"{b} busy: {workload} ({name})")
                    result = run_worker(workload, src, args)
                    results[name].setdefault(str(b), {})[workload] = result
                    log(f"  {json.dumps(result)[:400]}")
                    if args.json:
                        write_json(args.json, {"facts": facts, "command": command_line(),
                                               "results": results})
        finally:
            for p in spinners:
                p.kill()
                p.wait()
    print(machine_md(facts))
    print(f"command: {command_line()}\n")
    print(table(results, list(sources), busy))


if __name__ == "__main__":
    main()
