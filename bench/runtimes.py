"""The local model's two runtimes against each other, in one run (issue 38): the prebuilt
``xllamacpp`` wheel and the compiled, portable ``llama-server``.

For each runtime, the 1.5B model is loaded by Sleuth's own server process
(``sleuth.llm.local.LocalServer``, the thread policy of this machine: ``threads.llm``
generation and ``threads.llm_batch`` prompt threads, no polling) and measured:

- **load**: seconds from start to the first answer of ``/health``;
- **rates**: prompt and generation tokens/s, read from the server's own ``timings`` of a
  ~700-token prompt answered with 64 tokens (prompt cache off), the median of three, quiet
  and with 1 and 2 other processes each spinning a core;
- **prompt cache**: a second request that extends the first re-processes only what was added
  (``timings.cache_n``, ``prompt_n``);
- **tool calls**: Sleuth's JSON tool protocol (schema-constrained reply) returns a valid call.

    python bench/runtimes.py                       # both runtimes, busy 0,1,2
    python bench/runtimes.py --busy 0 --runtimes xllamacpp

The answer bench on 20 questions runs through ``bench/answers.py`` with
``SLEUTH_LLM__LOCAL_RUNTIME`` set to each runtime (see BENCHMARKS §20).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import OUT_DIR, machine_facts, md_table, write_json  # noqa: E402

from sleuth import Settings  # noqa: E402
from sleuth.llm import local  # noqa: E402
from sleuth.tools import TOOLS  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "src/sleuth/data/sample/pepys-diary-1660.md"


def prompt_text() -> str:
    """About 700 tokens of the bundled sample, the size of the default agent's first prompt."""
    return SAMPLE.read_text(encoding="utf-8")[:2800]


def completion(server: local.LocalServer, content: str, *, cache: bool,
               max_tokens: int = 64) -> dict[str, Any]:
    body = {"model": "local", "max_tokens": max_tokens, "temperature": 0,
            "cache_prompt": cache, "messages": [{"role": "user", "content": content}]}
    answer = httpx.post(server.base_url + "/chat/completions", json=body, timeout=900,
                        headers={"Authorization": f"Bearer {server.key}"})
    answer.raise_for_status()
    timings: dict[str, Any] = answer.json()["timings"]
    return timings


def rates(server: local.LocalServer, repeats: int = 3) -> dict[str, float]:
    text = prompt_text()
    runs = [completion(server, f"({i}) Summarize this diary entry in one paragraph.\n\n{text}",
                       cache=False) for i in range(repeats)]
    return {"prompt_tokens": runs[0]["prompt_n"],
            "prompt_tok_s": statistics.median(r["prompt_per_second"] for r in runs),
            "gen_tok_s": statistics.median(r["predicted_per_second"] for r in runs)}


def prompt_cache(server: local.LocalServer) -> dict[str, Any]:
    first = f"Read this.\n\n{prompt_text()}"
    completion(server, first, cache=True, max_tokens=8)
    second = completion(server, first + "\n\nNow: who is mentioned first?", cache=True,
                        max_tokens=8)
    return {"cached_tokens": second.get("cache_n"), "new_prompt_tokens": second["prompt_n"]}


def tool_call(server: local.LocalServer) -> dict[str, Any]:
    client = local.client(server, "1.5b", Settings.load().llm)
    tools = [TOOLS["keyword_search"].schema()]
    started = time.perf_counter()
    reply = client.chat([{"role": "system", "content": "Use the tools to answer."},
                         {"role": "user", "content": "Who showed Pepys how levers work?"}],
                        tools=tools)
    calls = [{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
    return {"valid": bool(calls) and calls[0]["name"] == "keyword_search", "calls": calls,
            "seconds": round(time.perf_counter() - started, 1)}


def spin(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def measure(runtime: str, busy_levels: list[int]) -> dict[str, Any]:
    started = time.monotonic()
    server = local.LocalServer(local.model_path("1.5b"), runtime=runtime).start()
    out: dict[str, Any] = {"load_seconds": round(time.monotonic() - started, 1),
                           "threads": server.threads, "threads_batch": server.threads_batch}
    try:
        completion(server, "Hello", cache=False, max_tokens=4)  # warm
        out["prompt_cache"] = prompt_cache(server)
        out["tool_call"] = tool_call(server)
        for busy in busy_levels:
            spinners = spin(busy)
            try:
                time.sleep(1)
                out[f"busy{busy}"] = rates(server)
            finally:
                for process in spinners:
                    process.kill()
            print(f"  {runtime} busy {busy}: {out[f'busy{busy}']}", flush=True)
    finally:
        server.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtimes", default="xllamacpp,llama-server")
    parser.add_argument("--busy", default="0,1,2", help="Other busy processes, e.g. 0,1,2")
    args = parser.parse_args()
    busy = [int(b) for b in args.busy.split(",")]
    result: dict[str, Any] = {"machine": machine_facts(), "runtimes": {}}
    for runtime in args.runtimes.split(","):
        print(f"{runtime}:", flush=True)
        result["runtimes"][runtime] = measure(runtime, busy)
    rows = []
    for runtime, got in result["runtimes"].items():
        for b in busy:
            rows.append([runtime, b, f"{got[f'busy{b}']['prompt_tok_s']:.1f}",
                         f"{got[f'busy{b}']['gen_tok_s']:.2f}", got["load_seconds"],
                         got["prompt_cache"]["cached_tokens"],
                         got["prompt_cache"]["new_prompt_tokens"], got["tool_call"]["valid"]])
    print(md_table(["runtime", "busy", "prompt tok/s", "gen tok/s", "load s", "cached",
                    "new prompt", "tool call"], rows))
    print(f"written {write_json(OUT_DIR / 'runtimes.json', result)}")


if __name__ == "__main__":
    main()
