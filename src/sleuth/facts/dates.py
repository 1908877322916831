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

from sleuth.facts.fields import all_fields, heading_end
from sleuth.facts.subject import (
    Reading,
    Subject,
    Whose,
    clause_after,
    sentence_spans,
    whose,
)
from sleuth.text.lexicon import NAME_LINKS, PLACE_LINKS, wordset

Event = Literal["born", "died", "lived", "date"]
Order = Literal["earliest", "latest"]

MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
               "september", "october", "november", "december")
_MONTH = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|" \
         r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
# units a number is a quantity of, not a year ("1500 m", "1290 AM", "1010 kilocycles")
_UNITS = r"cm|km|m|kg|mm|ft|feet|metres|meters|miles|tonnes|tons|hp|kW|MW|AM|FM|kHz|MHz|kc|" \
         r"kilocycles|kilohertz|megahertz|acres|hectares"
# a year, not a quantity ("1500 m") nor a year written two ways ("1697/8": the Old Style
# and the New, a date before the New Year moved to 1 January; which one a source means, it
# says elsewhere or not at all)
_YEAR = rf"(?:1[0-9]{{3}}|20[0-9]{{2}}|[1-9][0-9]{{2}})(?!\s*(?:[-–]?\s*(?:{_UNITS})\b|\d)|/\d)"
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
                      r"launched|aired|broadcast|built|issued|created|incorporated|debuted|"
                      r"completed|inaugurated|unveiled|erected|constructed|consecrated|"
                      r"painted|composed|performed)\b", re.IGNORECASE)


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


# a date's other calendar, in brackets inside it ("27 April [O.S. 15 April] 1891"): read
# past, so the date is the one it interrupts
_CALENDAR_NOTE = re.compile(r"\[\s*[ON]\.\s?S\.[^\[\]]{0,40}\]")


# a footnote's superscript mark glued to a date ("April–May 1254²") is no part of it
_FOOTNOTE_MARK = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹]")
_FOOTNOTE_MARKS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", " " * 10)


def parse_dates(text: str) -> list[tuple[int, Date]]:
    """The dates in ``text`` with their character offsets, in order (a bracketed date of
    another calendar inside one is read past, and a footnote's superscript mark after one)."""
    if "[" in text:
        text = _CALENDAR_NOTE.sub(lambda m: " " * len(m.group(0)), text)
    if _FOOTNOTE_MARK.search(text):  # looked for first: translating costs a seventh of this
        text = text.translate(_FOOTNOTE_MARKS)
    out = []
    for m in DATE.finditer(text):
        year = int(m["y1"] or m["y2"] or m["y3"] or m["y4"])
        name = (m["m1"] or m["m2"] or m["m3"] or "").lower().rstrip(".")
        month = next((i + 1 for i, full in enumerate(MONTH_NAMES) if name and
                      full.startswith(name[:3])), 0)
        day = int(m["d1"] or m["d2"] or 0)
        if m["y4"] and not _bare_year(text, m.start(), m.end()):
            continue
        if _OTHER_CALENDAR.search(text, max(0, m.start() - 30), m.start()) or \
                _OTHER_ERA.match(text, m.end()):
            continue  # "2 Bahman 1275", "583 AH": a year of another calendar
        era = _BC.match(text, m.end())  # "322 BC": a year before the common era
        written = m.group(0) + (era.group(0) if era else "")
        out.append((m.start(), Date(-year if era else year, month,
                                    day if 1 <= day <= 31 else 0, " ".join(written.split()))))
    return out


# a day and a month no English calendar names before a year ("2 Bahman 1275", "14 Azar
# 1347"), or an era of another calendar after it ("583 AH", "1347 SH")
_OTHER_CALENDAR = re.compile(rf"\b[0-3]?\d\s+(?!{_MONTH}\s)[A-Z][a-zà-ÿ]+\s+$")
_OTHER_ERA = re.compile(r"\s?(?:AH|SH|AM|Hijri)(?!\w)")
_BC = re.compile(r"\s?(?:BCE?|B\.\s?C\.(?:\s?E\.)?)(?!\w)")


