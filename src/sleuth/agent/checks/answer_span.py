"""answer_span: the words of the evidence that answer, and the passage they are in.

A 1.5B model that has read the right page still answers from what it remembers (the
default ``lru_cache`` maxsize "None", ``http.server``'s port "80") and cites chunks that do
not hold what it claims. After the loop's draft, one more call, constrained to a JSON
schema, asks the model to copy the sentence of the evidence that states the answer, name
its chunk, and give the shortest phrase of that sentence that answers. The copy is checked
without a model: the sentence must be in that chunk and the phrase in the sentence. A
checked span becomes the answer, cited with its chunk and quoted (what the app highlights);
a reply that says no passage answers makes the agent say the documents do not; anything
else (a sentence not found, a phrase not in it) leaves the draft as it was.

The evidence is the chunks the draft cites, then the others retrieved, in order, each cut
to the sentences that share most words with the question (:func:`evidence`). Not in the
``small`` profile's list (measured, BENCHMARKS §35): name it in ``agent.checks`` to run it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sleuth.agent.checks.base import CheckContext, When
from sleuth.agent.draft import Draft
from sleuth.agent.run import NOT_SAID, Run
from sleuth.agent.verify import complete
from sleuth.index.read import ReadIndex
from sleuth.llm.jsontools import json_objects
from sleuth.prompts import prompt
from sleuth.text.ids import cite, cited_ids, relevance_line, strip_citations
from sleuth.text.lexicon import plain
from sleuth.text.querytext import content_words

MAX_CHUNKS = 6  # passages shown to the answer step
MAX_SENTENCES = 6  # of each, those sharing most words with the question
MAX_CHARS = 6000  # of evidence in all: a small model's window holds the rest of the call

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answerable": {"type": "boolean"},
        "chunk_id": {"type": "string", "maxLength": 120},
        "sentence": {"type": "string", "maxLength": 600},
        "answer": {"type": "string", "maxLength": 200},
    },
    "required": ["answerable", "chunk_id", "sentence", "answer"],
}


@dataclass(frozen=True)
class Span:
    """What the answer step read: whether the evidence answers, the phrase that does, the
    sentence it is in and that sentence's chunk, and whether all three were found."""

    answerable: bool
    answer: str = ""
    sentence: str = ""
    chunk_id: str = ""
    checked: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"answerable": self.answerable, "answer": self.answer,
                "sentence": self.sentence, "chunk_id": self.chunk_id,
                "checked": self.checked}


def evidence(index: ReadIndex, question: str, draft: str,
             retrieved: Sequence[str]) -> dict[str, str]:
    """The passages the answer step reads, by chunk id: those the draft cites first, then
    the rest retrieved, each cut to its sentences that share most words with the question
    (in the passage's order), within :data:`MAX_CHARS`."""
    ids = list(dict.fromkeys([*cited_ids(draft), *retrieved]))[:MAX_CHUNKS]
    words = set(content_words(question))
    shown: dict[str, str] = {}
    used = 0
    for chunk in index.read(ids).chunks:
        sentences = [s.text for s in chunk.sentences] or [chunk.text]
        ranked = sorted(range(len(sentences)), key=lambda i: -len(
            words & set(content_words(sentences[i]))))[:MAX_SENTENCES]
        text = " ".join(" ".join(sentences[i].split()) for i in sorted(ranked))
        if used + len(text) > MAX_CHARS:
            text = text[:max(0, MAX_CHARS - used)]
        if text:
            shown[chunk.chunk_id] = text
            used += len(text)
    return shown


def read_span(run: Run, question: str, draft: str, shown: dict[str, str]) -> Span | None:
    """The answer step's reply, checked against ``shown`` (None: no reply understood)."""
    passages = "\n\n".join(f"[{cid}] {text}" for cid, text in shown.items())
    messages = [{"role": "system", "content": prompt("answer_span")},
                {"role": "user", "content": f"Question: {question}\n\nPassages:\n{passages}\n\n"
                                            f"Draft answer: {draft.strip()[:600]}\n\n"
                                            "Reply with the JSON object only."}]
    reply = complete(run, messages, SCHEMA)
    found = next((o for o in json_objects(reply) if "answerable" in o), None)
    if found is None:
        return None
    if found.get("answerable") in (False, "false"):
        return Span(False)
    chunk_id = str(found.get("chunk_id") or "").strip(" []")
    sentence, answer = str(found.get("sentence") or ""), str(found.get("answer") or "")
    source = shown.get(chunk_id, "")
    checked = bool(answer.strip()) and _within(sentence, source) and _within(answer, sentence)
    return Span(True, answer.strip(), sentence.strip(), chunk_id, checked)


def _within(part: str, whole: str) -> bool:
    """Whether ``part`` is in ``whole``, compared without case, spacing and punctuation."""
    said = plain(part)
    return bool(said) and f" {said} " in f" {plain(whole)} "


def spanned(span: Span) -> str:
    """The answer a checked span gives: the phrase, cited, then the sentence it is in."""
    where = cite(span.chunk_id)
    return f"{span.answer} {where}\n\n\"{span.sentence}\" {where}\n\n" + \
        relevance_line({span.chunk_id: 1.0})


NOT_STATED = f"{NOT_SAID}: none of the passages retrieved states the answer " \
    "to this question."


@dataclass(frozen=True)
class AnswerSpan:
    """After the draft, one call for the span of the evidence that answers (see the module
    docstring): a checked span replaces the draft, "no passage states it" makes the agent
    say so; the step is recorded in the trajectory (kind "observation": no tool ran)."""

    name: str = "answer_span"
    when: When = "draft"
    calls_model: bool = True
    verdicts: bool = False

    def applies(self, draft: Draft, ctx: CheckContext) -> bool:
        return bool(strip_citations(draft.answer).strip())

    def check(self, draft: Draft, ctx: CheckContext) -> Draft | None:
        started = time.perf_counter()
        question, run = draft.question, ctx.run
        shown = evidence(ctx.index, question, draft.answer, ctx.retrieved)
        if not shown:
            return None
        span = read_span(run, question, draft.answer, shown)
        final = None if span is None else NOT_STATED if not span.answerable else \
            spanned(span) if span.checked else None
        outcome = "no reply understood: the draft stands" if span is None else \
            "no passage states the answer: the agent says so" if not span.answerable else \
            "the span was found in its passage: it is the answer" if span.checked else \
            "the span was not found in the passage it names: the draft stands"
        run.observe("answer_span", {"chunk_ids": list(shown)},
                    json.dumps(span.to_dict() if span else None, ensure_ascii=False), outcome,
                    started)
        if final is None or span is None:
            return None
        return draft.revise(self.name, outcome, answer=final,
                            abstained=draft.abstained or not span.answerable)
