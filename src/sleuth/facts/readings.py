"""A verdict only where a page is unambiguous: the values a page offers for one fact
(:class:`~sleuth.facts.subject.Reading`: each with whose it is) settle the fact where those
said of the page's subject agree with each other and with those whose owner is unclear;
where they disagree ("1672 or 1673", a father's birth and the subject's, several births in
a record) or none is the subject's, nothing is settled and the candidates go to the model.
Pure functions over readings.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sleuth.facts.dates import Date
from sleuth.facts.subject import Reading


@dataclass(frozen=True)
class Settled:
    """What one page gives for a fact: the ``value`` it settles (None: not settled), every
    reading it offers, and why it settles nothing where it offers something."""

    value: object | None
    readings: tuple[Reading, ...] = ()
    why: str | None = None


def same_date(a: object, b: object) -> bool:
    """Whether two dates may be the same day at the precision both give ("1890" and "4
    April 1890" may; "1672" and "1673" may not)."""
    if not (isinstance(a, Date) and isinstance(b, Date)):
        return a == b
    return all(not x or not y or x == y for x, y in ((a.year, b.year), (a.month, b.month),
                                                    (a.day, b.day)))


def same_place(a: object, b: object) -> bool:
    """Whether two places may be one ("Toledo, Ohio" and "Toledo"; "Düsseldorf, Germany"
    and "Düsseldorf"): a comma-separated part in common."""
    parts = [{p.strip().lower() for p in re.split(r",", str(x)) if p.strip()} for x in (a, b)]
    return bool(parts[0] & parts[1])


def same_name(a: object, b: object) -> bool:
    """Whether two names may be one person's: the words of one are the other's."""
    words = [set(re.findall(r"\w+", str(x).lower())) for x in (a, b)]
    return words[0] <= words[1] or words[1] <= words[0]


def _precision(value: object) -> int:
    return sum(bool(p) for p in (value.year, value.month, value.day)) \
        if isinstance(value, Date) else 0


def settle(readings: Sequence[Reading], what: str,
           same: Callable[[object, object], bool]) -> Settled:
    """The value ``readings`` settle for ``what`` ("birth date"): those of the subject all
    ``same`` as one another and as the unclear ones; the most precise of all these (of equal
    precision, the subject's, then the first as the page gives them: fields, the lead, then
    sentences)."""
    mine = [r for r in readings if r.whose == "subject"]
    unclear = [r for r in readings if r.whose == "unknown"]
    if not mine:
        if not readings:
            return Settled(None)
        why = f"the page states a {what} only of someone else" if not unclear else \
            f"the page does not say whose {what} it gives"
        return Settled(None, tuple(readings), why)
    for a, b in itertools.combinations(mine + unclear, 2):
        if not same(a.value, b.value):
            return Settled(None, tuple(readings), f"the page gives more than one {what}")
    # the most precise of them: an unclear one too, once a reading of the subject's agrees
    # with it ("(28 July 1750)", a lone date, beside "Bach died in 1750")
    # a hedged date ("died ... between 3 and 5 March 1897") agrees, but is no more precise
    sure = [r for r in mine + unclear if r.how != "hedged"]
    best = max(sure, key=lambda r: (_precision(r.value), r.whose == "subject"))
    return Settled(best.value, tuple(readings))
