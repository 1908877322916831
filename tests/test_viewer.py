"""The run viewer: its JSON API over a run folder written for real by ``sleuth eval run``
(scripted LLM), and its page rendered in headless Chromium."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

pytest.importorskip("fastapi")
import uvicorn  # noqa: E402
from fastapi import FastAPI, HTTPException, Request  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from sleuth import Index, Settings  # noqa: E402
from sleuth.eval.report import score_runs  # noqa: E402
from sleuth.server.runs import runs_router, viewer_router  # noqa: E402
from sleuth.testing.fake import FakeLLMServer, call, reply  # noqa: E402

KEY = "s3cret"
CHECK_OK = '{"relevance": true, "grounding": true, "adequacy": true, "reason": "ok"}'


@pytest.fixture()
def runs(sleuth, dataset: Path, tmp_path: Path, monkeypatch) -> Path:
    """``runs/bench/{full,a2rag}``: two agents over the three tiny questions (q3 answered
    wrong by both), and the dataset's index in ``tmp_path/idx``."""
    full = [turn for cid, answer in (("p1#0", "London [p1#0]"),
                                     ("p2#0", "Charles Babbage [p2#0]"),
                                     ("p1#0", "Paris [p1#0]"))
            for turn in (call("keyword_search", "Looking for the passage.",
                              keywords=["Lovelace"]),
                         call("chunk_read", chunk_ids=[cid]), reply(answer))]
    a2rag = [turn for answer in ("London [p1#0]", "Charles Babbage [p2#0]", "Oxford [p3#0]")
             for turn in (reply(answer), reply(CHECK_OK))]
    root = tmp_path / "runs"
    with FakeLLMServer(full + a2rag) as server:
        monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
        monkeypatch.setenv("SLEUTH_MODEL", "fake-model")
        result = sleuth("eval", "run", "--dataset", str(dataset), "--agent", "full,a2rag",
                        "--workers", "1", "--index", str(tmp_path / "idx"),
                        "--output", str(root / "bench"))
    assert result.code == 0, result.err
    return root


def _opener(folder: Path) -> Any:
    return lambda: Index.open(folder, settings=Settings.load())


def _app(root: Path, index: Path | None, auth: Any = None) -> FastAPI:
    app = FastAPI()
    app.include_router(runs_router(root, _opener(index) if index else None, auth))
    app.include_router(viewer_router())
    return app


def _require_key(request: Request) -> None:
    """A stand-in for the HTTP server's API-key dependency."""
    given = (request.headers.get("x-api-key") or request.query_params.get("api_key")
             or request.headers.get("authorization", "").removeprefix("Bearer "))
    if given != KEY:
        raise HTTPException(401, "missing or wrong API key")


def test_runs_api_over_a_real_run(runs: Path, tmp_path: Path) -> None:
    client = TestClient(_app(runs, tmp_path / "idx"))
    listed = client.get("/v1/runs").json()
    by_id = {r["id"]: r for r in listed["runs"]}
    assert sorted(by_id) == ["bench/a2rag", "bench/full"]
    expected = score_runs([runs / "bench" / "full"], ks=(2, 5))["runs"][0]
    full = by_id["bench/full"]
    assert (full["agent"], full["n"], full["model"]) == ("full", 3, "fake-model")
    assert full["metrics"]["contain"] == pytest.approx(2 / 3) == expected["overall"]["contain"]
    assert full["by_type"]["fact"]["contain"] == 1.0 and full["by_type"]["place"]["contain"] == 0
    assert by_id["bench/a2rag"]["control"]["outcome"] == {"verified": 1.0}

    run = client.get("/v1/runs/bench/full").json()
    assert run["overall"] == expected["overall"] and run["by_type"] == expected["by_type"]
    rows = {q["question_id"]: q for q in run["questions"]}
    assert sorted(rows) == ["q1", "q2", "q3"]
    assert [rows[q]["correct"] for q in ("q1", "q2", "q3")] == [True, True, False]
    assert rows["q3"]["question_type"] == "place" and rows["q1"]["latency"] > 0

    detail = client.get("/v1/runs/bench/full/questions/q1").json()
    record = detail["record"]
    assert record["question"] == "Where was Ada Lovelace born?" and record["answer"].startswith(
        "London")
    assert [s["tool_name"] for s in record["trajectory"]] == ["keyword_search", "chunk_read"]
    assert detail["summary"]["correct"] is True and detail["scores"]["em"] == 1.0
    a2rag = client.get("/v1/runs/bench/a2rag/questions/q2").json()["record"]
    assert a2rag["control"]["outcome"] == "verified" and a2rag["control"]["gate"]["passed"]

    chunk = client.get("/v1/chunks/p1#0".replace("#", "%23")).json()
    assert chunk["doc_id"] == "p1" and chunk["title"] == "Ada Lovelace"
    assert "born in London in 1815" in chunk["text"]

    for missing in ("/v1/chunks/p9%230", "/v1/runs/bench/full/questions/q9", "/v1/runs/bench",
                    "/v1/runs/nope", "/v1/runs/~"):
        assert client.get(missing).status_code == 404, missing
    assert "text/html" in client.get("/viewer").headers["content-type"]


