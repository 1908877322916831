"""Per-session state the tools share: which chunks were read, what was retrieved."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Tracker:
    """The A-RAG context tracker: chunks already read are not returned again."""

    read: list[str] = field(default_factory=list)
    seen_scores: dict[str, float] = field(default_factory=dict)  # best search score per chunk
    retrieved: list[str] = field(default_factory=list)  # chunk ids in first-retrieved order

    def was_read(self, chunk_id: str) -> bool:
        return chunk_id in self._read_set

    @property
    def _read_set(self) -> set[str]:
        return set(self.read)

    def mark_read(self, chunk_id: str) -> None:
        if chunk_id not in self._read_set:
            self.read.append(chunk_id)

    def saw(self, chunk_id: str, score: float) -> None:
        if chunk_id not in self.seen_scores:
            self.retrieved.append(chunk_id)
        self.seen_scores[chunk_id] = max(score, self.seen_scores.get(chunk_id, score))
