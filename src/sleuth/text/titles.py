"""Document titles as a search field: which documents a query names.

Titles (file names such as ``3M_2018_10K``, article titles) are split into lowercase word
and number tokens (``2024Q2`` also gives ``2024`` and ``q2``). A query's words are matched
against them: each word, 4-digit years pulled out of forms like ``FY2018``, two or three
consecutive words run together (``Best Buy`` names ``BESTBUY_2019_10K``) and, at half
weight, a word of three letters or more that begins a title token (``MGM`` names
``MGMRESORTS``). When a query names several years, the earlier ones count half: a filing
is named by its latest year ("between FY2021 and FY2022" asks the 2022 report). Each
matched token is weighted by its inverse document frequency over the distinct titles.
:meth:`TitleIndex.match` returns the documents with the best score, the field search
narrows to.

A site's pages often carry its name in every title ("json — JSON encoder and decoder —
Python 3.11.2 documentation", "PostgreSQL: Documentation: 15: SELECT"). :func:`site_affixes`
finds the prefix and suffix that most of a set of titles share, :func:`without_site` takes
them off one title (ingestion does, for the pages of one folder), so the site's name is not
taken for what a page is about.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

from sleuth.text.lexicon import words

_YEAR = re.compile(r"(?:19|20)\d\d")
_YEAR_PREFIX = re.compile(r"((?:19|20)\d\d)([a-z]\w*)")
MAX_MATCHES = 2000  # documents a title match may narrow to
PARTIAL = 0.5  # weight of a prefix match, and of an earlier year among several
SITE_SHARE = 0.5  # a site's prefix or suffix: carried by more than this share of titles ...
SITE_LEAST = 3  # ... and by at least this many
_SEPARATORS = frozenset(["—", "–", "-", "|", "·", "•", "::", "»", "/", "~"])


def split(text: str) -> list[str]:
    """A title's or a query's tokens: its words (:func:`~sleuth.text.lexicon.words`), each
    cut at its underscores too (a file name's ``3M_2018_10K`` is three tokens)."""
    return [part for word in words(text) for part in word.split("_") if part]


def title_tokens(text: str) -> set[str]:
    out = set()
    for token in split(text):
        out.add(token)
        if year := _YEAR_PREFIX.fullmatch(token):
            out.update(year.groups())
    return out


def query_tokens(terms: Sequence[str]) -> set[str]:
    out: set[str] = set()
    for term in terms:
        for token in split(term):
            out.add(token)
            out.update(_YEAR.findall(token))
    return out


def site_affixes(titles: Sequence[str]) -> tuple[str, str]:
    """The prefix and the suffix (``""`` for none) that more than :data:`SITE_SHARE` of the
    distinct ``titles`` (and at least :data:`SITE_LEAST`) carry around a part of their own.

    Both are whole words set off by a separator: a prefix ends with a separator word
    (``—``, ``-``, ``|``, ``»``...) or a word ending in ``:`` or ``|``; a suffix starts with
    a separator word or is a parenthesis (``String (Java Platform SE 8 )``). The longest
    shared one is taken.
    """
    distinct = {" ".join(t.split()) for t in titles}
    prefixes: Counter[str] = Counter()
    suffixes: Counter[str] = Counter()
    for title in distinct:
        words = title.split()
        for cut in range(1, len(words)):
            head, tail = words[:cut], words[cut:]
            if head[-1] in _SEPARATORS or head[-1].endswith((":", "|")):
                prefixes[" ".join(head)] += 1
            if tail[0] in _SEPARATORS or (tail[0].startswith("(") and tail[-1].endswith(")")):
                suffixes[" ".join(tail)] += 1
    need = max(SITE_LEAST, math.floor(SITE_SHARE * len(distinct)) + 1)

    def longest(counts: Counter[str]) -> str:
        shared = [affix for affix, n in counts.items() if n >= need]
        return max(shared, key=lambda affix: (len(affix.split()), affix), default="")

    return longest(prefixes), longest(suffixes)


def without_site(title: str, affixes: tuple[str, str]) -> str:
    """``title`` without the site prefix and suffix of :func:`site_affixes` (unchanged when
    nothing of its own would be left)."""
    prefix, suffix = affixes
    out = " ".join(title.split())
    if prefix and out.startswith(prefix + " "):
        out = out[len(prefix) + 1:]
    if suffix and out.endswith(" " + suffix):
        out = out[:-len(suffix) - 1]
    out = out.strip()
    return out if any(ch.isalnum() for ch in out) else title


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
        # documents with a title of their own: an encyclopedia's pages (all of them), not
        # the pages or passages of longer works that share their work's title (near none)
        self.distinct_share = len(seen) / len(titles) if titles else 0.0
        self._sorted = sorted(self.by_token)

    def match(self, terms: Sequence[str], limit: int = MAX_MATCHES) -> list[str]:
        """Documents whose titles score best against the query ``terms`` (content words;
        ties kept, at most ``limit``); none when no title shares a token that is rarer than
        half the titles."""
        scores: dict[str, float] = {}
        for token, factor in self._query_tokens(terms).items():
            weight = self.weight.get(token, 0.0)
            if weight <= math.log(2):  # in half the titles or more: says nothing
                continue
            for doc_id in self.by_token.get(token, ()):
                scores[doc_id] = scores.get(doc_id, 0.0) + factor * weight
        if not scores:
            return []
        best = max(scores.values())
        ranked = sorted(scores, key=lambda d: -scores[d])
        return [d for d in ranked if scores[d] >= 0.99 * best][:limit]

    def _query_tokens(self, terms: Sequence[str]) -> dict[str, float]:
        """Title tokens a query names, with the weight factor of each (see the module)."""
        tokens = [t for term in terms for t in split(term)]
        out = dict.fromkeys(query_tokens(terms), 1.0)
        years = sorted({y for w in tokens for y in _YEAR.findall(w)})
        for year in years[:-1]:
            out[year] = PARTIAL
        for n in (2, 3):
            for i in range(len(tokens) - n + 1):
                out.setdefault("".join(tokens[i:i + n]), 1.0)
        for word in tokens:
            if len(word) >= 3 and word.isalpha():
                at = bisect.bisect_right(self._sorted, word)
                while at < len(self._sorted) and self._sorted[at].startswith(word):
                    out.setdefault(self._sorted[at], PARTIAL)
                    at += 1
        return out
