"""The LLM layer over real HTTP: OpenAIClient (openai SDK) against the scripted FakeLLMServer."""

from __future__ import annotations

import json
import math
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from sleuth.errors import ConfigError, EmbedderError, LLMError
from sleuth.llm import LLM, ChatResponse, OpenAIClient, ToolCall, Usage, cost, embed_texts
from sleuth.llm.pricing import price_for
from sleuth.testing.fake import FakeLLMServer, call, calls, error, fake_embedding, raw_call, reply

USER: Any = [{"role": "user", "content": "When is high tide in Brest?"}]
TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Keyword search.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    }
]
FAST_RETRY = 0.01  # seconds the fake asks the SDK to wait between retries


def client(server: FakeLLMServer, **kwargs: Any) -> OpenAIClient:
    kwargs.setdefault("timeout", 5.0)
    kwargs.setdefault("max_retries", 2)
    return OpenAIClient("fake-model", server.base_url, **kwargs)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer([reply("High tide is at 06:12.")]) as srv:
        yield srv


# --------------------------------------------------------------------------- chat mapping


def test_plain_reply(server: FakeLLMServer) -> None:
    llm = client(server)
    assert isinstance(llm, LLM)
    response = llm.chat(USER)
    assert response.content == "High tide is at 06:12."
    assert response.tool_calls == ()
    assert response.finish_reason == "stop"
    assert response.model == "fake-model"
    assert response.reasoning is None
    assert response.to_message() == {"role": "assistant", "content": "High tide is at 06:12."}
    assert server.remaining == 0
    assert server.requests[0]["messages"] == USER


def test_tool_calls_keep_raw_arguments_text() -> None:
    script = [
        call("search", _content="Let me look.", query="tide Brest", name="x"),
        raw_call("search", '{"query": "tide", '),  # malformed JSON, kept verbatim
        reply("done", reasoning="I found it."),
    ]
    with FakeLLMServer(script) as srv:
        llm = client(srv)
        first = llm.chat(USER, TOOLS)
        assert first.content == "Let me look."
        assert first.finish_reason == "tool_calls"
        assert first.tool_calls == (
            ToolCall("call_1", "search", '{"query": "tide Brest", "name": "x"}'),
        )
        history = [*USER, first.to_message()]
        history.append({"role": "tool", "tool_call_id": "call_1", "content": "[1] 06:12"})
        second = llm.chat(history, TOOLS)
        assert second.tool_calls == (ToolCall("call_2", "search", '{"query": "tide", '),)
        assert second.content is None
        third = llm.chat(history, TOOLS)
        assert third.reasoning == "I found it."
        # the assistant message went over the wire in OpenAI format
        sent = srv.requests[1]["messages"][1]
        assert sent["role"] == "assistant"
        assert sent["tool_calls"][0] == {
            "id": "call_1",
            "type": "function",
            "function": {"name": "search", "arguments": '{"query": "tide Brest", "name": "x"}'},
        }


def test_parallel_tool_calls() -> None:
    with FakeLLMServer([calls(("search", {"query": "a"}), ("read", {"id": 3}))]) as srv:
        response = client(srv).chat(USER, TOOLS, parallel_tool_calls=True, tool_choice="auto")
    assert [(tc.id, tc.name, json.loads(tc.arguments)) for tc in response.tool_calls] == [
        ("call_1", "search", {"query": "a"}),
        ("call_2", "read", {"id": 3}),
    ]
    message = response.to_message()
    assert message["content"] is None
    assert [tc["id"] for tc in message["tool_calls"]] == ["call_1", "call_2"]
    assert srv.requests[0]["parallel_tool_calls"] is True
    assert srv.requests[0]["tool_choice"] == "auto"


