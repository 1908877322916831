"""A2RAG's adaptive controller (``--agent a2rag``) and Triple-Check for any agent (``--verify``).

The controller (A2RAG, section III-B) runs one question through:

1. **Gate**: the question's best cosine similarity to a document summary (built at index
   time, :meth:`Index.scope`). Under ``a2rag.gate_threshold`` it abstains at once, without
   retrieving or calling the LLM.
2. **Progressive retrieval** over the knowledge graph (:meth:`Graph.progressive`: local,
   bridge, PPR with map-back), with an evidence-sufficiency check after each stage: an LLM
   judge (prompt ``sufficiency.md``) or the offline coverage test. Without a graph, or when
   the question names no graph entity, the hybrid retriever supplies the evidence.
3. **Answer** from the evidence only (prompt ``a2rag_answer.md``), citing chunk ids.
4. **Triple-Check** (prompt ``triple_check.md``): relevance, grounding and adequacy judged by
   the LLM. All three hold: the answer is returned as verified (and, with a graph, proposes
   triples for ``sleuth graph review``). Otherwise the first failed property picks a
   **failure-aware rewrite** of the retrieval query (prompt ``a2rag_rewrite.md``) and the
   loop retries, at most ``a2rag.retries`` times, then **abstains**.

The record's ``control`` field keeps the gate score, every attempt (query, stage reached,
evidence ids, candidate answer, the three verdicts, the rewrite) and the outcome.
:class:`VerifiedAgent` wraps any other agent with the same Triple-Check, rewrite and bounded
retry: the wrapped agent runs again on the rewritten question.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sleuth.agent.loop import Agent, StepCallback, prompt
from sleuth.agent.tracker import Tracker
from sleuth.llm.jsontools import JsonToolCalls, json_objects
from sleuth.retrieval import HybridRetriever, fuse
from sleuth.settings import A2RAGSettings
from sleuth.tokens import count_tokens
from sleuth.types import Answer, Chunk, Step

if TYPE_CHECKING:
    from sleuth.graph import Graph

PROPERTIES = ("relevance", "grounding", "adequacy")
EVIDENCE_TOKENS = 6000  # evidence shown to the judge when verifying another agent's answer
INSUFFICIENT = "insufficient evidence"
_ADVICE = {
    "relevance": "The evidence retrieved was off-topic. Name the entities and the relation the "
                 "question asks about precisely (full names, the exact relation).",
    "grounding": "The answer made claims the evidence does not state. Ask directly for the "
                 "fact that would support the answer, with the entities spelled out.",
    "adequacy": "The answer was incomplete. Add the constraints and the missing parts the "
                "question implies (every entity to compare, the date, the attribute asked).",
}
_YES = re.compile(r"^\W*(yes|no)\b", re.I)


@dataclass(frozen=True)
class Check:
    """One Triple-Check verdict. ``understood`` is False when the judge's reply could not be
    read (the answer is then returned unverified rather than retried)."""

    relevance: bool
    grounding: bool
    adequacy: bool
    reason: str = ""
    understood: bool = True

    @property
    def failure(self) -> str | None:
        """The first property that fails, in the order relevance, grounding, adequacy."""
        return next((p for p in PROPERTIES if not getattr(self, p)), None)

    def to_dict(self) -> dict[str, Any]:
        return {"relevance": self.relevance, "grounding": self.grounding,
                "adequacy": self.adequacy, "reason": self.reason,
                "understood": self.understood, "failure": self.failure}


@dataclass
class Verifier:
    """Triple-Check and the failure-aware rewrite, as LLM calls on an agent's account."""

    agent: Agent

    def check(self, answer: Answer, question: str, candidate: str, evidence: str) -> Check:
        if INSUFFICIENT in candidate.lower() or not candidate.strip():
            return Check(True, True, False, "the answer says the evidence is insufficient")
        messages = [{"role": "system", "content": prompt("triple_check")},
                    {"role": "user", "content": f"Question: {question}\n\nEvidence:\n{evidence}"
                                                f"\n\nCandidate answer: {candidate}"}]
        for _ in range(2):
            reply = complete(self.agent, answer, messages, CHECK_SCHEMA)
            verdict = _parse_check(reply)
            if verdict is not None:
                return verdict
            messages += [{"role": "assistant", "content": reply},
                         {"role": "user", "content": "Reply with the JSON object only, e.g. "
                          '{"relevance": true, "grounding": false, "adequacy": true, '
                          '"reason": "..."}'}]
        return Check(False, False, False, f"judge reply not understood: {reply[:80]!r}",
                     understood=False)

    def rewrite(self, answer: Answer, question: str, query: str, candidate: str,
                check: Check) -> str:
        failure = check.failure or "adequacy"
        system = prompt("a2rag_rewrite").replace("{failure}", failure).replace(
            "{advice}", _ADVICE[failure])
        messages = [{"role": "system", "content": system},
                    {"role": "user", "content": f"Question: {question}\nFailed query: {query}\n"
                                                f"Candidate answer: {candidate}\n"
                                                f"Verifier: {check.reason}"}]
        text = complete(self.agent, answer, messages).strip()
        line = next((ln.strip(" \"'`") for ln in text.splitlines() if ln.strip()), "")
        line = re.sub(r"^(?:new |rewritten )?query\s*:\s*", "", line, flags=re.I)
        return line[:500] or query


