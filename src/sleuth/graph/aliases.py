"""Merging the name variants of one entity that :func:`~sleuth.store.graphs.norm` and acronyms
do not fold ("King Lothair II" and "Lothair II", "St. Petersburg" and "Saint Petersburg",
"Nana Patekar's" and "Nana Patekar", "U.S." and "the United States").

Candidate pairs come from cheap lexical blocking over each name's *core* (its words with
honorifics, a possessive and trailing function words dropped, "st" read as "saint", "2"
as "ii"):

``core``
    equal cores ("Emperor Lothair I" / "Lothair I"), or the same initials ("U.K." / "UK");
    merged without further test.
``subset``
    a person's name and the same name with up to two middle names ("Louis Gasnier" /
    "Louis Joseph Gasnier").
``fuzzy``
    cores of as many words sharing a rare word, the others misspelt (same first letter,
    ``difflib`` ratio at least :data:`MISSPELT_RATIO`) or plural, the whole at least
    :data:`FUZZY_RATIO` ("Tifanie Christun" / "Tiffany Christun").
``acronym``
    capital initials ("U.S.", "UK") and the most mentioned names with those initials.

Every pair must agree on its *marks* (roman numerals, numbers, "Jr."/"Sr."), so "Lothair I"
and "Lothair II" never merge. ``subset`` and ``fuzzy`` pairs are then confirmed by the
cosine of their cores embedded by the index's embedder (at least ``alias_similarity``),
acronyms by :data:`ACRONYM_SIMILARITY` (small encoders put initials far from their
expansion; each initials merge with their best expansion only). The vectors are cached in
the graph's store by the text embedded, and only entities not checked before are paired, so an
incremental build embeds only new names.
"""

from __future__ import annotations

import difflib
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Literal

import numpy as np

from sleuth.store.graphs import acronym
from sleuth.text.lexicon import GENERATIONAL, HONORIFICS, NAME_LINKS, NOT_NAME_ENDS, roman
from sleuth.text.threads import batch_work

if TYPE_CHECKING:
    from sleuth.embed import Embedder
    from sleuth.store.graphs import GraphBackend

PairKind = Literal["core", "subset", "fuzzy", "acronym"]
_Offer = Callable[[int, int, PairKind, tuple[str, str]], None]

TITLES = HONORIFICS
_SPELLED = {"st": "saint", "ste": "sainte", "mt": "mount", "ft": "fort"}
_TRAILING = NOT_NAME_ENDS
_FUNCTION = _TRAILING | NAME_LINKS | {"a", "an"}
_GENERATIONAL = GENERATIONAL
_NUMERALS = {str(n): roman(n) for n in range(1, 40)}  # "2" → "ii": "Lothair 2" is "Lothair II"
ROMAN = frozenset(_NUMERALS.values())
FUZZY_RATIO = 0.85  # difflib ratio of two cores for a fuzzy candidate
ACRONYM_SIMILARITY = 0.6  # cosine an acronym needs to its expansion
RARE_TOKEN = 60  # a word in more names than this does not block fuzzy pairs
MAX_MIDDLE_EXTRA = 2  # words a subset pair's longer name may add between first and last
MISSPELT_RATIO = 0.75  # difflib ratio of a word and its misspelling
MISSPELT_LENGTH = 5  # shorter words differ as names do ("Mary" / "Mark"), not by a typo
MAX_EXPANSIONS = 5  # most-mentioned names with an acronym's letters that it is tested on


@dataclass(frozen=True)
class Name:
    """The parts of a normalised name that decide a merge."""

    core: tuple[str, ...]
    marks: frozenset[str]  # numerals, numbers, generational suffixes: must agree
    titled: bool  # an honorific was dropped

    @property
    def text(self) -> str:
        return " ".join(self.core)


def parse(key: str) -> Name:
    """``"king lothair ii s"`` → core ``("lothair", "ii")``, marks ``{"ii"}``, titled;
    ``"st petersburg"`` → ``("saint", "petersburg")``; ``"lothair 2"`` → ``("lothair", "ii")``."""
    tokens = [_SPELLED.get(t) or _NUMERALS.get(t, t) for t in key.split()]
    core: list[str] = []
    titled = False
    for i, token in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        # a title before "of" names an office ("Prince of Orange"), not a person
        if token in TITLES and following not in (None, "of"):
            titled = True
            continue
        core.append(token)
    while len(core) > 1 and core[-1] in _TRAILING and len(core[-2]) > 1:
        core.pop()
    marks = frozenset(t for t in core if t in ROMAN or t in _GENERATIONAL
                      or any(c.isdigit() for c in t))
    return Name(tuple(core), marks, titled)


