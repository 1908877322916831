"""Every agent variant runs end to end against the scripted endpoint."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.conftest import records_index

import sleuth
from sleuth.agent.run import Listener
from sleuth.llm import OpenAIClient
from sleuth.testing.fake import FakeLLMServer, call, reply
from sleuth.writing import writing_task

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


@pytest.mark.minilm  # which chunks a semantic search finds is MiniLM's
def test_naive_returns_whole_chunks(minilm_sample_index: Path) -> None:
    script = [call("naive_embedding_search", query="Greatorex levers strength", top_k=2),
              call("naive_embedding_search", query="Greatorex, levers and strength", top_k=2),
              reply(f"Levers trade time for strength [{PEPYS}].")]
    answer, requests = _run(minilm_sample_index, "naive", script)
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
    assert answer.trajectory[0].tool_name == "naive_embedding_search"
    assert answer.trajectory[0].tool_input == {"query": answer.question, "top_k": 5}
    assert len(answer.chunks_read_ids) == 5 and answer.loops == 0
    assert [c.chunk_id for c in answer.citations] == [PEPYS]


def test_hybrid_starts_from_the_best_ranking_then_searches_on(sample_index: Path) -> None:
    """The default agent: the best ranking's chunks come first (for the sample's three books,
    the passage ranking), shown to the model with no tools offered; where its answer says the
    documents do not say, the same chunks are the model's own first call of the tool loop,
    and passages that do not name everything the question names make it search on."""
    script = [reply("The documents do not say what Greatorex showed about comets."),
              call("keyword_search", keywords=["Greatorex"], top_k=2),
              reply(f"Levers trade time for strength [{PEPYS}].")]
    with FakeLLMServer(script) as server:
        answer = sleuth.ask("What did Greatorex show about levers and the orbits of comets?",
                            agent="hybrid",
                            index=sample_index, llm=OpenAIClient("fake-model", server.base_url))
        requests = server.requests
    # the answer from the first passages: naive-rag's request
    assert "tools" not in requests[0]
    system, asked = requests[0]["messages"]
    assert system["content"].startswith("Answer the question using the retrieved passages")
    assert asked["content"].startswith(f"Question: {answer.question}\n\nRetrieved passages:")
    assert "(passage ranking)" in asked["content"]
    assert [t["function"]["name"] for t in requests[1]["tools"]] == [
        "hybrid_search", "keyword_search", "semantic_search", "chunk_read"]
    system, user, first, result = requests[1]["messages"]
    assert user == {"role": "user", "content": answer.question}
    assert first["tool_calls"][0]["function"]["name"] == "hybrid_search"
    assert "(passage ranking)" in result["content"] and "=== chunk" in result["content"]
    # the same chunks in the same order; the first answer sees the two best whole, the loop
    # the search's windows of them
    ids = re.findall(r"=== chunk (\S+)", result["content"])
    assert re.findall(r"=== chunk (\S+)", asked["content"]) == ids and len(ids) == 5
    shown = asked["content"].split("=== chunk ")[1:]
    assert all("more tokens: chunk_read" not in block for block in shown[:2])
    assert "more tokens: chunk_read" in result["content"]
    assert len(asked["content"]) > len(result["content"])
    # the passages hold too few of its words (comets, orbits): search on
    assert requests[1]["tool_choice"] == "required"
    assert "tool_choice" not in requests[2]
    first_step, said, second = answer.trajectory
    assert (first_step.tool_name, first_step.tool_input) == (
        "hybrid_search", {"query": answer.question, "top_k": 5})
    assert "does not cover the question" in first_step.reasoning
    assert (said.tool_name, said.kind) == ("answer_first", "observation")
    assert said.tool_output.startswith("The documents do not say what Greatorex showed")
    assert second.tool_name == "keyword_search" and answer.loops == 1
    assert PEPYS in answer.retrieved_ids[:5]
    assert [c.chunk_id for c in answer.citations] == [PEPYS]


def test_hybrid_may_answer_at_once_when_the_passages_cover_the_question(
        sample_index: Path) -> None:
    said = f"Levers trade time for strength [{PEPYS}]."
    answer, requests = _run(sample_index, "hybrid", [reply(said)])
    # one request, no tools offered: the first passages and naive-rag's prompt
    assert len(requests) == 1 and "tools" not in requests[0]
    assert requests[0]["messages"][1]["content"].startswith(
        f"Question: {answer.question}\n\nRetrieved passages:\nTop 5 chunks (passage ranking)")
    assert "it covers the question" in answer.trajectory[0].reasoning
    assert [s.tool_name for s in answer.trajectory] == ["hybrid_search"]
    assert answer.loops == 0 and [c.chunk_id for c in answer.citations] == [PEPYS]


def test_hybrid_cites_the_chunk_that_holds_its_answer(sample_index: Path) -> None:
    """An answer whose cited chunk does not hold its words cites the retrieved chunk that
    does (checked without a model, recorded as a step); one whose cited chunk holds them,
    and a yes or no, keep their citations."""
    other = "pepys-diary-1660.md#4"
    answer, _ = _run(sample_index, "hybrid",
                     [reply(f"What is got in strength is lost in time [{other}]. He showed "
                            f"it with a lever [{other}].")])
    assert answer.answer.startswith(f"What is got in strength is lost in time [{PEPYS}]. He")
    assert [c.chunk_id for c in answer.citations] == [PEPYS, other]
    step = answer.trajectory[-1]
    assert (step.tool_name, step.kind, step.tool_input) == (
        "cite_holder", "check", {"chunk_ids": [PEPYS]})
    for said in (f"Strength is lost as to matter of time [{PEPYS}].", f"Yes [{other}]."):
        answer, _ = _run(sample_index, "hybrid", [reply(said)])
        assert answer.answer == said
        assert "cite_holder" not in [s.tool_name for s in answer.trajectory]


def test_hybrid_says_what_a_passage_says_when_the_answer_only_names_it(
        sample_index: Path) -> None:
    """An answer that is nothing but a chunk's name ("chunk X#0") is replaced by what that
    chunk says to the question (its sentences sharing most words with it, quoted and
    cited, recorded as a step); a name the run never retrieved is not read: the agent
    says the documents do not say."""
    answer, _ = _run(sample_index, "hybrid", [reply(f"chunk {PEPYS} [{PEPYS}]")])
    assert answer.answer.startswith('"') and answer.answer.endswith(f'" [{PEPYS}]')
    assert "lever" in answer.answer.lower() and "chunk " not in answer.answer
    step = answer.trajectory[-1]
    assert (step.tool_name, step.kind, step.tool_input) == (
        "quote_named", "check", {"chunk_ids": [PEPYS]})
    assert [c.chunk_id for c in answer.citations] == [PEPYS]
    answer, _ = _run(sample_index, "hybrid", [reply("See passage made-up.md#9")])
    assert answer.abstained and not answer.citations


def test_hybrid_asks_once_more_when_the_answer_only_repeats_the_question(
        sample_index: Path) -> None:
    """An answer made only of the question's words ("Greatorex" for "What did Greatorex show
    Pepys about levers?") gets one more request over the same passages, told so; a reply
    that adds words replaces it (recorded as a step), one that repeats the question again
    or abstains leaves the first standing."""
    said = f"That levers trade time for strength [{PEPYS}]."
    answer, requests = _run(sample_index, "hybrid", [reply(f"Greatorex [{PEPYS}]"), reply(said)])
    assert answer.answer.startswith("That levers trade time for strength")
    first, again = requests  # the same request, told what not to answer (the echo not shown)
    assert len(again["messages"]) == len(first["messages"]) == 2
    assert again["messages"][1]["content"].startswith(first["messages"][1]["content"])
    assert 'Do not answer with only "Greatorex"' in again["messages"][1]["content"]
    step = next(s for s in answer.trajectory if s.tool_name == "past_echo")
    assert step.kind == "check"
    assert step.tool_input == {"answer": "Greatorex", "repeated": ["greatorex"]}
    assert answer.llm_calls == 2
    heard: list[tuple[str, str]] = []  # a listener hears the echo, the step, the answer
    listener = Listener(step=lambda s: heard.append(("step", s.tool_name)),
                        token=lambda text: heard.append(("token", text)))
    with FakeLLMServer([reply(f"Greatorex [{PEPYS}]"), reply(said)]) as server:
        sleuth.ask("What did Greatorex show Pepys about levers?", index=sample_index,
                   agent="hybrid", on_step=listener,
                   llm=OpenAIClient("fake-model", server.base_url))
    at = heard.index(("step", "past_echo"))
    assert "".join(t for kind, t in heard[:at] if kind == "token").startswith("Greatorex")
    assert "".join(t for kind, t in heard[at:] if kind == "token").startswith("That levers")
    for second in (f"Pepys and Greatorex [{PEPYS}]", "The documents do not say."):
        answer, _ = _run(sample_index, "hybrid", [reply(f"Greatorex [{PEPYS}]"), reply(second)])
        assert answer.answer.startswith("Greatorex"), second


def test_hybrid_takes_a_choice_the_question_offers_as_an_answer(sample_index: Path) -> None:
    with FakeLLMServer([reply(f"Greatorex [{PEPYS}]")]) as server:
        answer = sleuth.ask("Who showed Pepys levers, Greatorex or Mr. Coventry?",
                            index=sample_index, agent="hybrid",
                            llm=OpenAIClient("fake-model", server.base_url))
    assert answer.answer.startswith("Greatorex") and answer.llm_calls == 1


def test_hybrid_offers_its_tools_at_once_with_answer_first_off(sample_index: Path) -> None:
    settings = sleuth.Settings.load(agent={"answer_first": False})
    with FakeLLMServer([reply(f"Levers trade time for strength [{PEPYS}].")]) as server:
        answer = sleuth.ask("What did Greatorex show Pepys about levers?", index=sample_index,
                            agent="hybrid", settings=settings,
                            llm=OpenAIClient("fake-model", server.base_url))
        (request,) = server.requests
    assert "hybrid_search" in [t["function"]["name"] for t in request["tools"]]
    assert request["messages"][1] == {"role": "user", "content": answer.question}
    assert answer.answer.startswith("Levers")


def test_a_request_to_write_something_gets_the_whole_piece(sample_index: Path) -> None:
    """A request to write something is answered by a prompt that asks for the whole piece
    from the passages (the same passages); a question, or the setting off, keeps
    naive-rag's prompt, so its request is byte for byte what it was."""
    piece = (f"Dear students,\n\nGreatorex showed Pepys how levers work [{PEPYS}].\n\n"
             f"They trade time for strength [{PEPYS}].")
    task = "As a teacher, write a short note for students on what Greatorex showed Pepys."
    requests = {}
    for name, question, on in (("task", task, True), ("question", "What did Greatorex show "
                               "Pepys about levers?", True), ("off", task, False)):
        settings = sleuth.Settings.load(agent={"writing_tasks": on})
        with FakeLLMServer([reply(piece)]) as server:
            answer = sleuth.ask(question, index=sample_index, agent="hybrid",
                                settings=settings, llm=OpenAIClient("fake-model",
                                                                    server.base_url))
            requests[name] = server.requests[0]["messages"]
        if name == "task":
            assert answer.answer.startswith("Dear students,\n\nGreatorex showed Pepys")
            assert "They trade time for strength" in answer.answer
            assert [c.chunk_id for c in answer.citations] == [PEPYS]
    assert requests["task"][0]["content"].startswith("The user asks you to write something")
    assert "Write the piece itself" in requests["task"][0]["content"]
    naive = requests["off"][0]["content"]
    assert naive.startswith("Answer the question using the retrieved passages")
    assert requests["question"][0]["content"] == naive
    assert requests["task"][1] == requests["off"][1]  # the same passages either way


