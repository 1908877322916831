"""The HTTP API: a real uvicorn server on 127.0.0.1, a real httpx client."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from conftest import LiveServer  # noqa: E402
from sleuth import Settings  # noqa: E402
from sleuth.errors import ConfigError  # noqa: E402
from sleuth.server.http import create_app  # noqa: E402
from sleuth.service.service import Service  # noqa: E402
from sleuth.testing.fake import call, reply  # noqa: E402

PEPYS = "pepys-diary-1660.md#0"
KEY = "secret-key-1"
AUTH = {"Authorization": f"Bearer {KEY}"}


class Running:
    """``service``'s HTTP API on 127.0.0.1 and a client holding the test key."""

    def __init__(self, service: Service, auth: bool = True) -> None:
        self.service = service
        self.live = LiveServer(create_app(service, auth=auth))
        self.client = httpx.Client(base_url=self.live.url, headers=AUTH, timeout=60)

    def close(self) -> None:
        self.client.close()
        self.live.close()
        self.service.close()


def _settings(**serve: Any) -> Settings:
    return Settings.load(serve={"api_keys": {"tests": KEY}, **serve})


@pytest.fixture()
def api(sample_copy: Path) -> Iterator[httpx.Client]:
    running = Running(Service(sample_copy, _settings()))
    yield running.client
    running.close()


