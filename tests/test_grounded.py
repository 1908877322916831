"""grounded: an answer whose words the passages it cites do not hold is withheld, or flagged
in flag mode; a grounded one, a yes or no, and a figure written another way stand."""

from __future__ import annotations

from pathlib import Path

import pytest

import sleuth
from conftest import ask_checked
from sleuth.agent.checks.grounded import unheld

PEPYS = "pepys-diary-1660.md#0"
QUESTION = "What did Greatorex show Pepys about levers?"
CHUNK = ("Greatorex showed him how it comes to pass the strength that levers have: what is got "
         "as to matter of strength is lost by them as to matter of time. Capital expenditure "
         "was $1,577 million.")


@pytest.mark.parametrize(("answer", "missing"), [
    ("What is got in strength is lost in time [c#0].", None),  # its words are the chunk's
    ("Levers multiply force without cost, as Archimedes proved [c#0].",
     ["archimedes", "cost", "force", "multiply", "proved", "without"]),
    ("$1577.00 [c#0]", None),  # a figure written another way is the same figure
    ("Yes [c#0].", None),  # adds no word: not read
    ("Levers, Greatorex [c#0]", None),  # only the question's words: not read
])
def test_unheld_names_the_words_the_cited_chunks_do_not_hold(answer: str,
                                                              missing: list[str] | None) -> None:
    assert unheld(QUESTION, answer, [CHUNK]) == missing


def _ask(index: Path, said: str, checks: list[str]) -> sleuth.Answer:
    return ask_checked(index, QUESTION, said, checks, profile="capable")


def test_an_answer_its_passage_does_not_hold_is_withheld_or_flagged(sample_index: Path) -> None:
    said = f"Levers multiply force without cost, as Archimedes proved [{PEPYS}]."
    withheld = _ask(sample_index, said, ["grounded"])
    assert withheld.abstained and withheld.answer.startswith(
        "The documents do not say: the passages it cites do not hold 'archimedes'")
    assert [s.tool_name for s in withheld.trajectory][-1] == "grounded"
    flagged = _ask(sample_index, said, ["grounded:flag"])
    assert flagged.answer == said and not flagged.abstained
    assert flagged.flags == ["grounded: the passages it cites do not hold 'archimedes', "
                             "'force', 'multiply', 'proved', 'without'"]


def test_an_answer_its_passage_holds_stands(sample_index: Path) -> None:
    said = f"What is got as to strength is lost as to time [{PEPYS}]."
    kept = _ask(sample_index, said, ["grounded"])
    assert kept.answer == said and not kept.abstained and kept.flags == []
    notes = kept.to_record()["check_notes"]
    assert [(n["name"], n["changed"], n["flagged"]) for n in notes] == \
        [("grounded", False, False)]