def _bare_year(text: str, start: int, end: int) -> bool:
    """Whether a lone number reads as a year: not part of a larger number or a quantity."""
    before, after = text[max(0, start - 3):start], text[end:end + 2]
    if re.search(r"\bc\.\s?$", before):  # "c.1762": circa
        return True
    if re.search(r"[^\W\d_],\s$", before):  # "Prague, 1970": after a word, not a number
        return not re.match(r"[.,]\d|%", after)
    return not re.search(r"[\d.,$£€]\s?$", before) and not re.match(r"[.,]\d|%", after)


def work_readings(text: str) -> list[Reading]:
    """Every date a work's or an organisation's page offers for itself: the year its lead
    gives it ("X is a 1952 American film"), the first date after each "released",
    "premiered", "founded", "completed" and the like (not a second life: "re-released in
    2005", "re-formed"; not in a relative clause about another thing: "which had replaced a
    timber bridge built in 1791"; a part's or another form's is not the work's own: "Its
    second part was released", "A sequel was released"); where the page has neither, the
    dates of its first sentence, its own only where they are one year ("Based on the 1931
    novel ..., the 1952 film X": whose is which?). Settled like a person's dates
    (:func:`~sleuth.facts.readings.settle`): where they disagree ("premiered in June 2011",
    "released on 16 March 2012"), no verdict."""
    readings: list[Reading] = []
    skip = heading_end(text)  # the title an index puts before a page's text
    start, end = (skip + at for at in sentence_spans(text[skip:])[0])
    lead = _LEAD_YEAR.search(text[:400])
    if lead:
        readings.append(Reading(Date(int(lead["year"]), text=lead["year"]), lead.start("year"),
                                "subject", "lead"))
    for cue in DATED_BY.finditer(text):
        if _AGAIN.search(text, max(0, cue.start() - 4), cue.start()):
            continue  # "re-released", "re- released": a later life of the work
        clause = re.split(r"[,;:.]\s", text[max(0, cue.start() - 120):cue.start()])[-1]
        if cue.start() > end and _ELSEWHERE.search(clause):
            continue  # "it replaced a bridge of 1861, which had replaced one built in 1791"
            # (in the first sentence, "X is a series that aired ...": the clause is X's)
        window = _CUE_CLAUSE.split(text[cue.end():cue.end() + CUE_REACH + 8], maxsplit=1)[0]
        rest = _WORD_REST.match(window, CUE_REACH)
        window = window[:CUE_REACH + (len(rest[0]) if rest else 0)]
        near = [(at, d) for at, d in parse_dates(window)
                if (d.year >= 1000 or d.month)  # "debuted on the Hot 100": no year
                and not (_UNTIL.search(window, max(0, at - 8), at) and
                         not _DENIED.search(text, max(0, cue.start() - 16), cue.start()))]
        if near:
            whose: Whose = "other" if _OTHER_FORM.search(clause) else "subject"
            readings.append(Reading(near[0][1], cue.end() + near[0][0], whose))
    if readings:
        return readings
    first = parse_dates(text[start:end])
    own: Whose = "subject" if len({d.year for _, d in first}) == 1 else "unknown"
    return [Reading(d, start + at, own) for at, d in first]


# "X is a 1952 American film", "X was a 1923 novel": the year the lead gives the work
_LEAD_YEAR = re.compile(r"\b(?:is|was)\s+an?\s+(?:\w+\s+)?(?P<year>1[0-9]{3}|20[0-9]{2})\b"
                        r"(?!\s*[-–])")
# "re-", "re- " before a cue: the work's second release, launch or forming
_AGAIN = re.compile(r"\bre-?\s?$", re.IGNORECASE)
# a part or another form of the work before a cue ("Its second part was released", "A
# sequel was released", "the English version was published"): that one's date
_OTHER_FORM = re.compile(r"\b(?:parts?|volumes?|episodes?|seasons?|instal+ments?|sequels?|"
                         r"prequels?|remakes?|editions?|versions?|translations?|adaptations?|"
                         r"reissues?)\b", re.IGNORECASE)
CUE_REACH = 80  # characters after a cue its date is looked for in (the rest of a word too)
_WORD_REST = re.compile(r"\w*")
# where a cue's own words end: a relative clause or a semicolon ("founded by X, whose
# company owned it until 1962"; a next sentence may go on, "published in Milan. The first
# issue appeared in March 1953")
_CUE_CLAUSE = re.compile(r",\s*(?:which|whose|who|whom|where|when|that)\b|;")
# a bound before a cue's date: an end or a start of something else ("broadcast ... until 1958",
# "has broadcast in Catalan since 1976"), unless the cue is denied up to it ("not released
# until April 1970")
_UNTIL = re.compile(r"\b(?:until|till|since|through)\s+$", re.IGNORECASE)
_DENIED = re.compile(r"\bnot\s+(?:\w+\s+)?$", re.IGNORECASE)
# a relative pronoun in a cue's clause: the clause tells of another thing the page names
_ELSEWHERE = re.compile(r"\b(?:which|that|whose|who|whom)\b", re.IGNORECASE)