def test_usage_mapping_and_missing_usage() -> None:
    with FakeLLMServer([reply("x" * 40), {"content": "no usage", "usage": None}]) as srv:
        llm = client(srv)
        first = llm.chat(USER)
        second = llm.chat(USER)
    expected_prompt = len(json.dumps(USER, ensure_ascii=False, sort_keys=True)) // 4
    assert first.usage == Usage(prompt_tokens=expected_prompt, completion_tokens=10)
    assert first.usage.total_tokens == expected_prompt + 10
    assert second.usage == Usage(0, 0)


def test_options_passed_only_when_set() -> None:
    with FakeLLMServer([reply("a"), reply("b")]) as srv:
        client(srv).chat(USER, tool_choice="required")  # no tools: no tool options sent
        tuned = client(
            srv,
            temperature=0.2,
            max_tokens=256,
            reasoning_effort="low",
            extra_body={"top_k": 5},
        )
        tuned.chat(USER, TOOLS)
    plain, tuned_body = srv.requests
    for key in ("temperature", "max_tokens", "reasoning_effort", "tools", "tool_choice"):
        assert key not in plain
    assert "parallel_tool_calls" not in plain
    assert tuned_body["temperature"] == 0.2
    assert tuned_body["max_tokens"] == 256
    assert tuned_body["reasoning_effort"] == "low"
    assert tuned_body["top_k"] == 5
    assert tuned_body["tools"] == TOOLS
    assert "tool_choice" not in tuned_body


def test_chat_response_to_message_without_anything() -> None:
    empty = ChatResponse(content=None, tool_calls=(), usage=Usage(), model="m")
    assert empty.to_message() == {"role": "assistant", "content": ""}


# --------------------------------------------------------------------------- retries & errors


def test_two_500s_then_success_with_sdk_default_backoff() -> None:
    with FakeLLMServer([error(500, "boom"), error(500, "boom"), reply("ok")]) as srv:
        start = time.monotonic()
        response = client(srv, max_retries=2).chat(USER)
        elapsed = time.monotonic() - start
    assert response.content == "ok"
    assert len(srv.requests) == 3
    # SDK backoff: 0.5 s then 1 s, each minus up to 25 % jitter
    assert 0.7 < elapsed < 3.0


def test_retry_after_from_server_makes_retries_fast() -> None:
    script = [error(503, "busy"), error(429, "slow down"), reply("ok")]
    with FakeLLMServer(script, retry_after=FAST_RETRY) as srv:
        start = time.monotonic()
        assert client(srv, max_retries=2).chat(USER).content == "ok"
        assert time.monotonic() - start < 0.5


def test_persistent_500_raises_one_line_llm_error() -> None:
    with FakeLLMServer([error(500, "boom")] * 3, retry_after=FAST_RETRY) as srv:
        with pytest.raises(LLMError) as info:
            client(srv, max_retries=2).chat(USER)
        assert len(srv.requests) == 3
    message = str(info.value)
    assert "\n" not in message
    assert (
        message == f"the LLM endpoint at {srv.base_url} failed with HTTP 500 after 3 attempts: boom"
    )
    assert isinstance(info.value.__cause__, openai.InternalServerError)


def test_connection_refused_mentions_base_url_setting() -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    llm = OpenAIClient("m", base_url, timeout=1.0, max_retries=1)
    start = time.monotonic()
    with pytest.raises(LLMError) as info:
        llm.chat(USER)
    assert time.monotonic() - start < 2.0
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"cannot reach the LLM endpoint at {base_url} after 2 attempts (")
    assert "SLEUTH_BASE_URL" in message


def test_timeout_raises_clear_error() -> None:
    with (
        FakeLLMServer([{**reply("late"), "delay": 1.0}]) as srv,
        pytest.raises(LLMError) as info,
    ):
        client(srv, timeout=0.2, max_retries=0).chat(USER)
    message = str(info.value)
    assert "did not answer within 0.2s" in message
    assert "SLEUTH_BASE_URL" in message


