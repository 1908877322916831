"""A metric defined in words, read into arithmetic over line items of given years.

A question that defines what it asks ("DPO is defined as: 365 * (average accounts payable
between FY2016 and FY2017) / (FY2017 COGS + change in inventory between FY2016 and
FY2017)") says exactly which figures to read and how to combine them; a 1.5B model asked
to plan that arithmetic named figures its expression did not use (BENCHMARKS §33). Read
without a model:

- each definition, ``<name> is defined as: <formula>`` or ``<name> = <formula>``, a name
  another definition uses being replaced by its formula in parentheses;
- the formula's operators (``* / +``, ``-`` between spaces: a line item may be hyphenated)
  and parentheses, its numbers, and its terms: ``average <item> between <year> and
  <year>`` (the two years' mean), ``change in <item> between <year> and <year>`` (the later
  less the earlier), ``<year> <item>`` or ``<item> in <year>``, and a bare ``<item>`` (the
  year the question asks about);
- "round ... to N decimal places" for the answer's rounding.

Pure functions over strings; :mod:`sleuth.statements.metric` reads the figures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sleuth.tools.calc import MAX_CHARS

MAX_DEFINITIONS = 8
MAX_TERMS = 24  # line-item figures one question may ask to read
MAX_ITEM_WORDS = 12  # a line item's name ("accounts payable and accrued liabilities")
MAX_PLACES = 10  # decimal places a result is rounded to
MAX_FORMULA = 2000  # characters of the definitions as written (the tool's argument)
_YEAR = r"(?:FY\s?|fiscal (?:year )?)?((?:19|20)\d\d)"
_DEFINED = re.compile(r"(?:^|(?<=[.?!:]\s))([A-Z][\w&/()' -]{0,60}?)\s+(?:is|are)\s+defined\s+"
                      r"as:?\s*(.+?)(?=\.\s|\.$|\?|$)", re.S)
_EQUALS = re.compile(r"(?:^|(?<=[.?!:;]\s))([A-Z][\w&/ -]{0,40}?)\s*=\s*(.+?)(?=\.\s|\.$|;|$)",
                     re.S)
_PLACES = re.compile(r"\bround\w*\b[^.]{0,40}?\bto\s+(\w+)\s+decimal", re.I)
_WORD_NUMBERS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_TOKENS = re.compile(r"\s+-\s+|[*/+()×÷]|[^*/+()×÷]+?(?=\s+-\s+|[*/+()×÷]|$)")
_AVERAGE = re.compile(rf"^(?:the\s+)?average\s+(?:of\s+)?(?:the\s+)?(.+?)\s+between\s+{_YEAR}"
                      rf"\s+and\s+{_YEAR}$", re.I)
_CHANGE = re.compile(rf"^(?:the\s+)?change\s+in\s+(?:the\s+)?(.+?)\s+between\s+{_YEAR}\s+and\s+"
                     rf"{_YEAR}$", re.I)
_YEAR_FIRST = re.compile(rf"^{_YEAR}\s+(.+)$", re.I)
_YEAR_AFTER = re.compile(rf"^(.+?)\s+(?:in|for|of)\s+{_YEAR}$", re.I)
_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
_ASKED_YEAR = re.compile(_YEAR, re.I)


@dataclass(frozen=True)
class Figure:
    """One figure to read: a line item in one year, and its name in the expression."""

    item: str
    year: int

    @property
    def name(self) -> str:
        words = re.findall(r"[a-z0-9]+", self.item.lower().replace("&", " and "))
        return "_".join(words)[:50] + f"_{self.year}"


@dataclass
class Formula:
    """What a question's definitions compute: the metric's name, the expression over the
    figures' names, the figures, and the rounding the question asks for (None: unsaid)."""

    metric: str
    expression: str
    figures: list[Figure] = field(default_factory=list)
    places: int | None = None

    @property
    def written(self) -> str:
        return f"{self.metric} = {self.expression}"


