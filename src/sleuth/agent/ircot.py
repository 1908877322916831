"""The IRCoT baseline (Trivedi et al., 2023): interleave retrieval with chain-of-thought.

Paragraphs are first retrieved with the question. Then, step by step, the model writes the
*next single sentence* of its chain of thought given the question, every paragraph gathered
so far and the sentences before; that sentence (without its ``[id]`` citations) is the next
retrieval query, and its new paragraphs join the collection (``paragraphs_per_step`` a step,
``max_paragraphs`` in all, never one twice). Reasoning stops at the sentence that says
"answer is", whose remainder is the answer; after ``ircot_steps`` sentences (at most
``settings.max_steps``) without one, a last call asks for the answer and the run is marked
forced.

Retrieval is the LLM-free hybrid ranking of :mod:`sleuth.retrieval`. Each retrieval is one
``retrieve`` step of the trajectory, whose reasoning is the sentence that was its query.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sleuth.agent.run import ModelRunner, Run
from sleuth.ingest.sentences import split_sentences
from sleuth.prompts import prompt
from sleuth.retrieval import HybridRetriever
from sleuth.text.ids import cite, cited_ids, strip_citations
from sleuth.text.tokens import count_tokens
from sleuth.types import Chunk, Step

_ANSWER_IS = re.compile(r"answer is\s*:?\s*", re.I)


@dataclass
class IRCoTAgent(ModelRunner):
    """Interleaved retrieval and chain-of-thought, one reasoning sentence per step."""

    system_prompt: str = field(default_factory=lambda: prompt("ircot"))
    name: str = "ircot"
    paragraphs_per_step: int = 4
    max_paragraphs: int = 15
    ircot_steps: int = 5

    def respond(self, run: Run, history: Sequence[dict[str, Any]]) -> str:
        """Reason and retrieve in turn, then answer; ``history`` is accepted for sessions but
        unused (each call shows the model the question, the paragraphs and the reasoning)."""
        question = run.answer.question
        retriever = HybridRetriever(self.index)
        paragraphs: list[Chunk] = []
        thoughts: list[str] = []
        self._retrieve(run, retriever, question, "", paragraphs)
        final: str | None = None
        while final is None and len(thoughts) < min(self.ircot_steps,
                                                    self.settings.max_steps):
            sentence, final = _next_sentence(self._reason(run, question, paragraphs,
                                                          thoughts))
            thoughts.append(sentence)
            run.answer.loops += 1
            if final is None:  # the sentence, without its [id] citations, is the query
                self._retrieve(run, retriever, strip_citations(sentence), sentence,
                               paragraphs)
        if final is None:
            run.answer.forced = "max_steps"
            final = _answer_of(self._reason(run, question, paragraphs, thoughts,
                                            prompt("ircot_answer")))
        run.answer.messages.append({"role": "assistant", "content": final})
        # the gathered paragraphs the reasoning cited are cited too, after the answer's own
        gathered = {c.chunk_id for c in paragraphs}
        run.also_cites = [cid for cid in cited_ids(" ".join(thoughts)) if cid in gathered]
        return final

    def _reason(self, run: Run, question: str, paragraphs: Sequence[Chunk],
                thoughts: Sequence[str], instruction: str = "") -> str:
        """One call: the next reasoning sentence (or, with ``instruction``, the answer)."""
        reasoning = "\n".join(thoughts) or "(none yet)"
        ask = instruction or "Write the next sentence of the reasoning."
        user = (f"Paragraphs:\n{self._render(paragraphs)}\n\nQuestion: {question}\n\n"
                f"Reasoning so far:\n{reasoning}\n\n{ask}")
        run.answer.messages = [{"role": "system", "content": self.system_prompt},
                               {"role": "user", "content": user}]
        # the final answer offers no tools, like the loop's forced answer
        return run.chat(run.answer.messages,
                        tool_choice="none" if instruction else None).content or ""

    def _retrieve(self, run: Run, retriever: HybridRetriever, query: str, reasoning: str,
                  paragraphs: list[Chunk]) -> None:
        """Add up to ``paragraphs_per_step`` new paragraphs for ``query``; record the step."""
        started = time.perf_counter()
        room = min(self.paragraphs_per_step, self.max_paragraphs - len(paragraphs))
        gathered = {c.chunk_id for c in paragraphs}
        ranking = retriever.hybrid(query) if room > 0 and query.strip() else []
        new = [cid for cid in ranking if cid not in gathered][:room]
        chunks = self.index.read(new).chunks
        for rank, chunk in enumerate(chunks, 1):
            run.tracker.saw(chunk.chunk_id, 1.0 / rank)
            run.tracker.mark_read(chunk.chunk_id)  # the model sees the full text
        paragraphs.extend(chunks)
        if chunks:
            output = self._render(chunks)
        elif room <= 0:
            output = f"No new paragraphs: the cap of {self.max_paragraphs} is reached."
        else:
            output = "No new paragraphs."
        run.record(Step(run.next_step, "retrieve", {"query": query}, output, reasoning,
                        count_tokens(output) if chunks else 0, None,
                        time.perf_counter() - started, kind="retrieval"))

    def _render(self, chunks: Sequence[Chunk]) -> str:
        """``[chunk id] Title: text`` per paragraph, so answers can cite the ids."""
        if not chunks:
            return "(none)"
        lines = []
        for chunk in chunks:
            doc = self.index.document(chunk.doc_id)
            title = doc.title if doc else ""
            head, _, body = chunk.text.partition("\n")
            text = body.strip() if title and head.strip() == title and body else chunk.text
            lines.append(f"{cite(chunk.chunk_id)} {title}: {text}" if title else
                         f"{cite(chunk.chunk_id)} {text}")
        return "\n".join(lines)


def _next_sentence(reply: str) -> tuple[str, str | None]:
    """The reply's first sentence (IRCoT keeps only that) and, when it says "answer is",
    the answer: the rest of that line, so "St. Louis" is not cut at its period."""
    line = next((ln.strip() for ln in reply.strip().splitlines() if ln.strip()), "")
    sentences = split_sentences(line)
    sentence = sentences[0].text if sentences else line
    final = _answer_of(line) if _ANSWER_IS.search(sentence) else None
    return sentence, final or None


def _answer_of(reply: str) -> str:
    """The text after "answer is" (the whole reply when it has none), minus a final period."""
    match = _ANSWER_IS.search(reply)
    text = (reply[match.end():] if match else reply).strip()
    return text[:-1].rstrip() if text.endswith(".") else text
