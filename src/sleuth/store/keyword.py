"""Exact keyword scoring (A-RAG): score(chunk) = sum over keywords of count(k, chunk) * len(k).

Matching is case-insensitive. In ``word`` mode (the default) a keyword matches where its
lowercased text occurs in the lowercased chunk with no word character (``re`` ``\\w``)
immediately before or after it, so "art" does not match "part". ``substring`` mode is the
paper's plain substring count. Keywords in scripts written without spaces between words
(CJK, Thai, ...) always use substring matching.

Every store narrows candidates with its own index and then calls :func:`score_texts`, so
results are identical to :func:`brute_force` over the same chunks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from sleuth.text.lexicon import WORD

KeywordMode = Literal["word", "substring"]

_WORD = WORD  # the lexicon's tokenizer: the index's words are the query's
# Scripts without word spacing: CJK ideographs, kana, Hangul syllables, Thai, Lao, Khmer, Myanmar.
_UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff]"
)


@dataclass(frozen=True)
class Keyword:
    """A normalised keyword and how it is matched."""

    text: str  # lowercased
    weight: int  # character length of the keyword
    substring: bool
    pattern: re.Pattern[str]

    @property
    def tokens(self) -> list[str]:
        """The ``\\w+`` runs of the keyword: what a token index can look up."""
        return _WORD.findall(self.text)

    def count(self, lowered: str) -> int:
        if self.substring:
            return lowered.count(self.text)
        return sum(1 for _ in self.pattern.finditer(lowered))


def parse_keywords(keywords: Iterable[str], mode: KeywordMode = "word") -> list[Keyword]:
    """Strip, lowercase and de-duplicate keywords; empty ones are dropped."""
    seen: set[str] = set()
    out: list[Keyword] = []
    for raw in keywords:
        text = raw.strip().lower()
        if not text or text in seen:
            continue
        seen.add(text)
        substring = mode == "substring" or bool(_UNSPACED.search(text))
        literal = re.escape(text)
        # literal first, boundaries checked after: same matches as (?<!\w)k(?!\w), but
        # ``re`` can use its fast literal search (measured 18x faster on 4.5 KB chunks)
        pattern = re.compile(literal if substring else rf"{literal}(?<!\w{literal})(?!\w)")
        out.append(Keyword(text, len(text), substring, pattern))
    return out


def stored_token(token: str, max_chars: int) -> Keyword:
    """A keyword whose count in a lowercased text is how often a token index that keeps the
    ``\\w+`` runs cut to ``max_chars`` holds ``token`` (a token as :func:`tokenize` gives
    and the index cuts it): a whole run equal to it, or, for a token of ``max_chars``, a run
    that starts with it. Counting it in a chunk's text gives what the postings hold."""
    literal = re.escape(token)
    cut = len(token) >= max_chars
    pattern = re.compile(rf"(?<!\w){literal}" if cut else rf"{literal}(?<!\w{literal})(?!\w)")
    return Keyword(token, len(token), False, pattern)


def tokenize(lowered: str) -> list[str]:
    """Token stream for the candidate index: the ``\\w+`` runs of lowercased text."""
    return _WORD.findall(lowered)


def score_text(lowered: str, keywords: Sequence[Keyword]) -> float:
    return float(sum(k.count(lowered) * k.weight for k in keywords))


def matching_sentences(
    sentences: Sequence[str], keywords: Sequence[Keyword]
) -> list[str]:
    """The sentences that contain at least one keyword (same matching rules)."""
    return [s for s in sentences if any(k.count(s.lower()) for k in keywords)]


def rank(scored: Iterable[tuple[str, float]], top_k: int) -> list[tuple[str, float]]:
    """Top ``top_k`` of (chunk_id, score) by score desc, then chunk_id asc; zero scores dropped."""
    positive = [(cid, s) for cid, s in scored if s > 0]
    positive.sort(key=lambda item: (-item[1], item[0]))
    return positive[:top_k]


def brute_force(
    chunks: Iterable[tuple[str, str]], keywords: Iterable[str], top_k: int,
    mode: KeywordMode = "word",
) -> list[tuple[str, float]]:
    """Reference scan over (chunk_id, text) pairs: no index, same semantics."""
    parsed = parse_keywords(keywords, mode)
    return rank(((cid, score_text(text.lower(), parsed)) for cid, text in chunks), top_k)
