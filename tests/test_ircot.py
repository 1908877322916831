"""The IRCoT baseline (``--agent ircot``) against the scripted endpoint over a real index."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import sleuth
from conftest import TINY_CORPUS
from sleuth.agent.citations import strip_citations
from sleuth.agent.ircot import IRCoTAgent
from sleuth.eval.report import aggregate, score_record, to_markdown
from sleuth.llm import OpenAIClient
from sleuth.testing.fake import FakeLLMServer, reply

QUESTION = "Who designed the engine for which Ada Lovelace wrote the first algorithm?"
FIRST = "Ada Lovelace wrote the first published algorithm for the Analytical Engine [p1#0]."
SECOND = "The Analytical Engine was designed by Charles Babbage [p2#0]."


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The three-passage corpus, indexed once."""
    folder = tmp_path_factory.mktemp("ircot")
    corpus = folder / "corpus.json"
    corpus.write_text(json.dumps(TINY_CORPUS))
    with sleuth.Index.open(folder / "idx", settings=sleuth.Settings.load(), create=True) as index:
        index.add([corpus])
    yield folder / "idx"


def _run(index_dir: Path, script: list, **fields: int) -> tuple[sleuth.Answer, list]:  # type: ignore[type-arg]
    with FakeLLMServer(script) as server, \
            sleuth.Index.open(index_dir, settings=sleuth.Settings.load()) as index:
        agent = IRCoTAgent(index=index, llm=OpenAIClient("fake-model", server.base_url),
                           tools=[], paragraphs_per_step=1, **fields)
        answer = agent.run(QUESTION)
        return answer, server.requests


def _user(request: dict) -> str:  # type: ignore[type-arg]
    return str(request["messages"][-1]["content"])


def test_reasons_one_sentence_at_a_time_and_retrieves_with_each(tiny_index: Path) -> None:
    script = [reply(FIRST), reply(SECOND + " So the answer is Charles Babbage."),
              reply("So the answer is: Charles Babbage [p2#0].")]
    answer, requests = _run(tiny_index, script)
    assert strip_citations(answer.answer) == "Charles Babbage"
    assert answer.llm_calls == 3 and answer.loops == 3 and answer.forced is None
    assert answer.prompt_tokens > 0 and answer.completion_tokens > 0
    steps = answer.trajectory
    assert [s.tool_name for s in steps] == ["retrieve"] * 3
    assert steps[0].tool_input == {"query": QUESTION} and steps[0].reasoning == ""
    # each sentence (its citation left out) is the next query; only the first is kept
    assert steps[1].reasoning == FIRST
    assert steps[1].tool_input == {"query": strip_citations(FIRST)}
    assert steps[2].reasoning == SECOND
    ids = [s.tool_output.split("]")[0].lstrip("[") for s in steps]
    assert ids[0] == "p1#0" and sorted(ids) == ["p1#0", "p2#0", "p3#0"]  # none twice
    assert steps[0].tool_output.startswith("[p1#0] Ada Lovelace: Ada Lovelace wrote")
    assert all(s.retrieved_tokens > 0 for s in steps)
    assert answer.retrieved_ids == answer.chunks_read_ids == ids
    # the model sees the system prompt, every paragraph so far and the reasoning so far
    assert all(r["messages"][0]["content"].startswith("You answer a multi-hop") for r in requests)
    assert "tools" not in requests[0]
    assert "Reasoning so far:\n(none yet)" in _user(requests[0])
    assert "[p2#0]" not in _user(requests[0]) and "[p2#0] Charles Babbage:" in _user(requests[1])
    assert f"Reasoning so far:\n{FIRST}\n{SECOND}\n" in _user(requests[2])
    # the answer's citation first, then the paragraph the reasoning cited
    assert [c.chunk_id for c in answer.citations] == ["p2#0", "p1#0"]
    assert answer.citations[0].title == "Charles Babbage"
    assert answer.document_ranking == ["p2", "p1"]


def test_forced_answer_after_the_step_limit(tiny_index: Path) -> None:
    script = [reply(FIRST), reply(SECOND), reply("So the answer is: Charles Babbage [p2#0].")]
    answer, requests = _run(tiny_index, script, ircot_steps=2)
    assert answer.forced == "max_steps" and answer.loops == 2 and answer.llm_calls == 3
    assert len(answer.trajectory) == 3  # question, then each of the two sentences
    assert "The step limit is reached" in _user(requests[-1])
    assert "tools" not in requests[-1]
    assert answer.answer == "Charles Babbage [p2#0]"
    assert [c.chunk_id for c in answer.citations][0] == "p2#0"


def test_paragraph_cap_and_settings_step_limit(tiny_index: Path) -> None:
    settings = sleuth.Settings.load(agent={"max_steps": 1})
    with FakeLLMServer([reply(FIRST), reply("Babbage.")]) as server, \
            sleuth.Index.open(tiny_index, settings=settings) as index:
        agent = IRCoTAgent(index=index, llm=OpenAIClient("fake-model", server.base_url),
                           tools=[], settings=settings.agent, max_paragraphs=2)
        answer = agent.run(QUESTION)
    assert answer.forced == "max_steps" and answer.llm_calls == 2  # max_steps caps ircot_steps
    first, second = answer.trajectory
    assert first.tool_output.count("\n") == 1  # two paragraphs: the cap
    assert second.tool_output.startswith("No new paragraphs: the cap of 2")
    assert second.retrieved_tokens == 0 and answer.answer == "Babbage"


def test_cli_ask_with_the_ircot_agent(endpoint, sleuth, tiny_index: Path) -> None:
    server = endpoint([reply("Ada Lovelace wrote it for the Analytical Engine [p1#0]."),
                       reply("So the answer is: Charles Babbage [p2#0].")])
    with server:
        result = sleuth("ask", QUESTION, "--agent", "ircot", "--index", str(tiny_index))
    assert result.code == 0, result.err
    assert result.out.startswith("Charles Babbage [p2#0]")
    assert "[p2#0] Charles Babbage" in result.out and "step 1: retrieve(" in result.err
    assert "2 LLM calls" in result.err
    listed = sleuth("agents", "--json").json()
    assert any(r["name"] == "ircot" and "IRCoT" in r["description"] for r in listed)  # type: ignore[attr-defined]


def test_report_counts_llm_tokens_and_abstentions() -> None:
    records = [{"answer": "x", "gold_answers": ["x"], "llm_calls": calls, "seconds": 1.0,
                "prompt_tokens": 100 * calls, "completion_tokens": 10 * calls}
               for calls in (1, 2, 3)]
    rows = [score_record(r, [2]) for r in records]
    assert [r["llm_tokens"] for r in rows] == [110.0, 220.0, 330.0]
    assert "abstained" not in rows[0]
    overall = aggregate(rows)
    assert overall["llm_tokens"] == pytest.approx(220.0)
    assert overall["llm_tokens_p95"] == pytest.approx(220 + 0.9 * 110)  # linear, as numpy
    assert overall["llm_calls_p95"] == pytest.approx(2.9)
    scores = {"ks": [2], "runs": [{"run": "r", "agent": "ircot", "overall": overall,
                                   "by_type": {}}]}
    assert "| LLM tok |" in to_markdown(scores) and "abstain" not in to_markdown(scores)

    flagged = [{**records[0], "abstained": True}, {**records[1], "abstained": False}]
    overall = aggregate(score_record(r, [2]) for r in flagged)
    assert overall["abstained"] == pytest.approx(0.5)
    scores["runs"][0]["overall"] = overall  # type: ignore[index]
    assert "| abstain |" in to_markdown(scores) and "| 50.0% |" in to_markdown(scores)