def test_run_ids_cannot_leave_the_root(runs: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret"
    shutil.copytree(runs / "bench" / "full", outside)
    (runs / "link").symlink_to(outside, target_is_directory=True)
    app = _app(runs / "bench", None)
    ids = [r["id"] for r in TestClient(app).get("/v1/runs").json()["runs"]]
    assert ids == ["a2rag", "full"]
    # Raw paths (httpx would normalise "..") against a real server on 127.0.0.1.
    with _serve(app) as base:
        for run_id in ("..", "../secret", "%2e%2e/secret", "full/../../secret", "..%2fsecret",
                       "/tmp", "%2ftmp", "..\\secret", "../runs/bench/full", "../link"):
            status = _raw_get(base, f"/v1/runs/{run_id}")
            assert status == 404, (run_id, status)
        assert _raw_get(base, "/v1/runs/full/questions/..%2f..%2fsecret") == 404
        assert _raw_get(base, "/v1/chunks/p1%230") == 503  # no index given
    assert TestClient(_app(runs, None)).get("/v1/runs/link").status_code == 404


def test_question_ids_holding_a_slash_open(runs: Path, tmp_path: Path) -> None:
    """Datasets name questions ``2wiki/123``; such an id opens, plain or encoded, even one
    holding ``/questions/``, in a run whose own id holds a slash."""
    folder = runs / "bench" / "slashed"
    folder.mkdir()
    ids = {"q1": "2wiki/q1", "q2": "hotpot/questions/q2", "q3": "q3"}
    lines = (runs / "bench" / "full" / "predictions.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    for record in records:
        record["question_id"] = ids[record["question_id"]]
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    with _serve(_app(runs, tmp_path / "idx")) as base:
        listed = httpx.get(f"{base}/v1/runs/bench/slashed").json()
        assert sorted(q["question_id"] for q in listed["questions"]) == sorted(ids.values())
        for question in ids.values():
            for sent in (question, quote(question, safe="")):  # as typed, as the page sends
                got = httpx.get(f"{base}/v1/runs/bench/slashed/questions/{sent}")
                assert got.status_code == 200, (sent, got.text)
                assert got.json()["record"]["question_id"] == question
                assert got.json()["run_id"] == "bench/slashed"
        assert httpx.get(f"{base}/v1/runs/bench/slashed/questions/2wiki/q9").status_code == 404
        assert httpx.get(f"{base}/v1/runs/bench/nope/questions/2wiki/q1").status_code == 404
        assert _raw_get(base, "/v1/runs/bench/slashed/questions/..%2f..%2fsecret") == 404


def test_auth_dependency_guards_every_route(runs: Path, tmp_path: Path) -> None:
    client = TestClient(_app(runs, tmp_path / "idx", _require_key))
    paths = ["/v1/runs", "/v1/runs/bench/full", "/v1/runs/bench/full/questions/q1",
             "/v1/chunks/p1%230"]
    for path in paths:
        assert client.get(path).status_code == 401, path
        assert client.get(path, headers={"X-API-Key": "wrong"}).status_code == 401, path
        assert client.get(path, params={"api_key": KEY}).status_code == 200, path
        assert client.get(path, headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
    # the page and its files hold no data, like the app's: served without a key, which
    # the page then sends from the tab's session storage, never in a URL
    for path in ("/viewer", "/viewer/viewer.js", "/viewer/viewer.css"):
        page = client.get(path)
        assert page.status_code == 200 and "bench/full" not in page.text, path
    assert "api_key" not in client.get("/viewer/viewer.js").text
    assert client.get("/viewer/secret.txt").status_code == 404


@pytest.fixture()
def chromium(chromium_binary: str) -> str:
    return chromium_binary


@pytest.mark.browser
def test_page_renders_a_question_in_headless_chromium(runs: Path, tmp_path: Path,
                                                      chromium: str) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    app = _app(runs, tmp_path / "idx", _require_key)  # the page sends the tab's key on
    shot = tmp_path / "question.png"
    with _serve(app) as base, playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 2000})
            page = context.new_page()
            page.set_default_timeout(20_000)
            page.goto(f"{base}/viewer")  # no key yet: the page asks for one
            page.wait_for_selector("#key-form:not([hidden])")
            page.fill("#key-input", KEY)
            page.press("#key-input", "Enter")
            page.wait_for_selector("body[data-ready='1']")
            list_dom = page.content()

            def dom(hash_: str) -> str:
                page.evaluate("document.body.removeAttribute('data-ready')")
                page.goto(f"{base}/viewer#{hash_}")
                page.wait_for_selector("body[data-ready='1']")
                return str(page.content())

            run_dom = dom("run=bench/a2rag")
            question_dom = dom("run=bench/full&q=q1&chunk=p1%230")
            page.wait_for_selector('.chunk-text[data-for="p1#0"] .title')
            question_dom = page.content()
            page.screenshot(path=str(shot), full_page=False)
        finally:
            browser.close()
    dom_ = question_dom
    assert 'data-ready="1"' in dom_, dom_[-2000:]
    assert "Where was Ada Lovelace born?" in dom_
    assert 'id="answer">London [p1#0]<' in dom_ and 'id="gold">London / London, England<' in dom_
    assert dom_.index('class="tool">keyword_search<') < dom_.index('class="tool">chunk_read<')
    assert "Looking for the passage." in dom_  # the step's reasoning
    assert "&quot;Lovelace&quot;" in dom_ or '"Lovelace"' in dom_  # its arguments
    assert 'data-chunk="p1#0"' in dom_  # snippets, chunks read and citations link to chunks
    assert 'id="citations"' in dom_ and "Ada Lovelace" in dom_
    opened = dom_[dom_.index('id="chunks-read"'):]  # the chunk's text, fetched by the page
    assert 'class="chunk-text" data-for="p1#0"' in opened and "born in London in 1815" in opened

    assert 'data-ready="1"' in run_dom and 'data-question="q3"' in run_dom
    assert "A2RAG control" in run_dom and "verified 100%" in run_dom
    assert 'data-ready="1"' in list_dom and "bench/full" in list_dom and "type: place" in list_dom

    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    image = pytest.importorskip("PIL.Image")
    with image.open(shot) as png:
        assert png.size == (1280, 2000)
        colours = png.convert("RGB").getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 50  # text, badges and panels, not a blank page


def _chromium(binary: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [binary, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
               f"--user-data-dir={tmp_path / 'chromium-profile'}",
               "--virtual-time-budget=5000", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


class _Server(uvicorn.Server):
    def install_signal_handlers(self) -> None:  # not in the main thread
        pass


def _serve(app: FastAPI) -> Any:
    from contextlib import contextmanager

    @contextmanager
    def serving() -> Iterator[str]:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        server = _Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        try:
            yield base
        finally:
            server.should_exit = True
            thread.join(10)

    return serving()


def _raw_get(base: str, path: str) -> int:
    """Status of a GET sent with ``path`` exactly as written (no client-side normalising)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
                     .encode())
        head = sock.recv(64).decode("latin-1")
    return int(head.split()[1])


def test_the_page_loads_its_own_script_and_style(runs: Path, tmp_path: Path) -> None:
    """No inline script or style: the app's Content-Security-Policy allows only files the
    server sends."""
    client = TestClient(_app(runs, tmp_path / "idx"))
    page = client.get("/viewer").text
    assert '<script src="/viewer/viewer.js">' in page and "<script>" not in page
    assert '<link rel="stylesheet" href="/viewer/viewer.css">' in page and "<style" not in page
    assert "function renderQuestion" in client.get("/viewer/viewer.js").text
    assert "--accent" in client.get("/viewer/viewer.css").text
