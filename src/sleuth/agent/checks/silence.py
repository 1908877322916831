"""silence: an answer with no words is an abstention that says why.

A 1.5B model stuck in a loop of repeated calls answered "[2wiki-00317#0]", once in 100
questions: nothing but ids, or nothing at all, is no answer. The agent says it cannot answer
and why (the steps it took, the budget that ended the search), keeping the ids it gave. The
last check of every list: it reads a tool's settled verdict too. No model call.
"""

from __future__ import annotations

from dataclasses import dataclass

from sleuth.agent.checks.base import CheckContext, When
from sleuth.agent.checks.quote_named import names_only
from sleuth.agent.draft import Draft
from sleuth.agent.run import abstention
from sleuth.text.ids import strip_citations


@dataclass(frozen=True)
class Silence:
    """An answer of nothing but ids (or nothing) becomes an abstention saying why."""

    name: str = "silence"
    when: When = "draft"
    calls_model: bool = False
    verdicts: bool = True

    def applies(self, draft: Draft, ctx: CheckContext) -> bool:
        return not strip_citations(draft.answer).strip() or bool(names_only(draft.answer))

    def check(self, draft: Draft, ctx: CheckContext) -> Draft | None:
        answer = ctx.run.answer
        why = f"the model's answer had no words after {answer.loops} steps" + (
            f" (the search ended: {answer.forced.replace('_', ' ')})" if answer.forced else "")
        return draft.revise(self.name, why, answer=f"{abstention(why)} {draft.answer}".strip(),
                            abstained=True)
