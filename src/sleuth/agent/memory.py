"""The memory agent (A-RAG's MemoryAgent): read candidate chunks one at a time into a bounded,
LLM-maintained memory, then answer from it.

Candidates are the question's LLM-free hybrid ranking (:mod:`sleuth.retrieval`), best first.
For each chunk the model rewrites the memory from the question, the memory so far, the chunk
and the ``recall_examples`` earlier chunks most similar to it by TF-IDF (scikit-learn), so a
fact can be linked to one read several steps before. The memory stays under ``memory_size``
tokens: an over-long update is asked once to shrink, then cut at the budget. Reading stops
when the model says the memory suffices, or after ``candidates`` (and ``max_steps``) chunks.
The answer is written from the memory plus the earlier chunks most similar to the question.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sleuth.agent.run import ModelRunner, Run
from sleuth.errors import MissingDependency
from sleuth.prompts import prompt
from sleuth.retrieval import HybridRetriever
from sleuth.settings import MemorySettings
from sleuth.text.ids import cite
from sleuth.text.tokens import count_tokens, decode, encode
from sleuth.types import Chunk, Step

EXCERPT_TOKENS = 300  # of each recalled chunk shown to the model
_UPDATE = re.compile(r"<update>\s*(.*?)\s*(?:</update>|$)", re.S | re.I)
_SUFFICIENT = re.compile(r"<sufficient>\s*(\w+)", re.I)
_SHRINK = (
    "This memory is {size} tokens, over the budget of {budget}. Rewrite it under {budget} "
    "tokens, keeping the facts that help answer the question and their [ids].\n\n"
    "Question: {question}\n\n<update>\n{memory}\n</update>\n\nReply with <update>...</update>."
)

_INPUTS = ("\n\nQuestion: {question}\n\nMemory so far:\n{memory}\n\nEarlier similar passages:\n"
           "{examples}\n\nNew passage [{chunk_id}]:\n{chunk}\n\nMemory budget: {budget} tokens.")


@dataclass
class MemoryAgent(ModelRunner):
    """Sequential reading with an accumulated memory and TF-IDF recall of earlier chunks."""

    memory: MemorySettings = field(default_factory=MemorySettings)

    def respond(self, run: Run, history: Sequence[dict[str, Any]]) -> str:
        """Read and answer; ``history`` is accepted for sessions but unused (the memory
        agent keeps no dialogue, only the session's tracker)."""
        question = run.answer.question
        recalled = _History()
        memory = ""
        limit = min(self.memory.candidates, self.settings.max_steps)
        for chunk in self._candidates(run, question)[:limit]:
            memory, sufficient = self._read(run, question, memory, chunk, recalled)
            if sufficient:
                break
        final = self._ask(run, _fill(
            prompt("memory_answer"), question=question, memory=memory or "(empty)",
            examples=_render(recalled.recall(question, self.memory.recall_examples)),
        ), final=True)
        run.answer.memory_state = {"final_memory": memory, "history_size": len(recalled)}
        return final

    def _read(self, run: Run, question: str, memory: str, chunk: Chunk,
              recalled: _History) -> tuple[str, bool]:
        """One chunk into the memory: (the new memory, whether the model says it suffices)."""
        started = time.perf_counter()
        examples = _render(recalled.recall(chunk.text, self.memory.recall_examples))
        reply = self._ask(run, _fill(
            self._update_template(), question=question,
            memory=memory or "(empty)", examples=examples, chunk_id=chunk.chunk_id,
            chunk=chunk.text, budget=str(self.memory.memory_size),
        ))
        memory, sufficient = _parse_update(reply)
        memory = self._fit(run, question, memory)
        run.tracker.mark_read(chunk.chunk_id)
        recalled.add(chunk)
        run.answer.loops += 1
        run.observe("chunk_read", {"chunk_ids": [chunk.chunk_id]}, chunk.text, memory, started,
                    tokens=count_tokens(chunk.text))
        return memory, sufficient

    def _update_template(self) -> str:
        """The configured update prompt; one without placeholders gets the inputs appended."""
        template = self.memory.update_prompt or prompt("memory_update")
        return template if "{chunk}" in template else template + _INPUTS

    def _candidates(self, run: Run, question: str) -> list[Chunk]:
        started = time.perf_counter()
        ids = HybridRetriever(self.index).hybrid(question, top_k=self.memory.candidates)
        chunks = self.index.read(ids).chunks
        titles = {c.doc_id: (d.title if (d := self.index.document(c.doc_id)) else "")
                  for c in chunks}
        for rank, chunk in enumerate(chunks, 1):
            run.tracker.saw(chunk.chunk_id, 1.0 / rank)
        listing = "\n".join(f"{rank}. {cite(c.chunk_id)} {titles[c.doc_id]}"
                            for rank, c in enumerate(chunks, 1))
        run.record(Step(
            1, "hybrid_search", {"query": question, "top_k": self.memory.candidates},
            listing or "No matches.", "candidate chunks for sequential reading",
            count_tokens(listing), None, time.perf_counter() - started, kind="retrieval",
        ))
        return list(chunks)

    def _fit(self, run: Run, question: str, memory: str) -> str:
        """The memory within budget: one request to shrink it, then a cut at the budget."""
        budget = self.memory.memory_size
        size = count_tokens(memory)
        if size <= budget:
            return memory
        reply = self._ask(run, _SHRINK.format(size=size, budget=budget, question=question,
                                              memory=memory))
        memory = _parse_update(reply)[0]
        tokens = encode(memory)
        return memory if len(tokens) <= budget else decode(tokens[:budget])

    @staticmethod
    def _ask(run: Run, content: str, final: bool = False) -> str:
        """One user message; memory updates are free text, the final answer is an answer."""
        messages = [{"role": "user", "content": content}]
        return run.chat(messages, tool_choice="none" if final else None).content or ""


@dataclass
class _History:
    """The chunks read so far; recall ranks them by TF-IDF cosine similarity to a text."""

    chunks: list[Chunk] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.chunks)

    def add(self, chunk: Chunk) -> None:
        self.chunks.append(chunk)

    def recall(self, text: str, k: int) -> list[Chunk]:
        if not k or not self.chunks:
            return []
        try:
            from sklearn.feature_extraction.text import TfidfVectorizer
        except ImportError:
            raise MissingDependency("scikit-learn", "memory") from None
        try:
            matrix: Any = TfidfVectorizer(stop_words="english").fit_transform(
                [c.text for c in self.chunks] + [text]
            )
        except ValueError:  # nothing but stop words
            return []
        similarity = (matrix[:-1] @ matrix[-1].T).toarray().ravel()
        order = sorted(range(len(self.chunks)), key=lambda i: (-similarity[i], i))
        return [self.chunks[i] for i in order[:k] if similarity[i] > 0]


def _parse_update(reply: str) -> tuple[str, bool]:
    """The new memory and whether the model judged it sufficient (tags optional)."""
    match = _UPDATE.search(reply)
    memory = match.group(1) if match else _SUFFICIENT.split(reply)[0]
    sufficient = _SUFFICIENT.search(reply)
    return memory.strip(), bool(sufficient and sufficient.group(1).lower() == "yes")


def _render(chunks: list[Chunk]) -> str:
    if not chunks:
        return "(none)"
    blocks = []
    for chunk in chunks:
        tokens = encode(chunk.text)
        excerpt = decode(tokens[:EXCERPT_TOKENS]) + (" …" if len(tokens) > EXCERPT_TOKENS else "")
        blocks.append(f"{cite(chunk.chunk_id)} {excerpt}")
    return "\n\n".join(blocks)


def _fill(template: str, **values: str) -> str:
    """Substitute ``{name}`` placeholders, leaving any other braces alone."""
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template
