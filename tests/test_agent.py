"""`sleuth ask` against the scripted OpenAI-compatible server, over real HTTP."""

from __future__ import annotations

from pathlib import Path

import sleuth
from sleuth.llm import OpenAIClient
from sleuth.testing.fake import FakeLLMServer, call, error, raw_call, reply

PEPYS = "pepys-diary-1660.md#0"


def test_ask_runs_tools_records_trajectory_and_recovers(endpoint, sleuth, sample_index: Path):
    server = endpoint([
        call("keyword_search", keywords=["Greatorex", "levers"], top_k=3),
        raw_call("chunk_read", '{"chunk_ids": ["pepys-diary-1660.md#0"'),  # malformed JSON
        call("chunk_read", chunk_ids=["no-such-doc#7", PEPYS]),
        error(500, "overloaded"),
        error(500, "still overloaded"),
        call("chunk_read", chunk_ids=[PEPYS]),
        reply(f"Greatorex showed him how levers trade time for strength [{PEPYS}].\n"
              f"Relevance: {PEPYS}=0.9"),
    ])
    with server:
        result = sleuth("ask", "What did Greatorex show Pepys?", "--agent", "full", "--index",
                        str(sample_index), "--json")
    assert result.code == 0, result.err
    record = result.json()
    steps = record["trajectory"]
    assert [s["tool_name"] for s in steps] == ["keyword_search", "chunk_read", "chunk_read",
                                               "chunk_read"]
    assert steps[0]["tool_input"] == {"keywords": ["Greatorex", "levers"], "top_k": 3}
    assert PEPYS in steps[0]["tool_output"]
    assert "not valid JSON" in steps[1]["tool_output"] and steps[1]["error"]
    assert "Unknown chunk ids: no-such-doc#7" in steps[2]["tool_output"]
    assert "strength that levers have" in steps[2]["tool_output"]
    assert "has been read before" in steps[3]["tool_output"]
    assert steps[3]["retrieved_tokens"] == 0
    assert record["answer"].startswith("Greatorex showed him")
    assert "Relevance:" not in record["answer"]
    assert record["citations"] == [{"chunk_id": PEPYS, "doc_id": "pepys-diary-1660.md",
                                    "title": "The Diary of Samuel Pepys, 1660 (excerpt)",
                                    "relevance": 0.9, "score": 1.0, "where": "lines 0–10",
                                    "lines": [0, 10], "tool": "keyword_search"}]
    assert record["document_ranking"] == ["pepys-diary-1660.md"]
    assert record["chunks_read_ids"] == [PEPYS] and record["chunks_read_count"] == 1
    assert record["loops"] == 4 and record["llm_calls"] == 5
    assert record["tool_usage_summary"] == {"keyword_search": 1, "chunk_read": 3}
    assert record["total_retrieved_tokens"] > 0 and record["forced"] is None
    # the model saw each observation: the last request carries every tool message
    tool_messages = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 4
    assert "not valid JSON" in tool_messages[1]["content"]
    assert server.requests[0]["tools"][0]["function"]["name"] == "keyword_search"


def test_forced_answer_at_max_steps(endpoint, sleuth, sample_index: Path):
    server = endpoint([
        call("semantic_search", query="levers"),
        call("keyword_search", keywords=["anchovies"]),
        reply(f"He explained levers [{PEPYS}]."),
    ])
    with server:
        result = sleuth("ask", "levers?", "--agent", "full", "--index", str(sample_index),
                        "--max-steps", "2", "--json")
    record = result.json()
    assert result.code == 0 and record["forced"] == "max_steps" and record["loops"] == 2
    last = server.requests[-1]
    assert last["tool_choice"] == "none"
    assert "Do not call any more tools" in last["messages"][-1]["content"]
    assert record["citations"][0]["chunk_id"] == PEPYS


def test_forced_answer_at_token_budget(endpoint, sleuth, sample_index: Path, monkeypatch):
    monkeypatch.setenv("SLEUTH_AGENT__TOKEN_BUDGET", "1000")
    server = endpoint([call("chunk_read", chunk_ids=[PEPYS]), reply("Levers.")])
    with server:
        record = sleuth("ask", "levers?", "--agent", "full", "--index", str(sample_index),
                        "--json").json()
    assert record["forced"] == "token_budget" and record["loops"] == 1


def test_unknown_tool_goes_back_to_the_model(endpoint, sleuth, sample_index: Path):
    server = endpoint([call("web_search", query="x"), reply("No answer in the corpus.")])
    with server:
        record = sleuth("ask", "q", "--agent", "full", "--index", str(sample_index),
                        "--json").json()
    assert "unknown tool 'web_search'" in record["trajectory"][0]["tool_output"]