def initials(name: str) -> str | None:
    """"U.S." → "us", "UK" → "uk"; None for a name that is not capital initials."""
    bare = name.strip().removeprefix("the ").removeprefix("The ")
    letters = "".join(ch for ch in bare if ch not in ". ")
    if 2 <= len(letters) <= 5 and letters.isalpha() and letters.isupper():
        return letters.lower()
    return None


@dataclass(frozen=True)
class Pair:
    a: int
    b: int
    kind: PairKind
    texts: tuple[str, str]  # what the embedding compares


@dataclass
class MergeReport:
    checked: int = 0  # entities paired for the first time
    candidates: int = 0
    embedded: int = 0  # names embedded (not found in the cache)
    merged: int = 0  # entities folded into another
    seconds: float = 0.0
    pairs: list[tuple[str, str, str]] = field(default_factory=list)  # (kept, merged, kind)


def candidate_pairs(entities: Sequence[tuple[int, str, str, str]], new: set[int],
                    mentions: dict[int, int] | None = None) -> list[Pair]:
    """Lexically plausible variant pairs among ``(id, norm, name, type)`` rows, each with at
    least one entity in ``new`` (``mentions`` per entity ranks an acronym's expansions)."""
    names = {i: parse(key) for i, key, _, _ in entities}
    people = {i for i, _, _, kind in entities if kind == "PERSON"}
    by_core: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, parsed in names.items():
        by_core[parsed.core].append(i)
    found: dict[tuple[int, int], Pair] = {}

    def offer(a: int, b: int, kind: PairKind, texts: tuple[str, str]) -> None:
        key = (min(a, b), max(a, b))
        if a != b and (a in new or b in new) and key not in found:
            found[key] = Pair(key[0], key[1], kind, texts)

    for core, ids in by_core.items():  # equal cores
        if len(ids) > 1 and _mergeable_core(core, [names[i] for i in ids]):
            for a, b in combinations(ids, 2):
                offer(a, b, "core", (" ".join(core),) * 2)
    _subset_pairs(names, by_core, people, offer)
    _fuzzy_pairs(names, new, offer)
    _acronym_pairs(entities, names, mentions or {}, offer)
    return list(found.values())


def _subset_pairs(names: dict[int, Name], by_core: dict[tuple[str, ...], list[int]],
                  people: set[int], offer: _Offer) -> None:
    """A person's name and the same name with middle names added."""
    for i, parsed in names.items():
        core = parsed.core
        if len(core) < 3 or parsed.marks or any(t in _FUNCTION for t in core):
            continue
        middle = range(1, len(core) - 1)
        for drop in range(1, min(MAX_MIDDLE_EXTRA, len(core) - 2) + 1):
            for gone in combinations(middle, drop):
                shorter = tuple(t for n, t in enumerate(core) if n not in gone)
                for j in by_core.get(shorter, ()):
                    if i in people or j in people:
                        offer(i, j, "subset", (parsed.text, names[j].text))


def _mergeable_core(core: tuple[str, ...], names: list[Name]) -> bool:
    """Equal cores merge when the core is a full name: two words or more, or one word none
    of the variants lost an honorific from ("Foster's" / "Foster", not "Queen Mother" /
    "Mother")."""
    if not core or all(t in _FUNCTION for t in core):
        return False
    return len(core) >= 2 or (len(core[0]) >= 4 and not any(n.titled for n in names))


def _fuzzy_pairs(names: dict[int, Name], new: set[int], offer: _Offer) -> None:
    """Names of as many words, sharing a rare one, whose other words are misspellings of
    each other ("Tifany Christun" / "Tiffany Christun"), not different words ("Eric Byler"
    / "Eric Ambler", "Mary Smith" / "Mark Smith")."""
    postings: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, parsed in names.items():
        if len(parsed.core) >= 2:
            for token in set(parsed.core):
                if token not in _FUNCTION and token not in parsed.marks and len(token) > 2:
                    postings[token, len(parsed.core)].append(i)
    seen: set[tuple[int, int]] = set()
    for ids in postings.values():
        if len(ids) < 2 or len(ids) > RARE_TOKEN or not new.intersection(ids):
            continue
        for a, b in combinations(ids, 2):
            if (a not in new and b not in new) or (a, b) in seen:
                continue
            seen.add((a, b))
            left, right = names[a], names[b]
            if left.marks == right.marks and _misspelt(left.core, right.core):
                x, y = left.text, right.text
                if difflib.SequenceMatcher(None, x, y, autojunk=False).ratio() >= FUZZY_RATIO:
                    offer(a, b, "fuzzy", (x, y))


