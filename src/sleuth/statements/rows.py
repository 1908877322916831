"""A line item's figure for one year, read from a financial statement's text.

Text taken from a filing's PDF puts a statement's row label on one line and its figures on
the same line or the lines after it (a ``$`` alone on a line, ``—`` for none), with the
columns' years in a header above (``December 31,`` / ``2017`` / ``2016``: most filings put
the latest year first, some the earliest). :func:`read_row` finds the row whose label is
the item (or a name statements give it: "cost of sales" for COGS), its figures, the
header's years and the scale the page states ("in millions"), and returns the figure of
the year asked with the line it was read from; None where any of these is missing or the
figures and years do not line up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from sleuth.text.lexicon import plain as normalised

# what statements call an item a question names (each list: the preferred label first)
LINE_ITEMS: dict[str, tuple[str, ...]] = {
    "cash from operations": ("net cash provided by operating activities",
                             "net cash provided by used in operating activities",
                             "net cash from operating activities",
                             "cash provided by operating activities",
                             "net cash provided by operations", "cash from operations"),
    "cogs": ("cost of sales", "cost of goods sold", "cost of revenue", "cost of revenues",
             "total cost of revenue", "total cost of revenues", "cost of products sold"),
    "revenue": ("total revenues", "total revenue", "total net revenue", "net revenues",
                "net revenue", "total net sales", "net sales", "revenues", "revenue"),
    "pp and e": ("property and equipment net", "property plant and equipment net",
                 "net property plant and equipment", "property and equipment",
                 "property plant and equipment"),
    "inventory": ("inventories", "inventory", "merchandise inventories", "total inventories"),
    "accounts payable": ("accounts payable", "trade payables", "trade accounts payable"),
    "accounts receivable": ("accounts receivable net", "receivables net",
                            "accounts receivable", "trade receivables", "receivables"),
    "net income": ("net income", "net earnings", "consolidated net income"),
    "capital expenditure": ("purchases of property and equipment",
                            "purchases of property plant and equipment",
                            "capital expenditures", "payments for property and equipment"),
}
_ALIASES = {"cost of goods sold": "cogs", "cost of sales": "cogs", "ppe": "pp and e",
            "property plant and equipment": "pp and e", "fixed assets": "pp and e",
            "property and equipment": "pp and e", "inventories": "inventory",
            "revenues": "revenue", "sales": "revenue", "net sales": "revenue",
            "total revenue": "revenue", "cash flow from operations": "cash from operations",
            "operating cash flow": "cash from operations", "net earnings": "net income",
            "cash from operating activities": "cash from operations",
            "capital expenditures": "capital expenditure", "capex": "capital expenditure",
            "receivables": "accounts receivable"}
_NOT_THE_ROW = re.compile(r"\bper\b|\bmargin\b|\bpercent|\bshare\b|\bratio\b")
MAX_EXTRA_WORDS = 8  # a label may add this many words to the item's ("... attributable to X")
_FIGURE = re.compile(r"\(?-?\$?\s?\d[\d,]*(?:\.\d+)?\)?%?|—|–")
# a note's mark after a label: "Total revenues (1)", "Inventories, net (Note 6)"
_NOTE = re.compile(r"\((?:\d|[a-z]|notes?\s+[\d,\sand]+)\)", re.I)
_HEADER_YEAR = re.compile(r"^(?:19|20)\d\d$")
_SCALE = re.compile(r"\bin\s+(thousands|millions|billions)\b", re.I)
# a primary statement's title on a line of its own (where a question's figures are read)
STATEMENT = re.compile(r"^\s*consolidated\s+(?:statements?\s+of\s+(?:income|operations|earnings|"
                       r"cash\s+flows|financial\s+position)|balance\s+sheets?)\s*$",
                       re.I | re.M)
_SCALES = {"thousands": Decimal(1000), "millions": Decimal(10**6), "billions": Decimal(10**9)}


@dataclass(frozen=True)
class Row:
    """A figure read: the value (scaled to units), as written, the row's label line, the
    year, the column it was in and the columns' years."""

    value: Decimal
    written: str
    label: str
    year: int
    years: tuple[int, ...]
    scale: str


