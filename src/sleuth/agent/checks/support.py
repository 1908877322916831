"""support: the model's facts under an answer follow it, where they state it.

The default agent's prompt asks for the answer itself, then one or two sentences of
support. A small model held to a JSON answer object (``{"facts": ..., "answer": ...}``,
:class:`~sleuth.llm.jsontools.JsonToolCalls`) writes the support into "facts" and the bare
answer into "answer": asked "What type of cancer is chronic myeloid leukemia (CML)?", the
1.5B model answers "blood cancer" over "Chronic myeloid leukemia (CML) is a type of blood
cancer"; asked "Can a history of radiation therapy increase BCC risk?", "Yes" over
"Radiation therapy can increase BCC risk". The answer alone leaves a person to guess what
it answers ("Yes" to which part?). Facts that state the answer (every content word of it,
"yes" and "no" aside), add words to it, and are read from the passages shown (three
quarters of the words they add to the question are the passages', :func:`grounded`)
follow the answer as its support, cited with its citations. Where the question offers
choices ("A or B?"), facts that name an option the answer does not are left out: they
would make the answer read both ways. The check applies only where the model wrote facts
(the ``small`` profile asks for them: ``agent.facts_first``) and the answer step
(``answer_span``) did not write the answer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sleuth.agent.checks.base import CheckContext, When
from sleuth.agent.checks.past_echo import CHOICES, grounded, stems
from sleuth.agent.draft import Draft
from sleuth.text.abstain import abstains
from sleuth.text.ids import cite, cited_ids, is_relevance_line, strip_citations
from sleuth.text.lexicon import YES_NO
from sleuth.text.querytext import proper_names


def supported(question: str, answer: str, facts: object, shown: str) -> str | None:
    """``answer`` followed by the model's ``facts`` where they are its support (see the
    module docstring); ``shown`` is the text of the passages the model was shown. None: the
    answer stands alone."""
    if not isinstance(facts, str) or not facts.strip() or abstains(answer) or abstains(facts):
        return None
    body = _heard(answer)
    relevance = [line for line in answer.split("\n") if is_relevance_line(line)]
    said = [w for w in stems(strip_citations(body)) if w not in YES_NO]
    stated = set(stems(strip_citations(facts)))
    if not stated - set(said) or not all(w in stated for w in said):
        return None  # the facts add nothing to the answer, or say something else
    if CHOICES.search(question) and any(
            n.lower() in facts.lower() and n.lower() not in body.lower()
            for n in proper_names(question)):
        return None
    if not grounded(question, facts, shown):
        return None
    cites = " ".join(cite(c) for c in cited_ids(body))
    support = f"{' '.join(strip_citations(facts).split())} {cites}".rstrip()
    return "\n\n".join([body, support, *relevance])


def addition(answer: str, supported_answer: str) -> str:
    """What ``supported_answer`` adds to ``answer`` as it is said (the support, without
    the ``Relevance:`` line a listener never hears)."""
    said, full = _heard(answer), _heard(supported_answer)
    return full[len(said):] if full.startswith(said) else ""


def _heard(answer: str) -> str:
    """``answer`` without its ``Relevance:`` line, as a listener hears it."""
    return "\n".join(line for line in answer.split("\n") if not is_relevance_line(line)).rstrip()


@dataclass(frozen=True)
class Support:
    """The answer followed by the model's facts under it where they are its support
    (:func:`supported`; the draft's ``shown``: the text of the passages the answer came
    from), recorded as a step. A listener that heard the answer hears the support follow
    it, before the step: nothing is said twice, nothing reads as a revision."""

    name: str = "support"
    when: When = "draft"
    calls_model: bool = False
    verdicts: bool = False

    def applies(self, draft: Draft, ctx: CheckContext) -> bool:
        return bool(draft.facts) and "answer_span" not in draft.revised

    def check(self, draft: Draft, ctx: CheckContext) -> Draft | None:
        started = time.perf_counter()
        final, facts = draft.answer, draft.facts
        found = supported(draft.question, final, facts, draft.shown)
        if found is None:
            return None
        listener = ctx.run.listener
        more = addition(final, found) if listener is not None and listener.answered else ""
        if listener is not None and more:
            listener.say(more)
        ctx.run.observe("support", {"answer": strip_citations(final).strip()[:300]},
                        str(facts), "the model's facts state its answer in the words of the "
                        "passages: they follow it as its support", started)
        if listener is not None and more:
            listener.answered = True  # the answer and its support were heard: not again
        return draft.revise(self.name, "the model's facts follow the answer as its support",
                            answer=found)
