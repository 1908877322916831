"""grounded: an answer whose words the passages it cites do not hold.

A model that answers from memory cites for show: asked what basal cell carcinoma arises
from, it writes a fluent sentence about something else and cites the first passage it was
shown. The words the answer adds to the question (its content words; figures compared as
figures, "1,577" as "1577.00") are looked up in the chunks it cites (those the run
retrieved; an id made up holds nothing), or, where it cites none, in every chunk the run
retrieved: where the chunks hold fewer than :data:`HELD` of them, the answer is not
grounded in its passages. The check withholds it, saying which words the passages do not
hold; in flag mode (``grounded:flag``) the answer stands, flagged with that note. An answer
that adds no word to the question (a yes or no, one option of "A or B?") is not read: its
grounding is no matter of words. No model call.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from sleuth.agent.checks.base import CheckContext, When
from sleuth.agent.draft import Draft
from sleuth.agent.run import NOT_SAID
from sleuth.text.abstain import abstains
from sleuth.text.ids import split_answer, strip_citations
from sleuth.text.lexicon import VERDICT_WORDS
from sleuth.text.querytext import content_words

HELD = 0.5  # of the words an answer adds to the question, its cited chunks must hold
SHOWN = 6  # words the note names
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_DECIMAL_ZEROS = re.compile(r"(?<=\d)\.0+\b")


def words(text: str) -> set[str]:
    """The content words of ``text`` (:func:`~sleuth.text.querytext.content_words`), with
    its figures written alike ("1,577.00" as "1577")."""
    return set(content_words(_DECIMAL_ZEROS.sub("", _THOUSANDS.sub("", text))))


def unheld(question: str, answer: str, chunks: Sequence[str]) -> list[str] | None:
    """The words ``answer`` adds to ``question`` that ``chunks`` do not hold, where the
    chunks hold fewer than :data:`HELD` of them; None: the answer is grounded (or adds no
    word to the question)."""
    body = strip_citations(split_answer(answer)[0])
    added = sorted(words(body) - words(question) - VERDICT_WORDS)
    if not added:
        return None
    held: set[str] = set()
    for text in chunks:
        held |= words(text)
    missing = [w for w in added if w not in held]
    return None if len(added) - len(missing) >= HELD * len(added) else missing


@dataclass(frozen=True)
class Grounded:
    """An answer whose cited chunks do not hold its words (:func:`unheld`) is withheld, or
    flagged in flag mode, recorded as a step."""

    name: str = "grounded"
    when: When = "draft"
    calls_model: bool = False
    verdicts: bool = False

    def applies(self, draft: Draft, ctx: CheckContext) -> bool:
        return bool(strip_citations(draft.answer).strip()) and not draft.abstained and \
            not abstains(draft.answer)

    def check(self, draft: Draft, ctx: CheckContext) -> Draft | None:
        started = time.perf_counter()
        retrieved = ctx.retrieved
        cited = ctx.cited(draft)
        ids = [c for c in cited if c and c in retrieved] if cited else retrieved
        chunks = [c.text for c in ctx.index.read(ids).chunks]
        missing = unheld(draft.question, draft.answer, chunks)
        if missing is None:
            return None
        named = ", ".join(repr(w) for w in missing[:SHOWN])
        where = "the passages it cites" if cited else "the passages retrieved"
        note = f"{where} do not hold {named}"
        ctx.run.observe("grounded", {"chunk_ids": ids, "missing": missing},
                        strip_citations(draft.answer).strip()[:600],
                        f"the answer (this step's output) adds words {where} do not hold "
                        f"({named}): it is withheld", started)
        return draft.revise(self.name, note, answer=f"{NOT_SAID}: {note}.", abstained=True)
