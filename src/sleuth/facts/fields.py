"""Labelled fields a page states about a person ("Born: 14 August 1968, Chennai",
"Spouse(s): Jane Roe (m. 1990)", "Nationality: Indian"), as infoboxes, résumés and
catalogue records write them.

A field is a fact stated under its own label, so the readers of dates, places, family and
nationality (:mod:`sleuth.facts.dates`, :mod:`sleuth.facts.lives`, :mod:`sleuth.facts.kin`)
take it before anything they would infer from a lead's sentences.
"""

from __future__ import annotations

import re

# label (lowercase, as written) → the field it states
LABELS = {
    "born": "born", "date of birth": "born", "birth date": "born", "place of birth": "born_at",
    "birthplace": "born_at", "died": "died", "date of death": "died", "death date": "died",
    "place of death": "died_at", "resting place": "buried_at", "burial place": "buried_at",
    "buried": "buried_at", "spouse": "spouse", "spouses": "spouse", "spouse(s)": "spouse",
    "wife": "spouse", "husband": "spouse", "parents": "parents", "parent(s)": "parents",
    "father": "father", "mother": "mother", "nationality": "nationality",
    "citizenship": "nationality", "birth": "born", "death": "died", "burial": "buried_at",
}
_LABEL = "|".join(re.escape(label) for label in sorted(LABELS, key=len, reverse=True))
# a label at a line's start, after a separator or after a sentence ("... Rahman. Born:
# 6 January 1967, Madras. Spouse: Saira Banu"); the value runs to the line's end, a
# separator or the next label
FIELD = re.compile(rf"(?:^|(?<=[\n|•·;])|(?<=\.\s))[ \t]*(?P<label>{_LABEL})[ \t]*:[ \t]*"
                   rf"(?P<value>[^\n|•·;]{{1,160}}?)"
                   rf"(?=\s*(?:$|[\n|•·;]|\.\s+(?:{_LABEL})[ \t]*:|\s(?:{_LABEL})[ \t]*:))",
                   re.IGNORECASE | re.MULTILINE)
MAX_VALUE = 160


def fields(text: str) -> dict[str, str]:
    """The labelled fields of ``text``, the first of each kind, values stripped."""
    found: dict[str, str] = {}
    for match in FIELD.finditer(text[:20_000]):
        key = LABELS[match["label"].lower()]
        value = match["value"].strip(" ,.")
        if value and key not in found:
            found[key] = value
    return found


def all_fields(text: str, key: str) -> list[tuple[int, str]]:
    """Every field of kind ``key`` ("born", "died", ...) in ``text``, with its offset: a
    record of several people ("Born: 4 June 1902 — Otto ... Born: 2 March 1907 — Hans")
    states one for each."""
    return [(m.start("value"), m["value"].strip(" ,."))
            for m in FIELD.finditer(text[:20_000])
            if LABELS[m["label"].lower()] == key and m["value"].strip(" ,.")]


def heading_end(text: str) -> int:
    """Where a page's own text starts: after a first line that is a heading (the title an
    index puts before a page's text, "Louis, Dauphin of France (son of Louis XV)": short,
    no "is" or "was"), else 0. The readers of a lead skip it: its parenthesis is the
    title's, not the subject's dates or parents."""
    first, newline, _ = text.partition("\n")
    heading = newline and len(first) < 200 and not re.search(r"\b(?:is|was|are|were)\b", first)
    return len(first) + 1 if heading else 0