# A year run into the next date, its dash lost ("17 September 190030 April 1985",
# "December 26, 1914March 24, 2008").
_GLUED = re.compile(rf"(?<!\d)(\d{{4}})(?=(?:[0-3]?\d\s+)?{_MONTH}\s)", re.IGNORECASE)


def life_parenthesis(text: str) -> str | None:
    """The first parenthesis of a page's lead that holds a date, as its dates' parts: other
    names left out ("(Hepburn: Kyo Anka; born 23 May 1947)"), parts joined by a dash
    ("(born 1908 in Düsseldorf; died 1980 in Castellina)"), a lost dash put back, a range of
    months inside one date made no dash ("February–March 1243": :data:`MONTH_RANGE`)."""
    for paren in re.finditer(r"\(([^()]{0,200})\)", text[:600]):
        parts = [p for p in _GLUED.sub(r"\1 – ", paren.group(1)).split(";") if parse_dates(p)]
        if parts:
            return MONTH_RANGE.sub(r"\1 or ", " – ".join(p.strip() for p in parts))
    return None


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


# --- every date a page offers for a birth or a death, and whose each is -------------------

# a hyphen a dump broke with a space ("Austria- Hungary", "Mecklenburg- Güstrow"): a word,
# not a range; before a month or a number it is a range's dash ("Oklahoma- April 7, 1988")
BROKEN_HYPHEN = re.compile(rf"(?<=[^\W\d_])- (?=[^\W\d_])(?!{_MONTH}\s*\d)", re.IGNORECASE)
# a range of months inside one date ("d. Ramadan 640 / February–March 1243"): not a life's
# dash between a birth and a death
MONTH_RANGE = re.compile(rf"\b({_MONTH})\s*[–—-]\s*(?={_MONTH}\s)", re.IGNORECASE)
# a parenthesis of years that are no life: a time someone was active, reigned, held office
_NOT_A_LIFE = re.compile(r"\b(?:fl\.|floruit|flourished|active|reigned|r\.|ruled|in\s+office"
                         r"|worked|lived\s+here|tenure)", re.IGNORECASE)
# what one side of a life's dash may hold besides its date: places, "born", "c.", "or"
_TWO_WAYS = re.compile(r"\b\d{3,4}/\d{1,4}\b")  # "14 February 1697/8": see _YEAR
_SIDE_WORDS = re.compile(r"[^\W\d_]+")
# a side of a life's dash that bounds the date rather than states it ("c. 1180 – after
# 1230": the death is not known)
_BOUND = re.compile(r"\s*(?:after|before|by|not\s+(?:before|after)|until)\b", re.IGNORECASE)
# a date of another event than a birth or a death: a baptism, a burial ("baptised 3 May
# 1644 – 19 November 1701": the birth is not known)
_OTHER_EVENT = re.compile(r"\b(?:bapti[sz]ed|bapt\.|bp\.|christened|chr\.|buried|bur\.|interred)",
                          re.IGNORECASE)
# the lowercase words a date's clause in a life's parenthesis may hold besides the date and
# a place's capitalised words: a cue, a circa, a birth name, a place's linking words ("in
# Frankfurt am Main", "now part of Poland", "at the same place"). Any other word ("missing
# since 1944", "died about 1189", "some sources say April 27, 1671") says something of the
# date this reader does not know, so the date is not read as a birth or a death
_LIFE_WORDS = NAME_LINKS | PLACE_LINKS | wordset(
    "born died b d c ca circa or at from aged age as née nee né les della do dos das im bei nad "
    "sur en et zu near outside now then part present day modern same place ibid idem ibidem "
    "city state province county district")
_LIFE_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