CHECK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"relevance": {"type": "boolean"}, "grounding": {"type": "boolean"},
                   "adequacy": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["relevance", "grounding", "adequacy", "reason"],
}


def complete(agent: Agent, answer: Answer, messages: list[dict[str, Any]],
             schema: dict[str, Any] | None = None) -> str:
    """One tool-less call on ``answer``'s account. A reply ``schema`` is enforced as a
    grammar where the client is known to support it (the local model's JSON mode); other
    endpoints get the prompt's instructions only."""
    llm = agent.llm
    if schema is not None and isinstance(llm, JsonToolCalls) and llm.constrain:
        response = llm.inner.chat(messages, response_format={
            "type": "json_schema", "json_schema": {"name": "verdict", "schema": schema}})
    else:
        response = llm.chat(messages)
    agent._account(answer, response)
    return response.content or ""


def _parse_check(text: str) -> Check | None:
    for obj in json_objects(text):
        values = {p: obj.get(p) for p in PROPERTIES}
        if all(isinstance(v, bool) or str(v).lower() in ("true", "false") for v in
               values.values()):
            flags = {p: v if isinstance(v, bool) else str(v).lower() == "true"
                     for p, v in values.items()}
            return Check(flags["relevance"], flags["grounding"], flags["adequacy"],
                         str(obj.get("reason") or ""))
    return None


def evidence_text(chunks: Sequence[Chunk], titles: dict[str, str],
                  max_tokens: int | None = None) -> str:
    """Chunks as labelled passages ``[chunk_id] Title`` + text, optionally capped."""
    parts: list[str] = []
    used = 0
    for chunk in chunks:
        title = titles.get(chunk.doc_id, "")
        block = f"[{chunk.chunk_id}] {title}\n{chunk.text.strip()}"
        tokens = count_tokens(block)
        if max_tokens is not None and parts and used + tokens > max_tokens:
            break
        parts.append(block)
        used += tokens
    return "\n\n".join(parts)


def abstention(reason: str) -> str:
    return f"I cannot answer this reliably from the indexed documents: {reason}."


