"""Plain, frozen value types shared by every layer of Sleuth.

Nothing here does I/O. Offsets are character offsets into the owning document's text.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

DocType = Literal["markdown", "text", "html", "json", "jsonl", "corpus", "chunks", "pdf", "docx"]


@dataclass(frozen=True)
class Document:
    """A source document. ``text`` starts with the title on its own first line."""

    doc_id: str
    title: str
    text: str
    type: DocType
    path: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Sentence:
    """A sentence span ``text == document.text[start:end]``."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Chunk:
    """A sentence-aligned slice of one document (never spans two)."""

    chunk_id: str
    doc_id: str
    position: int
    text: str
    start: int
    end: int
    n_tokens: int
    sentences: tuple[Sentence, ...] = ()
    prev_id: str | None = None
    next_id: str | None = None


@dataclass(frozen=True)
class Hit:
    """One ranked chunk returned by a search."""

    chunk_id: str
    doc_id: str
    title: str
    score: float
    snippets: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "title": self.title,
            "score": self.score,
            "snippets": list(self.snippets),
        }


@dataclass(frozen=True)
class Citation:
    """A chunk (or document) the final answer rests on. ``score`` is the retrieval score it
    was found with, relative to the best hit of the same search (1.0: that search's top
    hit; the best over the run's searches; None where no search scored it);
    ``relevance`` the one the model stated in its ``Relevance:`` line (None: it stated
    none)."""

    chunk_id: str
    doc_id: str
    title: str
    relevance: float | None = None
    ref: str | None = None  # the reference id cited, when the answer cited one
    where: str | None = None  # "page 3, lines 120–131"
    lines: tuple[int, int] | None = None  # the lines of ``where``: 0-based, inclusive
    page: int | None = None  # the (first) page of ``where``, for a paged document
    tool: str | None = None  # the first tool whose output showed the cited id
    score: float | None = None  # the retrieval score, relative to its search's best

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "title": self.title,
            "relevance": self.relevance,
            "score": self.score,
        }
        if self.ref:
            out["ref"] = self.ref
        if self.where:
            out["where"] = self.where
        if self.lines is not None:
            out["lines"] = list(self.lines)
        if self.page is not None:
            out["page"] = self.page
        out["tool"] = self.tool
        return out


@dataclass(frozen=True)
class Reference:
    """What a reference id points at: a document, its best chunk and snippet span."""

    ref: str
    doc_id: str
    title: str
    chunk_id: str | None = None
    start: int = -1  # character span of the snippet in the document (-1: none)
    end: int = -1
    score: float = 0.0


StepKind = Literal["tool", "retrieval", "observation", "check"]


@dataclass(frozen=True)
class Step:
    """One step of an agent run, as recorded in the trajectory, under the name of what ran.

    ``kind`` says who made it: ``tool``, a tool call the model made; ``retrieval``, a tool
    the agent ran for the model before its first call (naive RAG's single shot, the hybrid
    agent's first search) or its own retrieval (``tool_name`` then names the retrieval, not a
    tool); ``observation``, text the agent put before the model that no tool produced (the
    passages of a bridge entity, a chunk read into the memory agent's memory); ``check``, a
    step an answer check recorded (:mod:`sleuth.agent.checks`: what it looked at, what it
    did to the answer), ``tool_name`` naming the check."""

    step: int
    tool_name: str
    tool_input: Any
    tool_output: str
    reasoning: str = ""
    retrieved_tokens: int = 0
    error: str | None = None
    seconds: float = 0.0
    kind: StepKind = "tool"

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "tool_name": self.tool_name,
            "tool_input": self.tool_input,
            "tool_output": self.tool_output,
            "reasoning": self.reasoning,
            "retrieved_tokens": self.retrieved_tokens,
            "error": self.error,
            "seconds": round(self.seconds, 4),
            "kind": self.kind,
        }


Decision = Literal["simple", "complex"]
Outcome = Literal["", "verified", "unverified", "abstained", "out of scope"]
PROPERTIES = ("relevance", "grounding", "adequacy")


class _Record(Mapping[str, Any]):
    """Read access by JSON key (``answer.route["decision"]``, ``control.get("gate")``), so
    code written when these records were dicts keeps working."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]: ...

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())


@dataclass(frozen=True)
class Route(_Record):
    """Where ``--agent auto`` sent a question, why, and the features the rule looked at."""

    decision: Decision
    reason: str
    features: dict[str, Any] = field(default_factory=dict)
    by: Literal["rules", "llm"] = "rules"
    agent: str = ""  # the runner the question went to (empty until routed)

    def to_dict(self) -> dict[str, Any]:
        return {"decision": self.decision, "reason": self.reason, "by": self.by,
                "agent": self.agent, "features": self.features}


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


@dataclass(frozen=True)
class Gate:
    """The A2RAG scope gate: the question's best similarity to a document summary."""

    score: float
    threshold: float
    nearest_document: str | None
    passed: bool

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "threshold": self.threshold,
                "nearest_document": self.nearest_document, "passed": self.passed}


