"""Tool-call validity of the offline local model on 20 scripted agent prompts (issue 4).

Ten prompts are first turns (the `full` agent's system prompt and a 2Wiki dev question), ten
are second turns (the same after one scripted keyword_search with its real result). Each
prompt is sent to the local model under llama.cpp in two modes:

- ``json``: Sleuth's mode for the local model (:class:`sleuth.llm.JsonToolCalls`): tools in
  the prompt, replies constrained to the call-or-answer JSON schema by the server's grammar,
  validated, at most two re-asks;
- ``native``: OpenAI tool calling through llama.cpp's Jinja chat template, the baseline.

A reply is valid when it is a call of an offered tool whose arguments validate against the
tool's JSON schema, or a plain final answer; a tool call left in the text (fenced JSON the
server did not parse) or malformed JSON is invalid.

    python bench/diagnostics/local_toolcalls.py --models 0.5b,1.5b --modes json,native

The index is the 2Wiki dev index (``_common.dev_index``, built on first use and cached).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import OUT_DIR, add_data_option, data_root, dev_index, machine_facts  # noqa: E402

from sleuth import Index  # noqa: E402
from sleuth.agent import Tracker, build_agent  # noqa: E402
from sleuth.eval.datasets import load_dataset  # noqa: E402
from sleuth.llm import ChatResponse, OpenAIClient, local  # noqa: E402
from sleuth.llm.jsontools import parse_reply  # noqa: E402
from sleuth.retrieval import question_keywords  # noqa: E402
from sleuth.settings import Settings  # noqa: E402
from sleuth.tools import TOOLS, ToolContext  # noqa: E402


def prompts(n: int, data: Path) -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]]]:
    """``n`` message lists (half first turns, half after one keyword_search) and the tools."""
    settings = Settings.load()
    dataset = load_dataset(data / "2wikimultihopqa")
    index = Index.open(dev_index("2wiki", data=data), settings=settings)
    agent = build_agent("full", index, OpenAIClient("unused", "http://127.0.0.1:9/v1"), settings)
    out = []
    for number, q in enumerate(dataset.questions[:n]):
        messages: list[dict[str, Any]] = [{"role": "system", "content": agent.system_prompt},
                                          {"role": "user", "content": q.question}]
        if number % 2:
            args = {"keywords": question_keywords(q.question)[:3]}
            result = TOOLS["keyword_search"].run(ToolContext(index, Tracker()), args)
            call = {"id": "call_1", "type": "function",
                    "function": {"name": "keyword_search", "arguments": json.dumps(args)}}
            messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": "call_1", "content": result.text}]
        out.append(messages)
    return out, [t.schema() for t in agent.tools]


def classify(response: ChatResponse, tools: list[dict[str, Any]]) -> str:
    """"call", "answer", or why the reply is invalid."""
    functions = {t["function"]["name"]: t["function"] for t in tools}
    if response.tool_calls:
        for call in response.tool_calls:
            try:
                parse_reply(json.dumps({"tool": call.name,
                                        "arguments": json.loads(call.arguments or "{}")}),
                            functions)
            except (ValueError, json.JSONDecodeError) as exc:
                return f"invalid call: {exc}"
        return "call"
    try:
        _, calls = parse_reply(response.content or "", functions)
    except ValueError as exc:
        return f"invalid: {exc}"
    return "unparsed call in text" if calls else "answer"


def run(size: str, modes: list[str], messages: list[list[dict[str, Any]]],
        tools: list[dict[str, Any]]) -> dict[str, Any]:
    settings = Settings.load().llm
    rows: dict[str, Any] = {}
    with local.LocalServer(local.model_path(size)) as server:
        for mode in modes:
            shim = local.client(server, size, settings)  # exactly what the agent gets
            client = shim.inner
            outcomes, seconds = [], []
            for prompt in messages:
                started = time.perf_counter()
                if mode == "json":
                    response = shim.chat(prompt, tools)
                else:  # the same sampling, llama.cpp's own tool-call parsing
                    response = client.chat(prompt, tools, tool_choice="auto")
                seconds.append(time.perf_counter() - started)
                outcomes.append(classify(response, tools))
                print(f"  {size} {mode}: {outcomes[-1]} ({seconds[-1]:.1f} s)", flush=True)
            valid = sum(o in ("call", "answer") for o in outcomes)
            rows[mode] = {"prompts": len(outcomes), "valid": valid,
                          "validity": round(valid / len(outcomes), 3),
                          "calls": outcomes.count("call"), "answers": outcomes.count("answer"),
                          "reasks": shim.reasks if mode == "json" else None,
                          "seconds_mean": round(sum(seconds) / len(seconds), 1),
                          "outcomes": outcomes}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="1.5b,0.5b")
    parser.add_argument("--modes", default="json,native")
    parser.add_argument("--n", type=int, default=20)
    add_data_option(parser)
    args = parser.parse_args()
    messages, tools = prompts(args.n, data_root(args.data))
    result: dict[str, Any] = {"machine": machine_facts(), "prompts": args.n, "models": {}}
    for size in args.models.split(","):
        result["models"][size] = run(size, args.modes.split(","), messages, tools)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUT_DIR / "local_toolcalls.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print("\n| model | mode | valid | calls | answers | re-asks | s / prompt |")
    print("|---|---|---|---|---|---|---|")
    for size, rows in result["models"].items():
        for mode, r in rows.items():
            print(f"| {size} | {mode} | {r['valid']}/{r['prompts']} ({100 * r['validity']:.0f} %)"
                  f" | {r['calls']} | {r['answers']} | {r['reasks']} | {r['seconds_mean']} |")
    print(f"\n{path}")


if __name__ == "__main__":
    main()