def plain(text: str) -> str:
    """A label or a name as compared: the lexicon's normaliser
    (:func:`sleuth.text.lexicon.plain`), with "&" read as "and"."""
    return normalised(text.replace("&", " and "))


def labels(item: str) -> tuple[str, ...]:
    """The row labels that name ``item`` in a statement: the statements' usual label
    first (what to search for), then the item's own words and the other labels."""
    key = plain(item)
    usual = LINE_ITEMS.get(_ALIASES.get(key, key), ())
    return tuple(dict.fromkeys([*usual[:1], key, *usual]))


def read_row(text: str, item: str, year: int, exact: bool = False) -> Row | None:
    """``item``'s figure for ``year`` in a statement's ``text`` (None: not read); with
    ``exact``, only from a row labelled with one of the item's names and nothing more."""
    lines = text.split("\n")
    names = labels(item)
    for rank, index in sorted(_candidates(lines, names)):
        if exact and rank[0]:
            continue
        figures = _figures_after(lines, index, names)
        years = _header_years(lines[:index])
        if not figures or len(years) < 2 or year not in years or len(figures) < len(years):
            continue
        written = figures[years.index(year)]
        value = _number(written)
        if value is None:
            continue
        match = _SCALE.search(text)
        scale = match.group(1).lower() if match else "units"
        value *= _SCALES.get(scale, Decimal(1))
        return Row(value, written, " ".join(lines[index].split()), year, tuple(years), scale)
    return None


def _candidates(lines: list[str], names: tuple[str, ...]) -> list[tuple[tuple[int, int], int]]:
    """Lines that are a row label for one of ``names``: (rank, line index), the exact
    label of the preferred name first."""
    found = []
    for index, line in enumerate(lines):
        label = plain(re.sub(r"[\d$,.()—–%]+", " ", _NOTE.sub(" ", line)))
        if not label or _NOT_THE_ROW.search(label):
            continue
        for order, name in enumerate(names):
            if label == name:
                found.append(((0, order), index))
                break
            if label.startswith(name + " ") and \
                    len(label.split()) - len(name.split()) <= MAX_EXTRA_WORDS:
                found.append(((1, order), index))
                break
    return found


def _figures_after(lines: list[str], index: int, names: tuple[str, ...]) -> list[str]:
    """The figures of the row labelled on line ``index``: those after the label on its
    line, then the lines after it up to the next line with words."""
    line = _NOTE.sub(" ", lines[index])
    rest = re.sub(r"^[^\d$(—–-]*", "", line)  # the label's words off the line
    figures = _FIGURE.findall(rest)
    for following in lines[index + 1:]:
        stripped = following.strip()
        if not stripped or stripped == "$":
            continue
        if re.search(r"[A-Za-z]", stripped):
            break
        figures += _FIGURE.findall(stripped)
    return [f for f in (f.strip() for f in figures) if f]


def _header_years(lines: list[str]) -> list[int]:
    """The columns' years: the last run of lines holding nothing but years before the row
    (blank lines and short ones without a figure, such as "December 31,", may come
    between them)."""
    runs: list[list[int]] = []
    current: list[int] = []
    for line in lines:
        words = line.replace(",", " ").split()
        if words and all(_HEADER_YEAR.match(w) for w in words):
            current += [int(w) for w in words]
        elif words and (len(words) > 4 or re.search(r"\d{3,}", line)) and current:
            runs.append(current)
            current = []
    runs.append(current)
    runs = [r for r in runs if len(r) >= 2 and len(set(r)) == len(r)]
    return runs[-1] if runs else []


def _number(written: str) -> Decimal | None:
    """A figure as written ("(1,577)" is negative, "—" is none: None)."""
    digits = re.sub(r"[^\d.]", "", written)
    if not digits or digits == ".":
        return None
    value = Decimal(digits)
    return -value if written.startswith("(") or written.startswith("-") else value
