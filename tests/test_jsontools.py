"""Tool calls from JSON replies (the small local model's protocol), over the scripted server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sleuth
from sleuth.agent.run import Listener
from sleuth.llm import JsonToolCalls, OpenAIClient
from sleuth.llm.jsontools import parse_reply, reply_schema
from sleuth.testing.fake import FakeLLMServer, reply
from sleuth.tools import TOOLS

PEPYS = "pepys-diary-1660.md#0"
FUNCTIONS = {name: TOOLS[name].schema()["function"]
             for name in ("keyword_search", "semantic_search", "chunk_read")}


def _ask(sample_index: Path, script: list, **kwargs) -> tuple[sleuth.Answer, list]:  # type: ignore[type-arg]
    with FakeLLMServer(script) as server:
        llm = JsonToolCalls(OpenAIClient("fake-model", server.base_url), **kwargs)
        answer = sleuth.ask("What did Greatorex show Pepys about levers?", index=sample_index,
                            llm=llm, agent="full")
        return answer, server.requests


def test_agent_runs_on_json_replies(sample_index: Path) -> None:
    fenced = '```json\n{"tool": "keyword_search", "arguments": {"keywords": ["Greatorex"]}}\n```'
    script = [reply(fenced),
              reply(json.dumps({"tool": "chunk_read", "arguments": {"chunk_ids": [PEPYS]}})),
              reply(json.dumps({"answer": f"Levers trade time for strength [{PEPYS}]."}))]
    answer, requests = _ask(sample_index, script)
    assert [s.tool_name for s in answer.trajectory] == ["keyword_search", "chunk_read"]
    assert answer.answer == f"Levers trade time for strength [{PEPYS}]."
    assert [c.chunk_id for c in answer.citations] == [PEPYS]

    first = requests[0]
    assert "tools" not in first  # the tools travel in the prompt, not as native tools
    assert "## How to reply" in first["messages"][0]["content"]
    schema = first["response_format"]["json_schema"]["schema"]
    assert [b["properties"]["tool"]["const"] for b in schema["anyOf"][:-1]] == [
        "keyword_search", "semantic_search", "chunk_read"]
    history = requests[2]["messages"]
    assert json.loads(history[2]["content"]) == {"tool": "keyword_search",
                                                 "arguments": {"keywords": ["Greatorex"]}}
    assert history[3]["role"] == "user"
    assert history[3]["content"].startswith("Result of keyword_search:\n")
    assert PEPYS in history[3]["content"]


def test_invalid_calls_are_sent_back_then_given_up(sample_index: Path) -> None:
    script = [reply('{"tool": "keyword_search", "arguments": {}}'),
              reply('{"tool": "grep", "arguments": {"pattern": "x"}}'),
              reply('{"tool": "keyword_search", "arguments": {"keywords": ["Greatorex"]}}'),
              reply('{"answer": "Levers."}')]
    answer, requests = _ask(sample_index, script)
    reasks = [r["messages"][-1]["content"] for r in requests[1:3]]
    assert "'keywords' is a required property" in reasks[0]
    assert "there is no tool 'grep'; available tools: keyword_search" in reasks[1]
    assert [s.tool_name for s in answer.trajectory] == ["keyword_search"]
    assert answer.answer == "Levers." and answer.llm_calls == 2  # re-asks are inside a call

    # after max_reasks invalid replies the text comes back as the answer, not an exception
    answer, requests = _ask(sample_index, [reply("{not json"), reply("{still not")],
                            max_reasks=1)
    assert len(requests) == 2 and answer.answer == "{still not" and answer.trajectory == []


def test_forced_answer_allows_only_the_answer_shape(sample_index: Path) -> None:
    settings = sleuth.Settings.load(agent={"max_steps": 1})
    call = '{"tool": "semantic_search", "arguments": {"query": "levers"}}'
    with FakeLLMServer([reply(call), reply('{"answer": "No idea."}')]) as server:
        llm = JsonToolCalls(OpenAIClient("fake-model", server.base_url))
        answer = sleuth.ask("What are levers?", index=sample_index, llm=llm, settings=settings,
                            agent="full")
        last = server.requests[-1]
    assert answer.forced == "max_steps" and answer.answer == "No idea."
    assert last["response_format"]["json_schema"]["schema"]["required"][0] == "answer"
    assert "No more tools can be called" in last["messages"][-1]["content"]
    # the system prompt is the one of every step (the server's prompt cache keeps it)
    assert last["messages"][0] == server.requests[0]["messages"][0]


def test_plain_text_and_unconstrained_servers(sample_index: Path) -> None:
    answer, requests = _ask(sample_index, [reply("Levers trade time for strength.")],
                            constrain=False)
    assert "response_format" not in requests[0]
    assert answer.answer == "Levers trade time for strength."


@pytest.mark.parametrize("text", [
    '<tool_call>\n{"name": "semantic_search", "arguments": {"query": "levers"}}\n</tool_call>',
    'I will search.\n```\n{"tool": "semantic_search", "arguments": {"query": "levers"}}\n```',
    '{"name": "semantic_search", "arguments": "{\\"query\\": \\"levers\\"}"}',
    '[{"tool": "semantic_search", "arguments": {"query": "levers"}}]',
])
def test_parse_reply_accepts_the_shapes_small_models_write(text: str) -> None:
    answer, calls = parse_reply(text, FUNCTIONS)
    assert answer is None and [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("semantic_search", {"query": "levers"})]


def test_parse_reply_validates_against_the_tool_schema() -> None:
    with pytest.raises(ValueError, match=r"invalid arguments for keyword_search \(top_k\)"):
        parse_reply('{"tool": "keyword_search", "arguments": {"keywords": ["a"], "top_k": 99}}',
                    FUNCTIONS)
    with pytest.raises(ValueError, match="neither"):
        parse_reply('{"thought": "hmm"}', FUNCTIONS)
    assert reply_schema({})["required"] == ["answer"]


def test_settings_select_json_tool_mode(monkeypatch) -> None:
    from sleuth.agent import llm_from_settings

    settings = sleuth.Settings.load(llm={"base_url": "http://127.0.0.1:9/v1", "model": "m",
                                         "tool_mode": "json"})
    assert isinstance(llm_from_settings(settings), JsonToolCalls)
    settings = sleuth.Settings.load(llm={"base_url": "http://127.0.0.1:9/v1", "model": "m"})
    assert isinstance(llm_from_settings(settings), OpenAIClient)


def test_small_model_policies_tool_first_and_truncated_answers(sample_index: Path) -> None:
    cut = {**reply('{"answer": "Levers trade time for strength, and time for str'),
           "finish_reason": "length"}
    script = [reply('{"tool": "keyword_search", "arguments": {"keywords": ["levers"]}}'), cut]
    answer, requests = _ask(sample_index, script, require_tool_first=True)
    first = requests[0]["response_format"]["json_schema"]["schema"]
    assert all("tool" in branch["properties"] for branch in first["anyOf"])  # no answer yet
    second = requests[1]["response_format"]["json_schema"]["schema"]
    assert second["anyOf"][-1]["properties"]["answer"]["maxLength"] == 2000
    assert answer.answer == "Levers trade time for strength, and time for str …"
    assert len(requests) == 2  # the cut answer is kept, not re-asked


def test_answers_cite_sources_from_the_chunk_ids_the_tools_showed(sample_index: Path) -> None:
    script = [reply('{"tool": "keyword_search", "arguments": {"keywords": ["Greatorex"]}}'),
              reply(json.dumps({"answer": "Levers trade time for strength.",
                                "sources": [PEPYS]}))]
    answer, requests = _ask(sample_index, script)
    final = requests[1]["response_format"]["json_schema"]["schema"]["anyOf"][-1]
    assert final["required"] == ["answer", "sources"]
    assert final["properties"]["sources"]["items"]["enum"] == [PEPYS]  # only ids seen so far
    assert answer.answer == f"Levers trade time for strength. [{PEPYS}]"
    assert [c.chunk_id for c in answer.citations] == [PEPYS]


def test_facts_first_answers_read_the_deciding_facts_out_first(sample_index: Path) -> None:
    """The local model's answer object starts with "facts" (kept as the step's reasoning),
    so a small model writes out the dates it compares before it names the answer."""
    script = [reply('{"tool": "keyword_search", "arguments": {"keywords": ["Greatorex"]}}'),
              reply(json.dumps({"facts": "Greatorex showed levers trade time for strength.",
                                "answer": "Levers.", "sources": [PEPYS]}))]
    answer, requests = _ask(sample_index, script, facts_first=True)
    final = requests[1]["response_format"]["json_schema"]["schema"]["anyOf"][-1]
    assert final["required"] == ["facts", "answer", "sources"]
    assert list(final["properties"]) == ["facts", "answer", "sources"]
    system = requests[0]["messages"][0]["content"]
    assert '{"facts": "<the facts from the retrieved text' in system
    assert answer.answer == f"Levers. [{PEPYS}]"


def test_an_answer_that_repeats_the_question_gives_way_to_the_facts_under_it(
        sample_index: Path) -> None:
    """The default agent's answer "Greatorex" to a question about Greatorex says nothing;
    the facts the model wrote under it, read from the passages, are the answer (no more
    calls). Facts the passages do not hold are not: the model is asked once more."""
    facts = ("Greatorex showed him the strength that levers have: what is got in strength "
             "is lost in time.")
    script = [reply(json.dumps({"facts": facts, "answer": "Greatorex", "sources": [PEPYS]}))]
    with FakeLLMServer(script) as server:
        llm = JsonToolCalls(OpenAIClient("fake-model", server.base_url), facts_first=True)
        answer = sleuth.ask("What did Greatorex show Pepys about levers?", index=sample_index,
                            llm=llm, agent="hybrid")
    assert answer.answer.startswith(facts) and answer.llm_calls == 1
    step = next(s for s in answer.trajectory if s.tool_name == "past_echo")
    assert step.tool_output.startswith(facts) and "the model's facts" in step.reasoning
    remembered = "Greatorex taught Pepys Archimedes' law of the fulcrum in Syracuse."
    again = "That levers trade time for strength."
    script = [reply(json.dumps({"facts": remembered, "answer": "Greatorex", "sources": []})),
              reply(json.dumps({"facts": "", "answer": again, "sources": [PEPYS]}))]
    with FakeLLMServer(script) as server:
        llm = JsonToolCalls(OpenAIClient("fake-model", server.base_url), facts_first=True)
        answer = sleuth.ask("What did Greatorex show Pepys about levers?", index=sample_index,
                            llm=llm, agent="hybrid")
    assert answer.answer.startswith(again) and answer.llm_calls == 2


def _hybrid(sample_index: Path, question: str, facts: str, answer: str,
            on_step: Listener | None = None,
            settings: sleuth.Settings | None = None) -> sleuth.Answer:
    script = [reply(json.dumps({"facts": facts, "answer": answer, "sources": [PEPYS]}))]
    with FakeLLMServer(script) as server:
        llm = JsonToolCalls(OpenAIClient("fake-model", server.base_url), facts_first=True)
        return sleuth.ask(question, index=sample_index, llm=llm, agent="hybrid",
                          on_step=on_step, settings=settings)


def test_the_default_answer_is_followed_by_the_facts_that_state_it(sample_index: Path) -> None:
    """The facts the model wrote under its bare answer, where they state it in the words of
    the passages, follow it as its support (the prompt's "then one or two sentences of
    support"); a listener that heard the answer hears them follow it, once, before the
    step, so a chat client sees no revision."""
    facts = "Greatorex showed him how it comes to pass the strength that levers have."
    heard: list[tuple[str, str]] = []
    listener = Listener(step=lambda s: heard.append(("step", s.tool_name)),
                        token=lambda text: heard.append(("token", text)))
    answer = _hybrid(sample_index, "Who showed Pepys the strength of levers?", facts,
                     "Greatorex", on_step=listener)
    assert answer.answer == f"Greatorex [{PEPYS}]\n\n{facts} [{PEPYS}]"
    assert answer.llm_calls == 1 and [c.chunk_id for c in answer.citations] == [PEPYS]
    step = next(s for s in answer.trajectory if s.tool_name == "support")
    assert step.kind == "check" and step.tool_output == facts
    said = "".join(t for kind, t in heard if kind == "token")
    assert said == answer.answer  # heard once: the answer, then its support
    assert heard.index(("step", "support")) > max(
        i for i, (kind, _) in enumerate(heard) if kind == "token")
    small = sleuth.Settings.from_name("small").agent.checks or []
    bare = sleuth.Settings.load(  # for exact-match scoring: no support check
        agent={"checks": [c for c in small if c != "support"]})
    answer = _hybrid(sample_index, "Who showed Pepys the strength of levers?", facts,
                     "Greatorex", settings=bare)
    assert answer.answer == f"Greatorex [{PEPYS}]"


@pytest.mark.parametrize(("question", "facts"), [
    # the facts say something else than the answer
    ("Who showed Pepys the strength of levers?", "Mr. Mills preached a good sermon."),
    # read from memory, not from the passages
    ("Who showed Pepys the strength of levers?",
     "Greatorex taught Pepys Archimedes' law of the fulcrum in Syracuse."),
    # they add nothing to the answer
    ("Who showed Pepys the strength of levers?", "Greatorex."),
    # they name the option the answer did not choose: the answer would read both ways
    ("Who showed Pepys levers, Greatorex or Mills?",
     "Greatorex showed him levers; Mr. Mills preached a sermon."),
])
def test_facts_that_do_not_support_the_answer_do_not_follow_it(
        sample_index: Path, question: str, facts: str) -> None:
    answer = _hybrid(sample_index, question, facts, "Greatorex")
    assert answer.answer == f"Greatorex [{PEPYS}]"
    assert "support" not in [s.tool_name for s in answer.trajectory]


def test_answer_only_calls_are_structured_free_text_calls_are_not(sample_index: Path) -> None:
    script = [reply(json.dumps({"answer": "Levers.", "sources": [PEPYS]}))]
    with FakeLLMServer(script) as server:
        llm = JsonToolCalls(OpenAIClient("fake-model", server.base_url))
        answer = sleuth.ask("What did Greatorex show Pepys?", index=sample_index, llm=llm,
                            agent="naive-rag")
        schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert PEPYS in schema["properties"]["sources"]["items"]["enum"]  # the retrieved passages
    assert answer.answer == f"Levers. [{PEPYS}]"

    script = [reply("<update>notes</update><sufficient>yes</sufficient>"),
              reply(json.dumps({"answer": "Levers.", "sources": [PEPYS]}))]
    settings = sleuth.Settings.load(memory={"candidates": 1})
    with FakeLLMServer(script) as server:
        llm = JsonToolCalls(OpenAIClient("fake-model", server.base_url))
        answer = sleuth.ask("What did Greatorex show Pepys?", index=sample_index, llm=llm,
                            agent="memory", settings=settings)
        update, final = server.requests
    assert "response_format" not in update  # the memory update stays free text
    assert final["response_format"]["json_schema"]["schema"]["required"][0] == "answer"
    assert answer.memory_state["final_memory"] == "notes" and answer.llm_calls == 2


def test_docs_agent_in_json_mode_cites_reference_ids_and_can_be_made_to_summarize(
        sample_index: Path) -> None:
    script = [reply('{"tool": "search", "arguments": {"queries": ["Greatorex levers"]}}'),
              reply(json.dumps({"tool": "summarize", "arguments": {
                  "notes": "Greatorex: levers", "keep_refs": ["turn1search1"]}})),
              reply(json.dumps({"answer": "Levers trade time for strength.",
                                "sources": ["turn1search1"]})),
              reply(json.dumps({"tool": "summarize", "arguments": {"notes": "n"}}))]
    with FakeLLMServer(script) as server:
        llm = JsonToolCalls(OpenAIClient("fake-model", server.base_url))
        answer = sleuth.ask("What did Greatorex show Pepys?", index=sample_index, llm=llm,
                            agent="agenticrag")
        forced = llm.chat([{"role": "user", "content": "x"}],
                          [TOOLS["summarize"].schema()], tool_choice="required")
        third, fourth = server.requests[2:]
    sources = third["response_format"]["json_schema"]["schema"]["anyOf"][-1]
    assert "turn1search1" in sources["properties"]["sources"]["items"]["enum"]
    assert answer.citations[0].ref == "turn1search1"
    assert answer.citations[0].doc_id == "pepys-diary-1660.md"
    assert answer.context_events[0]["event"] == "summarize"
    # a forced call (tool_choice="required") offers no answer branch: a summarize call only
    schema = fourth["response_format"]["json_schema"]["schema"]
    assert "answer" not in json.dumps(schema) and forced.tool_calls[0].name == "summarize"
