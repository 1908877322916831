"""A2RAG's adaptive controller (``--agent a2rag``): a scope gate wrapped around a checked
evidence loop.

The controller (A2RAG, section III-B) runs one question through:

1. **Gate** (:class:`Gated`, which can wrap any runner): the question's best cosine
   similarity to a document summary (built at index time, :meth:`Index.scope`). Under
   ``a2rag.gate_threshold`` it abstains at once, without retrieving or calling the LLM.
2. **Progressive retrieval** over the knowledge graph (:meth:`Graph.progressive`: local,
   bridge, PPR with map-back), with an evidence-sufficiency check after each stage: an LLM
   judge (prompt ``sufficiency.md``) or the offline coverage test. Without a graph, or when
   the question names no graph entity, the hybrid retriever supplies the evidence.
3. **Answer** from the evidence only (prompt ``a2rag_answer.md``), citing chunk ids.
4. **Triple-Check** with failure-aware rewrites and bounded retries, then abstention
   (:mod:`sleuth.agent.verify`, shared with ``--verify``). A verified answer, with a graph,
   proposes triples for ``sleuth graph review``.

The answer's ``control`` keeps the gate score, every attempt (query, stage reached,
evidence ids, candidate answer, the three verdicts, the rewrite) and the outcome.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sleuth.agent.run import ModelRunner, Run, Runner, StepCallback, abstention
from sleuth.agent.verify import Candidate, checked, complete, evidence_text
from sleuth.llm import LLM
from sleuth.prompts import prompt
from sleuth.retrieval import HybridRetriever, fuse
from sleuth.settings import A2RAGSettings
from sleuth.text.tokens import count_tokens
from sleuth.tools.tracker import Tracker
from sleuth.types import Answer, Control, Gate, Step

if TYPE_CHECKING:
    from sleuth.graph import Graph
    from sleuth.index.read import ReadIndex

_YES = re.compile(r"^\W*(yes|no)\b", re.I)


@dataclass
class Gated:
    """Abstain at once on a question outside what the index covers (its best similarity to
    a document summary under ``threshold``); else answer with ``inner``."""

    inner: Runner
    index: ReadIndex
    llm: LLM
    threshold: float

    @property
    def name(self) -> str:
        return self.inner.name

    def run(self, question: str, *, question_id: str | None = None,
            on_step: StepCallback | None = None, tracker: Tracker | None = None,
            history: Sequence[dict[str, Any]] = ()) -> Answer:
        with Run.start(self.name, self.llm, question, question_id=question_id,
                       tracker=tracker, on_step=on_step) as run:
            score, nearest = self.index.scope(question)
            gate = Gate(round(score, 4), self.threshold, nearest, score >= self.threshold)
            if gate.passed:
                answer = self.inner.run(question, question_id=question_id, on_step=on_step,
                                        tracker=run.tracker, history=history)
                run.absorb(answer)
                run.adopt(answer)
            else:
                answer = run.finish(abstention(
                    f"the question is outside what they cover (best summary similarity "
                    f"{score:.2f} < {self.threshold:.2f})"), self.index)
                answer.abstained = True
                answer.control = Control(outcome="out of scope")
            if answer.control is None:  # the inner runner keeps no control record
                answer.control = Control()
            answer.control.gate = gate
        return answer


@dataclass
class A2RAGAgent(ModelRunner):
    """Progressive retrieval and an answer from the evidence, under Triple-Check; see the
    module docstring (the gate wraps this runner)."""

    a2rag: A2RAGSettings = field(default_factory=A2RAGSettings, kw_only=True)

    def respond(self, run: Run, history: Sequence[dict[str, Any]]) -> str:
        """Progressive retrieval, each attempt under Triple-Check, bounded retries, then the
        verified answer or an abstention."""
        question = run.answer.question
        titles = self.index.document_titles()
        graph: Graph | None = self.index.graph()

        def attempt(query: str, number: int) -> Candidate:
            return self._attempt(run, graph, titles, question, query, number)

        control = run.answer.control = Control()
        passed = checked(run, control, question, attempt, self.a2rag.retries)
        if passed is None:
            run.answer.abstained = True
            last = control.attempts[-1].check
            final = abstention(f"the evidence stayed insufficient after "
                               f"{len(control.attempts)} attempts ({last.failure}: "
                               f"{last.reason or 'no reason given'})")
        else:
            final = passed.text
        return final

    def finished(self, run: Run) -> None:
        """A verified answer's triples proposed for review (``a2rag.propose_triples``)."""
        control, graph = run.answer.control, self.index.graph()
        if control is not None and control.outcome == "verified" and graph is not None and \
                self.a2rag.propose_triples:
            control.proposed = _propose(graph, run.answer.question, run.answer)

    def _attempt(self, run: Run, graph: Graph | None, titles: dict[str, str], question: str,
                 query: str, number: int) -> Candidate:
        """Retrieve evidence for ``query`` (recorded as a step) and answer ``question``."""
        chunk_ids, stage, trace = self._retrieve(run, graph, query, titles)
        chunks = self.index.read(chunk_ids).chunks
        evidence = evidence_text(chunks, titles)
        for chunk in chunks:
            run.tracker.saw(chunk.chunk_id, 1.0)
            run.tracker.mark_read(chunk.chunk_id)
        run.answer.loops += 1
        run.record(Step(run.next_step, "progressive_retrieve",
                        {"query": query, "stage": stage, **trace}, evidence,
                        f"attempt {number + 1}", count_tokens(evidence), kind="retrieval"))
        candidate = self._answer(run, question, query, evidence)
        return Candidate(candidate, evidence, [c.chunk_id for c in chunks], stage)

    def _retrieve(self, run: Run, graph: Graph | None, query: str,
                  titles: dict[str, str]) -> tuple[list[str], str, dict[str, Any]]:
        """Evidence chunk ids for ``query``, the stage reached, and a trace for the record."""
        top_k = self.a2rag.top_k
        hybrid = HybridRetriever(self.index)
        if graph is None:
            return hybrid.hybrid(query, top_k), "hybrid", {"graph": False}
        chunk_ids, stage = graph.progressive(query, top_k=top_k,
                                             sufficient=self._sufficiency(run, graph, titles))
        last = graph.last_trace
        trace: dict[str, Any] = {"graph": True, "seeds": [name for _, name, _ in
                                                          last.get("seeds", [])],
                                 "relation_seeds": last.get("relation_seeds", []),
                                 "evidence_per_stage": last.get("evidence", {})}
        if stage in ("none", "failed"):  # no seed, or no stage sufficed: add text retrieval
            chunk_ids = fuse([chunk_ids, hybrid.hybrid(query)])[:top_k] if chunk_ids else \
                hybrid.hybrid(query, top_k)
            trace["fused_with"] = "hybrid"
        return chunk_ids, stage, trace

    def _sufficiency(self, run: Run, graph: Graph,
                     titles: dict[str, str]) -> Callable[[str, list[str]], bool]:
        if self.a2rag.sufficiency == "offline":
            return graph.covers

        def judge(question: str, chunk_ids: list[str]) -> bool:
            if not chunk_ids:
                return False
            evidence = evidence_text(self.index.read(chunk_ids).chunks, titles)
            messages = [{"role": "system", "content": prompt("sufficiency")},
                        {"role": "user", "content": f"Question: {question}\n\nEvidence:\n"
                                                    f"{evidence}"}]
            match = _YES.match(complete(run, messages))
            if match is None:  # not understood: the offline test decides
                return graph.covers(question, chunk_ids)
            return match.group(1).lower() == "yes"

        return judge

    def _answer(self, run: Run, question: str, query: str, evidence: str) -> str:
        focus = f"\nRetrieval focus: {query}" if query != question else ""
        messages = [{"role": "system", "content": self.system_prompt},
                    {"role": "user", "content": f"Question: {question}{focus}\n\nEvidence:\n"
                                                f"{evidence or '(no passages found)'}"}]
        return complete(run, messages).strip()


def _propose(graph: Graph, question: str, answer: Answer) -> int:
    """Triples a verified answer proposes for human review; returns how many."""
    from sleuth.graph.review import propose

    cited = [c.chunk_id for c in answer.citations if c.chunk_id]
    return len(propose(graph, question, answer.answer, cited or answer.chunks_read_ids))
