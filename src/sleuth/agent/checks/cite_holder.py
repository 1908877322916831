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
from sleuth.text.lexicon import NOT_VALUES, STOPWORDS, words
from sleuth.types import Chunk

# the end of an answer's first sentence: its stop and the space after it, or a line's end
_HEAD_END = re.compile(r"[.!?](?=\s)|\n")
LOOSE_WORDS = 4  # new words of an answer a chunk may hold apart, not as one run
_LEADING_CITES = re.compile(r"^(?:[ \t]*\[[^\[\]\n]*\])+")  # citations right after a stop


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
    holds it where it holds each new word. Failing both (a sentence in the model's own
    words), where the chunks its citations name hold fewer than half as many of its content
    words (the question's own it repeats included) as the retrieved chunk that holds the
    most, at least half of them (:func:`best_holder`), that chunk in their place: the
    quickstart's "Greatorex showed Pepys how levers work and what happens to them over
    time" cited the diary's chunk 4, which names neither Greatorex nor levers, where chunk
    0 holds five of its seven words."""
    body, scores = split_answer(answer)
    end = _HEAD_END.search(body)
    head = body[:end.start()] if end else body
    said = words(CITATION.sub("", head))
    asked = set(words(question))
    new = {w for w in said if w not in asked and w not in STOPWORDS}
    if not new or said[0] in NOT_VALUES:
        return None
    texts = [(c, words(c.text)) for c in chunks]  # each chunk's words, read once
    cited = set(cited_ids(answer))
    if any(new <= set(text) for c, text in texts if c.chunk_id in cited):
        return None
    phrase = f" {' '.join(said)} "
    holder = next((c for c, text in texts if phrase in f" {' '.join(text)} "), None)
    if holder is None and len(new) <= LOOSE_WORDS:
        holder = next((c for c, text in texts if new <= set(text)), None)
    rest = body[end.start():] if end else ""
    if holder is None:
        found = _unrelated(head, rest, said, texts)
        if found is None:
            return None
        holder, rest = found
        scores = {k: v for k, v in scores.items() if k in cited_ids(rest)}
    bare = CITATION.sub("", head).rstrip()
    stop = bare[-1] if bare.endswith((".", "!", "?")) else ""
    lines = [f"{bare[:len(bare) - len(stop)]} {cite(holder.chunk_id)}{stop}{rest}"]
    if scores:
        lines.append(relevance_line({holder.chunk_id: 1.0, **scores}))
    return "\n".join(lines), holder.chunk_id


def _unrelated(head: str, rest: str, said: Sequence[str],
               texts: Sequence[tuple[Chunk, list[str]]]) -> tuple[Chunk, str] | None:
    """Where the citations of the answer's first sentence (``head``, and those right after
    its stop, at the start of ``rest``) belong to nothing it says, the chunk to cite instead
    (:func:`best_holder`) and ``rest`` without those citations; None: they stand."""
    after = rest[1:] if rest[:1] in (".", "!", "?") else ""  # past the sentence's stop
    leading = _LEADING_CITES.match(after)
    own = set(cited_ids(head + (leading.group(0) if leading else "")))
    holder = best_holder(said, texts, own) if own else None
    if holder is None:
        return None
    return holder, (rest[:1] + _LEADING_CITES.sub("", after) if after else rest)


def best_holder(said: Sequence[str], texts: Sequence[tuple[Chunk, list[str]]],
                cited: set[str]) -> Chunk | None:
    """The first chunk of ``texts`` (each retrieved chunk with its words) that holds the
    most content words of ``said`` (an answer's sentence, as words), where it holds at
    least half of them and the chunks of ``cited`` together hold fewer than half as many
    (the citation belongs to little the sentence says); None: the citation stands."""
    content = {w for w in said if w not in STOPWORDS}
    held = [(len(content & set(text)), c) for c, text in texts]
    most = max((n for n, _ in held), default=0)
    if not content or 2 * most < len(content):
        return None
    theirs = content & {w for c, text in texts if c.chunk_id in cited for w in text}
    if 2 * len(theirs) >= most:
        return None
    return next(c for n, c in held if n == most)


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
