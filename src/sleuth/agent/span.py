"""The answer step: the words of the evidence that answer, and the passage they are in.

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
to the sentences that share most words with the question (:func:`evidence`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sleuth.agent.run import NOT_SAID, Run
from sleuth.agent.verify import complete
from sleuth.index.read import ReadIndex
from sleuth.llm.jsontools import json_objects
from sleuth.prompts import prompt
from sleuth.text.ids import CHUNK_ID, cite, cited_ids, relevance_line, split_answer, strip_citations
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


def _plain(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _within(part: str, whole: str) -> bool:
    """Whether ``part`` is in ``whole``, compared without case, spacing and punctuation."""
    plain = _plain(part)
    return bool(plain) and f" {plain} " in f" {_plain(whole)} "


def spanned(span: Span) -> str:
    """The answer a checked span gives: the phrase, cited, then the sentence it is in."""
    where = cite(span.chunk_id)
    return f"{span.answer} {where}\n\n\"{span.sentence}\" {where}\n\n" + \
        relevance_line({span.chunk_id: 1.0})


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


NOT_STATED = f"{NOT_SAID}: none of the passages retrieved states the answer " \
    "to this question."


def answer_step(run: Run, index: ReadIndex, question: str, draft: str) -> str | None:
    """The answer that replaces ``draft`` after the answer step, or None to keep the draft;
    the step is recorded in the trajectory (kind "observation": no tool ran)."""
    started = time.perf_counter()
    shown = evidence(index, question, draft, run.tracker.retrieved)
    if not shown:
        return None
    span = read_span(run, question, draft, shown)
    final = None if span is None else NOT_STATED if not span.answerable else \
        spanned(span) if span.checked else None
    outcome = "no reply understood: the draft stands" if span is None else \
        "no passage states the answer: the agent says so" if not span.answerable else \
        "the span was found in its passage: it is the answer" if span.checked else \
        "the span was not found in the passage it names: the draft stands"
    run.observe("answer_span", {"chunk_ids": list(shown)},
                json.dumps(span.to_dict() if span else None, ensure_ascii=False), outcome,
                started)
    if span is not None and not span.answerable:
        run.answer.abstained = True
    return final
