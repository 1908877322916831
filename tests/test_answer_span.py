"""The default agent's answer step and its honesty (issue 40): a span of the evidence,
checked against its passage, becomes the answer; a span the passage does not hold leaves
the draft; a question about something the corpus never mentions is said to be so, and the
agent says the documents do not answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import records_index

import sleuth
from sleuth.llm import OpenAIClient
from sleuth.settings import Settings
from sleuth.testing.fake import FakeLLMServer, reply
from sleuth.text.querytext import phrased_otherwise

MANUAL = [
    {"id": "conn", "title": "Connections and Authentication", "text":
     "port (integer): The TCP port the server listens on; 5432 by default. Note that the "
     "same port number is used for all IP addresses the server listens on. "
     "max_connections (integer): Determines the maximum number of concurrent connections "
     "to the database server. The default is typically 100 connections."},
    {"id": "wal", "title": "Write Ahead Log", "text":
     "wal_level (enum): wal_level determines how much information is written to the WAL. "
     "The default value is replica, which writes enough data to support WAL archiving."},
]
FILLER = " ".join(f"Setting number {n} changes how the planner weighs plan {n}." for n in
                 range(30))
MANUAL.append({"id": "planner", "title": "Planner Cost Constants", "text":
               f"{FILLER} random_page_cost (floating point): Sets the planner's estimate of "
               "the cost of a non-sequentially-fetched disk page. The default is 4.0. "
               f"{FILLER}"})
SMALL = Settings.from_name("small").agent.checks or []
# the answer step runs where the chain had it: after past_echo, before unfounded
SPAN_ON = {"settings": Settings.load(agent={"checks": [
    *SMALL[:SMALL.index("unfounded")], "answer_span", *SMALL[SMALL.index("unfounded"):]]})}


@pytest.fixture(scope="module")
def manual_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return records_index(tmp_path_factory, "manual", MANUAL)


def _span(**fields: object) -> dict[str, str]:
    return reply(json.dumps(fields))


def test_a_checked_span_becomes_the_cited_answer(manual_index: Path) -> None:
    draft = reply("The default port is 80 [wal#0].\nRelevance: wal#0=0.9")
    span = _span(answerable=True, chunk_id="conn#0", answer="5432",
                 sentence="port (integer): The TCP port the server listens on; 5432 by default.")
    with FakeLLMServer([draft, span]) as server:
        answer = sleuth.ask("default port the server listens on?", index=manual_index,
                            llm=OpenAIClient("fake-model", server.base_url), **SPAN_ON)
        step_request = server.requests[-1]
    assert answer.answer.startswith("5432 [conn#0]")
    assert "5432 by default" in answer.answer
    assert [c.chunk_id for c in answer.citations] == ["conn#0"]
    assert answer.trajectory[-1].tool_name == "answer_span"
    assert answer.trajectory[-1].kind == "check"
    # the step reads the passages with their ids, the draft as a hint
    assert "[conn#0]" in step_request["messages"][-1]["content"]
    assert "Draft answer: The default port is 80" in step_request["messages"][-1]["content"]


def test_a_span_its_passage_does_not_hold_leaves_the_draft(manual_index: Path) -> None:
    draft = reply("The default is replica [wal#0].\nRelevance: wal#0=1")
    span = _span(answerable=True, chunk_id="conn#0", answer="replica",
                 sentence="The default value is replica.")
    with FakeLLMServer([draft, span]) as server:
        answer = sleuth.ask("What is the default wal_level?", index=manual_index,
                            llm=OpenAIClient("fake-model", server.base_url), **SPAN_ON)
    assert answer.answer.startswith("The default is replica [wal#0]")
    assert "not found in the passage" in answer.trajectory[-1].reasoning


def test_a_term_the_corpus_never_mentions_is_said_and_the_agent_abstains(
        manual_index: Path) -> None:
    draft = reply("The default io_combine_limit is 128kB.")
    span = _span(answerable=False, chunk_id="", answer="", sentence="")
    with FakeLLMServer([draft, span]) as server:
        answer = sleuth.ask("default value of io_combine_limit", index=manual_index,
                            llm=OpenAIClient("fake-model", server.base_url), **SPAN_ON)
        first = server.requests[0]
    assert "the corpus never mentions 'io_combine_limit'" in first["messages"][-1]["content"]
    assert "tool_choice" not in first  # nothing to search for: it may answer at once
    assert answer.answer.startswith("The documents do not say")
    assert answer.abstained


def test_the_answer_step_is_off_unless_asked(manual_index: Path) -> None:
    with FakeLLMServer([reply("5432 [conn#0].")]) as server:
        answer = sleuth.ask("default port the server listens on?", index=manual_index,
                            llm=OpenAIClient("fake-model", server.base_url))
        assert len(server.requests) == 1
    assert answer.answer.startswith("5432 [conn#0]")


def test_a_long_chunk_is_shown_around_what_the_question_names(manual_index: Path,
                                                              sleuth) -> None:  # type: ignore[no-untyped-def]
    out = sleuth("tool", "hybrid_search", "random_page_cost default value?", "--index",
                 str(manual_index)).out
    block = out.split("=== chunk planner#0")[1].split("=== chunk")[0]
    assert "The default is 4.0." in block  # not the chunk's first 800 characters
    assert "[...] " in block and "more tokens: chunk_read planner#0" in out


def test_a_long_chunk_shows_each_place_the_question_is_answered(
        tmp_path_factory: pytest.TempPathFactory, sleuth) -> None:  # type: ignore[no-untyped-def]
    # two settings asked about, far apart in one chunk, each with its default a few
    # sentences after its name: both are shown, in text order, the filler between left out
    filler = " ".join(f"Setting {n} weighs plan {n}." for n in range(25))
    text = (f"{filler}\n\nseq_page_cost (floating point): Sets the planner's estimate of the "
            "cost of a disk page fetch that is part of a series of sequential fetches. It "
            "can be overridden per tablespace. The default is 1.0. "
            f"{filler} {filler}\n\nrandom_page_cost (floating point): Sets the planner's "
            "estimate of the cost of a non-sequentially-fetched disk page. It can be "
            f"overridden per tablespace. The default is 4.0. {filler}")
    index = records_index(tmp_path_factory, "costs",
                          [{"id": "costs", "title": "Costs", "text": text}])
    out = sleuth("tool", "hybrid_search", "seq_page_cost and random_page_cost defaults?",
                 "--index", str(index)).out
    block = out.split("=== chunk costs#0")[1].split("more tokens: chunk_read")[0]
    assert block.index("The default is 1.0.") < block.index("The default is 4.0.")
    assert "seq_page_cost (floating point): Sets" in block
    assert "[...] " in block.split("The default is 1.0.")[1]
    assert "plan 10" not in block  # the filler between is not shown
    assert len(block) < 1200


def test_an_answer_about_a_term_the_corpus_never_holds_is_not_given(
        manual_index: Path) -> None:
    # the model was told the corpus never mentions CONN_MAX_AGE and answered from memory
    with FakeLLMServer([reply("The default CONN_MAX_AGE is 6 seconds [conn#0].")]) as server:
        answer = sleuth.ask("django CONN_MAX_AGE default value", index=manual_index,
                            llm=OpenAIClient("fake-model", server.base_url))
    assert answer.answer == "The documents do not say: the corpus never mentions " \
                            "'CONN_MAX_AGE'."
    assert answer.abstained
    # nor one that answers in other words, without the term (innodb_buffer_pool_size)
    with FakeLLMServer([reply("The InnoDB buffer pool defaults to 128 MB [conn#0].")]) as server:
        answer = sleuth.ask("What's the default innodb_buffer_pool_size?", index=manual_index,
                            llm=OpenAIClient("fake-model", server.base_url))
    assert answer.answer == "The documents do not say: the corpus never mentions " \
                            "'innodb_buffer_pool_size'."
    # an annotation, a product owning something ("Spring's", even opening the question) and
    # a numbered acronym are names the corpus holds verbatim or not at all (asked of a
    # manual that has none of them)
    for asked, missing in (("default propagation of Spring's @Transactional",
                            "'Transactional', 'Spring'"),
                           ("Spring's default transaction propagation?", "'Spring'"),
                           ("function for the SHA-256 digest of a string", "'SHA-256'")):
        with FakeLLMServer([reply("The default is REQUIRED [conn#0].")]) as server:
            answer = sleuth.ask(asked, index=manual_index,
                                llm=OpenAIClient("fake-model", server.base_url))
        assert answer.answer == f"The documents do not say: the corpus never mentions {missing}."
    # an answer that names what the corpus does hold stands ("the equivalent is ...")
    held = "The PostgreSQL equivalent of SQLSERVER_PORT is the port setting, max_connections " \
           "aside [conn#0]."
    with FakeLLMServer([reply(held)]) as server:
        answer = sleuth.ask("equivalent of SQLSERVER_PORT?", index=manual_index,
                            llm=OpenAIClient("fake-model", server.base_url))
    assert answer.answer.startswith("The PostgreSQL equivalent of SQLSERVER_PORT")
    assert not answer.abstained


PRODUCT = [{"id": f"p{n}", "title": f"PgLite chapter {n}", "text":
            f"PgLite keeps table {n} in its own file. Chapter {n} of the PgLite manual."}
           for n in range(24)] + [
    {"id": "uuid", "title": "UUID functions", "text":
     "The function gen_random_uuid returns a version 4 (random) UUID."}]


@pytest.fixture(scope="module")
def product_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return records_index(tmp_path_factory, "product", PRODUCT)


def test_the_corpus_own_name_does_not_found_an_answer_about_an_unseen_term(
        product_index: Path) -> None:
    # "PgLite" is in nearly every chunk: naming it does not make the answer the corpus's
    made_up = "The UUIDv7 function is built into PgLite [p1#0]."
    with FakeLLMServer([reply(made_up)]) as server:
        answer = sleuth.ask("built-in function to generate a UUIDv7?", index=product_index,
                            llm=OpenAIClient("fake-model", server.base_url))
    assert answer.answer == "The documents do not say: the corpus never mentions 'UUIDv7'."
    # asked for something in its place, a function the corpus holds on one page is an
    # answer from it
    held = "There is none for UUIDv7; gen_random_uuid gives version 4 [uuid#0]."
    for asked in ("what can I use instead of a UUIDv7 function?",
                  "what do I call in place of UUIDv7()?"):
        with FakeLLMServer([reply(held)]) as server:
            answer = sleuth.ask(asked, index=product_index,
                                llm=OpenAIClient("fake-model", server.base_url))
        assert answer.answer.startswith("There is none for UUIDv7") and not answer.abstained
    # asked what the unseen term is or does, another's description is no answer
    with FakeLLMServer([reply("UUIDv7 is generated by gen_random_uuid [uuid#0].")]) as server:
        answer = sleuth.ask("what does the UUIDv7 function return?", index=product_index,
                            llm=OpenAIClient("fake-model", server.base_url))
    assert answer.answer == "The documents do not say: the corpus never mentions 'UUIDv7'."
    assert answer.abstained


def test_a_dotted_name_whose_parts_the_corpus_holds_is_not_unseen(
        product_index: Path) -> None:
    # the manual names the function and its version on one page, not "gen_random_uuid.v4"
    with FakeLLMServer([reply("A version 4 (random) UUID [uuid#0].")]) as server:
        answer = sleuth.ask("what kind of UUID does gen_random_uuid.version return?",
                            index=product_index,
                            llm=OpenAIClient("fake-model", server.base_url))
        (request,) = server.requests
    assert "never mentions" not in request["messages"][-1]["content"]
    assert answer.answer.startswith("A version 4") and not answer.abstained


def test_a_short_period_or_a_spelled_out_acronym_is_not_an_unseen_term(
        product_index: Path) -> None:
    # "FY2018" is "fiscal 2018" in a filing, "TKPSF" the words before it, "PPNE" short:
    # phrased otherwise, so none is said to be missing, nor is an answer without them withheld
    with FakeLLMServer([reply("One table per file [p1#0].")]) as server:
        answer = sleuth.ask("In FY2018, how many tables kept per single file (TKPSF) and "
                            "PPNE did PgLite have?",
                            index=product_index,
                            llm=OpenAIClient("fake-model", server.base_url))
        (request,) = server.requests
    assert "never mentions" not in request["messages"][-1]["content"]
    assert answer.answer.startswith("One table per file") and not answer.abstained
    # an identifier stays one: "UUIDv7" is said to be missing
    with FakeLLMServer([reply("The documents do not say.")]) as server:
        sleuth.ask("Is there a UUIDv7 function in FY2018?", index=product_index,
                   llm=OpenAIClient("fake-model", server.base_url))
        (request,) = server.requests
    assert "the corpus never mentions 'UUIDv7'." in request["messages"][-1]["content"]


def test_a_name_the_corpus_never_mentions_is_said_and_an_answer_about_it_withheld(
        product_index: Path) -> None:
    # "an Aurora cluster" asked of PgLite's manual: a name capitalised mid-sentence that no
    # chunk holds; the model answers from the limits page anyway
    made_up = "The maximum storage size is unlimited [p3#0]."
    with FakeLLMServer([reply(made_up)]) as server:
        answer = sleuth.ask("Maximum storage size of an Aurora PgLite cluster?",
                            index=product_index,
                            llm=OpenAIClient("fake-model", server.base_url))
        (request,) = server.requests
    assert "the corpus never mentions 'Aurora'." in request["messages"][-1]["content"]
    assert answer.answer == "The documents do not say: the corpus never mentions 'Aurora'."
    assert answer.abstained


@pytest.mark.parametrize("question", [
    "How many tables does a PgLite Chaptr keep?",  # misspelt: the passages hold "Chapter"
    "Summarize it. Which file holds table 3?",  # capitalised where a sentence opens
    "what does Chapter 3 of the PgLite manual say about table 3?",  # both in the corpus
])
def test_a_misspelt_or_sentence_opening_word_is_not_an_unseen_name(
        product_index: Path, question: str) -> None:
    with FakeLLMServer([reply("Table 3 has its own file [p3#0].")]) as server:
        answer = sleuth.ask(question, index=product_index,
                            llm=OpenAIClient("fake-model", server.base_url))
        (request,) = server.requests
    assert "never mentions" not in request["messages"][-1]["content"]
    assert answer.answer.startswith("Table 3 has its own file") and not answer.abstained


@pytest.mark.parametrize(("term", "otherwise"), [
    ("FY2018", True), ("Q3", True), ("H1'23", True), ("FY2023Q1", True), ("Q1FY24", True),
    ("PPNE", True), ("UUIDv7", False), ("CONN_MAX_AGE", False), ("BLCKSZ", False),
])
def test_what_a_corpus_may_phrase_otherwise(term: str, otherwise: bool) -> None:
    assert phrased_otherwise(term, f"What about {term} here?") is otherwise