def _misspelt(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    differing = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    return bool(differing) and len(differing) < len(a) and all(
        _misspelling(x, y) for x, y in differing)


def _misspelling(x: str, y: str) -> bool:
    """A misspelt word or a plural, not another word or another ending: "Ferdinand" /
    "Ferdinanda", "America" / "American" and "Antonio" / "Antonia" are different names."""
    if min(len(x), len(y)) < MISSPELT_LENGTH or x[0] != y[0]:
        return False
    shared = len(os.path.commonprefix([x, y]))
    tails = {x[shared:], y[shared:]}
    if tails in ({"", "s"}, {"", "es"}):
        return True
    if max(len(t) for t in tails) <= 2:
        return False
    return difflib.SequenceMatcher(None, x, y, autojunk=False).ratio() >= MISSPELT_RATIO


def _acronym_pairs(entities: Sequence[tuple[int, str, str, str]], names: dict[int, Name],
                   mentions: dict[int, int], offer: _Offer) -> None:
    expansions: dict[str, list[int]] = defaultdict(list)
    for i, _, name, _ in entities:
        short = acronym(name)
        if short and len(names[i].core) >= 2:
            expansions[short].append(i)
    spelt: dict[str, list[int]] = defaultdict(list)
    for i, key, name, _ in entities:
        letters = initials(name)
        if letters is None:
            continue
        spelt[letters].append(i)
        ranked = sorted(expansions.get(letters, ()), key=lambda j: -mentions.get(j, 0))
        for j in ranked[:MAX_EXPANSIONS]:
            offer(i, j, "acronym", (key, names[j].text))
    for letters, ids in spelt.items():  # "U.K." and "UK"
        for a, b in combinations(ids, 2):
            offer(a, b, "core", (letters, letters))


def merge_aliases(store: GraphBackend, embedder: Callable[[], Embedder],
                  similarity: float) -> MergeReport:
    """Find and merge the name variants among entities not checked before; see the module
    docstring. The entity with more mentions stays; the other's name becomes its alias.
    ``embedder`` is called only when there are names to embed."""
    started = time.perf_counter()
    report = MergeReport()
    entities = store.entities()
    new = store.unchecked_entities()
    report.checked = len(new)
    if not new:
        return report
    mentions = store.mention_counts()
    pairs = candidate_pairs(entities, new, mentions)
    report.candidates = len(pairs)
    vectors, report.embedded = _vectors(store, embedder, {t for p in pairs for t in p.texts
                                                          if p.kind != "core"})
    accepted = [p for p in pairs if _confirmed(p, vectors, similarity)]
    accepted = _best_acronyms(accepted, vectors)
    groups = _union(accepted)
    names = {i: name for i, _, name, _ in entities}
    kinds = {(p.a, p.b): p.kind for p in accepted}
    merges: dict[int, int] = {}
    for members in groups:
        keep = max(members, key=lambda i: (mentions.get(i, 0), -i))
        for other in members:
            if other != keep:
                merges[other] = keep
                kind = kinds.get((min(keep, other), max(keep, other)), "chain")
                report.pairs.append((names[keep], names[other], kind))
    store.merge(merges)
    store.mark_checked()
    report.merged = len(merges)
    report.seconds = time.perf_counter() - started
    return report


def _confirmed(pair: Pair, vectors: dict[str, np.ndarray], similarity: float) -> bool:
    if pair.kind == "core":
        return True
    cosine = float(vectors[pair.texts[0]] @ vectors[pair.texts[1]])
    return cosine >= (ACRONYM_SIMILARITY if pair.kind == "acronym" else similarity)


def _best_acronyms(pairs: list[Pair], vectors: dict[str, np.ndarray]) -> list[Pair]:
    """Initials merge with their single most similar expansion."""
    best: dict[str, tuple[float, Pair]] = {}
    out = []
    for pair in pairs:
        if pair.kind != "acronym":
            out.append(pair)
            continue
        cosine = float(vectors[pair.texts[0]] @ vectors[pair.texts[1]])
        if pair.texts[0] not in best or cosine > best[pair.texts[0]][0]:
            best[pair.texts[0]] = (cosine, pair)
    return out + [pair for _, pair in best.values()]


def _vectors(store: GraphBackend, embedder: Callable[[], Embedder],
             texts: Iterable[str]) -> tuple[dict[str, np.ndarray], int]:
    """Unit vectors of ``texts``: from the graph's cache, the rest embedded in one batch and
    cached."""
    wanted = sorted(set(texts))
    if not wanted:
        return {}, 0
    model = embedder()
    vectors = store.name_vectors(wanted, model.name)
    missing = [t for t in wanted if t not in vectors]
    if missing:
        with batch_work():
            fresh = model.embed(missing)
        store.add_name_vectors(dict(zip(missing, fresh, strict=True)), model.name)
        vectors.update(zip(missing, fresh, strict=True))
    return vectors, len(missing)


def _union(pairs: Iterable[Pair]) -> list[list[int]]:
    parent: dict[int, int] = {}

    def root(i: int) -> int:
        parent.setdefault(i, i)
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for pair in pairs:
        parent[root(pair.a)] = root(pair.b)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in list(parent):
        groups[root(i)].append(i)
    return [g for g in groups.values() if len(g) > 1]