def definitions(text: str) -> dict[str, str]:
    """The names ``text`` defines and their formulas in words, in order."""
    found: dict[str, str] = {}
    for pattern in (_DEFINED, _EQUALS):
        for match in pattern.finditer(text):
            name, formula = match.group(1).strip(), " ".join(match.group(2).split())
            if formula and name not in found and len(found) < MAX_DEFINITIONS:
                found[name] = formula
        if found:
            break
    return found


def asked_year(question: str) -> int | None:
    """The year the question asks about: the first it names before its definitions."""
    head = re.split(r"\bdefined\s+as\b|=", question, maxsplit=1)[0]
    years = [int(m.group(1)) for m in _ASKED_YEAR.finditer(head)]
    return years[0] if years else None


def places(question: str) -> int | None:
    """The decimal places the question asks the answer rounded to."""
    match = _PLACES.search(question)
    if not match:
        return None
    word = match.group(1).lower()
    asked = int(word) if word.isdigit() and len(word) < 3 else _WORD_NUMBERS.get(word)
    return asked if asked is not None and asked <= MAX_PLACES else None


def parse(question: str, year: int | None = None) -> Formula | None:
    """The formula a question defines, or None where it defines none this reads (a term
    that is neither a number, a definition nor an item with a year); an item named without
    a year is of ``year`` (default: the year the question asks about)."""
    defined = definitions(question)
    if not defined:
        return None
    year = year or asked_year(question)
    metric = next(iter(defined))
    figures: dict[str, Figure] = {}
    expression = _expand(defined[metric], defined, year, figures, {metric})
    if expression is None or not figures or len(figures) > MAX_TERMS or \
            len(expression) > MAX_CHARS or \
            any(len(f.item.split()) > MAX_ITEM_WORDS for f in figures.values()):
        return None  # more than a statement's figures and calculate's arithmetic hold
    return Formula(metric, expression, list(figures.values()), places(question))


def _expand(formula: str, defined: dict[str, str], year: int | None,
            figures: dict[str, Figure], seen: set[str]) -> str | None:
    parts: list[str] = []
    for token in _TOKENS.findall(formula):
        token = token.strip()
        if not token:
            continue
        if token in "*/+()×÷" or token == "-":
            parts.append({"×": "*", "÷": "/"}.get(token, token))
            continue
        term = _term(token, defined, year, figures, seen)
        if term is None:
            return None
        parts.append(term)
    return " ".join(parts) if parts else None


def _term(token: str, defined: dict[str, str], year: int | None, figures: dict[str, Figure],
          seen: set[str]) -> str | None:
    token = token.strip(" ,;:")
    if _NUMBER.match(token):
        return token
    name = next((n for n in defined if n.lower() == token.lower()), None)
    if name is not None:
        if name in seen:
            return None  # a definition that uses itself
        inner = _expand(defined[name], defined, year, figures, seen | {name})
        return None if inner is None else f"({inner})"
    if match := _AVERAGE.match(token):
        a, b = _figure(match.group(1), match.group(2), figures), \
            _figure(match.group(1), match.group(3), figures)
        return f"(({a} + {b}) / 2)"
    if match := _CHANGE.match(token):
        first, second = sorted((int(match.group(2)), int(match.group(3))))
        return f"({_figure(match.group(1), second, figures)} - " \
            f"{_figure(match.group(1), first, figures)})"
    if match := _YEAR_FIRST.match(token):
        return _figure(match.group(2), match.group(1), figures)
    if match := _YEAR_AFTER.match(token):
        return _figure(match.group(1), match.group(2), figures)
    if year is None or not re.search(r"[A-Za-z]", token):
        return None
    return _figure(token, year, figures)


def _figure(item: str, year: int | str, figures: dict[str, Figure]) -> str:
    item = re.sub(r"^(?:the|total of the)\s+", "", " ".join(item.split()), flags=re.I)
    found = Figure(item, int(year))
    figures.setdefault(found.name, found)
    return found.name
