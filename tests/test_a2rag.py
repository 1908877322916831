"""The A2RAG controller (``--agent a2rag``) and ``--verify`` under a scripted endpoint: the
summary gate, Triple-Check with failure-aware rewrites and bounded retries, abstention,
and progressive graph retrieval escalating to PPR with map-back to chunks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sleuth import Index
from sleuth.testing.fake import FakeLLMServer, reply

OK = '{"relevance": true, "grounding": true, "adequacy": true, "reason": "ok"}'
UNGROUNDED = ('{"relevance": true, "grounding": false, "adequacy": true, '
              '"reason": "the year is not in the evidence"}')
PEPYS = "According to Pepys's diary, what did Greatorex show him about levers?"


def _messages(server: FakeLLMServer) -> list[list[dict[str, str]]]:
    return [r["messages"] for r in server.requests]


@pytest.mark.minilm  # the gate's thresholds are MiniLM similarities
def test_index_time_summaries_and_the_gate_score(minilm_sample_index: Path) -> None:
    with Index.open(minilm_sample_index) as index:
        doc_ids, _, matrix = index.store.summaries()
        assert len(doc_ids) == index.stats().documents == 3
        assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-4)
        inside, doc = index.scope(PEPYS)
        outside, _ = index.scope("What is the boiling point of tungsten?")
        assert doc == "pepys-diary-1660.md" and inside > 0.4 > 0.1 > outside


@pytest.mark.minilm  # out of scope by MiniLM's similarities
def test_gate_abstains_without_retrieving_or_calling_the_llm(sleuth, endpoint,
                                                             minilm_sample_index: Path) -> None:
    server = endpoint([])  # any LLM call would exhaust the script and fail
    with server:
        result = sleuth("ask", "What is the boiling point of tungsten?", "--agent", "a2rag",
                        "--index", str(minilm_sample_index), "--json")
    assert result.code == 0, result.err
    record = result.json()
    assert record["abstained"] is True and record["control"]["outcome"] == "out of scope"
    assert record["control"]["gate"]["passed"] is False
    assert record["trajectory"] == [] and record["llm_calls"] == 0
    assert record["retrieved_ids"] == [] and server.requests == []
    assert "outside what they cover" in record["answer"]


def test_failed_triple_check_rewrites_the_query_and_retries(sleuth, endpoint,
                                                            sample_index: Path) -> None:
    rewritten = "Greatorex lever demonstration Pepys diary"
    server = endpoint([reply("He showed him a lever in 1661 [pepys-diary-1660.md#0]."),
                       reply(UNGROUNDED), reply(f"Query: {rewritten}"),
                       reply("A way of lifting weights with levers [pepys-diary-1660.md#0].\n"
                             "Relevance: pepys-diary-1660.md#0=0.9"),
                       reply(OK)])
    with server:
        result = sleuth("ask", PEPYS, "--agent", "a2rag", "--index", str(sample_index),
                        "--json")
    assert result.code == 0, result.err
    record = result.json()
    control = record["control"]
    assert control["outcome"] == "verified" and record["abstained"] is False
    first, second = control["attempts"]
    assert first["check"]["failure"] == "grounding" and first["rewrite"] == rewritten
    assert second["query"] == rewritten and second["check"]["failure"] is None
    steps = record["trajectory"]
    assert [s["tool_name"] for s in steps] == ["progressive_retrieve"] * 2
    assert steps[1]["tool_input"]["query"] == rewritten
    assert steps[0]["tool_input"]["stage"] == "hybrid"  # no graph built: text retrieval
    assert record["llm_calls"] == 5 and record["answer"].startswith("A way of lifting")
    assert record["citations"][0]["chunk_id"] == "pepys-diary-1660.md#0"
    messages = _messages(server)
    assert "grounding" in messages[2][0]["content"]  # the rewrite is failure-aware
    assert "Retrieval focus: " + rewritten in messages[3][-1]["content"]


def test_retries_are_bounded_then_it_abstains(sleuth, endpoint, sample_index: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLEUTH_A2RAG__RETRIES", "1")
    server = endpoint([reply("1661 [pepys-diary-1660.md#0]"), reply(UNGROUNDED),
                       reply("Greatorex levers"), reply("Insufficient evidence.")])
    with server:
        result = sleuth("ask", PEPYS, "--agent", "a2rag", "--index", str(sample_index))
    assert result.code == 0, result.err
    assert "evidence stayed insufficient after 2 attempts (adequacy" in result.out
    assert "abstained after 2 attempts" in result.err
    assert len(server.requests) == 4  # the second candidate needs no judge: it declines


def test_verify_wraps_any_agent(sleuth, endpoint, sample_index: Path) -> None:
    incomplete = ('{"relevance": true, "grounding": true, "adequacy": false, '
                  '"reason": "it does not say what was shown"}')
    server = endpoint([reply("Something about levers [pepys-diary-1660.md#0]"),
                       reply(incomplete), reply("What device did Greatorex show Pepys?"),
                       reply("A lever-based engine for raising water [pepys-diary-1660.md#0]"),
                       reply(OK)])
    with server:
        result = sleuth("ask", PEPYS, "--agent", "naive-rag", "--verify", "--index",
                        str(sample_index), "--json")
    assert result.code == 0, result.err
    record = result.json()
    assert record["agent"] == "naive-rag+verify" and record["control"]["outcome"] == "verified"
    assert record["answer"].startswith("A lever-based engine")
    assert record["question"] == PEPYS and record["llm_calls"] == 5
    assert [s["tool_name"] for s in record["trajectory"]] == ["naive_embedding_search"] * 2
    assert _messages(server)[3][-1]["content"].startswith(
        "Question: What device did Greatorex show Pepys?")


def test_stage_three_escalation_maps_back_to_chunks(sleuth, endpoint, graph_index: Path,
                                                    tmp_path: Path) -> None:
    from sleuth.graph import Graph

    folder = tmp_path / "idx"
    shutil.copytree(graph_index, folder)
    question = "Who is the father of Lothair II?"
    with Index.open(folder) as index, Graph.open(index) as graph:
        seeds = graph.seeds(question)
        mapped = [c for c, _ in graph.map_back(graph.ppr(seeds), top_nodes=30, top_k=5)]
    assert seeds and mapped
    judged = [reply("NO, the father is not named.")] * (2 if len(seeds) >= 2 else 1)
    server = endpoint([*judged, reply("YES"),
                       reply("Emperor Lothair I [2wiki-00004#0]\nRelevance: 2wiki-00004#0=1"),
                       reply(OK)])
    with server:
        result = sleuth("ask", question, "--agent", "a2rag", "--index", str(folder), "--json")
    assert result.code == 0, result.err
    record = result.json()
    attempt = record["control"]["attempts"][0]
    assert attempt["stage"] == "ppr" and record["control"]["outcome"] == "verified"
    assert set(mapped) <= set(attempt["evidence"])  # PPR's top entities mapped back to chunks
    assert all(c in record["chunks_read_ids"] for c in mapped)
    judges = [m for m in _messages(server) if "enough information" in m[0]["content"]]
    assert len(judges) == len(judged) + 1


def test_eval_score_summarises_outcomes_stages_and_cost(sleuth, tmp_path: Path) -> None:
    def record(qid: str, outcome: str, stages: list[str], calls: int, seconds: float) -> dict:
        return {"question_id": qid, "question": "q", "answer": "a", "gold_answer": "a",
                "llm_calls": calls, "prompt_tokens": 100 * calls, "completion_tokens": 10,
                "seconds": seconds, "abstained": outcome != "verified",
                "control": {"outcome": outcome,
                            "attempts": [{"stage": stage} for stage in stages]}}

    path = tmp_path / "predictions.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        record("1", "verified", ["local"], 3, 1.0),
        record("2", "verified", ["ppr", "bridge"], 7, 3.0),
        record("3", "abstained", ["failed", "failed", "ppr"], 9, 5.0),
        record("4", "out of scope", [], 0, 0.1)]) + "\n")
    result = sleuth("eval", "score", str(path), "--json")
    assert result.code == 0, result.err
    run = result.json()["runs"][0]
    assert run["control"]["outcome"] == {"abstained": 0.25, "out of scope": 0.25,
                                         "verified": 0.5}
    assert run["control"]["stage"] == {"bridge": 1 / 3, "local": 1 / 3, "ppr": 1 / 3}
    assert run["overall"]["abstained"] == 0.5 and run["overall"]["llm_calls"] == 4.75
    assert run["overall"]["llm_tokens"] == (310 + 710 + 910 + 10) / 4
    text = sleuth("eval", "score", str(path)).out
    assert "Control (None): abstained 25%, out of scope 25%, verified 50%" in text
