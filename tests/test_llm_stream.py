"""Streamed LLM calls: the same response as the plain call, the answer's text in pieces as
it arrives, and a whole answer from a server that will not stream."""

from __future__ import annotations

import json
from dataclasses import replace

from sleuth.llm import JsonToolCalls, OpenAIClient
from sleuth.testing.fake import FakeLLMServer, call, error, reply
from sleuth.tools import TOOLS

QUESTION = [{"role": "user", "content": "Who explained levers?"}]
SCHEMAS = [TOOLS["keyword_search"].schema()]


def test_a_streamed_call_returns_what_the_plain_call_returns() -> None:
    searching = call("keyword_search", keywords=["levers"])
    searching["reasoning"] = "look it up"
    answering = reply("<think>it is in the diary</think>\n\nGreatorex [c1].")
    with FakeLLMServer([searching, searching, answering, answering]) as server:
        client = OpenAIClient("fake-model", server.base_url)
        pieces: list[str] = []
        for _ in range(2):
            plain = client.chat(QUESTION, SCHEMAS)
            streamed = client.stream_chat(QUESTION, SCHEMAS, on_text=pieces.append)
            plain_calls = [replace(c, id="") for c in plain.tool_calls]
            assert [replace(c, id="") for c in streamed.tool_calls] == plain_calls
            assert replace(streamed, tool_calls=()) == replace(plain, tool_calls=())
        assert server.requests[1]["stream"] is True and "stream" not in server.requests[0]
    assert plain.content == "Greatorex [c1]." and plain.reasoning == "it is in the diary"
    assert "".join(pieces) == plain.content and len(pieces) == 2  # no tokens for the call


def test_a_server_that_refuses_streaming_answers_whole() -> None:
    script = [error(400, "stream is not supported by this proxy"), reply("Whole answer."),
              reply("Again.")]
    with FakeLLMServer(script, model="no-stream-model") as server:
        client = OpenAIClient("no-stream-model", server.base_url)
        pieces: list[str] = []
        assert client.stream_chat(QUESTION, on_text=pieces.append).content == "Whole answer."
        client.stream_chat(QUESTION, on_text=pieces.append)
        assert "stream" not in server.requests[-1]  # learnt: not tried again
    assert pieces == ["Whole answer.", "Again."]
    assert any("refuses streaming" in note for note in client.adaptations)


def test_the_json_protocol_streams_its_answer_string() -> None:
    answer = {"facts": 'the diary says "answer": Greatorex', "answer": "Greatorex é [c1]."}
    search = {"tool": "keyword_search", "arguments": {"keywords": ["answer"]}}
    with FakeLLMServer([reply(json.dumps(search)), reply(json.dumps(answer))]) as server:
        llm = JsonToolCalls(OpenAIClient("fake-model", server.base_url), facts_first=True)
        pieces: list[str] = []
        called = llm.stream_chat(QUESTION, SCHEMAS, on_text=pieces.append)
        assert called.tool_calls and not pieces  # a tool call says nothing
        answered = llm.stream_chat(QUESTION, SCHEMAS, on_text=pieces.append)
    assert answered.content == "Greatorex é [c1]."
    assert "".join(pieces) == answered.content and len(pieces) > 1
    assert answered.reasoning == answer["facts"]


def test_an_answer_that_may_be_searched_past_streams_only_once_it_is_not_an_abstention() -> None:
    """The default agent's answer from its first passages streams; one that says the
    documents do not say is never spoken (the agent searches on and streams that answer)."""
    from sleuth.agent.run import HELD_CHARS, Held

    for text, spoken in [
            ("The documents do not say which port the server listens on by default, nor "
             "where it is set.", ""),
            ("5432 [a#0]", "5432 [a#0]"),
            ("5432 [a#0]: the server listens on TCP port 5432 unless the port setting or the "
             "-p option says otherwise.", None)]:
        said: list[str] = []
        held = Held(said.append)
        for char in text:
            held.feed(char)
        held.end()
        assert "".join(said) == (text if spoken is None else spoken)
        if spoken is None:  # held until it could not be an abstention, then as it came
            assert said[0] == text[:HELD_CHARS] and len(said) == len(text) - HELD_CHARS + 1
