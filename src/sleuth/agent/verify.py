"""Triple-Check with failure-aware rewrites and bounded retries (A2RAG, section III-B), for
the A2RAG controller and, as ``--verify``, around any other agent.

Each attempt yields a candidate answer and the evidence it rests on. The judge (prompt
``triple_check.md``) rules on relevance, grounding and adequacy. All three hold: the
candidate is the answer. Otherwise the first failed property picks a **rewrite** of the
retrieval query (prompt ``a2rag_rewrite.md``) and the next attempt uses it, at most
``retries`` times; then the caller abstains. A judge reply that cannot be read leaves the
candidate unverified rather than retried. :func:`checked` is that loop; :class:`Verified`
wraps a runner in it, running the runner again on the rewritten question.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sleuth.agent.run import Prices, Run, Runner, StepCallback, abstention
from sleuth.llm import LLM
from sleuth.llm.jsontools import JsonToolCalls, json_objects
from sleuth.prompts import prompt
from sleuth.settings import A2RAGSettings
from sleuth.text.ids import cite
from sleuth.text.tokens import count_tokens
from sleuth.tools.tracker import Tracker
from sleuth.types import PROPERTIES, Answer, Attempt, Check, Chunk, Control

if TYPE_CHECKING:
    from sleuth.index.read import ReadIndex

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
CHECK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"relevance": {"type": "boolean"}, "grounding": {"type": "boolean"},
                   "adequacy": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["relevance", "grounding", "adequacy", "reason"],
}


@dataclass(frozen=True)
class Candidate:
    """One attempt's answer, the evidence shown to the judge, and where it came from."""

    text: str
    evidence: str
    evidence_ids: list[str]
    stage: str | None = None  # the A2RAG retrieval stage reached


def checked(run: Run, control: Control, question: str,
            attempt: Callable[[str, int], Candidate], retries: int) -> Candidate | None:
    """Try ``attempt(query, number)`` until a candidate passes Triple-Check (or cannot be
    judged), at most ``retries`` times after the first; each try goes into ``control``.
    None when none passed: the caller abstains."""
    query = question
    for number in range(retries + 1):
        candidate = attempt(query, number)
        check = judge(run, question, candidate.text, candidate.evidence)
        record = Attempt(query, candidate.evidence_ids, candidate.text, check, candidate.stage)
        control.attempts.append(record)
        if check.failure is None or not check.understood:
            control.outcome = "verified" if check.understood else "unverified"
            return candidate
        if number < retries:
            query = rewrite(run, question, query, candidate.text, check)
            record.rewrite = query
    control.outcome = "abstained"
    return None


def judge(run: Run, question: str, candidate: str, evidence: str) -> Check:
    """Triple-Check of ``candidate`` against ``evidence``, asked twice at most."""
    if INSUFFICIENT in candidate.lower() or not candidate.strip():
        return Check(True, True, False, "the answer says the evidence is insufficient")
    messages = [{"role": "system", "content": prompt("triple_check")},
                {"role": "user", "content": f"Question: {question}\n\nEvidence:\n{evidence}"
                                            f"\n\nCandidate answer: {candidate}"}]
    for _ in range(2):
        reply = complete(run, messages, CHECK_SCHEMA)
        verdict = _parse_check(reply)
        if verdict is not None:
            return verdict
        messages += [{"role": "assistant", "content": reply},
                     {"role": "user", "content": "Reply with the JSON object only, e.g. "
                      '{"relevance": true, "grounding": false, "adequacy": true, '
                      '"reason": "..."}'}]
    return Check(False, False, False, f"judge reply not understood: {reply[:80]!r}",
                 understood=False)


def rewrite(run: Run, question: str, query: str, candidate: str, check: Check) -> str:
    """The next retrieval query, aimed at the property that failed."""
    failure = check.failure or "adequacy"
    system = prompt("a2rag_rewrite").replace("{failure}", failure).replace(
        "{advice}", _ADVICE[failure])
    messages = [{"role": "system", "content": system},
                {"role": "user", "content": f"Question: {question}\nFailed query: {query}\n"
                                            f"Candidate answer: {candidate}\n"
                                            f"Verifier: {check.reason}"}]
    text = complete(run, messages).strip()
    line = next((ln.strip(" \"'`") for ln in text.splitlines() if ln.strip()), "")
    line = re.sub(r"^(?:new |rewritten )?query\s*:\s*", "", line, flags=re.I)
    return line[:500] or query


def complete(run: Run, messages: list[dict[str, Any]],
             schema: dict[str, Any] | None = None) -> str:
    """One tool-less call on ``run``'s account. A reply ``schema`` is enforced as a
    grammar where the client is known to support it (the local model's JSON mode); other
    endpoints get the prompt's instructions only."""
    llm = run.llm
    if schema is not None and isinstance(llm, JsonToolCalls) and llm.constrain:
        return run.account(llm.inner.chat(messages, response_format={
            "type": "json_schema", "json_schema": {"name": "verdict", "schema": schema}}
        )).content or ""
    return run.chat(messages).content or ""


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
        block = f"{cite(chunk.chunk_id)} {titles.get(chunk.doc_id, '')}\n{chunk.text.strip()}"
        tokens = count_tokens(block)
        if max_tokens is not None and parts and used + tokens > max_tokens:
            break
        parts.append(block)
        used += tokens
    return "\n\n".join(parts)


@dataclass
class Verified:
    """``--verify``: ``inner``'s answer passes Triple-Check, or ``inner`` runs again on a
    failure-aware rewrite of the question (at most ``a2rag.retries`` times), or the answer
    is an abstention. The evidence judged is what ``inner`` read (else what it cited, else
    the first it retrieved)."""

    inner: Runner
    index: ReadIndex
    llm: LLM  # the judge
    a2rag: A2RAGSettings
    prices: Prices | None = None

    @property
    def name(self) -> str:
        return f"{self.inner.name}+verify"

    def run(self, question: str, *, question_id: str | None = None,
            on_step: StepCallback | None = None, tracker: Tracker | None = None,
            history: Sequence[dict[str, Any]] = ()) -> Answer:
        with Run.start(self.name, self.llm, question, question_id=question_id,
                       prices=self.prices) as run:
            titles = self.index.document_titles()
            results: list[Answer] = []

            def attempt(query: str, number: int) -> Candidate:
                first = number == 0  # later attempts start afresh on the rewritten question
                result = self.inner.run(query, question_id=question_id, on_step=on_step,
                                        tracker=tracker if first else None,
                                        history=history if first else ())
                run.absorb(result)
                results.append(result)
                ids = result.chunks_read_ids or [c.chunk_id for c in result.citations
                                                  if c.chunk_id] or result.retrieved_ids[:5]
                evidence = evidence_text(self.index.read(ids).chunks, titles, EVIDENCE_TOKENS)
                return Candidate(result.answer, evidence, ids)

            control = Control()
            passed = checked(run, control, question, attempt, self.a2rag.retries)
            answer = run.adopt(results[-1])
            answer.question, answer.agent, answer.control = question, self.name, control
            if passed is None:
                answer.abstained = True
                last = control.attempts[-1].check
                answer.answer = abstention(f"no answer passed verification in "
                                           f"{len(control.attempts)} attempts "
                                           f"({last.failure}: {last.reason or 'no reason'})")
                answer.citations = []
        return answer