@dataclass
class Attempt:
    """One try of a checked answer: the query, the evidence, the candidate and its verdict."""

    query: str
    evidence: list[str]  # chunk ids the judge saw
    candidate: str
    check: Check
    stage: str | None = None  # the A2RAG retrieval stage reached (None under --verify)
    rewrite: str | None = None  # the next attempt's query, when there is one

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, **({"stage": self.stage} if self.stage is not None else {}),
                "evidence": list(self.evidence), "candidate": self.candidate,
                "check": self.check.to_dict(),
                **({"rewrite": self.rewrite} if self.rewrite is not None else {})}


@dataclass
class Control(_Record):
    """What the A2RAG controller or ``--verify`` decided: the gate, every attempt, the
    outcome, and how many triples a verified answer proposed for review."""

    attempts: list[Attempt] = field(default_factory=list)
    outcome: Outcome = ""
    gate: Gate | None = None
    proposed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**({"gate": self.gate.to_dict()} if self.gate is not None else {}),
                "attempts": [a.to_dict() for a in self.attempts], "outcome": self.outcome,
                **({"proposed": self.proposed} if self.proposed is not None else {})}


@dataclass(frozen=True)
class CheckNote:
    """One answer check that applied to a draft answer (:mod:`sleuth.agent.checks`): whether
    it changed the answer or, in flag mode, flagged it (the answer stands, its ``note`` is
    shown with it), and the LLM calls it made."""

    name: str
    changed: bool = False
    flagged: bool = False
    calls: int = 0
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "changed": self.changed, "flagged": self.flagged,
                "calls": self.calls, "note": self.note}


@dataclass
class Answer:
    """A finished agent run: the answer, its citations and the full trajectory."""

    question: str
    answer: str
    citations: list[Citation] = field(default_factory=list)
    trajectory: list[Step] = field(default_factory=list)
    question_id: str | None = None
    agent: str = "full"
    model: str = ""
    loops: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0  # of prompt_tokens, reused from the server's prompt cache
    completion_tokens: int = 0
    total_cost: float = 0.0
    chunks_read_ids: list[str] = field(default_factory=list)
    retrieved_ids: list[str] = field(default_factory=list)  # chunks any search returned
    forced: str | None = None  # "max_steps", "token_budget" or "repeated_calls": why the
    # answer was forced
    seconds: float = 0.0
    memory_state: dict[str, Any] | None = None  # the memory agent's final memory
    context_events: list[dict[str, Any]] = field(default_factory=list)  # warnings, summaries
    messages: list[dict[str, Any]] = field(default_factory=list, repr=False)  # the dialogue
    route: Route | None = None  # --agent auto
    abstained: bool = False  # the controller declined to answer (out of scope, unverified)
    control: Control | None = None  # a2rag / --verify
    # the model profile the run was made under (``agent.profile``) and, for the ReAct
    # agents, the answer checks that ran, in order (``agent.checks``), with a note of each
    # that applied
    profile: str | None = None
    checks: list[str] = field(default_factory=list)
    check_notes: list[CheckNote] = field(default_factory=list)

    @property
    def flags(self) -> list[str]:
        """The notes of the checks that flagged this answer rather than replace it: what a
        user should know before trusting it."""
        return [f"{n.name}: {n.note}" for n in self.check_notes if n.flagged]

    @property
    def document_ranking(self) -> list[str]:
        """Cited documents, most relevant first (by the best relevance the model stated for
        their citations, 1.0 where it stated none; ties keep citation order): the ranking
        Recall@1 is measured on."""
        best: dict[str, float] = {}
        for c in self.citations:
            stated = 1.0 if c.relevance is None else c.relevance
            best[c.doc_id] = max(stated, best.get(c.doc_id, 0.0))
        return sorted(best, key=lambda doc_id: -best[doc_id])

    @property
    def total_retrieved_tokens(self) -> int:
        return sum(s.retrieved_tokens for s in self.trajectory)

    @property
    def tool_usage_summary(self) -> dict[str, int]:
        summary: dict[str, int] = {}
        for s in self.trajectory:
            summary[s.tool_name] = summary.get(s.tool_name, 0) + 1
        return summary

    def to_record(self) -> dict[str, Any]:
        """The A-RAG output record, plus Sleuth's extra fields."""
        return {
            "question_id": self.question_id,
            "question": self.question,
            "answer": self.answer,
            "trajectory": [s.to_dict() for s in self.trajectory],
            "total_cost": self.total_cost,
            "loops": self.loops,
            "tool_usage_summary": self.tool_usage_summary,
            "total_retrieved_tokens": self.total_retrieved_tokens,
            "chunks_read_count": len(self.chunks_read_ids),
            "chunks_read_ids": list(self.chunks_read_ids),
            "retrieved_ids": list(self.retrieved_ids),
            "citations": [c.to_dict() for c in self.citations],
            "document_ranking": self.document_ranking,
            "context_events": list(self.context_events),
            "agent": self.agent,
            "model": self.model,
            "llm_calls": self.llm_calls,
            "prompt_tokens": self.prompt_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "forced": self.forced,
            "seconds": round(self.seconds, 3),
            **({"memory_state": self.memory_state} if self.memory_state is not None else {}),
            **({"route": self.route.to_dict()} if self.route is not None else {}),
            **({"abstained": self.abstained, "control": self.control.to_dict()}
               if self.control is not None else {}),
            **({"profile": self.profile, "abstained": self.abstained,
                "checks": list(self.checks),
                "check_notes": [n.to_dict() for n in self.check_notes],
                "flags": self.flags} if self.profile is not None else {}),
        }
