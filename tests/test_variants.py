"""Every agent variant runs end to end against the scripted endpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

import sleuth
from sleuth.llm import FakeLLMServer, OpenAIClient, call, reply

PEPYS = "pepys-diary-1660.md#0"


def _run(sample_index: Path, agent: str, script: list) -> tuple[sleuth.Answer, list]:  # type: ignore[type-arg]
    with FakeLLMServer(script) as server:
        answer = sleuth.ask("What did Greatorex show Pepys about levers?", index=sample_index,
                            agent=agent, llm=OpenAIClient("fake-model", server.base_url))
        return answer, server.requests


@pytest.mark.parametrize(("agent", "tools"), [
    ("full", ["keyword_search", "semantic_search", "chunk_read"]),
    ("no-keyword", ["semantic_search", "chunk_read"]),
    ("no-semantic", ["keyword_search", "chunk_read"]),
])
def test_tool_sets(sample_index: Path, agent: str, tools: list[str]) -> None:
    answer, requests = _run(sample_index, agent, [reply("I do not know.")])
    assert [t["function"]["name"] for t in requests[0]["tools"]] == tools
    system = requests[0]["messages"][0]["content"]
    assert all(f"- {t}:" in system for t in tools) and "{tools}" not in system
    assert answer.agent == agent


def test_naive_returns_whole_chunks(sample_index: Path) -> None:
    script = [call("naive_embedding_search", query="Greatorex levers strength", top_k=2),
              call("naive_embedding_search", query="Greatorex levers strength", top_k=2),
              reply(f"Levers trade time for strength [{PEPYS}].")]
    answer, requests = _run(sample_index, "naive", script)
    assert [t["function"]["name"] for t in requests[0]["tools"]] == ["naive_embedding_search"]
    first, second = answer.trajectory
    assert "strength that levers have" in first.tool_output and "=== chunk" in first.tool_output
    assert "shown before, not repeated" in second.tool_output
    assert second.retrieved_tokens < first.retrieved_tokens
    assert PEPYS in answer.chunks_read_ids


def test_no_read_searches_return_full_text(sample_index: Path) -> None:
    script = [call("keyword_search", keywords=["Greatorex"], top_k=1), reply("Levers.")]
    answer, requests = _run(sample_index, "no-read", script)
    assert "chunk_read" not in {t["function"]["name"] for t in requests[0]["tools"]}
    output = answer.trajectory[0].tool_output
    assert "Whitsunday" in output  # text of the chunk beyond the matching sentence
    assert answer.chunks_read_ids == [PEPYS]


def test_direct_uses_no_retrieval(sample_index: Path) -> None:
    answer, requests = _run(sample_index, "direct", [reply("A guess: pulleys.")])
    assert "tools" not in requests[0]
    assert answer.trajectory == [] and answer.answer == "A guess: pulleys."


def test_naive_rag_retrieves_once_then_answers(sample_index: Path) -> None:
    answer, requests = _run(sample_index, "naive-rag",
                            [reply(f"Levers trade time for strength [{PEPYS}].")])
    assert len(requests) == 1 and "tools" not in requests[0]
    user = requests[0]["messages"][1]["content"]
    assert user.startswith("Question: What did Greatorex") and "Retrieved passages:" in user
    assert answer.trajectory[0].tool_name == "semantic_search"
    assert answer.trajectory[0].tool_input == {"query": answer.question, "top_k": 5}
    assert len(answer.chunks_read_ids) == 5 and answer.loops == 0
    assert [c.chunk_id for c in answer.citations] == [PEPYS]


def test_unknown_agent_is_a_clear_error(sample_index: Path) -> None:
    with pytest.raises(sleuth.ConfigError, match="unknown agent 'nope'.*naive-rag"):
        _run(sample_index, "nope", [])
