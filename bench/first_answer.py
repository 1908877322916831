"""From ``sleuth ask`` to the answer over a real manual, and where the time goes (issue 38).

The index is the PostgreSQL 15 manual (1,167 HTML pages: its dev index
``dev_index("pgdocs")``, built with ``sleuth index`` on first use and cached, unless
``--index`` names another), the model the installed
local 1.5B. Three one-step questions of ``bench/sets/pgdocs`` are asked with the CLI, each in
a new process, first with no model server running (cold: the command starts it) and then
with it running (warm: a second ``ask`` reuses it). Measured separately, in fresh processes:
importing Sleuth's CLI, loading the embedder, starting the model server; and from the
server's own ``/metrics``, the seconds the model spent reading the prompt and generating.

    python bench/first_answer.py
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import OUT_DIR, machine_facts, md_table, resolve_index, write_json  # noqa: E402

QUESTIONS = ["default port postgres listens on?",
             "Which SQLSTATE code is raised for a detected deadlock?",
             "max number of columns in a postgres table"]


def seconds_of(code: str) -> float:
    """Wall seconds of ``python -c code`` in a fresh process."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - started


def model_metrics() -> dict[str, float]:
    """The running local server's counters (prompt and generation seconds and tokens)."""
    from sleuth.llm import local

    running = local.running_servers()
    if not running:
        return {}
    server = running[0]
    text = httpx.get(server.base_url.removesuffix("/v1") + "/metrics", timeout=10,
                     headers={"Authorization": f"Bearer {server.key}"}).text
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name.startswith("llamacpp:") and not name.startswith("#"):
            out[name.removeprefix("llamacpp:")] = float(value)
    return out


def ask(question: str, index: str) -> dict[str, Any]:
    before = model_metrics()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "sleuth", "ask", question, "--index", index,
                           "--json"], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    after = model_metrics()
    record = json.loads(done.stdout)

    def delta(key: str) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)

    return {"question": question, "wall_s": round(wall, 1),
            "answer": record["answer"][:160], "llm_calls": record.get("llm_calls"),
            "prompt_s": round(delta("prompt_seconds_total"), 1),
            "prompt_tokens": delta("prompt_tokens_total"),
            "generate_s": round(delta("tokens_predicted_seconds_total"), 1),
            "generated_tokens": delta("tokens_predicted_total")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", default=None,
                        help="an index of the manual [the pgdocs dev index]")
    args = parser.parse_args()
    args.index = str(resolve_index(args.index, "pgdocs"))
    from sleuth.llm import local

    result: dict[str, Any] = {"machine": machine_facts(), "index": args.index}
    local.stop_servers()
    result["import_cli_s"] = round(seconds_of("import sleuth.cli.main"), 2)
    result["embedder_load_s"] = round(seconds_of(
        "import time; from sleuth import Settings; from sleuth.embed import load_embedder; "
        "load_embedder(Settings.load().embed)"), 2)
    started = time.perf_counter()
    local.shared_server("1.5b", 16384)
    result["model_start_s"] = round(time.perf_counter() - started, 1)
    local.stop_servers()
    rows = []
    for label in ("cold", "warm"):
        for question in QUESTIONS:
            if label == "cold":
                local.stop_servers()
            got = ask(question, args.index)
            got["run"] = label
            rows.append(got)
            print(f"  {label}: {got}", flush=True)
    result["asks"] = rows
    print(f"import sleuth.cli.main {result['import_cli_s']} s, "
          f"embedder {result['embedder_load_s']} s, "
          f"model start {result['model_start_s']} s")
    print(md_table(["run", "question", "wall s", "prompt s", "prompt tok", "generate s",
                    "gen tok", "calls"],
                   [[r["run"], r["question"], r["wall_s"], r["prompt_s"],
                     f"{r['prompt_tokens']:.0f}", r["generate_s"],
                     f"{r['generated_tokens']:.0f}", r["llm_calls"]] for r in rows]))
    print(f"written {write_json(OUT_DIR / 'first_answer.json', result)}")


if __name__ == "__main__":
    main()
