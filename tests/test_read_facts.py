"""The default agent reads its model's facts (issue 40): a small model that writes the answer
into its facts-first object's "facts" and then answers "The documents do not say" gets its
facts as the answer, cited with the chunks that hold their values, where the passages it was
shown hold every value the facts add; otherwise the abstention stands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import records_index

import sleuth
from sleuth.agent.checks.read_facts import plain, read_out, values
from sleuth.llm import JsonToolCalls, OpenAIClient
from sleuth.testing.fake import FakeLLMServer, reply

MANUAL = [
    {"id": "stats", "title": "Run-time Statistics", "text":
     "track_activity_query_size (integer): Specifies the amount of memory reserved to store "
     "the text of the currently executing command for each active session, for the "
     "pg_stat_activity.query field. The default value is 1024 bytes. This parameter can "
     "only be set at server start."},
    {"id": "limits", "title": "PostgreSQL Limits", "text":
     "Table K.1 lists the limits of PostgreSQL. The maximum number of query parameters is "
     "65,535. The maximum number of columns in an index is 32."},
]
NOT_SAID = "The documents do not say"


@pytest.fixture(scope="module")
def manual_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return records_index(tmp_path_factory, "facts-manual", MANUAL)


def _ask(index: Path, question: str, facts: str, agent: str = "hybrid") -> sleuth.Answer:
    """``agent``'s answer when the model says the documents do not say with ``facts``: the
    default agent's answer from the first passages, then its tool loop's answer."""
    said = reply(json.dumps({"facts": facts, "answer": NOT_SAID, "sources": ["stats#0"]}))
    script = [said, said] if agent == "hybrid" else [said]
    with FakeLLMServer(script) as server:
        llm = JsonToolCalls(OpenAIClient("fake-model", server.base_url), facts_first=True)
        return sleuth.ask(question, index=index, llm=llm, agent=agent)


def test_facts_the_passages_hold_replace_the_abstention(manual_index: Path) -> None:
    answer = _ask(manual_index, "pg_stat_activity cuts off my query text, how many bytes "
                  "does it keep by default?",
                  "The default amount of memory for the text of the currently executing "
                  "command is 1024 bytes.")
    assert answer.answer.startswith("The default amount of memory")
    assert "1024 bytes. [stats#0]" in answer.answer
    assert [c.chunk_id for c in answer.citations] == ["stats#0"]
    step = answer.trajectory[-1]
    assert (step.tool_name, step.kind) == ("read_facts", "check")
    assert "1024 bytes" in step.tool_output


def test_a_value_the_passages_do_not_hold_leaves_the_abstention(manual_index: Path) -> None:
    answer = _ask(manual_index, "pg_stat_activity cuts off my query text, how many bytes "
                  "does it keep by default?", "The default is 2048 bytes.")
    assert answer.answer.startswith(NOT_SAID)
    assert all(s.tool_name != "read_facts" for s in answer.trajectory)


def test_only_the_default_agent_reads_facts(manual_index: Path) -> None:
    answer = _ask(manual_index, "What is the maximum number of query parameters?",
                  "The maximum number of query parameters is 65,535.", agent="full")
    assert answer.answer.startswith(NOT_SAID)


@pytest.mark.parametrize(("question", "draft", "facts", "read"), [
    # a value the passage holds, thousands written either way
    ("max bind parameters per query?", NOT_SAID, "The maximum is 65535 parameters.", True),
    # the draft answered: nothing to read
    ("max bind parameters per query?", "65,535 [limits#0]", "The maximum is 65,535.", False),
    # facts that abstain in words of their own, or add nothing to the question
    ("max bind parameters per query?", NOT_SAID, "The passages do not state it.", False),
    ("Is there a maximum number of query parameters?", NOT_SAID,
     "Yes, there is a maximum number of query parameters.", False),
    # a figure the model computed, not in the passages; a short number needs its unit
    ("max columns in an index?", NOT_SAID, "An index holds up to 64 columns.", False),
    ("max columns in an index?", NOT_SAID, "An index holds up to 32 columns.", True),
    ("max columns in an index?", NOT_SAID, "An index holds up to 32 keys.", False),
    # another relation: a hop short of a grandfather
    ("Who is the paternal grandfather of Johann Nicolaus Bach?", NOT_SAID,
     "Johann Nicolaus Bach's father was Johann Christoph Bach.", False),
])
def test_what_facts_are_read(question: str, draft: str, facts: str, read: bool) -> None:
    shown = ["The maximum number of query parameters is 65,535. An index holds 32 columns. "
             "Johann Christoph Bach was the father of Johann Nicolaus Bach."]
    chunks = {"limits#0": shown[0]}
    answer = read_out(question, draft, facts, shown, chunks)
    assert (answer is not None) == read
    if read:
        assert answer is not None and answer.endswith("[limits#0]")


def test_the_corpus_own_vocabulary_adds_nothing_but_a_number_always_counts() -> None:
    shown = ["The maximum number of query parameters is 65,535."]
    chunks = {"limits#0": shown[0]}
    facts = "In PostgreSQL the maximum is 65,535."
    question = "max bind parameters per query?"
    assert read_out(question, NOT_SAID, facts, shown, chunks) is None  # not shown
    common = {"postgresql"}.__contains__
    assert read_out(question, NOT_SAID, facts, shown, chunks, common=common) == \
        "In PostgreSQL the maximum is 65,535. [limits#0]"
    every = lambda value: True  # noqa: E731 - even a number the corpus says everywhere
    assert read_out(question, NOT_SAID, "In PostgreSQL the maximum is 65,536.", shown, chunks,
                    common=every) is None


def test_values_are_numbers_with_their_unit_identifiers_and_names() -> None:
    assert values("The `-1` default of log_min_duration_statement; 1,024 bytes by default "
                  "in PostgreSQL.") == ["-1", "1024 bytes", "log_min_duration_statement",
                                        "postgresql"]
    assert plain("$3,800,000,000 and 10-1") == "3800000000 and 10 1"
