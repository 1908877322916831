"""Every OpenAI-compatible server as it really is: the scripted server in each mode, over
real HTTP, through the public client (and once through the official SDK alone)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from tests.conftest import TINY_CORPUS

import sleuth
from sleuth import Settings
from sleuth.errors import ConfigError, LLMError
from sleuth.llm import JsonToolCalls, OpenAIClient
from sleuth.llm.adapt import split_thinking
from sleuth.llm.factory import llm_from_settings
from sleuth.testing.fake import FakeLLMServer, call, error, reply

USER: Any = [{"role": "user", "content": "When is high tide in Brest?"}]
TOOLS: Any = [{"type": "function", "function": {
    "name": "search", "description": "Keyword search.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                   "required": ["query"]}}}]


def client(server: FakeLLMServer, model: str | None = None, **kwargs: Any) -> OpenAIClient:
    kwargs.setdefault("timeout", 5.0)
    kwargs.setdefault("max_retries", 0)
    return OpenAIClient(model or server.model, server.base_url, **kwargs)


# --------------------------------------------------------------------------- openai


def test_openai_reasoning_model_gets_max_completion_tokens_and_no_temperature(
        caplog: pytest.LogCaptureFixture) -> None:
    script = [reply("High tide is at 06:12."), reply("Low tide is at 12:30.")]
    with FakeLLMServer(script, mode="openai", model="o3-mini") as srv:
        llm = client(srv, temperature=0.0, max_tokens=256, reasoning_effort="low")
        with caplog.at_level(logging.WARNING, logger="sleuth"):
            assert llm.chat(USER).content == "High tide is at 06:12."
            # a second client of the same endpoint and model knows it already
            again = client(srv, temperature=0.0, max_tokens=256, reasoning_effort="low")
            assert again.chat(USER).content == "Low tide is at 12:30."
    refused = [r.get("max_tokens", r.get("temperature")) for r in srv.rejected]
    assert refused == [256, 0.0]  # max_tokens first, then the temperature
    for sent in srv.requests:
        assert sent["max_completion_tokens"] == 256 and sent["reasoning_effort"] == "low"
        assert "max_tokens" not in sent and "temperature" not in sent
    assert len(srv.rejected) == 2  # each learnt once for the process
    notes = llm.adaptations
    assert len(notes) == 2 and notes == again.adaptations
    assert "sending max_completion_tokens instead" in notes[0]
    assert "refuses temperature (Unsupported value: 'temperature' does not support 0.0" \
        in notes[1]
    assert [r.message for r in caplog.records] == notes  # each warned once


def test_openai_plain_model_refuses_reasoning_effort_and_unknown_fields() -> None:
    with FakeLLMServer([reply("ok")], mode="openai", model="gpt-4o-mini") as srv:
        llm = client(srv, reasoning_effort="high", max_tokens=64, extra_body={"top_k": 5})
        assert llm.chat(USER, TOOLS, tool_choice="auto").content == "ok"
    (sent,) = srv.requests
    assert "reasoning_effort" not in sent and "top_k" not in sent
    assert sent["max_tokens"] == 64 and sent["tool_choice"] == "auto"
    assert [("top_k" in r, "reasoning_effort" in r) for r in srv.rejected] == [
        (True, True), (False, True)]  # the unknown field first, then reasoning_effort
    assert [n.split(" refuses ")[1].split(" (")[0] for n in llm.adaptations] == [
        "top_k", "reasoning_effort"]
    assert "(Unrecognized request argument supplied: reasoning_effort)" in llm.adaptations[1]


def test_openai_errors_that_cannot_be_adapted_to_still_say_what_to_fix() -> None:
    with FakeLLMServer([error(400, "context too long")], mode="openai",
                       model="gpt-4o") as srv:
        with pytest.raises(LLMError, match=r"rejected the request \(HTTP 400\): context too"):
            client(srv).chat(USER)
        assert len(srv.requests) == 1 and client(srv).adaptations == []


# --------------------------------------------------------------------------- azure


@pytest.fixture
def azure() -> Iterator[FakeLLMServer]:
    script = [reply("from Azure"), reply("again from Azure")]
    with FakeLLMServer(script, mode="azure", model="gpt-4o", api_key="az-key") as srv:
        yield srv


def test_azure_endpoint_and_api_version_reach_the_deployment(azure: FakeLLMServer) -> None:
    llm = client(azure, api_key="az-key", api_version="2024-10-21")
    assert llm.base_url == f"{azure.base_url}/openai"
    assert llm.chat(USER).content == "from Azure"
    assert len(llm.embed(["tides", "moon"])[1]) == 64  # /deployments/gpt-4o/embeddings
    url = f"{azure.base_url}/openai/deployments/gpt-4o?api-version=2024-10-21"
    in_url = OpenAIClient("gpt-4o", url, "az-key", timeout=5.0, max_retries=0)
    assert in_url.chat(USER).content == "again from Azure"


def test_azure_settings_from_the_environment(azure: FakeLLMServer,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"SLEUTH_BASE_URL": azure.base_url, "SLEUTH_MODEL": "gpt-4o",
                        "SLEUTH_API_KEY": "az-key",
                        "SLEUTH_LLM__API_VERSION": "2024-10-21"}.items():
        monkeypatch.setenv(name, value)
    llm = llm_from_settings(Settings.load())
    assert llm.chat(USER).content == "from Azure"


@pytest.mark.parametrize(("kwargs", "needles"), [
    ({"api_key": "az-key"}, ["HTTP 404", "Resource not found", "SLEUTH_BASE_URL"]),
    ({"api_key": "az-key", "api_version": "2019-01-01"}, ["API version not supported"]),
    ({"api_key": "wrong", "api_version": "2024-10-21"}, ["HTTP 401", "SLEUTH_API_KEY"]),
])
def test_azure_refusals_say_what_to_fix(azure: FakeLLMServer, kwargs: dict[str, str],
                                        needles: list[str]) -> None:
    with pytest.raises(LLMError) as info:
        client(azure, **kwargs).chat(USER)
    for needle in needles:
        assert needle in str(info.value)
    assert azure.remaining == 2


def test_an_azure_host_without_api_version_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="SLEUTH_LLM__API_VERSION"):
        OpenAIClient("gpt-4o", "https://example.openai.azure.com")


# --------------------------------------------------------------------------- vllm


def test_vllm_without_auto_tool_choice_gets_the_json_tool_protocol() -> None:
    script = [call("search", query="tides"), reply("High tide is at 06:12.")]
    with FakeLLMServer(script, mode="vllm", model="Qwen/Qwen2.5-7B-Instruct") as srv:
        llm = client(srv)
        first = llm.chat(USER, TOOLS, tool_choice="auto")
        assert [(c.name, json.loads(c.arguments)) for c in first.tool_calls] == [
            ("search", {"query": "tides"})]
        messages = [*USER, first.to_message(),
                    {"role": "tool", "tool_call_id": first.tool_calls[0].id,
                     "content": "Brest: high tide 06:12"}]
        assert llm.chat(messages, TOOLS).content == "High tide is at 06:12."
    assert len(srv.rejected) == 1 and srv.rejected[0]["tool_choice"] == "auto"
    for sent in srv.requests:  # the tools travel in the prompt, the reply is constrained
        assert "tools" not in sent and sent["response_format"]["type"] == "json_schema"
    assert llm.adaptations == [
        f"the LLM endpoint at {srv.base_url} (model 'Qwen/Qwen2.5-7B-Instruct') refuses native "
        'tool calls ("auto" tool choice requires --enable-auto-tool-choice and '
        "--tool-call-parser to be set): using the JSON tool protocol"]


def test_vllm_wire_format_through_the_official_sdk() -> None:
    script = [call("search", query="tides")]
    with FakeLLMServer(script, mode="vllm") as srv:
        sdk = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        with pytest.raises(openai.BadRequestError) as info:
            sdk.chat.completions.create(model=srv.model, messages=USER, tools=TOOLS)
        body: Any = info.value.body
        assert body["object"] == "error" and body["type"] == "BadRequestError"
        assert "--enable-auto-tool-choice" in body["message"]
        completion = sdk.chat.completions.create(model=srv.model, messages=USER,
                                                 tools=TOOLS, tool_choice="none")
    message = completion.choices[0].message
    assert message.tool_calls is None and completion.choices[0].finish_reason == "stop"
    assert message.content is not None and message.content.startswith("<tool_call>")
    written = json.loads(message.content.split("\n")[1])
    assert written == {"name": "search", "arguments": {"query": "tides"}}


# --------------------------------------------------------------------------- ollama


def test_ollama_ignores_tool_choice_none_so_no_tools_are_sent_then() -> None:
    script = [call("search", query="tides"), reply("High tide is at 06:12.",
                                                   reasoning="Brest tides...")]
    with FakeLLMServer(script, mode="ollama", model="qwen3:8b", api_key="ignored") as srv:
        llm = client(srv)  # no key: Ollama ignores it
        answer = llm.chat(USER, TOOLS, tool_choice="none")
        assert answer.content == "High tide is at 06:12." and not answer.tool_calls
        assert answer.reasoning == "Brest tides..."  # Ollama's "reasoning" field
        with pytest.raises(LLMError, match=r'model "llama3" not found, try pulling it'):
            client(srv, "llama3").chat(USER)
    first, second = srv.requests
    assert first["tool_choice"] == "none" and first["tools"] == TOOLS
    assert "tools" not in second and "tool_choice" not in second
    assert "ignores tool_choice 'none'" in llm.adaptations[0]


def test_an_ollama_model_without_tools_gets_the_json_tool_protocol() -> None:
    # Ollama's words for a model without tool support (FoundationAgents/OpenManus#33)
    refusal = error(400, "registry.ollama.ai/library/deepseek-r1:1.5b does not support tools")
    script = [refusal, reply('{"tool": "search", "arguments": {"query": "tides"}}')]
    with FakeLLMServer(script, mode="ollama", model="deepseek-r1:1.5b") as srv:
        llm = client(srv)
        response = llm.chat(USER, TOOLS)
    assert [c.name for c in response.tool_calls] == ["search"]
    assert "tools" in srv.requests[0] and "tools" not in srv.requests[1]
    assert "does not support tools" in llm.adaptations[0]


# --------------------------------------------------------------------------- llama.cpp


def test_llamacpp_jinja_native_calls_cache_and_json_schema() -> None:
    schema = {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}}}
    script = [call("search", query="tides"), reply('{"answer": "06:12"}')]
    with FakeLLMServer(script, mode="llamacpp-jinja", model="qwen2.5-1.5b") as srv:
        llm = client(srv)
        first = llm.chat(USER, TOOLS, tool_choice="required")
        assert first.tool_calls[0].name == "search" and len(first.tool_calls[0].id) == 32
        follow = [*USER, first.to_message(), {"role": "tool", "content": "06:12",
                                               "tool_call_id": first.tool_calls[0].id}]
        second = llm.chat(follow, response_format=schema)
        with pytest.raises(LLMError, match="Cannot use custom grammar constraints with tools"):
            client(srv, extra_body={"grammar": "root ::= x"}).chat(USER, TOOLS)
    assert second.content == '{"answer": "06:12"}'
    assert first.usage.cached_tokens == 0
    assert 0 < second.usage.cached_tokens < second.usage.prompt_tokens  # the shared prefix
    assert srv.requests[1]["response_format"] == schema and llm.adaptations == []


def test_llamacpp_timings_through_the_official_sdk() -> None:
    with FakeLLMServer([reply("a"), reply("b")], mode="llamacpp-jinja") as srv:
        sdk = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        sdk.chat.completions.create(model=srv.model, messages=USER)
        completion = sdk.chat.completions.create(model=srv.model, messages=USER)
    timings = (completion.model_extra or {})["timings"]
    usage = completion.usage
    assert usage is not None and usage.prompt_tokens_details is not None
    assert timings["cache_n"] == usage.prompt_tokens_details.cached_tokens > 0
    assert timings["prompt_n"] == usage.prompt_tokens - timings["cache_n"]
    assert timings["predicted_n"] == usage.completion_tokens


# --------------------------------------------------------------------------- reasoning


def test_reasoning_content_is_kept_apart_from_the_answer() -> None:
    script = [call("search", query="tides"), reply("06:12.", reasoning="Brest is tidal."),
              {"content": "", "reasoning": "Still thinking about", "finish_reason": "length"}]
    with FakeLLMServer(script, mode="reasoning", model="deepseek-reasoner") as srv:
        llm = client(srv)
        calls = llm.chat(USER, TOOLS)
        answer = llm.chat(USER)
        cut = llm.chat(USER)
        echoed = [*USER, {"role": "assistant", "content": "06:12.",
                          "reasoning_content": "Brest is tidal."}]
        with pytest.raises(LLMError, match="remove the reasoning_content"):
            llm.chat(echoed)
    assert calls.content == "" and calls.tool_calls and calls.reasoning
    assert (answer.content, answer.reasoning) == ("06:12.", "Brest is tidal.")
    assert "reasoning" not in answer.to_message()
    assert (cut.content, cut.finish_reason, cut.reasoning) == ("", "length",
                                                               "Still thinking about")


def test_inline_think_and_text_tool_calls_from_a_small_model() -> None:
    written = {"content": None, "tool_calls": [{"name": "search",
                                                "arguments": '{"query": "tides"}'}],
               "as_text": True}
    script = [reply("<think>Tides are in the table.</think>\n06:12."), written,
              reply('{"tool": "search", "arguments": {"query": "moon"}}')]
    with FakeLLMServer(script, model="small-model") as srv:  # what it learns stays its own
        llm = client(srv)
        answer = llm.chat(USER)
        first = llm.chat(USER, TOOLS)
        second = llm.chat(USER, TOOLS)  # from now on through the JSON protocol
    assert (answer.content, answer.reasoning) == ("06:12.", "Tides are in the table.")
    assert [c.name for c in first.tool_calls] == ["search"] and first.content is None
    assert json.loads(second.tool_calls[0].arguments) == {"query": "moon"}
    assert "tools" in srv.requests[1] and "tools" not in srv.requests[2]
    assert "wrote tool calls as text" in llm.adaptations[0]
    assert split_thinking("no thinking here") == (None, "no thinking here")


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("servers")
    (folder / "corpus.json").write_text(json.dumps(TINY_CORPUS))
    sleuth.index_paths([folder / "corpus.json"], index=folder / "idx")
    return folder / "idx"


def test_sleuth_ask_against_vllm_without_auto_tool_choice(sleuth, monkeypatch,
                                                          tiny_index: Path) -> None:
    script = [call("keyword_search", keywords=["Lovelace"]),
              reply("Ada Lovelace was born in London [p1].")]
    with FakeLLMServer(script, mode="vllm", model="Qwen/Qwen2.5-7B-Instruct") as srv:
        monkeypatch.setenv("SLEUTH_BASE_URL", srv.base_url)
        monkeypatch.setenv("SLEUTH_MODEL", srv.model)
        result = sleuth("ask", "Where was Ada Lovelace born?", "--agent", "full",
                        "--index", str(tiny_index), "--json")
    assert result.code == 0, result.err
    record = result.json()
    assert "keyword_search" in [s["tool_name"] for s in record["trajectory"]]
    assert record["answer"].startswith("Ada Lovelace was born in London")
    assert len(srv.rejected) == 1 and srv.remaining == 0
    assert "refuses native tool calls" in result.err  # said once, on stderr


def test_sleuth_ask_against_an_openai_reasoning_model(monkeypatch, tiny_index: Path) -> None:
    script = [call("keyword_search", keywords=["Babbage"]),
              reply("Charles Babbage designed it [p2].")]
    with FakeLLMServer(script, mode="openai", model="gpt-5-mini") as srv:
        monkeypatch.setenv("SLEUTH_BASE_URL", srv.base_url)
        monkeypatch.setenv("SLEUTH_MODEL", srv.model)
        answer = sleuth.ask("Who designed the Analytical Engine?", index=tiny_index,
                            agent="full")  # settings send temperature 0.0 by default
    assert answer.answer.startswith("Charles Babbage designed it")
    assert [r["temperature"] for r in srv.rejected] == [0.0]
    assert all("temperature" not in r for r in srv.requests)
    wrapped = JsonToolCalls(OpenAIClient(srv.model, srv.base_url))
    assert wrapped.adaptations and "refuses temperature" in wrapped.adaptations[0]


def test_the_cli_serves_a_mode(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "script.json"
    script.write_text(json.dumps([reply("from the CLI")]), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "sleuth.testing.fake", "--script", str(script),
                             "--mode", "vllm"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().split(" at ", 1)[1].split()[0]
        refused = httpx.post(f"{base_url}/chat/completions", json={
            "model": "fake-model", "messages": USER, "tools": TOOLS})
        assert refused.status_code == 400 and refused.json()["object"] == "error"
    finally:
        proc.terminate()
        proc.communicate(timeout=5)
