"""one_sided: a yes or no about two things, citing a page of one.

"Are Rolling Thunder and The Stolen Bride from the same country?" is answered by what the
pages of both say; a model that answers "No" from memory cites one page for show. The words
of such an answer are none the passages could hold (:mod:`~sleuth.agent.checks.grounded`
does not read it), but its citations say what it rests on: a yes or no (the answer's first
word, :data:`~sleuth.text.lexicon.YES_NO`) to a question that compares two things (a word
of :data:`~sleuth.text.lexicon.COMPARES`: "both", "same", "than", "either", ...; not "and",
which joins two years of one company as often as two things) that cites passages of fewer
than two documents (as the model wrote them: refs resolved, an id the run never retrieved
is none) is one-sided. The check withholds it, saying which document it rests on; in flag
mode (``one_sided:flag``) it stands, flagged. Two things one page compares ("Is the Danube
longer than the Rhine?" on a page of rivers) are flagged too: flag mode is the one for a
model that reads. No model call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sleuth.agent.checks.base import CheckContext, When
from sleuth.agent.draft import Draft
from sleuth.agent.run import NOT_SAID
from sleuth.text.abstain import abstains
from sleuth.text.ids import split_answer, strip_citations
from sleuth.text.lexicon import COMPARES, YES_NO, words

SIDES = 2  # documents a yes or no about two things cites


def yes_or_no(answer: str) -> bool:
    """Whether ``answer`` (its citations left out) opens with "yes" or "no"."""
    said = words(strip_citations(split_answer(answer)[0]))
    return bool(said) and said[0] in YES_NO


def compares_two(question: str) -> bool:
    """Whether ``question`` compares two things (a word of
    :data:`~sleuth.text.lexicon.COMPARES`)."""
    return any(w in COMPARES for w in words(question))


@dataclass(frozen=True)
class OneSided:
    """A yes or no about two things that cites passages of one document at most is withheld
    (flagged in flag mode), recorded as a step."""

    name: str = "one_sided"
    when: When = "draft"
    calls_model: bool = False
    verdicts: bool = False

    def applies(self, draft: Draft, ctx: CheckContext) -> bool:
        return not draft.abstained and not abstains(draft.answer) and \
            yes_or_no(draft.answer) and compares_two(draft.question)

    def check(self, draft: Draft, ctx: CheckContext) -> Draft | None:
        started = time.perf_counter()
        retrieved = set(ctx.retrieved)
        ids = [c for c in ctx.cited(draft) if c and c in retrieved]
        documents = list(dict.fromkeys(c.doc_id for c in ctx.index.read(ids).chunks))
        if len(documents) >= SIDES:
            return None
        where = f"a page of one document ({documents[0]})" if documents else "no page"
        note = f"a yes or no about two things that cites {where}"
        ctx.run.observe("one_sided", {"chunk_ids": ids, "documents": documents},
                        strip_citations(draft.answer).strip()[:600],
                        f"the answer (this step's output) is {note}: it is withheld", started)
        return draft.revise(self.name, note, answer=f"{NOT_SAID}: {note}.", abstained=True)