@pytest.mark.parametrize(("question", "task"), [
    ("Draft a public health advisory summarizing key risk factors for thyroid cancer", True),
    ("As a medical intern, compose a SOAP note for a patient newly diagnosed with CML", True),
    ("From Tarver's point of view, narrate your first evening with the group.", True),
    ("You are an oncology fellow tasked with constructing an initial treatment plan.", True),
    ("You are a public health official drafting an advisory for primary care.", True),
    ("A 56-year-old has lymphadenopathy. Construct a stepwise diagnostic plan.", True),
    ("Imagine you are Pepys and tell Greatorex what you learnt.", True),
    ("summarize the changes to VACUUM", True),
    ("To whom did Angeline write letters during her marriage?", False),
    ("How do I write a trigger function in PL/pgSQL?", False),
    ("Write-ahead log: what is the default wal_level?", False),
    ("rewriting queries: which rule system does it?", False),
    ("CREATE INDEX without USING makes what kind of index?", False),
    ("Who composed the score of the film Blood Street?", False),
    ("What is a rewrite rule?", False),
    ("Format of a log message in csvlog?", False),
    ("Outline of the recovery plan?", False),
    ("Draft of the advisory: who signs it?", False),
])
def test_what_is_a_request_to_write_something(question: str, task: bool) -> None:
    assert writing_task(question) is task