@dataclass
class A2RAGAgent(Agent):
    """The A2RAG controller; see the module docstring."""

    a2rag: A2RAGSettings = field(default_factory=A2RAGSettings, kw_only=True)

    def run(self, question: str, *, question_id: str | None = None,
            on_step: StepCallback | None = None, tracker: Tracker | None = None,
            history: Sequence[dict[str, Any]] = ()) -> Answer:
        started = time.perf_counter()
        tracker = tracker or Tracker()
        answer = Answer(question=question, answer="", question_id=question_id, agent=self.name,
                        model=self.llm.model)
        score, nearest = self.index.scope(question)
        control: dict[str, Any] = {
            "gate": {"score": round(score, 4), "threshold": self.a2rag.gate_threshold,
                     "nearest_document": nearest,
                     "passed": score >= self.a2rag.gate_threshold},
            "attempts": [], "outcome": "",
        }
        answer.control = control
        if score < self.a2rag.gate_threshold:
            control["outcome"] = "out of scope"
            answer.abstained = True
            self._finish(answer, abstention(
                f"the question is outside what they cover (best summary similarity "
                f"{score:.2f} < {self.a2rag.gate_threshold:.2f})"), tracker, started)
            return answer
        verifier = Verifier(self)
        titles = self.index.document_titles()
        graph: Graph | None = self.index.graph()
        query, final = question, ""
        for attempt in range(self.a2rag.retries + 1):
            chunk_ids, stage, trace = self._retrieve(answer, graph, query, titles)
            chunks = self.index.read(chunk_ids).chunks
            evidence = evidence_text(chunks, titles)
            for chunk in chunks:
                tracker.saw(chunk.chunk_id, 1.0)
                tracker.mark_read(chunk.chunk_id)
            step = Step(len(answer.trajectory) + 1, "progressive_retrieve",
                        {"query": query, "stage": stage, **trace}, evidence,
                        f"attempt {attempt + 1}", count_tokens(evidence))
            answer.trajectory.append(step)
            answer.loops += 1
            if on_step:
                on_step(step)
            candidate = self._answer(answer, question, query, evidence)
            check = verifier.check(answer, question, candidate, evidence)
            record: dict[str, Any] = {"query": query, "stage": stage,
                                      "evidence": [c.chunk_id for c in chunks],
                                      "candidate": candidate, "check": check.to_dict()}
            control["attempts"].append(record)
            if check.failure is None or not check.understood:
                final = candidate
                control["outcome"] = "verified" if check.understood else "unverified"
                break
            if attempt == self.a2rag.retries:
                break
            query = verifier.rewrite(answer, question, query, candidate, check)
            record["rewrite"] = query
        if not final:
            answer.abstained = True
            control["outcome"] = "abstained"
            last = control["attempts"][-1]["check"]
            final = abstention(f"the evidence stayed insufficient after "
                               f"{len(control['attempts'])} attempts ({last['failure']}: "
                               f"{last['reason'] or 'no reason given'})")
        self._finish(answer, final, tracker, started)
        if control["outcome"] == "verified" and graph is not None and \
                self.a2rag.propose_triples:
            control["proposed"] = _propose(graph, question, answer)
        answer.seconds = time.perf_counter() - started
        return answer

    def _retrieve(self, answer: Answer, graph: Graph | None, query: str,
                  titles: dict[str, str]) -> tuple[list[str], str, dict[str, Any]]:
        """Evidence chunk ids for ``query``, the stage reached, and a trace for the record."""
        top_k = self.a2rag.top_k
        hybrid = HybridRetriever(self.index)
        if graph is None:
            return hybrid.hybrid(query, top_k), "hybrid", {"graph": False}
        chunk_ids, stage = graph.progressive(query, top_k=top_k,
                                             sufficient=self._sufficiency(answer, graph, titles))
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

    def _sufficiency(self, answer: Answer, graph: Graph,
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
            match = _YES.match(complete(self, answer, messages))
            if match is None:  # not understood: the offline test decides
                return graph.covers(question, chunk_ids)
            return match.group(1).lower() == "yes"

        return judge

    def _answer(self, answer: Answer, question: str, query: str, evidence: str) -> str:
        focus = f"\nRetrieval focus: {query}" if query != question else ""
        messages = [{"role": "system", "content": self.system_prompt},
                    {"role": "user", "content": f"Question: {question}{focus}\n\nEvidence:\n"
                                                f"{evidence or '(no passages found)'}"}]
        return complete(self, answer, messages).strip()


@dataclass
class VerifiedAgent(Agent):
    """``--verify``: any agent's answer passes Triple-Check, or the agent runs again on a
    failure-aware rewrite of the question (at most ``a2rag.retries`` times), or the answer
    is an abstention. The evidence judged is what the agent read (else what it retrieved)."""

    inner: Agent = field(kw_only=True)
    a2rag: A2RAGSettings = field(default_factory=A2RAGSettings, kw_only=True)

    def run(self, question: str, *, question_id: str | None = None,
            on_step: StepCallback | None = None, tracker: Tracker | None = None,
            history: Sequence[dict[str, Any]] = ()) -> Answer:
        started = time.perf_counter()
        total = Answer(question=question, answer="", question_id=question_id,
                       agent=f"{self.inner.name}+verify", model=self.llm.model)
        control: dict[str, Any] = {"attempts": [], "outcome": ""}
        verifier = Verifier(self)
        titles = self.index.document_titles()
        query, result = question, None
        for attempt in range(self.a2rag.retries + 1):
            result = self.inner.run(query, question_id=question_id, on_step=on_step,
                                    tracker=tracker if attempt == 0 else None,
                                    history=history if attempt == 0 else ())
            _absorb(total, result)
            ids = result.chunks_read_ids or [c.chunk_id for c in result.citations
                                              if c.chunk_id] or result.retrieved_ids[:5]
            evidence = evidence_text(self.index.read(ids).chunks, titles, EVIDENCE_TOKENS)
            check = verifier.check(total, question, result.answer, evidence)
            record: dict[str, Any] = {"query": query, "evidence": ids, "candidate":
                                      result.answer, "check": check.to_dict()}
            control["attempts"].append(record)
            if check.failure is None or not check.understood:
                control["outcome"] = "verified" if check.understood else "unverified"
                break
            if attempt < self.a2rag.retries:
                query = verifier.rewrite(total, question, query, result.answer, check)
                record["rewrite"] = query
        assert result is not None
        answer = result
        for name in ("llm_calls", "prompt_tokens", "cached_prompt_tokens", "completion_tokens",
                     "total_cost"):
            setattr(answer, name, getattr(total, name))
        answer.trajectory, answer.loops = total.trajectory, total.loops
        answer.question, answer.agent = question, total.agent
        answer.control = control
        if not control["outcome"]:
            control["outcome"] = "abstained"
            answer.abstained = True
            last = control["attempts"][-1]["check"]
            answer.answer = abstention(f"no answer passed verification in "
                                       f"{len(control['attempts'])} attempts "
                                       f"({last['failure']}: {last['reason'] or 'no reason'})")
            answer.citations = []
        answer.seconds = time.perf_counter() - started
        return answer


def _absorb(total: Answer, part: Answer) -> None:
    """Add one run's calls, tokens, cost and steps to the running total."""
    total.llm_calls += part.llm_calls
    total.prompt_tokens += part.prompt_tokens
    total.cached_prompt_tokens += part.cached_prompt_tokens
    total.completion_tokens += part.completion_tokens
    total.total_cost += part.total_cost
    total.loops += part.loops
    offset = len(total.trajectory)
    total.trajectory.extend(Step(offset + s.step, s.tool_name, s.tool_input, s.tool_output,
                                 s.reasoning, s.retrieved_tokens, s.error, s.seconds)
                            for s in part.trajectory)


def _propose(graph: Graph, question: str, answer: Answer) -> int:
    """Triples a verified answer proposes for human review; returns how many."""
    from sleuth.graph.review import propose

    cited = [c.chunk_id for c in answer.citations if c.chunk_id]
    return len(propose(graph, question, answer.answer, cited or answer.chunks_read_ids))
