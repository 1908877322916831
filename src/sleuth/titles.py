"""Document titles as a search field: which documents a query names.

Titles (file names such as ``3M_2018_10K``, article titles) are split into lowercase word
and number tokens; a query's tokens (with 4-digit years pulled out of forms like
``FY2018``) are matched against them, each matched token weighted by its inverse document
frequency over the distinct titles. :meth:`TitleIndex.match` returns the documents with the
best score, the field search narrows to.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

_SPLIT = re.compile(r"[\W_]+")
_YEAR = re.compile(r"(?:19|20)\d\d")
MAX_MATCHES = 2000  # documents a title match may narrow to


def title_tokens(text: str) -> set[str]:
    return {t for t in _SPLIT.split(text.lower()) if t}


def query_tokens(terms: Sequence[str]) -> set[str]:
    out: set[str] = set()
    for term in terms:
        for token in _SPLIT.split(term.lower()):
            if token:
                out.add(token)
                out.update(_YEAR.findall(token))
    return out


class TitleIndex:
    """Token → documents over the titles of one index."""

    def __init__(self, titles: Mapping[str, str]) -> None:
        self.by_token: dict[str, list[str]] = {}
        distinct: Counter[str] = Counter()
        seen: set[str] = set()
        for doc_id, title in titles.items():
            tokens = title_tokens(title)
            for token in tokens:
                self.by_token.setdefault(token, []).append(doc_id)
            if title not in seen:
                seen.add(title)
                distinct.update(tokens)
        self.weight = {t: math.log((len(seen) + 1) / n) for t, n in distinct.items()}

    def match(self, terms: Sequence[str], limit: int = MAX_MATCHES) -> list[str]:
        """Documents whose titles score best against the query ``terms`` (content words;
        ties kept, at most ``limit``); none when no title shares a token that is rarer than
        half the titles."""
        scores: dict[str, float] = {}
        for token in query_tokens(terms):
            weight = self.weight.get(token, 0.0)
            if weight <= math.log(2):  # in half the titles or more: says nothing
                continue
            for doc_id in self.by_token.get(token, ()):
                scores[doc_id] = scores.get(doc_id, 0.0) + weight
        if not scores:
            return []
        best = max(scores.values())
        ranked = sorted(scores, key=lambda d: -scores[d])
        return [d for d in ranked if scores[d] >= 0.99 * best][:limit]