def test_hybrid_is_the_default_agent(sample_index: Path) -> None:
    with FakeLLMServer([reply("Levers trade time for strength.")]) as server:
        answer = sleuth.ask("What did Greatorex show Pepys?", index=sample_index,
                            llm=OpenAIClient("fake-model", server.base_url))
    assert answer.agent == "hybrid" and answer.trajectory[0].tool_name == "hybrid_search"


def test_unknown_agent_is_a_clear_error(sample_index: Path) -> None:
    with pytest.raises(sleuth.ConfigError, match="unknown agent 'nope'.*naive-rag"):
        _run(sample_index, "nope", [])


def _update(memory: str, sufficient: str = "no") -> dict:  # type: ignore[type-arg]
    return reply(f"<update>\n{memory}\n</update>\n<sufficient>{sufficient}</sufficient>")


def test_memory_reads_one_chunk_at_a_time_and_answers_from_memory(sample_index: Path) -> None:
    script = [_update("Nothing on levers yet."),
              _update(f"Greatorex showed that levers trade time for strength [{PEPYS}].", "yes"),
              reply(f"Levers trade time for strength [{PEPYS}].")]
    answer, requests = _run(sample_index, "memory", script)
    assert len(requests) == 3 and all("tools" not in r for r in requests)
    search, first, second = answer.trajectory
    assert search.tool_name == "hybrid_search" and PEPYS in search.tool_output
    assert first.tool_name == second.tool_name == "chunk_read"
    assert answer.chunks_read_ids == [first.tool_input["chunk_ids"][0],
                                      second.tool_input["chunk_ids"][0]]
    assert answer.loops == 2  # stopped when the model said the memory suffices

    prompts = [r["messages"][0]["content"] for r in requests]
    assert "Your memory so far:\n(empty)" in prompts[0]
    assert "similar to this one (for linking facts):\n(none)" in prompts[0]
    assert "Your memory so far:\nNothing on levers yet." in prompts[1]
    assert f"New passage [{answer.chunks_read_ids[1]}]" in prompts[1]
    # the answer prompt recalls the chunk read most similar to the question (TF-IDF)
    assert "Memory:\nGreatorex showed" in prompts[2] and f"[{PEPYS}] " in prompts[2]
    assert answer.memory_state == {
        "final_memory": f"Greatorex showed that levers trade time for strength [{PEPYS}].",
        "history_size": 2,
    }
    assert answer.to_record()["memory_state"]["history_size"] == 2
    assert [c.chunk_id for c in answer.citations] == [PEPYS]