def _qualified(side: str, dates: list[tuple[int, Date]]) -> bool:
    """Whether a date of ``side`` (a side of a life's parenthesis; ``dates``: its dates)
    shares its clause, between commas, with a lowercase word not in :data:`_LIFE_WORDS`:
    "died about 1189" is, "born 20 November 1784, probably in Linz" is not (the doubt is the
    place's)."""
    for at, date in dates:
        start = side.rfind(",", 0, at) + 1
        end = side.find(",", at + len(date.text))
        clause = side[start:end if end >= 0 else len(side)]
        if any(w[0].islower() and w.lower() not in _LIFE_WORDS
               for w in _LIFE_WORD.findall(clause)):
            return True
    return False


def opening_parenthesis(text: str) -> re.Match[str] | None:
    """The first parenthesis with a date in a page's lead that belongs to the name the page
    opens with ("Edith Marlow (4 April 1890 – 1962) was", "Albert( Albert I)( before 1131 –
    1162)"): only capitalised words, linking words, ordinals and punctuation before it; a
    parenthesis after "was the daughter of George Marlow" gives George's dates. A first
    line that is a heading (the title an index puts before a page's text: "Amaury de Montfort
    (d. 1241)") is passed over."""
    skip = heading_end(text)
    for paren in re.compile(r"\(([^()]{0,200})\)").finditer(text, skip, skip + 600):
        before = re.sub(r"\([^()]*\)", " ", text[skip:paren.start()])
        if not _name_like(before):
            return None
        if parse_dates(_GLUED.sub(r"\1 – ", paren.group(1))):
            return paren
    return None


def _name_like(before: str) -> bool:
    """Whether the words before a lead's parenthesis are the name it opens with, with an
    apposition at most ("Steno, the artistic name of Stefano Vanzina"): one line, no verb
    ("was the daughter of George Marlow", "died peacefully at home") and no relative."""
    words = re.findall(r"[^\s\"“”'‘’,.:;&—–-]+", before)
    return 0 < len(words) <= 40 and "\n" not in before.strip() and \
        not any(w in NOT_IN_NAMES for w in words) and \
        sum(w[0].islower() and w not in NAME_WORDS for w in words) <= 5


# words that make what precedes a parenthesis a clause, not a name: verbs and relatives
NOT_IN_NAMES = wordset("is was were are has had have became died passed lived married moved "
                       "worked served who whom whose which son daughter wife husband father "
                       "mother child children brother sister here")
# lowercase words the name a page opens with may hold ("Gaius Sollius Modestus Apollinaris
# Sidonius, better known as Saint Sidonius Apollinaris (...)", "X, born Y (...)")
NAME_WORDS = NAME_LINKS | wordset("zu und and né née nee born or also better known as called "
                                  "nicknamed formerly simply professionally")


def lead_life(text: str) -> tuple[list[Date], list[Date], bool] | None:
    """The births and deaths the lead's parenthesis gives (:func:`opening_parenthesis`),
    and whether the reading is sure; None where there is none. Sure: a real range (a dash
    with a date or nothing on each side: "Austria- Hungary" is a word), dates after "born"
    or "died", or two dates in order whose dash was lost ("(1911 1987)"). Not sure: a lone
    date with neither dash nor cue ("( 31 January 1758)": a birth or a death?), a side of a
    dash with words but no date, a time someone was active ("fl. 1347 – 1391"), a baptism or
    a burial without a dash ("bapt. 3 May 1644, d. 1701"; with one, that side dates none), a
    date beside a word this reader does not know (:func:`_qualified`: that side dates none),
    two spans, a death before the birth."""
    paren = opening_parenthesis(text)
    if paren is None:
        return None
    inside = BROKEN_HYPHEN.sub("-", life_parenthesis(paren.group(0)) or "")
    read_inside = parse_dates(inside)
    dates = [d for _, d in read_inside]
    if _NOT_A_LIFE.search(inside):
        return [], [], False
    if len(_DASH.split(inside)) > 2:
        # two spans ("2 Bahman 1275 – 14 Azar 1347 SH; 21 January 1897 – 5 December 1968",
        # "1 May 1820 – 3 June 1880; Duke 1845–1880"): which is the life's?
        return dates, dates, False
    sides = _DASH.split(inside, maxsplit=1)
    if len(sides) == 2:
        # a side that is a bound ("after 1230", "before 1131"), dates another event
        # ("baptised 3 May 1644") or has a year written two ways ("1697/8") dates no birth
        # or death
        parsed = [parse_dates(side) for side in sides]
        bounds = [bool(_BOUND.match(side) or _OTHER_EVENT.search(side) or
                       _TWO_WAYS.search(side) or _qualified(side, read))
                  for side, read in zip(sides, parsed, strict=True)]
        found = [[] if bound else [d for _, d in read]
                 for read, bound in zip(parsed, bounds, strict=True)]
        real = all(f or bound or not _SIDE_WORDS.search(
            re.sub(r"\b(?:c|ca|circa|or|born|died|b|d)\b\.?", "", side, flags=re.IGNORECASE))
                   for side, f, bound in zip(sides, found, bounds, strict=True))
        # a side with words but no date is no life's half ("Austria– Hungary, 1898"); a
        # death before the birth is a misreading ("c. 410 – c. 345 BC": 410 BC, unwritten)
        ordered = not (found[0] and found[1] and found[1][0] < found[0][0])
        return found[0], found[1], real and ordered and bool(found[0] or found[1])
    if _OTHER_EVENT.search(inside) or _qualified(inside, read_inside):
        return dates, dates, False  # "(bapt. 3 May 1644, d. 1701)": whose date is which?
    cue = re.search(r"\b(?:died|d\.)", inside, re.IGNORECASE)
    if cue:
        return [d for a, d in read_inside if a < cue.start()], \
            [d for a, d in read_inside if a > cue.start()], True
    if re.search(r"\b(?:born|b\.)", inside, re.IGNORECASE):
        return dates, [], True
    if len(dates) == 2 and dates[0] < dates[1]:
        return [dates[0]], [dates[1]], True  # "(May 30, 1896 December 26, 1977)"
    return dates, dates, False


