"""one_sided: a yes or no to a question about two things that cites a page of one document
is withheld, or flagged in flag mode; one that cites both, and a yes or no about one thing,
stand."""

from __future__ import annotations

from pathlib import Path

import pytest

import sleuth
from conftest import ask_checked
from sleuth.agent.checks.one_sided import compares_two, yes_or_no

PEPYS = "pepys-diary-1660.md#0"
CORNWALL = "cornwall-journey.html#0"
BOTH = "Did Pepys and the traveller in Cornwall both go by boat?"


@pytest.mark.parametrize(("question", "compares"), [
    ("Are Rolling Thunder and The Stolen Bride from the same country?", True),
    ("is the rhine longer than the danube", True),
    ("Do both films have directors of one nationality?", True),
    ("Was Pepys a member of parliament?", False),
    ("Did the company grow its sales between 2021 and 2022?", False),  # one thing, two years
])
def test_which_questions_compare_two_things(question: str, compares: bool) -> None:
    assert compares_two(question) is compares


@pytest.mark.parametrize(("answer", "said"), [
    ("No [c#0]", True), ("Yes, both were American.", True), ("Nobody knows", False),
    ("Norway [c#0]", False),
])
def test_which_answers_are_a_yes_or_no(answer: str, said: bool) -> None:
    assert yes_or_no(answer) is said


def _ask(index: Path, question: str, said: str, checks: list[str]) -> sleuth.Answer:
    return ask_checked(index, question, said, checks, profile="capable")


def test_a_yes_or_no_citing_one_side_is_withheld_or_flagged(sample_index: Path) -> None:
    said = f"Yes [{PEPYS}]."
    withheld = _ask(sample_index, BOTH, said, ["one_sided"])
    assert withheld.abstained and withheld.answer == (
        "The documents do not say: a yes or no about two things that cites a page of one "
        "document (pepys-diary-1660.md).")
    assert withheld.trajectory[-1].tool_name == "one_sided"
    flagged = _ask(sample_index, BOTH, said, ["one_sided:flag"])
    assert flagged.answer == said and not flagged.abstained
    assert flagged.flags == ["one_sided: a yes or no about two things that cites a page of "
                             "one document (pepys-diary-1660.md)"]


def test_a_yes_or_no_citing_both_sides_or_about_one_thing_stands(sample_index: Path) -> None:
    both = f"No [{PEPYS}] [{CORNWALL}]."
    kept = _ask(sample_index, BOTH, both, ["one_sided"])
    assert kept.answer == both and not kept.abstained and kept.flags == []
    assert [n.name for n in kept.check_notes] == ["one_sided"]
    one = _ask(sample_index, "Did Pepys go by boat?", f"Yes [{PEPYS}].", ["one_sided"])
    assert not one.abstained and one.check_notes == []
