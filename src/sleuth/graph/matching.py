"""How question text meets the graph: entity names by trigrams and string similarity."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sleuth.graph.aliases import parse
from sleuth.store.graphs import Entity

__all__ = ["NameIndex", "same_marks", "trigrams"]

TRIGRAM_SHORTLIST = 100  # names by trigram overlap that get a full string comparison


@dataclass
class NameIndex:
    """Live entity names and aliases with a character-trigram index for candidates."""

    keys: list[str]
    entities: list[Entity]
    postings: dict[str, np.ndarray]
    sizes: np.ndarray  # trigrams per key

    @classmethod
    def build(cls, rows: Sequence[tuple[str, Entity]]) -> NameIndex:
        lists: dict[str, list[int]] = {}
        sizes = np.zeros(len(rows), dtype=np.float32)
        for position, (key, _) in enumerate(rows):
            grams = trigrams(key)
            sizes[position] = len(grams)
            for gram in grams:
                lists.setdefault(gram, []).append(position)
        return cls([k for k, _ in rows], [e for _, e in rows],
                   {g: np.asarray(v, dtype=np.int32) for g, v in lists.items()}, sizes)

    def close(self, key: str, limit: int, cutoff: float) -> list[tuple[float, int]]:
        """(string similarity, position) of the names most like ``key``, best first."""
        grams = trigrams(key)
        hits = [self.postings[g] for g in grams if g in self.postings]
        if not hits:
            return []
        counts = np.bincount(np.concatenate(hits), minlength=len(self.keys))
        dice = 2 * counts / (len(grams) + self.sizes)
        short = min(TRIGRAM_SHORTLIST, len(dice) - 1)
        top = np.argpartition(-dice, short)[:short + 1] if short > 0 else np.arange(len(dice))
        scored = []
        for position in top:
            if counts[position]:
                matcher = difflib.SequenceMatcher(None, self.keys[position], key)
                if matcher.real_quick_ratio() >= cutoff and matcher.quick_ratio() >= cutoff:
                    ratio = matcher.ratio()
                    if ratio >= cutoff:
                        scored.append((ratio, int(position)))
        scored.sort(key=lambda item: (-item[0], self.keys[item[1]]))
        return scored[:limit]


def trigrams(key: str) -> set[str]:
    padded = f"  {key} "
    return {padded[i:i + 3] for i in range(len(padded) - 2)}


def same_marks(a: str, b: str) -> bool:
    """False for names whose numbers or numerals differ ("4th Baron" / "1st Baron", "Lothair
    I" / "Lothair 2"); a name without any does not disagree."""
    left, right = parse(a).marks, parse(b).marks
    return not (left and right) or left == right