def test_wrong_api_key_mentions_api_key_setting() -> None:
    with FakeLLMServer([reply("never")], api_key="sk-right") as srv:
        with pytest.raises(LLMError) as info:
            client(srv, api_key="sk-wrong").chat(USER)
        assert srv.remaining == 1  # rejected before the script, and not retried
        assert client(srv, api_key="sk-right").chat(USER).content == "never"
    assert "rejected the API key (HTTP 401" in str(info.value)
    assert "check SLEUTH_API_KEY" in str(info.value)


@pytest.mark.parametrize(
    ("status", "needles"),
    [
        (403, ["HTTP 403", "SLEUTH_API_KEY"]),
        (404, ["model 'fake-model'", "HTTP 404", "SLEUTH_MODEL", "SLEUTH_BASE_URL"]),
        (400, ["rejected the request (HTTP 400): context too long"]),
        (422, ["rejected the request (HTTP 422): context too long"]),
    ],
)
def test_client_errors_fail_at_once_with_hints(status: int, needles: list[str]) -> None:
    with FakeLLMServer([error(status, "context too long")]) as srv:
        with pytest.raises(LLMError) as info:
            client(srv, max_retries=4).chat(USER)
        assert len(srv.requests) == 1
    for needle in needles:
        assert needle in str(info.value)


def test_exhausted_script_fails_fast_and_clearly() -> None:
    with FakeLLMServer([reply("one")]) as srv:
        llm = client(srv, max_retries=4)
        llm.chat(USER)
        start = time.monotonic()
        with pytest.raises(LLMError, match="fake LLM script exhausted after 1 turns"):
            llm.chat(USER)
        assert time.monotonic() - start < 0.5
        assert len(srv.requests) == 2  # not retried


def test_config_errors() -> None:
    with pytest.raises(ConfigError, match="SLEUTH_BASE_URL"):
        OpenAIClient("m", "localhost:8000/v1")
    with pytest.raises(ConfigError, match="SLEUTH_MODEL"):
        OpenAIClient("", "http://localhost:8000/v1")
    with pytest.raises(ConfigError):
        OpenAIClient("m", "http://localhost:8000/v1", max_retries=-1)


# --------------------------------------------------------------------------- embeddings


def test_embeddings_order_shape_and_batching() -> None:
    texts = [f"tide table number {i}" for i in range(7)] + ["tide table number 0"]
    with FakeLLMServer([], model="fake-embed") as srv:
        llm = client(srv)
        vectors = llm.embed(texts, "fake-embed", batch_size=3)
        assert len(srv.embedding_requests) == 3
        assert srv.embedding_requests[0]["encoding_format"] == "float"
        assert embed_texts(srv.base_url, None, "fake-embed", texts[:2]) == vectors[:2]
        assert llm.embed([]) == []
    assert len(vectors) == len(texts)
    assert all(len(v) == 64 for v in vectors)
    assert vectors == [fake_embedding(t) for t in texts]  # input order preserved
    assert vectors[0] == vectors[-1]
    assert all(math.isclose(sum(x * x for x in v), 1.0) for v in vectors)


def test_embeddings_base64_via_sdk_default() -> None:
    with FakeLLMServer([]) as srv:
        sdk = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        result = sdk.embeddings.create(model="e", input=["alpha beta", "gamma"], dimensions=16)
    assert [d.index for d in result.data] == [0, 1]
    for item, text in zip(result.data, ["alpha beta", "gamma"], strict=True):
        assert item.embedding == pytest.approx(fake_embedding(text, 16), rel=1e-6)


def test_embedding_errors_map_to_embedder_error() -> None:
    with (
        FakeLLMServer([], api_key="k") as srv,
        pytest.raises(EmbedderError, match="SLEUTH_API_KEY"),
    ):
        embed_texts(srv.base_url, "bad", "e", ["x"], max_retries=0)


# --------------------------------------------------------------------------- the fake server


