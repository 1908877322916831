"""quote_named: an answer made only of chunk ids gives way to what the first of them says.

Asked which passages tell something, the 1.5B model names the passage ("chunk
Novel-54537#00170#0") instead of saying what it says. Where the chunk named was retrieved by
the run, its sentences that share most words with the question are the answer, quoted and
cited; an id the model made up is not read. No model call.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from sleuth.agent.checks.answer_span import evidence
from sleuth.agent.checks.base import CheckContext, When
from sleuth.agent.draft import Draft
from sleuth.index.read import ReadIndex
from sleuth.text.ids import CHUNK_ID, cite, cited_ids, split_answer, strip_citations

# the words an answer may name a passage with and still say nothing of what it says
_NAMING = re.compile(r"\b(?:the|chunks?|passages?|paragraphs?|documents?|see|and|in)\b",
                     re.IGNORECASE)


def names_only(answer: str) -> list[str]:
    """The chunk ids ``answer`` is made of when it says nothing else ("chunk
    Novel-54537#00170#0", asked which passages tell something: the 1.5B model names the
    passage instead of saying what it says); ``[]`` for any other answer."""
    body = strip_citations(split_answer(answer)[0])
    named = list(dict.fromkeys(CHUNK_ID.findall(body)))
    rest = _NAMING.sub(" ", CHUNK_ID.sub(" ", body))
    return named if named and not re.search(r"[^\W_]", rest) else []


def quote_named(index: ReadIndex, question: str, named: Sequence[str],
                retrieved: Sequence[str]) -> str | None:
    """What the first of the ``named`` chunks that was ``retrieved`` says to ``question``:
    its sentences that share most words with it (:func:`evidence`), quoted and cited. None:
    no chunk named was retrieved (an id the model made up is not read)."""
    shown = evidence(index, question, "", [c for c in named if c in retrieved][:1])
    if not shown:
        return None
    chunk_id, text = next(iter(shown.items()))
    return f"\"{text}\" {cite(chunk_id)}"


@dataclass(frozen=True)
class QuoteNamed:
    """For an answer made only of chunk ids, what the first of them that the run retrieved
    says to the question (:func:`quote_named`), recorded as a step."""

    name: str = "quote_named"
    when: When = "draft"
    calls_model: bool = False
    verdicts: bool = False

    def applies(self, draft: Draft, ctx: CheckContext) -> bool:
        return bool(names_only(draft.answer))

    def check(self, draft: Draft, ctx: CheckContext) -> Draft | None:
        started = time.perf_counter()
        quoted = quote_named(ctx.index, draft.question, names_only(draft.answer),
                             ctx.retrieved)
        if quoted is None:
            return None
        ctx.run.observe("quote_named", {"chunk_ids": cited_ids(quoted)}, quoted,
                        "the answer named a passage, not what it says: the passage's "
                        "sentences on the question are the answer", started)
        return draft.revise(self.name, "the answer named a passage: its sentences on the "
                            "question are the answer", answer=quoted)
