"""cite_holder: an answer cites the retrieved chunk that holds its words.

A 1.5B model that reads a value out of one of five passages cites another one time in five:
the answer's first sentence (the answer itself, as the prompts ask it first) is made to cite
the retrieved chunk that holds the words it adds to the question, where no chunk it cites
does. It only adds a citation: no model call, the answer's words stay as they were.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from sleuth.agent.checks.base import CheckContext, When
from sleuth.agent.draft import Draft
from sleuth.text.abstain import abstains
from sleuth.text.ids import CITATION, cite, cited_ids, relevance_line, split_answer
from sleuth.text.querytext import CONTENT_STOPWORDS
from sleuth.types import Chunk

# the end of an answer's first sentence: its stop and the space after it, or a line's end
_HEAD_END = re.compile(r"[.!?](?=\s)|\n")
_NOT_VALUES = frozenset({"yes", "no", "not", "true", "false", "none"})
LOOSE_WORDS = 4  # new words of an answer a chunk may hold apart, not as one run


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def cite_holder(answer: str, question: str, chunks: Sequence[Chunk]) -> tuple[str, str] | None:
    """``answer`` with its first sentence (the answer itself, as the prompts ask it first)
    citing the first of ``chunks`` that holds the words that sentence adds to ``question``,
    and that chunk's id, where no chunk the answer cites holds them; None: its citations
    stand (one holds them, no chunk of ``chunks`` does, the sentence adds no word, or it
    is a yes or no). A 1.5B model that reads a value out of one of five passages cites
    another one time in five ("5 minutes" for the checkpoint interval citing the paragraph
    of ``checkpoint_completion_target``, BENCHMARKS §32): the passage cited must be the one
    that states the value. Held means the sentence as a run of whole words (lower case,
    punctuation left out) or, failing that in every chunk and for a sentence of at most
    :data:`LOOSE_WORDS` new words ("5 minutes"), each of them; a chunk the answer cites
    holds it where it holds each new word."""
    body, scores = split_answer(answer)
    end = _HEAD_END.search(body)
    head = body[:end.start()] if end else body
    words = _words(CITATION.sub("", head))
    asked = set(_words(question))
    new = {w for w in words if w not in asked and w not in CONTENT_STOPWORDS}
    if not new or words[0] in _NOT_VALUES:
        return None
    texts = [(c, _words(c.text)) for c in chunks]  # each chunk's words, read once
    cited = set(cited_ids(answer))
    if any(new <= set(text) for c, text in texts if c.chunk_id in cited):
        return None
    phrase = f" {' '.join(words)} "
    holder = next((c for c, text in texts if phrase in f" {' '.join(text)} "), None)
    if holder is None and len(new) <= LOOSE_WORDS:
        holder = next((c for c, text in texts if new <= set(text)), None)
    if holder is None:
        return None
    bare = CITATION.sub("", head).rstrip()
    stop = bare[-1] if bare.endswith((".", "!", "?")) else ""
    rest = body[end.start():] if end else ""
    lines = [f"{bare[:len(bare) - len(stop)]} {cite(holder.chunk_id)}{stop}{rest}"]
    if scores:
        lines.append(relevance_line({holder.chunk_id: 1.0, **scores}))
    return "\n".join(lines), holder.chunk_id


@dataclass(frozen=True)
class CiteHolder:
    """The answer cites the retrieved chunk that holds what it answers, where the chunks it
    cites do not (:func:`cite_holder`), recorded as a step; an abstention is left alone."""

    name: str = "cite_holder"
    when: When = "draft"
    calls_model: bool = False
    verdicts: bool = False

    def applies(self, draft: Draft, ctx: CheckContext) -> bool:
        return not abstains(draft.answer)

    def check(self, draft: Draft, ctx: CheckContext) -> Draft | None:
        started = time.perf_counter()
        found = cite_holder(draft.answer, draft.question,
                            ctx.index.read(ctx.retrieved).chunks)
        if found is None:
            return None
        answer, holder = found
        ctx.run.observe("cite_holder", {"chunk_ids": [holder]}, holder,
                        "the chunks the answer cites do not hold its words: it cites the "
                        "retrieved chunk that does", started)
        return draft.revise(self.name, f"cites {holder}, the retrieved chunk that holds "
                            "its words", answer=answer)
