"""no_figure: a question that asks for a figure, answered without one.

Asked "what's the default rename detection limit for git diff?", the 1.5B model answers
"true" (the default of the option beside it, ``diff.renames``); asked "http.postBuffer
default size", it explains what the buffer is for. Neither answer is one the question asked
for: a question that asks for a figure (:func:`~sleuth.text.querytext.asks_figure`: "how
many", "how much", "what size ...", "... default size") is answered by a number, in digits
or words ("three", "1 MiB", "both", "unlimited", "none", "flat", "has not changed": a
change of none is a figure, zero). An answer that states none is
withheld, saying so; the model's answer is kept in the check's step. In flag mode
(``no_figure:flag``) it stands, flagged. A number inside a name ("HTTP/1.1", "x86") is no
figure, nor is a number word the question itself holds ("How much memory can a single sort
use?" answered "work_mem ... a single sort ..." restates the question, not a figure). An
answer that abstains is not read. No model call.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from sleuth.agent.checks.base import CheckContext, When
from sleuth.agent.draft import Draft
from sleuth.agent.run import NOT_SAID
from sleuth.text.abstain import abstains
from sleuth.text.ids import split_answer, strip_citations
from sleuth.text.lexicon import NUMBER_WORDS, words
from sleuth.text.querytext import asks_figure

# a digit that starts a number of its own: not inside a word or a version ("HTTP/1.1", "v2")
_DIGITS = re.compile(r"(?<![\w/.])\d")
# a change of none, said with a verb ("has not changed", "didn't change"): a figure, zero
_NO_CHANGE = re.compile(r"\b(?:not|never|n['’]t)\s+(?:been\s+)?chang", re.IGNORECASE)


def states_figure(answer: str, question: str = "") -> bool:
    """Whether ``answer`` (its citations left out) states a number: digits of their own, a
    word of :data:`~sleuth.text.lexicon.NUMBER_WORDS` that ``question`` does not hold, or no
    change ("has not changed")."""
    body = strip_citations(split_answer(answer)[0])
    asked = set(words(question))
    return bool(_DIGITS.search(body) or _NO_CHANGE.search(body)) or \
        any(w in NUMBER_WORDS and w not in asked for w in words(body))


@dataclass(frozen=True)
class NoFigure:
    """An answer with no figure to a question that asks for one is withheld (flagged in
    flag mode), recorded as a step."""

    name: str = "no_figure"
    when: When = "draft"
    calls_model: bool = False
    verdicts: bool = False

    def applies(self, draft: Draft, ctx: CheckContext) -> bool:
        return bool(strip_citations(draft.answer).strip()) and not draft.abstained and \
            not abstains(draft.answer) and asks_figure(draft.question)

    def check(self, draft: Draft, ctx: CheckContext) -> Draft | None:
        if states_figure(draft.answer, draft.question):
            return None
        started = time.perf_counter()
        note = "the question asks for a figure and the answer states none"
        ctx.run.observe("no_figure", {"question": draft.question},
                        strip_citations(draft.answer).strip()[:600],
                        f"{note} (this step's output): it is withheld", started)
        return draft.revise(self.name, note, answer=f"{NOT_SAID}: {note}.", abstained=True)
