"""An answer that only repeats the question.

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

from sleuth.text.ids import split_answer, strip_citations
from sleuth.text.querytext import CONTENT_STOPWORDS, identifier_terms, stem

# a question that offers its answers: "A or B", "A vs B", "either", "among A, B and C",
# "between A and B, who ...", "which of A and B"
_CHOICES = re.compile(r"\b(?:or|vs|versus|either|among|amongst|between|which of)\b",
                      re.IGNORECASE)


GROUNDED = 0.75  # share of the words facts add to the question that the passages must hold


def _stems(text: str) -> list[str]:
    return [stem(w) for w in re.findall(r"[^\W_]+", text.lower()) if w not in CONTENT_STOPWORDS]


def echoed(question: str, answer: str) -> list[str]:
    """The words of ``answer`` (without citations and its ``Relevance:`` line) when every
    one of them is the question's own and the question offers no choices; ``[]`` for an
    answer that adds a word (or has none: an empty answer is another matter)."""
    body = strip_citations(split_answer(answer)[0])
    words = _stems(body)
    if not words or _CHOICES.search(question):
        return []
    asked = set(_stems(question))
    if not all(w in asked for w in words) or any(
            t.lower() not in question.lower() for t in identifier_terms(body)):
        return []
    return list(dict.fromkeys(w.lower() for w in re.findall(r"[^\W_]+", body)
                              if w.lower() not in CONTENT_STOPWORDS))


def grounded(question: str, facts: str, shown: str) -> bool:
    """Whether ``facts`` add words to ``question`` and :data:`GROUNDED` of those words are
    words of the passages ``shown`` (read from them, not remembered)."""
    added = set(_stems(strip_citations(facts))) - set(_stems(question))
    if not added:
        return False
    held = set(_stems(shown))
    return sum(w in held for w in added) >= GROUNDED * len(added)
