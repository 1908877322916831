"""A hostile (or merely broken) language model, and text that is no text, tried on every face a
tenant reaches: the model's errors, its host and the credentials in its URL never reach a
tenant (a line naming the request, 502 or 503; the detail, credentials masked, in the
operator's log), and a lone surrogate in what a client sends is a 400, not a 500.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.streamable_http import (  # noqa: E402
    create_mcp_http_client,
    streamable_http_client,
)

from conftest import LiveServer  # noqa: E402
from sleuth import Index, Settings  # noqa: E402
from sleuth.server.http import create_app  # noqa: E402
from sleuth.server.mcp import build_mcp, http_app  # noqa: E402
from sleuth.service.service import Service  # noqa: E402
from sleuth.testing.fake import FakeLLMServer, error, reply  # noqa: E402

KEYS = {"root": "k-root", "acme-staff": {"key": "k-staff", "collection": "acme"}}
TENANT, ADMIN = "k-staff", "k-root"
USER, PASSWORD = "svc-sleuth", "hunter2-Pa55"
LLM_KEY = "sk-live-abc123DEF456ghi789jkl"
# what OpenAI and the proxies in front of models say about themselves when they fail
LEAK = (f"Incorrect API key provided: {LLM_KEY}. You can find your API key at "
        "https://platform.openai.com/account/api-keys. (organization org-XYZ42corp, "
        "upstream internal-llm.corp:8443)")
PROXY_PAGE = ("<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway"
              "</h1><p>upstream internal-llm.corp:8443 (10.2.3.4) refused; Authorization: "
              f"Bearer {LLM_KEY}</p><hr>nginx/1.24.0</body></html>")
QUESTION = "When does Acme launch Zephyrine?"
FACES = ("ask", "ask/stream", "chat", "chat stream", "mcp")


def _settings(base_url: str) -> Settings:
    return Settings.load(serve={"api_keys": KEYS}, llm={
        "base_url": base_url, "model": "fake-model", "api_key": LLM_KEY, "max_retries": 0,
        "timeout": 5})


def _with_userinfo(url: str) -> str:
    return url.replace("http://", f"http://{USER}:{PASSWORD}@")


@pytest.fixture()
def index(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "roadmap.md").write_text("# Roadmap\n\nAcme launches Zephyrine in May.\n")
    with Index.open(tmp_path / "idx", settings=Settings.load(), create=True) as index:
        index.add([docs / "roadmap.md"], collection="acme")
    return tmp_path / "idx"


class Answer(NamedTuple):
    """What a face answered: the HTTP status (MCP: 1 for an error result, else 0), the
    headers, the body (MCP: the result's text) and the X-Request-Id."""

    status: int
    headers: dict[str, str]
    body: str
    rid: str

    @property
    def text(self) -> str:
        """Everything the client received, headers and body."""
        return f"{self.headers}\n{self.body}"


class Faces:
    """The HTTP API and the MCP server (streamable HTTP) of one service, live."""

    def __init__(self, index: Path, settings: Settings, *, mcp: bool = True) -> None:
        self.service = Service(index, settings)
        self.http = LiveServer(create_app(self.service))
        self.mcp = LiveServer(http_app(self.service)) if mcp else None

    def client(self, key: str) -> httpx.Client:
        return httpx.Client(base_url=self.http.url, timeout=60,
                            headers={"Authorization": f"Bearer {key}"})

    def ask(self, face: str, key: str) -> Answer:
        """What asking :data:`QUESTION` on ``face`` with ``key`` is answered."""
        if face == "mcp":
            return self.mcp_ask(key, {"question": QUESTION, "agent": "direct"})
        with self.client(key) as client:
            if face.startswith("ask"):
                body: dict[str, Any] = {"question": QUESTION, "agent": "direct"}
            else:
                body = {"model": "sleuth-direct", "stream": face.endswith("stream"),
                        "messages": [{"role": "user", "content": QUESTION}]}
            path = "/v1/chat/completions" if face.startswith("chat") else f"/v1/{face}"
            answer = client.post(path, json=body)
        return Answer(answer.status_code, dict(answer.headers), answer.text,
                      answer.headers.get("x-request-id", ""))

    def mcp_ask(self, key: str, arguments: dict[str, Any]) -> Answer:
        assert self.mcp is not None

        async def main(url: str) -> Any:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
            async with Client(streamable_http_client(url, http_client=http)) as client:
                return await client.call_tool("ask", arguments)

        got = anyio.run(main, f"{self.mcp.url}/mcp")
        return Answer(1 if got.is_error else 0, {}, got.content[0].text, "")

    def close(self) -> None:
        if self.mcp is not None:
            self.mcp.close()
        self.http.close()
        self.service.close()


@pytest.fixture()
def faces(index: Path) -> Iterator[Any]:
    opened: list[Any] = []

    def start(base_url: str) -> Faces:
        running = Faces(index, _settings(base_url))
        opened.append(running)
        return running

    yield start
    for running in opened:
        running.close()


def _error_said(face: str, answer: Answer) -> tuple[int | None, str]:
    """(the HTTP status the failure was given, None where a stream that began cannot say
    it; its message) of an answer on ``face``."""
    if face == "ask/stream":
        assert answer.status == 200 and "event: error" in answer.body, answer.body
        event = json.loads(answer.body.split("event: error\ndata: ", 1)[1].split("\n")[0])
        return int(event["status"]), str(event["detail"])
    if face == "chat stream" and answer.status == 200:
        (line,) = [line for line in answer.body.splitlines()
                   if line.startswith('data: {"error"')]
        return None, str(json.loads(line.removeprefix("data: "))["error"]["message"])
    if face.startswith("chat"):
        return answer.status, json.loads(answer.body)["error"]["message"]
    return answer.status, json.loads(answer.body)["detail"]


def _leaks(text: str, llm: str) -> list[str]:
    """What of the model's endpoint and its failure ``text`` gives away."""
    host_port = llm.split("://", 1)[1].split("/", 1)[0]
    secrets = [LLM_KEY, "sk-live", "org-XYZ42corp", "internal-llm", "10.2.3.4", USER,
               PASSWORD, host_port, "Incorrect API key", "nginx"]
    return [s for s in secrets if s in text]


@pytest.mark.parametrize("upstream", [error(401, LEAK), error(400, LEAK), error(500, LEAK),
                                      error(502, body=PROXY_PAGE)],
                         ids=["401", "400", "500", "proxy-page"])
def test_the_models_errors_reach_a_tenant_as_a_line_naming_the_request(
        upstream: Any, faces: Any, caplog: pytest.LogCaptureFixture) -> None:
    with FakeLLMServer([upstream] * 10) as llm:
        api = faces(_with_userinfo(llm.base_url))
        for face in FACES:
            caplog.clear()
            with caplog.at_level(logging.INFO, logger="sleuth"):
                answer = api.ask(face, TENANT)
            assert not _leaks(answer.text, llm.base_url), (face, answer.text)
            logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "sleuth")
            rid = answer.rid
            if face == "mcp":
                assert answer.status == 1 and answer.body.startswith(
                    "the language model failed to answer (request id "), answer.body
                rid = answer.body.split("request id ", 1)[1].split(")", 1)[0]
            else:
                assert rid, (face, answer.text)
                said, message = _error_said(face, answer)
                assert said in (502, None) and message == (
                    f"the language model failed to answer (request id {rid}); the "
                    "operator's log has the details"), (face, said, message)
            # the operator's log: the request, who asked, what the endpoint said; no secret
            assert f"request {rid} (acme-staff)" in logged, (face, logged)
            assert f"HTTP {upstream['status']}" in logged and "***@" in logged, logged
            assert "internal-llm.corp:8443" in logged  # the detail is kept for the operator
            assert LLM_KEY not in logged and PASSWORD not in logged, logged


