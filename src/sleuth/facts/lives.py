"""When and where a page says a person was born and died, and the questions that ask it
("Where was the director of film X born?", "When did X's father die?").

A small model given the right page still answers a place question with a date, or the
entity the question goes through instead of the fact beyond it (BENCHMARKS §16). Reading
a birth or death from an encyclopedia lead needs no model. Pure functions over strings,
like :mod:`sleuth.facts.dates`, on which it builds; the ``person_fact`` tool reads the pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from sleuth.facts.dates import (
    BROKEN_HYPHEN,
    DATE,
    MONTH_NAMES,
    lead_life,
    life_parenthesis,
    opening_parenthesis,
)
from sleuth.facts.fields import all_fields
from sleuth.facts.places import is_place, not_a_place
from sleuth.facts.subject import Reading, Subject, clause_after, whose
from sleuth.text.lexicon import PLACE_LINKS

# what a question may ask of a person: a fact of their life, a relative (read by
# :mod:`sleuth.facts.kin`) or their nationality
Fact = Literal["birth_date", "birth_place", "death_date", "death_place", "burial_place",
               "father", "mother", "spouse", "nationality"]
KIN_FACTS = ("father", "mother", "spouse")

_WORD = re.compile(r"[^\W\d_][\w'’.-]*|,|\S")
_DASH = re.compile(r"\s*[–—]\s*|\s+-\s*|(?<=\w)-\s+")
_GLUED = re.compile(r"(?<!\d)(\d{4})(?=[^\W\d_])")  # "1901Oklahoma City": a dash lost


def place_at(text: str) -> str | None:
    """The place name ``text`` starts with, after a leading "in", "at", "on" or comma: a run of
    capitalised words with linking words inside, continued after commas ("Glen Cove, Long
    Island, New York"), cut before a lowercase word ("Siversky, near Saint Petersburg") and
    before a part that opens a clause ("in Hoboken, New Jersey, Sinatra began")."""
    words = [m.group(0) for m in _WORD.finditer(text)]
    while words and words[0] in {",", "in", "at", "on", "the", "c."}:
        words.pop(0)
    parts: list[list[str]] = [[]]
    at = 0
    for at, word in enumerate([*words, ""]):  # noqa: B007 (where it stopped is used below)
        if word == "," and parts[-1]:
            parts.append([])
        elif word and (word[0].isupper() or (parts[-1] and word.lower() in PLACE_LINKS)):
            parts[-1].append(word)
        else:
            break
    following = words[at] if at < len(words) else ""
    if len(parts) > 1 and parts[-1] and following and following not in PLACE_ENDS and \
            not following[0].isdigit() and is_place(" ".join(parts[-1])) is not True:
        # "..., Sinatra began": the last part is a clause's subject; a place the gazetteer
        # knows is not ("died in Hamburg, Germany due to ...")
        parts.pop()
    names = [" ".join(_trim(p)) for p in parts]
    place = ", ".join(n for n in names if n).rstrip(".")
    return place if place and place not in ERAS else None


ERAS = {"BC", "BCE", "AD", "CE"}  # "died in 1330 BC": no place
PLACE_ENDS = {",", ".", ")", ";", "–", "—", "-", "and", "on", "in", "at", "where", "to", "("}


def _trim(words: list[str]) -> list[str]:
    while words and words[-1].lower() in PLACE_LINKS:
        words = words[:-1]
    return words


def _place_in(part: str) -> str | None:
    """The place in one side of a life's parenthesis: what is left when its dates, "born"
    and "c." are taken out ("August 21, 1901 Oklahoma City, Oklahoma")."""
    part = re.sub(r"\([^()]*\)", " , ", part)  # "(aged 34)"
    rest = DATE.sub(" , ", re.sub(r"\b(?:born|died|c\.|circa|ca\.|or|d\.)\s*", " , ", part,
                                  flags=re.IGNORECASE))
    rest = re.sub(r"^[\s,]+", "", rest)
    return place_at(rest) if rest[:1].isupper() or rest.startswith(("in ", "at ")) else None


def _dated(place: str) -> bool:
    """Whether a name read as a place starts a date instead ("March", "May 1901")."""
    first = place.split()[0].lower().rstrip(",.")
    return bool(DATE.fullmatch(place)) or first in MONTH_NAMES or \
        any(first == m[:3] for m in MONTH_NAMES if len(first) == 3)


@dataclass(frozen=True)
class FactQuestion:
    """What a question asks of a person: ``fact``, of ``entity`` or, with ``relation``, of
    the person that relation names on the entity's page ("the director of film X")."""

    entity: str
    fact: Fact
    relation: str | None = None

    def arguments(self) -> dict[str, object]:
        return {"entity": self.entity, "fact": self.fact, "relation": self.relation}


# --- every place a page offers for a birth, death or burial, and whose each is ------------

PLACE_CUES = {"birth_place": ("born", r"(?<![\w-])(?<!-\s)born\b"),
              "death_place": ("died", r"\b(?:died|passed\s+away)\b"),
              "burial_place": ("buried_at", r"\b(?:buried|interred|entombed)\b")}


def place_readings(text: str, fact: str, subject: Subject) -> list[Reading]:
    """Every place ``text`` offers for a person's birth, death or burial (``fact``): its
    labelled fields ("Place of birth: Gdańsk"; unclear when the page has several), the
    sides of the lead's parenthesis where it is a real life span (:func:`lead_life`), and
    the place after "in" or "at" a few words after each sentence's "born", "died" or
    "buried", judged by :func:`~sleuth.facts.subject.whose`."""
    field, cue = PLACE_CUES[fact]
    readings: list[Reading] = []
    where = {"born": "born_at", "died": "died_at", "buried_at": "buried_at"}[field]
    stated = all_fields(text, where) or [
        (at, place) for at, value in all_fields(text, field) if (place := _place_in(value))]
    for at, value in stated:
        readings.append(Reading(value, at, "subject" if len(stated) == 1 else "unknown",
                                "field"))
    paren = opening_parenthesis(text)
    life = lead_life(text)
    if paren is not None and life is not None and field != "buried_at":
        inside = BROKEN_HYPHEN.sub("-", life_parenthesis(paren.group(0)) or "")
        sides = _DASH.split(_GLUED.sub(r"\1 ", inside), maxsplit=1)
        side = sides[0] if field == "born" else sides[1] if len(sides) == 2 else None
        place = _place_in(side) if side else None
        if place:
            readings.append(Reading(place, paren.start(), "subject" if life[2] else "unknown",
                                    "lead"))
    for match in re.finditer(cue, text[:20_000], re.IGNORECASE):
        if paren is not None and paren.start() <= match.start() < paren.end():
            continue
        place = _place_after(text, match.end())
        if place:
            readings.append(Reading(place, match.start(), whose(text, match.start(), subject)))
    return readings


def _place_after(text: str, end: int) -> str | None:
    """The place after "in" or "at" within a few words of a cue ending at ``end``, in the
    same sentence."""
    clause = clause_after(text, end)
    for where in re.finditer(r"\b(?:in|at|on)\s+(?=[^\W\d_])", clause):
        if where.start() >= 50:
            break
        place = place_at(clause[where.start():])
        if where.group(0).startswith("on") and not (place and is_place(place)):
            continue  # "born on Paros" is a place, "born on Christmas Day" none
        if place and not _dated(place) and not not_a_place(place):
            return place
    return None
