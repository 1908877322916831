"""Per-session state the tools share: which chunks were read, what was retrieved."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Tracker:
    """The A-RAG context tracker: chunks already read are not returned again."""

    read: list[str] = field(default_factory=list)
    seen_scores: dict[str, float] = field(default_factory=dict)  # best search score per chunk
    retrieved: list[str] = field(default_factory=list)  # chunk ids in first-retrieved order

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