def test_memory_stays_under_its_token_budget(sample_index: Path) -> None:
    long = " ".join(f"fact{i} [{PEPYS}]" for i in range(400))
    script = [_update(long), _update(long)] + [_update("short", "yes"), reply("Levers.")]
    settings = sleuth.Settings.load(memory={"memory_size": 100, "candidates": 2},
                                    agent={"max_steps": 5})
    with FakeLLMServer(script) as server:
        answer = sleuth.ask("What did Greatorex show Pepys about levers?", index=sample_index,
                            agent="memory", settings=settings,
                            llm=OpenAIClient("fake-model", server.base_url))
        requests = server.requests
    assert "over the budget of 100" in requests[1]["messages"][0]["content"]  # asked to shrink
    first_memory = answer.trajectory[1].reasoning
    assert first_memory.startswith("fact0") and len(first_memory.split()) < 100  # then cut
    assert f"Your memory so far:\n{first_memory}" in requests[2]["messages"][0]["content"]
    assert answer.memory_state == {"final_memory": "short", "history_size": 2}


def test_memory_prompt_from_settings_and_untagged_replies(sample_index: Path) -> None:
    settings = sleuth.Settings.load(memory={"update_prompt": "Q={question} C={chunk} {x}",
                                            "candidates": 1})
    with FakeLLMServer([reply("plain notes"), reply("Levers.")]) as server:
        answer = sleuth.ask("What did Greatorex show Pepys about levers?", index=sample_index,
                            agent="memory", settings=settings,
                            llm=OpenAIClient("fake-model", server.base_url))
        first = server.requests[0]["messages"][0]["content"]
    assert first.startswith("Q=What did Greatorex") and first.endswith(" {x}")
    assert answer.memory_state == {"final_memory": "plain notes", "history_size": 1}

    # A-RAG style: an instruction without placeholders gets the inputs appended
    settings = sleuth.Settings.load(memory={"update_prompt": "<update>...</update>",
                                            "candidates": 1})
    with FakeLLMServer([reply("<update>notes</update>"), reply("Levers.")]) as server:
        sleuth.ask("What did Greatorex show Pepys?", index=sample_index, agent="memory",
                   settings=settings, llm=OpenAIClient("fake-model", server.base_url))
        first = server.requests[0]["messages"][0]["content"]
    assert first.startswith("<update>...</update>\n\nQuestion: What did Greatorex")
    assert "New passage [" in first and "Memory budget: 5000 tokens." in first


