"""Per-session state the tools share: chunks read, what was retrieved, reference ids.

A session's tracker outlives one question: reference ids (:func:`sleuth.text.ids.ref_id`) handed
out by ``search`` stay valid in follow-up turns, and chunks already read are not repeated.
It sits below the tools and the agents, which both use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from sleuth.text.ids import ref_id
from sleuth.types import Reference


@dataclass
class Tracker:
    """The A-RAG context tracker plus AgenticRAG's reference-id table."""

    read: list[str] = field(default_factory=list)
    seen_scores: dict[str, float] = field(default_factory=dict)  # best search score per chunk
    # per chunk, its best score relative to the top hit of the search that found it (see
    # found(): what a citation shows as its score); none for chunks no search scored
    relevance: dict[str, float] = field(default_factory=dict)
    retrieved: list[str] = field(default_factory=list)  # chunk ids in first-retrieved order
    refs: dict[str, Reference] = field(default_factory=dict)
    turn: int = 1  # the session's current question number
    searches: int = 0  # reference ids handed out so far (the global counter)

    _read_set: set[str] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        self._read_set.update(self.read)

    def was_read(self, chunk_id: str) -> bool:
        return chunk_id in self._read_set

    def mark_read(self, chunk_id: str) -> None:
        if chunk_id not in self._read_set:
            self._read_set.add(chunk_id)
            self.read.append(chunk_id)

    def saw(self, chunk_id: str, score: float) -> None:
        if chunk_id not in self.seen_scores:
            self.retrieved.append(chunk_id)
        self.seen_scores[chunk_id] = max(score, self.seen_scores.get(chunk_id, score))

    def found(self, scores: Mapping[str, float]) -> None:
        """One search's hits, ``chunk id: score`` on the search's own scale (a keyword
        score, a cosine, a fused rank score ...): each is seen (:meth:`saw`), and its
        relevance is its score over the search's best, in [0, 1] (1.0: the top hit), so the
        scores of different searches compare; a chunk keeps its best."""
        best = max(scores.values(), default=0.0)
        for chunk_id, score in scores.items():
            self.saw(chunk_id, score)
            if best > 0:
                share = min(1.0, max(0.0, score / best))
                self.relevance[chunk_id] = max(share, self.relevance.get(chunk_id, 0.0))

    def new_ref(self, doc_id: str, title: str, chunk_id: str | None = None, start: int = -1,
                end: int = -1, score: float = 0.0) -> Reference:
        """A fresh reference id for this turn (its number counts over the whole session)."""
        self.searches += 1
        ref = Reference(ref_id(self.turn, self.searches), doc_id, title, chunk_id, start, end,
                        score)
        self.refs[ref.ref] = ref
        return ref

    def to_dict(self) -> dict[str, Any]:
        return {"read": self.read, "seen_scores": self.seen_scores, "retrieved": self.retrieved,
                "relevance": self.relevance,
                "refs": [asdict(r) for r in self.refs.values()], "turn": self.turn,
                "searches": self.searches}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Tracker:
        return cls(read=list(data.get("read", [])),
                   seen_scores=dict(data.get("seen_scores", {})),
                   retrieved=list(data.get("retrieved", [])),
                relevance=dict(data.get("relevance", {})),
                   refs={r["ref"]: Reference(**r) for r in data.get("refs", [])},
                   turn=int(data.get("turn", 1)), searches=int(data.get("searches", 0)))
