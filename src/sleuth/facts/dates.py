"""Dates in passages, and questions that compare them ("Who was born first, A or B?").

A small model reads both dates and still picks the wrong one about half the time; ordering
dates needs no model. Pure functions over strings, like :mod:`sleuth.text.querytext`: the
``compare_dates`` tool reads the pages, this module reads the dates and the question.

Dates are read with regular expressions rather than a date-parsing library: the formats of
encyclopedia leads are few ("12 March 1901", "March 12, 1901", "1901"), and what matters
is which date a passage gives for which event, which no parser decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from sleuth.facts.fields import fields

Event = Literal["born", "died", "lived", "date"]
Order = Literal["earliest", "latest"]

MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
               "september", "october", "november", "december")
_MONTH = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|" \
         r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
_YEAR = r"(?:1[0-9]{3}|20[0-9]{2}|[1-9][0-9]{2})(?!\s*(?:[-–]?\s*(?:cm|km|m|kg)\b|\d))"
DATE = re.compile(
    rf"\b(?:(?P<d1>[0-3]?\d)\s+(?P<m1>{_MONTH})\s+(?P<y1>{_YEAR})"
    rf"|(?P<m2>{_MONTH})\s+(?P<d2>[0-3]?\d)(?:st|nd|rd|th)?,?\s+(?P<y2>{_YEAR})"
    rf"|(?P<m3>{_MONTH}),?\s+(?P<y3>{_YEAR})"
    rf"|(?P<y4>{_YEAR}))\b",
    re.IGNORECASE,
)
_DASH = re.compile(r"\s*[–—]\s*|\s+-\s*|-\s+|(?<=\d)-(?=\d)")
# Words after which a page's date is the one a "when was it released/founded" asks about.
DATED_BY = re.compile(r"\b(?:released|premiered|published|founded|established|opened|formed|"
                      r"launched|aired|broadcast|built|issued|created|incorporated|debuted)\b",
                      re.IGNORECASE)


@dataclass(frozen=True, order=True)
class Date:
    """A date as precise as the text gives it: month and day are 0 when not stated."""

    year: int
    month: int = 0
    day: int = 0
    text: str = field(default="", compare=False)  # as the page writes it

    def __str__(self) -> str:
        if self.text:
            return self.text
        if not self.month:
            return str(self.year)
        month = MONTH_NAMES[self.month - 1].capitalize()
        return f"{self.day} {month} {self.year}" if self.day else f"{month} {self.year}"

    def before(self, other: Date) -> bool | None:
        """Whether this date is earlier than ``other``; None when the precision both share
        cannot tell (1950 against March 1950)."""
        for mine, theirs in ((self.year, other.year), (self.month, other.month),
                             (self.day, other.day)):
            if not mine or not theirs:
                return None
            if mine != theirs:
                return mine < theirs
        return None


def parse_dates(text: str) -> list[tuple[int, Date]]:
    """The dates in ``text`` with their character offsets, in order."""
    out = []
    for m in DATE.finditer(text):
        year = int(m["y1"] or m["y2"] or m["y3"] or m["y4"])
        name = (m["m1"] or m["m2"] or m["m3"] or "").lower().rstrip(".")
        month = next((i + 1 for i, full in enumerate(MONTH_NAMES) if name and
                      full.startswith(name[:3])), 0)
        day = int(m["d1"] or m["d2"] or 0)
        if m["y4"] and not _bare_year(text, m.start(), m.end()):
            continue
        out.append((m.start(), Date(year, month, day if 1 <= day <= 31 else 0,
                                    " ".join(m.group(0).split()))))
    return out


def _bare_year(text: str, start: int, end: int) -> bool:
    """Whether a lone number reads as a year: not part of a larger number or a quantity."""
    before, after = text[max(0, start - 3):start], text[end:end + 2]
    if re.search(r"\bc\.\s?$", before):  # "c.1762": circa
        return True
    return not re.search(r"[\d.,$£€]\s?$", before) and not re.match(r"[.,]\d|%", after)


def event_date(text: str, event: Event) -> Date | None:
    """The date of ``event`` a page's ``text`` gives: a birth or a death from the lead's
    parenthesis ("(24 May 1900 – 31 October 1984)", "(born 13 April 1998)") or from "born
    ..." and "died ..."; for ``date``, the date after "released", "founded" and the like,
    else the page's first date ("X is a 1952 American film"). ``lived`` is not a date
    (see :func:`lifespan`)."""
    if event == "date":
        dated = DATED_BY.search(text)
        if dated:
            near = parse_dates(text[dated.end():dated.end() + 80])
            if near:
                return near[0][1]
        found = parse_dates(text)
        return found[0][1] if found else None
    stated = fields(text).get(event)  # "Born: 14 August 1968, Chennai"
    if stated and parse_dates(stated):
        return parse_dates(stated)[0][1]
    life = _life_span(text)
    if life is not None:
        born, died = life
        return born if event == "born" else died
    cue = r"\bborn\b" if event == "born" else r"\b(?:died|d\.)"
    for match in re.finditer(cue, text, re.IGNORECASE):
        clause = re.split(r"(?<=[a-z]{2})\.\s|;", text[match.end():match.end() + 90])[0]
        near = parse_dates(clause)  # the first date of the same sentence, a few words on
        if near and near[0][0] < 70:
            return near[0][1]
    return None


def lifespan(text: str) -> tuple[Date, Date] | None:
    """Birth and death dates of a person's page, when it gives both."""
    born, died = event_date(text, "born"), event_date(text, "died")
    if born is None or died is None or died < born:
        return None
    return born, died


