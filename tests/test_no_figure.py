"""no_figure: a question that asks for a figure, answered without one, is withheld (flagged
in flag mode); an answer with a figure, in digits or words, and a question that asks for
something else stand."""

from __future__ import annotations

from pathlib import Path

import pytest

import sleuth
from conftest import ask_checked
from sleuth.agent.checks.no_figure import states_figure
from sleuth.text.querytext import asks_figure

PEPYS = "pepys-diary-1660.md#0"


@pytest.mark.parametrize(("question", "asks"), [
    ("how many loose objects before git gc --auto packs them, by default?", True),
    ("By how much did Pepsico increase its credit agreement?", True),
    ("what's the default rename detection limit for git diff?", True),
    ("What size are WAL segment files by default?", True),
    ("http.postBuffer default size", True),  # a compound noun: its last word
    ("The default size of temp_buffers", False),  # a noun phrase with a stop word: unread
    ("function that gives a table's total size", False),  # asks for a function
    ("Is there a limit on how many connections a role may open?", False),  # yes or no
    ("How long does a prepared statement last?", False),  # may be "until the session ends"
    ("Which film has the director born later, Hoodwink or Length Of War?", False),
    ("Which country Anthony I, Count Of Ligny's father is from?", False),  # a title's noun
    ("length of war director", False),  # a film's name, lower-case
    ("What did Greatorex show Pepys about levers?", False),
])
def test_which_questions_ask_for_a_figure(question: str, asks: bool) -> None:
    assert asks_figure(question) is asks


@pytest.mark.parametrize(("answer", "states"), [
    ("6700 [c#0]", True),
    ("1 MiB", True),
    ("-1 means the zlib default", True),
    ("three", True),
    ("There is no limit.", True),  # none, written in words
    ("Sales growth was flat.", True),  # no change
    ("The tax rate has not changed.", True),  # a change of none
    ("Both of his sons.", True),  # a count in words
    ("It is free for open-source projects.", True),  # an amount
    ("true [c#0]", False),
    ("It uses HTTP/1.1 and chunked encoding for larger requests.", False),  # a version
    ("The buffer used by smart HTTP transports [c#12]", False),  # the id's number is none
])
def test_which_answers_state_a_figure(answer: str, states: bool) -> None:
    assert states_figure(answer) is states


def test_a_number_word_of_the_question_is_no_figure_of_the_answer() -> None:
    question = "How much memory can a single sort use before it spills to disk?"
    restated = "work_mem: the memory a single sort may use before writing temporary files."
    assert states_figure(restated) and not states_figure(restated, question)
    assert states_figure("A single 4MB buffer.", question)  # its digits are the figure
    assert states_figure("Both.", "How many of its two modes log?")


def _ask(index: Path, question: str, said: str, checks: list[str]) -> sleuth.Answer:
    return ask_checked(index, question, said, checks)


def test_an_answer_without_the_figure_asked_for_is_withheld_or_flagged(
        sample_index: Path) -> None:
    question = "How many levers did Greatorex show Pepys?"
    said = f"Greatorex showed him the strength that levers have [{PEPYS}]."
    withheld = _ask(sample_index, question, said, ["no_figure"])
    assert withheld.abstained and withheld.answer == (
        "The documents do not say: the question asks for a figure and the answer states none.")
    step = withheld.trajectory[-1]
    assert step.tool_name == "no_figure" and step.tool_output.startswith("Greatorex showed")
    flagged = _ask(sample_index, question, said, ["no_figure:flag"])
    assert flagged.answer == said and not flagged.abstained
    assert flagged.flags == ["no_figure: the question asks for a figure and the answer "
                             "states none"]


def test_a_figure_or_another_kind_of_question_stands(sample_index: Path) -> None:
    counted = f"Two levers [{PEPYS}]."
    kept = _ask(sample_index, "How many levers did Greatorex show Pepys?", counted,
                ["no_figure"])
    assert kept.answer == counted and not kept.abstained
    said = f"The strength that levers have [{PEPYS}]."
    other = _ask(sample_index, "What did Greatorex show Pepys about levers?", said,
                 ["no_figure"])
    assert other.answer == said and other.check_notes == []