def test_every_route_needs_a_valid_key(api: httpx.Client) -> None:
    routes = [("GET", "/v1/status"), ("GET", "/v1/tools"), ("POST", "/v1/tools/search"),
              ("POST", "/v1/ask"), ("POST", "/v1/ask/stream"), ("GET", "/v1/sessions"),
              ("GET", "/v1/sessions/x"), ("DELETE", "/v1/sessions/x"),
              ("POST", "/v1/documents"), ("DELETE", "/v1/documents/x")]
    for method, path in routes:
        missing = api.request(method, path, headers={"Authorization": ""})
        assert missing.status_code == 401, path
        assert "missing API key" in missing.json()["detail"]
        wrong = api.request(method, path, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.json()["detail"] == "invalid API key"
    for headers, params in (({"X-API-Key": KEY}, {}), ({}, {"api_key": KEY})):
        ok = api.get("/v1/status", headers={"Authorization": "", **headers}, params=params)
        assert ok.status_code == 200


def test_refuses_to_start_without_keys(sample_copy: Path) -> None:
    service = Service(sample_copy, Settings.load())
    with pytest.raises(ConfigError, match="--no-auth"):
        create_app(service)
    running = Running(service, auth=False)
    try:
        assert running.client.get("/v1/status", headers={"Authorization": ""}).status_code \
            == 200
    finally:
        running.close()


def test_status_tools_and_openapi(api: httpx.Client) -> None:
    from sleuth.tools import TOOLS

    status = api.get("/v1/status").json()
    assert status["documents"] == 3 and status["chunks"] > 0
    assert status["limits"]["max_top_k"] == 50 and "api_keys" not in status["limits"]
    tools = api.get("/v1/tools").json()
    assert [t["name"] for t in tools] == list(TOOLS)
    for row in tools:
        function = TOOLS[row["name"]].schema()["function"]
        assert row["description"] == function["description"]
        assert row["input_schema"] == function["parameters"]
    paths = api.get("/openapi.json").json()["paths"]
    # every tool has its own route and body schema; the route by any name, for tools
    # registered later, serves them but is not in the document, which cannot say its body
    assert {"/v1/status", "/v1/documents", "/v1/ask", "/v1/ask/stream",
            "/v1/sessions/{session_id}"} <= set(paths)
    assert {f"/v1/tools/{row['name']}" for row in tools} <= set(paths)
    assert "/v1/tools/{name}" not in paths
    assert api.post("/v1/tools/no_such_tool", json={}).status_code == 404


def _cli_data(cli: Any) -> dict[str, Any]:
    """The CLI's --json output less the fields it adds around the tool's data."""
    return {k: v for k, v in cli.json().items()
            if k not in ("tool", "arguments", "retrieved_tokens")}


def test_tool_results_equal_the_cli(api: httpx.Client, sleuth: Any, sample_copy: Path) -> None:
    got = api.post("/v1/tools/keyword_search", json={"keywords": ["Greatorex"], "top_k": 3})
    assert got.status_code == 200
    cli = sleuth("search", "keyword", "Greatorex", "--top-k", "3", "--index", str(sample_copy),
                 "--json")
    body = got.json()
    assert body["data"] == _cli_data(cli) and body["data"]["hits"]
    assert body["retrieved_tokens"] == cli.json()["retrieved_tokens"]
    assert "Greatorex" in body["text"]

    got = api.post("/v1/tools/chunk_read", json={"chunk_ids": [PEPYS], "adjacent": 1}).json()
    cli = sleuth("read", PEPYS, "--adjacent", "1", "--index", str(sample_copy), "--json")
    assert got["data"] == _cli_data(cli)
    assert got["retrieved_tokens"] == cli.json()["retrieved_tokens"]


@pytest.mark.parametrize(("name", "arguments", "status", "message"), [
    ("semantic_search", {"query": "x" * 2001}, 400, "at most 2000"),
    ("keyword_search", {"keywords": ["a"], "top_k": 51}, 400, "limit of 50"),
    ("search", {"queries": list("abcdef")}, 400, "at most 5"),
    ("web_search", {"query": "x"}, 404, "unknown tool 'web_search'"),
    ("keyword_search", {"keywords": ["a"], "top_k": 30}, 400, "top_k"),
    ("keyword_search", {"words": ["a"]}, 400, "invalid arguments for keyword_search"),
    ("chunk_read", {"chunk_ids": ["no-such-doc#7"]}, 200, ""),
])
def test_bad_tool_input_gets_a_4xx_with_a_message(api: httpx.Client, name: str,
                                                   arguments: dict[str, Any], status: int,
                                                   message: str) -> None:
    got = api.post(f"/v1/tools/{name}", json=arguments)
    assert got.status_code == status, got.text
    if status != 200:
        assert message in got.json()["detail"]


def test_body_and_json_errors(api: httpx.Client) -> None:
    big = api.post("/v1/tools/semantic_search", content=b"{" + b" " * 1_000_001 + b"}",
                   headers={"Content-Type": "application/json"})
    assert big.status_code == 413 and "over the limit" in big.json()["detail"]

    def chunked() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"query": "'
        for _ in range(200):
            yield b"x" * 10_000
        yield b'"}'

    streamed = api.post("/v1/tools/semantic_search", content=chunked(),
                        headers={"Content-Type": "application/json"})
    assert streamed.status_code == 413 and "over the limit" in streamed.json()["detail"]
    for route in ("/v1/documents", "/v1/ask"):
        assert api.post(route, content=chunked(), headers={"Content-Type":
                                                           "application/json"}).status_code == 413
    bad = api.post("/v1/tools/search", content=b"[1, 2", headers={"Content-Type":
                                                                  "application/json"})
    assert bad.status_code == 422 and bad.json()["detail"]
    assert api.post("/v1/ask", json={"agent": "full"}).status_code == 422
    assert "question" in api.post("/v1/ask", json={"question": "q" * 2001}).json()["detail"]
    unknown = api.post("/v1/ask", json={"question": "q", "agent": "nope"})
    assert unknown.status_code == 400 and "unknown agent 'nope'" in unknown.json()["detail"]


def test_ask_blocking_and_streaming(endpoint: Any, sample_copy: Path) -> None:
    script = [reply("The passages do not say what levers are."),
              call("keyword_search", keywords=["Greatorex"]),
              reply(f"Levers trade time for strength [{PEPYS}].")]
    server = endpoint(script + script)
    running = Running(Service(sample_copy, _settings()))
    try:
        with server:
            record = running.client.post("/v1/ask", json={"question": "levers?"}).json()
            assert record["answer"].startswith("Levers")
            # the default agent: its hybrid retrieval first, the answer from it that says
            # the passages do not say, then the model's own call
            assert [s["tool_name"] for s in record["trajectory"]] == [
                "hybrid_search", "answer_first", "keyword_search"]
            events = []
            with running.client.stream("POST", "/v1/ask/stream",
                                       json={"question": "levers?"}) as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                event = None
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        events.append((event, json.loads(line[6:])))
        # the retrieval made for the agent shows live too, then the model's own call; the
        # answer that said the passages do not say is a step, never the answer's tokens
        assert [e for e, _ in events if e not in ("token", "progress")] == [
            "step", "step", "step", "answer"]
        # before each model call, what it reads: the three of the script
        assert [e for e, _ in events].count("progress") == len(script)
        assert [d["tool_name"] for e, d in events if e == "step"] == [
            "hybrid_search", "answer_first", "keyword_search"]
        assert events[-1][1]["answer"] == record["answer"]
        # the answer's text arrived as it was written, in pieces, between step and answer
        tokens = [d["text"] for e, d in events if e == "token"]
        assert len(tokens) > 1 and "".join(tokens) == record["answer"]
        assert [e for e, _ in events if e != "progress"][3:-1] == ["token"] * len(tokens)
    finally:
        running.close()


def _events(client: httpx.Client, body: dict[str, Any]) -> list[tuple[str, Any]]:
    events, event = [], None
    with client.stream("POST", "/v1/ask/stream", json=body) as response:
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                events.append((event, json.loads(line[6:])))
    return events


@pytest.mark.parametrize(("agent", "action"), [({"token_budget": 100_000, "warn_ratio": 0.001},
                                                 "warn"),
                                                ({"token_budget": 1000}, "summarize")])
def test_the_stream_tells_context_budget_events(endpoint: Any, sample_copy: Path,
                                                agent: dict[str, Any], action: str) -> None:
    script = [call("search", queries=["Greatorex levers"]),
              call("summarize", notes="Greatorex explained levers.", keep_refs=[]),
              reply("Greatorex.\n\nRelevance: [turn1search1]=0.9")]
    server = endpoint(script)
    running = Running(Service(sample_copy, Settings.load(
        agent=agent, serve={"api_keys": {"tests": KEY}})))
    try:
        with server:
            events = _events(running.client, {"question": "levers?", "agent": "agenticrag"})
        context = [d for e, d in events if e == "context"]
        assert context, events
        first = context[0]
        assert first["action"] == action and set(first) == {"used", "budget", "percent",
                                                            "action"}
        assert first["budget"] == agent["token_budget"]
        assert first["percent"] == round(100 * first["used"] / first["budget"])
        kinds = [e for e, _ in events]
        assert kinds.index("context") > kinds.index("step")  # after the search that filled it
        assert kinds[-1] == "answer"
        # the tokens are the answer as recorded: without the Relevance line
        assert "".join(d["text"] for e, d in events if e == "token") == "Greatorex."
        assert events[-1][1]["answer"] == "Greatorex."
        recorded = events[-1][1]["context_events"]
        assert recorded[0]["event"] == ("warning" if action == "warn" else "summarize")
    finally:
        running.close()


def test_the_json_tool_protocol_streams_the_answer_string(endpoint: Any,
                                                          sample_copy: Path) -> None:
    """The local model's protocol: the reply is a JSON object, and the characters of its
    "answer" string are the tokens."""
    script = [reply(json.dumps({"tool": "keyword_search",
                                "arguments": {"keywords": ["Greatorex"]}})),
              reply(json.dumps({"answer": f"Greatorex showed \"levers\" [{PEPYS}]."}))]
    server = endpoint(script)
    running = Running(Service(sample_copy, Settings.load(
        llm={"tool_mode": "json"}, serve={"api_keys": {"tests": KEY}})))
    try:
        with server:
            events = _events(running.client, {"question": "levers?", "agent": "full"})
        tokens = [d["text"] for e, d in events if e == "token"]
        assert events[-1][0] == "answer" and len(tokens) > 1
        assert "".join(tokens) == events[-1][1]["answer"] == \
            f'Greatorex showed "levers" [{PEPYS}].'
    finally:
        running.close()


def test_an_abandoned_stream_stops_the_agent(endpoint: Any, sample_copy: Path) -> None:
    slow = call("keyword_search", keywords=["Pepys"])
    slow["delay"] = 1.0
    script = [call("keyword_search", keywords=["Greatorex"]), slow,
              call("keyword_search", keywords=["levers"]),
              call("keyword_search", keywords=["diary"]), reply("Done.")]
    server = endpoint(script)
    running = Running(Service(sample_copy, _settings()))
    try:
        with server:
            with running.client.stream("POST", "/v1/ask/stream",
                                       json={"question": "levers?"}) as response:
                steps = 0
                for line in response.iter_lines():
                    steps += line.startswith("event: step")
                    if steps == 2:  # the made retrieval, then the model's first call
                        break  # the client goes away after the model's first step
            time.sleep(3)  # the slow second turn ends; its step finds the client gone
        # (or sooner: what the second turn reads is said first, and may find it gone)
        assert len(server.requests) in (1, 2)
    finally:
        running.close()


def test_sessions(endpoint: Any, sample_copy: Path) -> None:
    server = endpoint([reply("First."), reply("Second.")])
    running = Running(Service(sample_copy, _settings()))
    api = running.client
    try:
        with server:
            for question in ("one?", "two?"):
                got = api.post("/v1/ask", json={"question": question, "agent": "agenticrag",
                                                "session": "s1"})
                assert got.status_code == 200, got.text
        listed = api.get("/v1/sessions").json()
        assert [(s["id"], s["turns"]) for s in listed] == [("s1", 2)]
        one = api.get("/v1/sessions/s1").json()
        assert [t["answer"] for t in one["turns"]] == ["First.", "Second."]
        found = api.post("/v1/tools/search", params={"session": "s1"},
                         json={"queries": ["Greatorex"]}).json()
        assert found["data"]
        assert api.delete("/v1/sessions/s1").json() == {"deleted": "s1"}
        for method in ("GET", "DELETE"):
            missing = api.request(method, "/v1/sessions/s1")
            assert missing.status_code == 404 and "no session 's1'" in missing.json()["detail"]
        assert api.get("/v1/sessions/bad%20id").status_code == 400
    finally:
        running.close()


def test_add_upload_and_delete_documents(sample_index: Path, tmp_path: Path) -> None:
    folder = tmp_path / "idx"
    shutil.copytree(sample_index, folder)
    note = tmp_path / "note.txt"
    note.write_text("Zanzibar lighthouse\nThe Zanzibar lighthouse keeper logged storms.")
    running = Running(Service(folder, _settings()))
    api = running.client
    try:
        added = api.post("/v1/documents", json={"paths": [str(note)]})
        assert added.status_code == 200, added.text
        assert added.json()["added"] == 1 and len(added.json()["added_ids"]) == 1
        uploaded = api.post("/v1/documents", files=[
            ("files", ("quokka.md", b"# Quokka\nThe quokka lives on Rottnest Island."))])
        assert uploaded.status_code == 200, uploaded.text
        [doc_id] = uploaded.json()["added_ids"]
        assert api.get("/v1/status").json()["documents"] == 5
        hits = api.post("/v1/tools/keyword_search", json={"keywords": ["quokka"]}).json()
        assert hits["data"]["hits"][0]["doc_id"] == doc_id
        gone = api.delete(f"/v1/documents/{doc_id}")
        assert gone.status_code == 200 and gone.json() == {"deleted": [doc_id]}
        assert api.get("/v1/status").json()["documents"] == 4
        missing = api.delete(f"/v1/documents/{doc_id}")
        assert missing.status_code == 404 and doc_id in missing.json()["detail"]
        nothing = api.post("/v1/documents", json={"paths": []})
        assert nothing.status_code == 400 and "paths" in nothing.json()["detail"]
        empty = api.post("/v1/documents", json={"paths": [""]})  # not the server's folder
        assert empty.status_code == 400 and "empty path" in empty.json()["detail"]
        assert api.get("/v1/status").json()["documents"] == 4
        absent = api.post("/v1/documents", json={"paths": [str(tmp_path / "absent")]})
        assert absent.status_code == 400 and absent.json()["detail"]
    finally:
        running.close()


def test_upload_with_a_long_name_and_server_io_errors(sample_index: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "idx"
    shutil.copytree(sample_index, folder)
    running = Running(Service(folder, _settings()))
    api = running.client
    try:
        name = "kakapo-" + "\u00e9" * 150 + ".md"
        assert len(name.encode()) > 300  # over the 255-byte limit of file names
        body = b"# Kakapo\nThe kakapo is a flightless parrot."
        uploaded = api.post("/v1/documents", files=[("files", (name, body))])
        assert uploaded.status_code == 200, uploaded.text
        [doc_id] = uploaded.json()["added_ids"]
        assert doc_id.startswith("kakapo-\u00e9") and doc_id.endswith(".md")
        assert len(doc_id.encode()) <= 120
        hits = api.post("/v1/tools/keyword_search", json={"keywords": ["kakapo"]}).json()
        assert hits["data"]["hits"][0]["doc_id"] == doc_id
        again = api.post("/v1/documents", files=[("files", (name, body))]).json()
        assert again["unchanged"] == 1 and again["added_ids"] == []  # the same saved name
        other = api.post("/v1/documents", files=[("files", (name[:-3] + "x.md", body))])
        assert other.json()["added_ids"] != [doc_id]  # a shortened name stays unique
        # a file where the uploads folder should be: a JSON 500, the connection stays usable
        shutil.rmtree(folder / "uploads")
        (folder / "uploads").write_text("not a folder")
        failed = api.post("/v1/documents", files=[("files", ("note.md", body))])
        assert failed.status_code == 500
        assert failed.json()["detail"].startswith("cannot save upload 'note.md'")

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise OSError(28, "No space left on device", str(folder))

        monkeypatch.setattr(Service, "status", broken)
        status = api.get("/v1/status")
        assert status.status_code == 500
        assert status.json() == {"detail": "server I/O error: No space left on device"}
        assert api.get("/v1/tools").status_code == 200
    finally:
        running.close()


def test_the_app_serves_eval_runs_and_the_viewer(sample_copy: Path, tmp_path: Path) -> None:
    run = tmp_path / "runs" / "full"
    run.mkdir(parents=True)
    record = {"question_id": "q1", "question": "What did Greatorex show?", "answer": "levers",
              "gold_answer": "levers", "agent": "full", "trajectory": [], "llm_calls": 1,
              "seconds": 0.5, "error": None}
    (run / "predictions.jsonl").write_text(json.dumps(record) + "\n")
    running = Running(Service(sample_copy, _settings(runs=str(tmp_path / "runs"))))
    try:
        runs = running.client.get("/v1/runs").json()["runs"]
        assert [r["id"] for r in runs] == ["full"] and runs[0]["n"] == 1
        got = running.client.get("/v1/runs/full/questions/q1").json()["record"]
        assert got["answer"] == "levers"
        chunk = running.client.get(f"/v1/chunks/{PEPYS.replace('#', '%23')}").json()
        assert chunk["doc_id"] == "pepys-diary-1660.md" and chunk["text"]
        page = running.client.get("/viewer")
        assert page.status_code == 200 and "<html" in page.text.lower()
        anonymous = httpx.get(f"{running.client.base_url}/v1/runs")
        assert anonymous.status_code == 401  # the viewer's data needs a key like the rest
        assert httpx.get(f"{running.client.base_url}/viewer?api_key={KEY}").status_code == 200
    finally:
        running.close()