HARBOUR = [
    {"id": "film", "title": "The Quiet Harbour", "text": "The Quiet Harbour is a 1954 drama "
     "film written by Tomas Brandt Lindqvist and directed by Marta Velasquez Orozco."},
    {"id": "director", "title": "Marta Velasquez Orozco", "text": "Marta Velasquez Orozco was "
     "a film director. She studied under the painter Lucia Orozco."},
    {"id": "writer", "title": "Tomas Brandt Lindqvist", "text": "Tomas Brandt Lindqvist was a "
     "Swedish novelist."},
]
# a relation no page-fact tool reads, so the model answers
TEACHER = "Who was the teacher of the director of film The Quiet Harbour?"


@pytest.fixture(scope="module")
def harbour_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return records_index(tmp_path_factory, "harbour", HARBOUR)


@pytest.mark.parametrize(("agent", "script", "expected", "requests_made"), [
    # the default agent: an answer that stops at the bridge entity gets its passage and
    # one more turn, once
    ("hybrid", ["Marta Velasquez Orozco [film#0].", "Lucia Orozco [director#0]."],
     "Lucia Orozco", 2),
    ("hybrid", ["Marta Velasquez Orozco.", "Marta Velasquez Orozco directed it."],
     "Marta Velasquez Orozco directed it [film#0].", 2),  # cited where it is read
    ("hybrid", ["Lucia Orozco [director#0]."], "Lucia Orozco", 1),
    # A-RAG's own loop is left as published
    ("full", ["Marta Velasquez Orozco."], "Marta Velasquez Orozco.", 1),
])
def test_an_answer_that_stops_at_the_bridge_gets_one_more_turn(
        harbour_index: Path, agent: str, script: list[str], expected: str,
        requests_made: int) -> None:
    with FakeLLMServer([reply(text) for text in script]) as server:
        answer = sleuth.ask(TEACHER, index=harbour_index, agent=agent,
                            llm=OpenAIClient("fake-model", server.base_url))
        requests = server.requests
    assert len(requests) == requests_made and answer.answer.startswith(expected)
    if requests_made == 2 and agent == "hybrid":
        said, note = requests[1]["messages"][-2:]
        assert said == {"role": "assistant", "content": script[0]}
        assert note["content"].startswith("Your answer names Marta Velasquez Orozco, the "
                                          "director this question goes through")
        assert "=== chunk director#0" in note["content"] and TEACHER in note["content"]
        step = next(s for s in answer.trajectory if s.tool_name == "bridge_passages")
        assert step.kind == "check"  # a step of the bridge check
        assert step.tool_input["chunk_ids"][0] == "director#0"
        assert "director#0" in answer.chunks_read_ids


def test_stops_at_bridge_judges_the_answer_against_the_question() -> None:
    from sleuth.text.querytext import stops_at_bridge

    evidence = ["Life Without Soul is a 1915 film directed by Joseph W. Smiley.",
                "Joseph W. Smiley died in New York City."]
    asked = "Where did the director of film Life Without Soul die?"
    assert stops_at_bridge(asked, "Joseph W. Smiley [a#0]", evidence) == "Joseph W. Smiley"
    assert stops_at_bridge(asked, "Joseph W. Smiley was the director.", evidence) == \
        "Joseph W. Smiley"
    assert stops_at_bridge(asked, "New York City [b#0]", evidence) is None
    assert stops_at_bridge(asked, "Joseph W. Smiley died in New York.", evidence) is None
    # a question that asks for the bridge itself is answered by it
    assert stops_at_bridge("Who is the director of film Life Without Soul?",
                           "Joseph W. Smiley", evidence) is None