def test_fake_validates_requests_like_a_server(server: FakeLLMServer) -> None:
    url = server.base_url + "/chat/completions"
    bad_json = httpx.post(url, content=b"{not json", headers={"Content-Type": "application/json"})
    assert bad_json.status_code == 400
    assert "not valid JSON" in bad_json.json()["error"]["message"]
    no_messages = httpx.post(url, json={"model": "m"})
    assert no_messages.status_code == 400
    assert no_messages.json()["error"]["type"] == "invalid_request_error"
    assert httpx.post(url, json={"messages": USER}).status_code == 400
    assert httpx.post(server.base_url + "/nope", json={}).status_code == 404
    assert server.remaining == 1  # invalid requests consume no turn
    models = openai.OpenAI(base_url=server.base_url, api_key="x").models.list()
    assert [m.id for m in models.data] == ["fake-model"]


def test_fake_rejects_bad_script_turns() -> None:
    with pytest.raises(ValueError, match="unknown keys"):
        FakeLLMServer([{"contents": "typo"}])
    with pytest.raises(ValueError, match="needs 'content'"):
        FakeLLMServer([{}])
    with pytest.raises(ValueError, match="status"):
        FakeLLMServer([{"status": 200}])


def test_fake_streams_in_openai_format() -> None:
    script = [reply("High tide at six."), calls(("search", {"q": "a"}), ("read", {"id": 1}))]
    with FakeLLMServer(script) as srv:
        sdk = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        stream = sdk.chat.completions.create(
            model="m", messages=USER, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "High tide at six."
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 4
        with sdk.chat.completions.stream(model="m", messages=USER, tools=TOOLS) as events:
            final = events.get_final_completion()
    tool_calls = final.choices[0].message.tool_calls or []
    assert [(tc.id, tc.function.name, tc.function.arguments) for tc in tool_calls] == [
        ("call_1", "search", '{"q": "a"}'),
        ("call_2", "read", '{"id": 1}'),
    ]
    assert final.choices[0].finish_reason == "tool_calls"


def test_fake_is_thread_safe() -> None:
    n = 12
    with FakeLLMServer([reply(f"answer {i}") for i in range(n)]) as srv:
        llm = client(srv)
        results: list[str | None] = []
        lock = threading.Lock()

        def ask() -> None:
            content = llm.chat(USER).content
            with lock:
                results.append(content)

        threads = [threading.Thread(target=ask) for _ in range(n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=5)
        assert srv.remaining == 0
    assert sorted(results, key=str) == sorted((f"answer {i}" for i in range(n)), key=str)


def test_fake_cli_serves_a_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([reply("from the CLI")]), encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth.testing.fake", "--script", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        base_url = line.split(" at ", 1)[1].split()[0]
        llm = OpenAIClient("m", base_url, timeout=2.0, max_retries=0)
        assert llm.chat(USER).content == "from the CLI"
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=5)
    assert "Warning" not in stderr


# --------------------------------------------------------------------------- pricing


def test_pricing_exact_prefix_unknown_and_override() -> None:
    million = Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000)
    assert cost("gpt-4o", million) == pytest.approx(12.5)
    assert cost("gpt-4o-mini-2024-07-18", million) == pytest.approx(0.75)
    assert cost("gpt-4.1-nano-2025-04-14", million) == pytest.approx(0.5)
    assert cost("openai/gpt-5-mini", million) == pytest.approx(2.25)
    assert cost("llama-3.1-8b-instruct", million) == 0.0
    assert price_for("no-such-model") is None
    small = Usage(prompt_tokens=1000, completion_tokens=500)
    assert cost("gpt-4o", small) == pytest.approx((1000 * 2.5 + 500 * 10.0) / 1e6)
    overrides = {"gpt-4o": (1.0, 2.0), "llama": (0.1, 0.1)}
    assert cost("gpt-4o-2024-08-06", million, overrides) == pytest.approx(3.0)
    assert cost("llama-3.1-8b-instruct", million, overrides) == pytest.approx(0.2)
    assert cost("gpt-4o-mini", million, overrides) == pytest.approx(0.75)  # defaults kept