def test_an_admin_key_is_told_the_detail_without_credentials(faces: Any) -> None:
    with FakeLLMServer([error(401, LEAK)] * 2) as llm:
        api = faces(_with_userinfo(llm.base_url))
        answer = api.ask("ask", ADMIN)
    detail = json.loads(answer.body)["detail"]
    assert answer.status == 502 and detail.startswith(
        f"the language model failed to answer (request id {answer.rid}): ")
    assert "rejected the API key (HTTP 401: Incorrect API key provided: ***." in detail
    assert f"http://***@{llm.base_url.split('://', 1)[1]}" in detail
    assert LLM_KEY not in detail and PASSWORD not in detail and USER not in detail


def test_a_model_that_cannot_be_reached_is_a_503_with_retry_after(
        faces: Any, caplog: pytest.LogCaptureFixture) -> None:
    llm = FakeLLMServer([])
    url = _with_userinfo(llm.base_url)
    llm.close()  # nothing listens there now: connections are refused
    api = faces(url)
    for face in FACES:
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="sleuth"):
            answer = api.ask(face, TENANT)
        assert not _leaks(answer.text, url), (face, answer.text)
        logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "sleuth")
        if face == "mcp":
            assert answer.status == 1 and answer.body.startswith(
                "the language model cannot be reached just now (request id "), answer.body
            continue
        said, message = _error_said(face, answer)
        assert said in (503, None) and message.startswith(
            f"the language model cannot be reached just now (request id {answer.rid}); try "
            "again in "), (face, message)
        assert message.endswith(" s; the operator's log has the details"), message
        if face in ("ask", "chat"):
            assert int(answer.headers["retry-after"]) >= 1
        assert f"request {answer.rid} (acme-staff)" in logged, logged
        assert "http://***@" in logged and PASSWORD not in logged, logged


