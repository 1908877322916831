"""The thread policy (``sleuth.text.threads``): query work on one thread, batch work on the cores,
the local model's server started with both, and servers that refuse work beyond their queue
with a clean 503 instead of queueing without bound."""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from sleuth import Index, Settings
from sleuth.cli.quickstart import sample_path
from sleuth.embed import OnnxEmbedder, SentenceTransformerEmbedder, load_embedder
from sleuth.llm import local
from sleuth.text import threads


def test_status_reports_the_thread_policy_and_its_overrides(sleuth, sample_index: Path,
                                                             monkeypatch) -> None:
    shown = sleuth("status", "--index", str(sample_index), "--json")
    assert shown.code == 0, shown.err
    policy = shown.json()["threads"]
    cores = threads.cores()
    assert policy == {"cores": cores, "query": 1, "batch": cores, "llm": max(1, cores // 2),
                      "llm_batch": cores}
    monkeypatch.setenv("SLEUTH_THREADS__BATCH", "1")
    monkeypatch.setenv("SLEUTH_THREADS__LLM_BATCH", "1")
    changed = sleuth("status", "--index", str(sample_index), "--json").json()["threads"]
    assert changed["batch"] == 1 and changed["llm_batch"] == 1 and changed["query"] == 1
    text = sleuth("status", "--index", str(sample_index))
    assert f"threads ({cores} usable cores): query 1, batch 1" in text.out


class _Recording:
    """A sentence-transformers model that notes torch's thread count at each encode."""

    def __init__(self, model: Any) -> None:
        self.model, self.seen = model, []

    def encode(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        self.seen.append(torch.get_num_threads())
        return self.model.encode(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


@pytest.mark.minilm  # MiniLM's own threads
def test_queries_embed_on_one_thread_batches_on_the_cores_and_settings_are_restored(
        tmp_path: Path) -> None:
    if threads.cores() < 2:
        pytest.skip("needs two usable cores to tell query from batch threads")
    torch = pytest.importorskip("torch")  # here: importing it costs every worker 4 s
    real = load_embedder(Settings.load(embed={"backend": "torch"}).embed)
    assert isinstance(real, SentenceTransformerEmbedder)
    recording = _Recording(real.model)
    embedder = SentenceTransformerEmbedder(real.name, recording, real.batch_size)
    before = torch.get_num_threads()
    with Index.open(tmp_path / "idx", create=True, embedder=embedder) as index:
        index.add([sample_path()])
        indexing, recording.seen = recording.seen, []
        assert index.semantic_search("who taught Pepys about levers?", top_k=3)
        querying = recording.seen
    assert indexing and set(indexing) == {threads.thread_policy().batch}
    assert querying == [1]
    assert torch.get_num_threads() == before  # the caller's own setting is untouched


@pytest.mark.minilm  # MiniLM's own threads
def test_the_onnx_minilm_runs_queries_on_one_thread_batches_on_the_cores(
        tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    if threads.cores() < 2:
        pytest.skip("needs two usable cores to tell query from batch threads")
    embedder = load_embedder(Settings.load(embed={"backend": "onnx"}).embed)
    assert isinstance(embedder, OnnxEmbedder)
    embedder._sessions.clear()
    with Index.open(tmp_path / "idx", create=True, embedder=embedder) as index:
        index.add([sample_path()])
        assert sorted(embedder._sessions) == [threads.thread_policy().batch]
        assert index.semantic_search("who taught Pepys about levers?", top_k=3)
    assert sorted(embedder._sessions) == [1, threads.thread_policy().batch]
    threaded = {n: s.get_session_options().intra_op_num_threads
                for n, s in embedder._sessions.items()}
    assert threaded == {n: n for n in threaded}


@pytest.mark.minilm  # the real MiniLM, through both runtimes
def test_the_onnx_minilm_gives_torch_s_vectors() -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("torch")
    sentences = ["Samuel Pepys kept a diary of London in the 1660s.",
                 "A lever multiplies force around a fulcrum.", "Ja.", "x " * 400]
    onnx = load_embedder(Settings.load(embed={"backend": "onnx"}).embed).embed(sentences)
    torch_rows = load_embedder(Settings.load(embed={"backend": "torch"}).embed).embed(sentences)
    assert (onnx * torch_rows).sum(axis=1).min() > 0.9999


def _fake_llama_server(home: Path) -> Path:
    """A stand-in for the compiled llama-server (a 15-minute build): it records its
    arguments and answers /health, and refuses a chat request without its key (from its
    environment) as llama.cpp does, which is all LocalServer.start needs."""
    server = home / ".cache" / "sleuth" / "local" / "bin" / "llama-server"
    server.parent.mkdir(parents=True)
    server.write_text(f"""#!{sys.executable}
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
args = sys.argv[1:]
open({str(home / 'argv.json')!r}, 'w').write(json.dumps(args))
class Health(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'{{"status":"ok"}}')
    def do_POST(self):
        key = self.headers.get("Authorization") == "Bearer " + os.environ["LLAMA_API_KEY"]
        self.send_response(400 if key else 401); self.end_headers()
    def log_message(self, *a): pass
HTTPServer(("127.0.0.1", int(args[args.index("--port") + 1])), Health).serve_forever()
""")
    server.chmod(server.stat().st_mode | stat.S_IXUSR)
    return home / "argv.json"


@pytest.mark.slow  # starts the local model's server process
def test_the_local_model_server_gets_the_policy_threads_no_polling_and_prompt_cache(
        tmp_path: Path) -> None:
    argv_file = _fake_llama_server(Path(os.environ["HOME"]))
    (tmp_path / "model.gguf").write_bytes(b"")
    policy = threads.configure_threads(Settings.load().threads)
    with local.LocalServer(tmp_path / "model.gguf", startup_timeout=30,
                           runtime="llama-server"):
        argv = json.loads(argv_file.read_text())
    options = dict(zip(argv[::1], argv[1:], strict=False))
    assert options["--threads"] == str(policy.llm)
    assert options["--threads-batch"] == str(policy.llm_batch)
    assert options["--poll"] == "0" and "--cache-prompt" in argv
    with local.LocalServer(tmp_path / "model.gguf", threads=1, threads_batch=1,
                           startup_timeout=30, runtime="llama-server"):
        argv = json.loads(argv_file.read_text())
    assert argv[argv.index("--threads") + 1] == "1"
    assert argv[argv.index("--threads-batch") + 1] == "1"


def test_a_full_server_answers_503_with_retry_after_and_serves_the_rest(
        sample_copy: Path) -> None:
    pytest.importorskip("fastapi")
    from conftest import LiveServer
    from sleuth.server.http import create_app
    from sleuth.service.service import Service

    settings = Settings.load(serve={"workers": 1, "queue": 0})
    service = Service(sample_copy, settings)
    live = LiveServer(create_app(service, auth=False))
    try:
        status = httpx.get(f"{live.url}/v1/status").json()
        assert status["workers"]["workers"] == 1 and status["workers"]["queue"] == 0
        assert status["threads"]["batch"] == 1  # batch work in a server: one thread
        answers: list[httpx.Response] = []
        lock = threading.Lock()

        def call() -> None:
            with httpx.Client(base_url=live.url, timeout=60) as client:
                for _ in range(3):
                    response = client.post("/v1/tools/semantic_search",
                                           json={"query": "levers and strength", "top_k": 5})
                    with lock:
                        answers.append(response)

        callers = [threading.Thread(target=call) for _ in range(16)]
        for t in callers:
            t.start()
        for t in callers:
            t.join()
        codes = [r.status_code for r in answers]
        assert set(codes) <= {200, 503} and 200 in codes
        busy = [r for r in answers if r.status_code == 503]
        assert busy, "16 concurrent callers never found the one worker busy"
        for response in busy:
            assert int(response.headers["Retry-After"]) >= 1
            assert "server busy" in response.json()["detail"]
        ok = next(r for r in answers if r.status_code == 200)
        assert ok.json()["data"]["hits"]
    finally:
        live.close()
        service.close()
    assert threads.thread_policy().batch == threads.cores()  # the server is gone: cores again


def test_a_full_mcp_server_answers_a_tool_error_saying_when_to_retry(sample_copy: Path) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from sleuth.server.mcp import build_mcp
    from sleuth.service.service import Service

    service = Service(sample_copy, Settings.load(serve={"workers": 1, "queue": 0}))
    results: list[Any] = []

    async def main() -> None:
        async with Client(build_mcp(service)) as client:
            async def one() -> None:
                results.append(await client.call_tool(
                    "semantic_search", {"query": "levers and strength", "top_k": 5}))

            async with anyio.create_task_group() as group:
                for _ in range(12):
                    group.start_soon(one)

    try:
        anyio.run(main)
    finally:
        service.close()
    busy = [r for r in results if r.is_error]
    served = [r for r in results if not r.is_error]
    assert busy and served and len(results) == 12
    for r in busy:
        assert "server busy" in r.content[0].text and "retry in" in r.content[0].text
    assert all(r.structured_content["hits"] for r in served)
