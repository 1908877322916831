"""bridge: an answer that stops at the entity a multi-hop question goes through goes on.

Asked "Where did Edsel Ford's father die?", a small model answers "Henry Ford": the entity
the question goes through, not what it asks of him. Judged on the passages retrieved so far
(:func:`~sleuth.text.querytext.stops_at_bridge`), such an answer is shown the entity's
passages with its shortfall, and the loop goes on for one more turn; once per question. It
reads each answer the model gives inside the loop (``when = "answer"``: the first answer
without tools too), like smolagents' final-answer checks; the passages are quoted even when
shown before (a small model reads what is next to the question).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sleuth.agent.checks.base import CheckContext, When
from sleuth.agent.draft import Draft
from sleuth.prompts import prompt
from sleuth.retrieval import HybridRetriever
from sleuth.text.lexicon import stem, word_matches
from sleuth.text.querytext import asks_beyond_bridge, relation_cues, stops_at_bridge
from sleuth.text.tokens import count_tokens
from sleuth.tools import lead_block

BRIDGE_CHARS = 1500  # of each passage about the entity an answer stopped at


@dataclass(frozen=True)
class Bridge:
    """When the answer stops at the entity the question goes through, show the model that
    entity's passages with its answer's shortfall (written into the loop's dialogue and
    recorded as a step); the draft comes back ``bridged``: the loop goes on."""

    name: str = "bridge"
    when: When = "answer"
    calls_model: bool = True  # one more turn of the loop
    verdicts: bool = False

    def applies(self, draft: Draft, ctx: CheckContext) -> bool:
        return not draft.bridged and asks_beyond_bridge(draft.question)

    def check(self, draft: Draft, ctx: CheckContext) -> Draft | None:
        question, text = draft.question, draft.answer
        chunks = ctx.index.read(ctx.retrieved).chunks
        sentences = [s.text for c in chunks for s in c.sentences] or [c.text for c in chunks]
        name = stops_at_bridge(question, text, sentences)
        ids = HybridRetriever(ctx.index).pages(name) if name else []
        if not name or not ids:
            return None
        started = time.perf_counter()
        blocks = [lead_block(ctx.tool_context, chunk, chars=BRIDGE_CHARS)
                  for chunk in ctx.index.read(ids).chunks]
        bridge, cues = relation_cues(question)
        terms = [m.group(0) for m in word_matches(question)]
        said = {"name": name, "question": question, "result": "\n\n".join(blocks),
                "bridge": " ".join(w for w in terms if stem(w.lower()) in bridge) or "entity",
                "beyond": ", ".join(w for w in terms if stem(w.lower()) in cues - bridge)}
        note = prompt("bridge_answer")
        for key, value in said.items():
            note = note.replace("{" + key + "}", value)
        ctx.run.observe("bridge_passages", {"chunk_ids": ids}, said["result"],
                        f"the answer {text.strip()[:200]!r} stopped at {name}, the entity the "
                        "question goes through: its passages shown with the question", started,
                        tokens=sum(count_tokens(b) for b in blocks))
        ctx.messages.extend([{"role": "assistant", "content": text},
                             {"role": "user", "content": note}])
        return draft.revise(self.name, f"the answer stopped at {name}, the entity the "
                            "question goes through: its passages were shown", bridged=True)
