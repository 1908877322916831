"""``--agent auto``: simple questions go to plain RAG, complex ones to the tool agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sleuth
from sleuth.agent.router import classify
from sleuth.llm import OpenAIClient
from sleuth.testing.fake import FakeLLMServer, call, error, reply

PEPYS = "pepys-diary-1660.md#0"
SIMPLE = "What did Greatorex show Pepys about levers?"
COMPLEX = "Who was born earlier, Pepys or Greatorex?"


@pytest.mark.parametrize("question", [
    "Who is the director of Titanic?",
    "When was Marie Curie born?",
    "Who discovered radium?",
    "What is the capital of France?",
    "How many employees does 3M have?",
])
def test_single_fact_lookups_are_simple(question: str) -> None:
    route = classify(question)
    assert route.decision == "simple" and route.by == "rules"
    assert route.reason.startswith("simple: ") and "no comparison" in route.reason
    assert route.features["hops"] == 1


@pytest.mark.parametrize(("question", "because"), [
    ("Which film came out first, Titanic or Avatar?", "choice between entities cue 'or'"),
    ("Who was born earlier, Bruce Mccandless or Brian K. Zahra?", "comparison cue 'earlier'"),
    ("Are Ada Lovelace and Alan Turing of the same nationality?", "comparison cue 'same'"),
    ("Who is the paternal grandfather of Louis XIV?", "2 hops"),
    ("Where was the director of film Blood Street born?", "2 hops"),
    ("When did Manuel Bulnes Pinto's mother die?", "2 hops"),
    ("What is the FY2017 operating cash flow ratio for Adobe?", "calculation cue 'ratio'"),
    ("How much has the effective tax rate of Corning changed between FY2021 and FY2022?",
     "calculation cue 'changed'"),
    ("Why did Pepsico raise full year guidance for FY2023?", "explanation cue 'Why'"),
])
def test_multi_hop_comparison_and_calculation_questions_are_complex(question: str,
                                                                    because: str) -> None:
    route = classify(question)
    assert route.decision == "complex" and route.reason.startswith("complex: ")
    assert because in route.reason


def test_reason_names_entities_and_the_deciding_cue() -> None:
    route = classify("Who is older, Ada Lovelace or Charles Babbage?")
    assert route.reason.startswith("complex: 2 entities, comparison cue 'older'")
    assert route.features["entities"] == 2 and route.features["cues"]["comparison"] == "older"


def test_ask_auto_sends_a_simple_question_to_naive_rag(endpoint, sleuth, sample_index: Path):
    with endpoint([reply(f"Levers trade time for strength [{PEPYS}].")]) as server:
        result = sleuth("ask", SIMPLE, "--agent", "auto", "--index", str(sample_index), "--json")
        requests = server.requests
    assert result.code == 0, result.err
    record = result.json()
    assert record["agent"] == "naive-rag" and record["llm_calls"] == 1
    assert [s["tool_name"] for s in record["trajectory"]] == ["naive_embedding_search"]
    assert len(requests) == 1 and "tools" not in requests[0]
    route = record["route"]
    assert route["decision"] == "simple" and route["by"] == "rules"
    assert route["agent"] == "naive-rag" and route["reason"].startswith("simple: ")
    assert route["features"]["hops"] == 1


def test_ask_auto_runs_the_tool_agent_on_a_complex_question(endpoint, sleuth,
                                                            sample_index: Path):
    script = [reply("The passages do not say."),
              call("keyword_search", keywords=["Greatorex"], top_k=2),
              reply(f"The diary does not say [{PEPYS}].")]
    with endpoint(script) as server:
        result = sleuth("ask", COMPLEX, "--agent", "auto", "--index", str(sample_index), "--json")
        requests = server.requests
    assert result.code == 0, result.err
    record = result.json()
    assert record["agent"] == "hybrid" and record["loops"] == 1
    # the question compares dates, but the sample's pages are no entity's own (book
    # excerpts): the facts pack's compare_dates is tried, does not apply (decided per page)
    # and stays out of the model's dialogue
    assert record["tool_usage_summary"] == {"hybrid_search": 1, "compare_dates": 1,
                                            "answer_first": 1, "keyword_search": 1}
    tried = [s for s in record["trajectory"] if s["tool_name"] == "compare_dates"]
    assert tried[0]["kind"] == "observation" and "not applied" in tried[0]["reasoning"]
    assert "compare_dates" not in json.dumps(requests[0]["messages"])
    assert "keyword_search" in [t["function"]["name"] for t in requests[1]["tools"]]
    assert record["route"]["decision"] == "complex" and record["route"]["agent"] == "hybrid"
    assert "comparison cue 'earlier'" in record["route"]["reason"]


def _ask(sample_index: Path, question: str, script: list,  # type: ignore[type-arg]
         **client: int) -> tuple[sleuth.Answer, list]:  # type: ignore[type-arg]
    settings = sleuth.Settings.load(router={"use_llm": True})
    with FakeLLMServer(script) as server:
        answer = sleuth.ask(question, index=sample_index, agent="auto", settings=settings,
                            llm=OpenAIClient("fake-model", server.base_url, **client))
        return answer, server.requests


def test_llm_verdict_overrides_the_rule_and_its_tokens_count(sample_index: Path) -> None:
    script = [reply("complex: needs the levers passage and its context"),
              call("semantic_search", query="Greatorex levers"),
              reply(f"Levers trade time for strength [{PEPYS}].")]
    answer, requests = _ask(sample_index, SIMPLE, script)
    assert classify(SIMPLE).decision == "simple"  # the rule alone would say simple
    assert answer.route is not None
    assert answer.route["decision"] == "complex" and answer.route["by"] == "llm"
    assert answer.route["reason"] == "complex: needs the levers passage and its context"
    assert answer.agent == "hybrid" and answer.route["agent"] == "hybrid"
    first = requests[0]
    assert "tools" not in first and first["messages"][1]["content"] == SIMPLE
    assert "simple or complex" in first["messages"][0]["content"]
    assert answer.llm_calls == 3  # the routing call is counted with the agent's two


def test_a_garbage_llm_verdict_falls_back_to_the_rule(sample_index: Path) -> None:
    script = [reply("Hmm, hard to say."), reply(f"Levers trade time for strength [{PEPYS}].")]
    answer, _ = _ask(sample_index, SIMPLE, script)
    assert answer.route is not None
    assert answer.route["decision"] == "simple" and answer.route["by"] == "rules"
    assert "LLM reply not understood: 'Hmm, hard to say.'" in answer.route["reason"]
    assert answer.agent == "naive-rag" and answer.llm_calls == 2
    with FakeLLMServer([reply(f"Levers trade time for strength [{PEPYS}].")]) as server:
        plain = sleuth.ask(SIMPLE, index=sample_index, agent="naive-rag",
                           llm=OpenAIClient("fake-model", server.base_url))
    assert answer.prompt_tokens > plain.prompt_tokens  # the routing call's tokens count
    assert answer.completion_tokens > plain.completion_tokens


def test_an_llm_error_falls_back_to_the_rule(sample_index: Path) -> None:
    script = [error(400, "no such model"), call("keyword_search", keywords=["Pepys"]),
              reply("Unknown.")]
    answer, _ = _ask(sample_index, COMPLEX, script, max_retries=0)
    assert answer.route is not None
    assert answer.route["decision"] == "complex" and answer.route["by"] == "rules"
    assert "LLM error" in answer.route["reason"] and answer.agent == "hybrid"
    assert answer.llm_calls == 2


def test_router_agents_come_from_settings(sample_index: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLEUTH_ROUTER__COMPLEX_AGENT", "naive")
    script = [call("naive_embedding_search", query="Pepys Greatorex"), reply("Unknown.")]
    with FakeLLMServer(script) as server:
        answer = sleuth.ask(COMPLEX, index=sample_index, agent="auto",
                            llm=OpenAIClient("fake-model", server.base_url))
    assert answer.agent == "naive" and answer.route is not None
    assert answer.route["agent"] == "naive"
    with pytest.raises(sleuth.ConfigError, match="other than 'auto'"):
        sleuth.ask(COMPLEX, index=sample_index, agent="auto", llm=OpenAIClient("m"),
                   settings=sleuth.Settings.load(router={"simple_agent": "auto"}))


def test_eval_run_auto_records_carry_the_route(sleuth, dataset: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "auto"
    with FakeLLMServer([reply("London [p1#0]"), reply("Charles Babbage [p2#0]")]) as server:
        monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
        monkeypatch.setenv("SLEUTH_MODEL", "fake-model")
        result = sleuth("eval", "run", "--dataset", str(dataset), "--agent", "auto", "--limit",
                        "2", "--workers", "1", "--output", str(out), "--json")
    assert result.code == 0, result.err
    lines = (out / "predictions.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["question_id"] for r in records] == ["q1", "q2"]
    for record in records:
        assert record["error"] is None and record["agent"] == "naive-rag"
        assert record["route"]["decision"] == "simple" and record["route"]["by"] == "rules"
        assert record["route"]["agent"] == "naive-rag"


def test_agents_lists_auto_and_unknown_names_still_fail(sleuth, dataset: Path) -> None:
    listed = sleuth("agents", "--json")
    auto = next(r for r in listed.json() if r["name"] == "auto")  # type: ignore[attr-defined]
    assert "naive-rag" in auto["description"] and "hybrid" in auto["description"]
    bad = sleuth("eval", "run", "--dataset", str(dataset), "--agent", "auto,nope")
    assert bad.code != 0 and "nope" in bad.err and "auto" in bad.err