LONE = "When does Acme launch \ud800 Zephyrine?"


@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/v1/ask", {"question": LONE}),
    ("POST", "/v1/ask", {"question": LONE, "agent": "direct"}),
    ("POST", "/v1/ask/stream", {"question": LONE, "agent": "direct"}),
    ("POST", "/v1/chat/completions", {"model": "sleuth-direct",
                                      "messages": [{"role": "user", "content": LONE}]}),
    ("POST", "/v1/chat/completions", {"model": "sleuth-direct", "messages": [
        {"role": "user", "content": LONE}, {"role": "assistant", "content": "In May."},
        {"role": "user", "content": QUESTION}]}),
    ("PATCH", "/v1/sessions/s1", {"title": LONE}),
    ("POST", "/v1/tools/keyword_search", {"keywords": [LONE]}),
], ids=["ask", "ask-direct", "ask-stream", "chat", "chat-history", "rename", "tool"])
def test_a_lone_surrogate_is_a_bad_request(method: str, path: str, body: Any, index: Path
                                           ) -> None:
    with FakeLLMServer([reply("In May.")] * 4) as llm:
        api = Faces(index, _settings(llm.base_url), mcp=False)
        try:
            with api.client(TENANT) as client:
                assert client.post("/v1/ask", json={"question": QUESTION, "agent": "direct",
                                                    "session": "s1"}).status_code == 200
                sent = json.dumps(body).encode()  # "\ud800": JSON's escape of the surrogate
                assert b"\\ud800" in sent
                answer = client.request(method, path, content=sent,
                                        headers={"Content-Type": "application/json"})
                paired = client.post("/v1/ask", content=json.dumps(
                    {"question": "When does Acme launch Zephyrine? \U0001F680",
                     "agent": "direct"}).encode(), headers={"Content-Type": "application/json"})
        finally:
            api.close()
    assert answer.status_code == 400, answer.text
    assert "lone surrogate" in answer.text
    assert paired.status_code == 200 and paired.json()["answer"] == "In May."  # a pair is text


def test_mcp_ask_refuses_what_its_schema_does(index: Path) -> None:
    with FakeLLMServer([reply("In May.")] * 2) as llm:
        service = Service(index, _settings(llm.base_url))

        async def main() -> list[Any]:
            async with Client(build_mcp(service)) as client:
                return [await client.call_tool("ask", arguments) for arguments in (
                    {"question": QUESTION, "session": 5},
                    {"question": QUESTION, "session": ["s1"]},
                    {"question": QUESTION, "agent": 7},
                    {"question": LONE},
                    {"question": QUESTION, "session": "s1", "agent": "direct"})]

        try:
            *refused, answered = anyio.run(main)
        finally:
            service.close()
    said = [r.content[0].text for r in refused]
    assert all(r.is_error for r in refused), said
    assert said[0].startswith("invalid arguments for ask: session: ") and "5" in said[0]
    assert said[1].startswith("invalid arguments for ask: session: ")
    assert said[2].startswith("invalid arguments for ask: agent: ")
    assert "lone surrogate" in said[3]
    assert not answered.is_error and answered.content[0].text == "In May."