# A year run into the next date, its dash lost ("17 September 190030 April 1985",
# "December 26, 1914March 24, 2008").
_GLUED = re.compile(rf"(?<!\d)(\d{{4}})(?=(?:[0-3]?\d\s+)?{_MONTH}\s)", re.IGNORECASE)


def life_parenthesis(text: str) -> str | None:
    """The first parenthesis of a page's lead that holds a date, as its dates' parts: other
    names left out ("(Hepburn: Kyo Anka; born 23 May 1947)"), parts joined by a dash
    ("(born 1908 in Düsseldorf; died 1980 in Castellina)"), a lost dash put back."""
    for paren in re.finditer(r"\(([^()]{0,200})\)", text[:600]):
        parts = [p for p in _GLUED.sub(r"\1 – ", paren.group(1)).split(";") if parse_dates(p)]
        if parts:
            return " – ".join(p.strip() for p in parts)
    return None


def _life_span(text: str) -> tuple[Date | None, Date | None] | None:
    """(birth, death) from :func:`life_parenthesis`, or None."""
    inside = life_parenthesis(text)
    if inside is None:
        return None
    parts = _DASH.split(inside, maxsplit=1)
    if len(parts) == 2:
        first, second = (parse_dates(p) for p in parts)
        # "1672 or 1673 – 1745": the later guess of a birth is as good as the first
        return (first[0][1] if first else None), (second[0][1] if second else None)
    dates = parse_dates(inside)
    cue = re.search(r"\b(?:died|d\.)", inside, re.IGNORECASE)
    if cue:  # "(born 11 November 1933 in Camporosso, died 13 August 2014)"
        before = [d for at, d in dates if at < cue.start()]
        after = [d for at, d in dates if at > cue.start()]
        return (before[0] if before else None), (after[0] if after else None)
    if len(dates) >= 2 and not re.search(r"\bborn\b", inside, re.IGNORECASE):
        return dates[0][1], dates[1][1]  # "(May 30, 1896 December 26, 1977)"
    return dates[0][1], None


@dataclass(frozen=True)
class Comparison:
    """What a comparison question asks: which of ``entities`` has the ``order`` date of
    ``event``, taken from the entity's page or, with ``relation``, from the page of the
    person that relation names there ("the director of film X")."""

    entities: tuple[str, ...]
    event: Event
    order: Order
    relation: str | None = None

    def arguments(self) -> dict[str, object]:
        return {"entities": list(self.entities), "event": self.event, "order": self.order,
                "relation": self.relation}