def test_llm_outage_fails_with_one_clear_line(endpoint, sleuth, sample_index: Path,
                                              monkeypatch):
    monkeypatch.setenv("SLEUTH_LLM__MAX_RETRIES", "1")
    server = endpoint([error(500, "down", retry_after=0.01)] * 3)
    with server:
        result = sleuth("ask", "q", "--agent", "full", "--index", str(sample_index))
    assert result.code == 1
    line = result.err.strip().splitlines()[-1]
    assert line.startswith("error: ") and "HTTP 500" in line and "Traceback" not in result.err


def test_ask_without_endpoint_says_how_to_configure(sleuth, sample_index: Path):
    result = sleuth("ask", "q", "--agent", "full", "--index", str(sample_index))
    assert result.code == 1 and "SLEUTH_BASE_URL" in result.err and "SLEUTH_MODEL" in result.err


def test_arag_environment_names_are_accepted(monkeypatch, sample_index: Path):
    with FakeLLMServer([reply("Nothing found.")]) as server:
        monkeypatch.setenv("ARAG_BASE_URL", server.base_url)
        monkeypatch.setenv("ARAG_MODEL", "fake-model")
        answer = sleuth.ask("q", index=sample_index, agent="full")
    assert answer.answer == "Nothing found." and answer.model == "fake-model"


def test_python_api_parallel_tool_calls(sample_index: Path):
    from sleuth.testing.fake import calls

    script = [calls(("keyword_search", {"keywords": ["Greatorex"]}),
                    ("semantic_search", {"query": "tobacco and bones"})),
              reply("Done.")]
    settings = sleuth.Settings.load(agent={"parallel_tool_calls": True})
    with FakeLLMServer(script) as server:
        llm = OpenAIClient("fake-model", server.base_url)
        answer = sleuth.ask("q", index=sample_index, llm=llm, settings=settings, agent="full")
        assert server.requests[0]["parallel_tool_calls"] is True
    assert [s.tool_name for s in answer.trajectory] == ["keyword_search", "semantic_search"]
    assert answer.loops == 1


def test_one_call_per_step_by_default(sample_index: Path):
    from sleuth.testing.fake import calls

    script = [calls(("keyword_search", {"keywords": ["Greatorex"]}),
                    ("semantic_search", {"query": "tobacco"})),
              reply("Done.")]
    with FakeLLMServer(script) as server:
        answer = sleuth.ask("q", index=sample_index, agent="full",
                            llm=OpenAIClient("fake-model", server.base_url))
        sent = server.requests[1]["messages"]
    assert [s.tool_name for s in answer.trajectory] == ["keyword_search"]
    assistant = next(m for m in sent if m["role"] == "assistant")
    assert len(assistant["tool_calls"]) == 1


def test_an_answer_written_on_the_relevance_line_is_kept() -> None:
    from sleuth.agent.citations import split_answer

    assert split_answer("Relevance: Port of Spain [a#0]=0.9") == (
        "Port of Spain [a#0]=0.9", {"a#0": 0.9})
    assert split_answer("Paris [a#0].\nRelevance: a#0=0.8") == ("Paris [a#0].", {"a#0": 0.8})


def test_a_repeated_call_is_not_run_again_and_a_loop_is_ended(sample_index: Path) -> None:
    """Small models loop on one call: a repeat is answered with an observation instead of
    the tool, and a second turn of repeats in a row forces the answer."""
    same = call("keyword_search", keywords=["Greatorex"], top_k=1)
    script = [same, call("keyword_search", top_k=1, keywords=["Greatorex"]),  # key order
              call("keyword_search", keywords=["levers"]), same, same,
              reply(f"Levers [{PEPYS}].")]
    with FakeLLMServer(script) as server:
        answer = sleuth.ask("What did Greatorex show Pepys?", index=sample_index, agent="full",
                            llm=OpenAIClient("fake-model", server.base_url))
        requests = server.requests
    steps = answer.trajectory
    assert [s.error is None for s in steps] == [True, False, True, False, False]
    assert "already made this exact call at step 1" in steps[1].tool_output
    assert steps[1].retrieved_tokens == 0 and steps[4].error == "repeated call (same as step 1)"
    assert answer.forced == "repeated_calls" and answer.loops == 5
    assert requests[-1]["tool_choice"] == "none" and answer.answer == f"Levers [{PEPYS}]."


def test_an_answer_of_ids_alone_says_there_is_no_answer(sample_index: Path) -> None:
    """A forced answer that is nothing but a citation is no answer: the user is told so,
    with why, and the ids the model gave are kept."""
    same = call("keyword_search", keywords=["Greatorex"], top_k=1)
    with FakeLLMServer([same, same, same, reply(f"[{PEPYS}]")]) as server:
        answer = sleuth.ask("What did Greatorex show Pepys?", index=sample_index, agent="full",
                            llm=OpenAIClient("fake-model", server.base_url))
    assert answer.forced == "repeated_calls"
    assert answer.answer == ("I cannot answer this reliably from the indexed documents: the "
                             "model's answer had no words after 3 steps (the search ended: "
                             f"repeated calls). [{PEPYS}]")
    assert [c.chunk_id for c in answer.citations] == [PEPYS]
