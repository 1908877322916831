"""past_echo: an answer that only repeats the question.

Asked "How does chronic hepatitis C infection affect liver cancer risk?", the 1.5B model
answers "Chronic hepatitis C infection"; asked "What is the role of chemotherapy in thyroid
cancer?", "Chemotherapy"; asked the storage size of the money type, "money". Such an answer
names what the question is about and says nothing of it: every word of it is the question's
own. Yet the model's own "facts" (the facts-first answer object's first field) often say
it: "Stage 0 pancreatic cancer is only in the innermost layer of the duct wall" under the
answer "Stage 0". Facts that add words to the question, most of them words of the passages
the model was shown (:func:`grounded`), replace the echo, cited as it was; no model call.
Otherwise the agent sends the model the same request once more, told not to answer with
those words alone but in a sentence that says what the passages state about them (the
echo itself is not shown: shown it, the 1.5B model repeated it); a reply (or its facts)
that adds words and does not abstain replaces the echo ("Chronic hepatitis C infection
increases the risk of developing liver cancer"); anything else leaves it standing.

A question that offers choices ("Who died first, A or B?", "Among operations, investing and
financing, which ...?") is answered by repeating one of them: no echo there; nor is an
answer that writes the question's words as an identifier ("--data-checksums" for "initdb
option to turn on data page checksums").
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from sleuth.agent.checks.base import CheckContext, When
from sleuth.agent.checks.quote_named import names_only
from sleuth.agent.draft import Draft
from sleuth.prompts import prompt
from sleuth.text.abstain import abstains
from sleuth.text.ids import cite, cited_ids, split_answer, strip_citations
from sleuth.text.lexicon import STOPWORDS, stem, words
from sleuth.text.querytext import identifier_terms

# a question that offers its answers: "A or B", "A vs B", "either", "among A, B and C",
# "between A and B, who ...", "which of A and B"
CHOICES = re.compile(r"\b(?:or|vs|versus|either|among|amongst|between|which of)\b",
                     re.IGNORECASE)


GROUNDED = 0.75  # share of the words facts add to the question that the passages must hold


def stems(text: str) -> list[str]:
    """The crude stems of ``text``'s content words, in order."""
    return [stem(w) for w in words(text) if w not in STOPWORDS]


def echoed(question: str, answer: str) -> list[str]:
    """The words of ``answer`` (without citations and its ``Relevance:`` line) when every
    one of them is the question's own and the question offers no choices; ``[]`` for an
    answer that adds a word (or has none: an empty answer is another matter)."""
    body = strip_citations(split_answer(answer)[0])
    said = stems(body)
    if not said or CHOICES.search(question):
        return []
    asked = set(stems(question))
    if not all(w in asked for w in said) or any(
            t.lower() not in question.lower() for t in identifier_terms(body)):
        return []
    return list(dict.fromkeys(w for w in words(body) if w not in STOPWORDS))


def grounded(question: str, facts: str, shown: str) -> bool:
    """Whether ``facts`` add words to ``question`` and :data:`GROUNDED` of those words are
    words of the passages ``shown`` (read from them, not remembered)."""
    added = set(stems(strip_citations(facts))) - set(stems(question))
    if not added:
        return False
    held = set(stems(shown))
    return sum(w in held for w in added) >= GROUNDED * len(added)


@dataclass(frozen=True)
class PastEcho:
    """An answer in place of one that only repeats the question's words (see the module
    docstring): the model's own facts where they say more, read from the passages (the
    draft's ``shown``); else the request the answer came from (the first answer's, else the
    loop's dialogue, its tools not to be called) once more, told not to answer with those
    words alone but in a sentence that says what the passages state, and that reply or its
    facts; recorded as a step, also where the echo stands."""

    name: str = "past_echo"
    when: When = "draft"
    calls_model: bool = True
    verdicts: bool = False

    def applies(self, draft: Draft, ctx: CheckContext) -> bool:
        return bool(echoed(draft.question, draft.answer))

    def check(self, draft: Draft, ctx: CheckContext) -> Draft | None:
        question, final, run = draft.question, draft.answer, ctx.run
        echo = echoed(question, final)
        started = time.perf_counter()
        first = draft.answered
        cites = " ".join(cite(c) for c in cited_ids(final))

        def said(text: str | None) -> bool:  # an answer that says something
            text = text or ""
            return bool(text) and not abstains(text) and not echoed(question, text) and \
                not names_only(text)

        facts = draft.facts
        found, how = None, "the model's facts, read from the passages, say what they state"
        if said(facts) and grounded(question, str(facts), draft.shown):
            found = f"{strip_citations(str(facts)).strip()} {cites}".strip()
        else:
            nudge = prompt("echo").replace("{answer}", strip_citations(final).strip()[:300])
            # the echo itself is left out of the request: shown it, a 1.5B model repeats it
            request = [*first[:-1], {**first[-1], "content": f"{first[-1]['content']}\n\n"
                                     f"{nudge}"}] if first else \
                [*ctx.messages, {"role": "user", "content": nudge}]
            schemas = None if first else [t.schema() for t in ctx.tools] or None
            # not streamed: a listener that heard the echo hears the answer after this step
            response = run.chat(request, schemas, tool_choice="none")
            again = response.content or ""
            if said(again):
                found, how = again, "asked once more, the model says what they state"
                facts = response.facts
            elif said(response.facts) and grounded(question, str(response.facts), draft.shown):
                found = f"{strip_citations(str(response.facts)).strip()} {cites}".strip()
                how = "asked once more, the model's facts say what they state"
        run.observe("past_echo", {"answer": strip_citations(final).strip()[:300],
                                  "repeated": echo}, strip_citations(found or "").strip()[:600],
                    "the answer only repeated the question's words: " +
                    (f"{how} (this step's output): that is the answer" if found else
                     "asked once more, the model added nothing either: it stands"), started)
        if found is None:
            return None
        return draft.revise(self.name, f"the answer only repeated the question's words: {how}",
                            answer=found, facts=facts)