_CUES = {"born": re.compile(r"(?<![\w-])(?<!-\s)born\b", re.IGNORECASE),
         "died": re.compile(r"\b(?:died|passed\s+away)\b", re.IGNORECASE)}


def date_readings(text: str, event: Literal["born", "died"], subject: Subject) -> list[Reading]:
    """Every date ``text`` offers for the ``event`` of a person: its labelled fields
    ("Born: 14 August 1968"; the subject's when the page has one, unclear when it has
    several), the lead's parenthesis (the subject's; unclear where :func:`lead_life` is not
    sure), and each sentence's "born ..." or "died ..." with the first date a few words on,
    judged by :func:`~sleuth.facts.subject.whose`."""
    readings: list[Reading] = []
    stated = all_fields(text, event)
    for at, value in stated:
        for _, date in parse_dates(value)[:1]:
            readings.append(Reading(date, at, "subject" if len(stated) == 1 else "unknown",
                                    "field"))
    paren = opening_parenthesis(text)
    life = lead_life(text)
    if paren is not None and life is not None:
        born, died, sure = life
        for date in born if event == "born" else died:
            readings.append(Reading(date, paren.start(), "subject" if sure else "unknown",
                                    "lead"))
    for match in _CUES[event].finditer(text[:20_000]):
        if paren is not None and match.start() < paren.end():
            continue  # in the lead's parenthesis, or a birth name before it ("X, born Y (")
        if stated and any(abs(match.start() - at) < 12 for at, _ in stated):
            continue  # the label of a field read above
        # up to a second predicate: "born in Virginia and moved ... in 1825"
        clause = re.split(r"\s+and\s+(?=[a-z])", clause_after(text, match.end()))[0]
        near = parse_dates(clause)
        if near and near[0][0] < 70:
            owner, how = whose(text, match.start(), subject), "sentence"
            if _HEDGED.search(clause[:near[0][0]]):  # "born nine days after the death of X"
                owner, how = ("unknown" if owner == "subject" else owner), "hedged"
            readings.append(Reading(near[0][1], match.start(), owner, how))
    return readings


# words between "born" or "died" and a date that make it a guess or another event's date
# ("died about 1189", "born between 1322 and 1323", "died in November the following year
# and X became king on 22 November 1975", "born nine days after the death of X (21 May
# 1800)"), or a bound just before it ("died after 1136"; "died after eye surgery in 1750"
# is a date)
_HEDGED = re.compile(r"\b(?:about|around|approximately|perhaps|probably|possibly|likely|"
                     r"reportedly|allegedly|sometime|somewhere|between|following)\b|"
                     r"\b(?:days?|weeks?|months?|years?)\s+(?:after|before)\b|"
                     r"\b(?:after|before|until|since|by)\s+(?:c\.\s*|circa\s+)?$",
                     re.IGNORECASE)
