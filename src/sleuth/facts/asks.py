"""What a question asks of the facts pack, read for its meaning rather than its wording.

People do not type 2Wiki's templates: "Who's younger: A or B?", "A vs B - who was born
first?", "X's dad died where?", "grandma on his dad's side", "inherent vice movie composer
birthplace". Reading those with one pattern per template reached the tools one time in
three (BENCHMARKS §25). This reader works on the question's words instead:

1. the words are put in canonical form ("dad" → father, "passed away" → died, "came out"
   → released, "vs" → or, "more recently" → later), each keeping its place in the text;
2. each word is *frame* (question words, verbs of the events asked, roles, kin, order
   words, fillers such as "the guy who") or *content*; a frame word typed with a capital
   inside the question is content, part of a name ("The Man Who Wasn't There", "His Name
   Is Nobody");
3. names are the runs of content words (with the linking words names hold: "of", "the",
   commas, parentheses); a colon, dash or comma separates only where a frame word stands
   beside it, so "Killer: Dead or Alive" stays one name;
4. the frame says what is asked: a comparison (an order word and two options joined by
   "or", "vs" or "between ... and"), or a fact of a person (an event with where/when, a
   nationality, a relative), with the role or relative it goes through.

Pure functions over strings; the tools' ``from_question`` call :func:`comparison` and
:func:`fact_question`. Whatever is ambiguous ("grandfather" with no side, "the first wife",
"born" with neither where nor when) is not read: the model gets the question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sleuth.facts.dates import Comparison, Event, Order
from sleuth.facts.lives import FactQuestion
from sleuth.text.lexicon import wordset

MAX_NAME_WORDS = 14  # an option longer than this is a clause of a longer question

# Phrases of several words read as one canonical word, longest first.
PHRASES: dict[tuple[str, ...], str] = {
    ("passed", "away"): "died", ("pass", "away"): "died", ("passes", "away"): "died",
    ("passed", "on"): "died", ("kicked", "the", "bucket"): "died",
    ("came", "out"): "released", ("come", "out"): "released", ("comes", "out"): "released",
    ("set", "up"): "released", ("more", "recently"): "latest", ("most", "recently"): "latest",
    ("more", "recent"): "latest", ("most", "recent"): "latest", ("married", "to"): "spouse",
    ("resting", "place"): "buried", ("laid", "to", "rest"): "buried",
    ("father", "in", "law"): "father-in-law", ("mother", "in", "law"): "mother-in-law",
    ("did", "the", "music"): "composer", ("wrote", "the", "music"): "composer",
    ("made", "the", "music"): "composer", ("out", "of"): "between",
}
CANON = {
    **dict.fromkeys(("die", "died", "dies", "death", "deaths", "passed", "pass", "deceased",
                     "deathplace"), "died"),
    **dict.fromkeys(("born", "birth", "births"), "born"),
    **dict.fromkeys(("buried", "burial", "interred", "entombed", "grave"), "buried"),
    **dict.fromkeys(("released", "release", "premiered", "published", "founded",
                     "established", "started", "formed", "launched", "aired", "debuted",
                     "dated", "issued", "opened"), "released"),
    **dict.fromkeys(("first", "earlier", "earliest", "sooner", "before"), "earliest"),
    **dict.fromkeys(("older", "oldest", "elder", "eldest"), "older"),
    **dict.fromkeys(("later", "latest", "last", "recently", "after"), "latest"),
    **dict.fromkeys(("younger", "youngest"), "younger"),
    **dict.fromkeys(("newer", "newest"), "newer"),
    **dict.fromkeys(("longer", "longest"), "longer"),
    **dict.fromkeys(("director", "directors", "directed", "filmmaker", "helmed"), "director"),
    **dict.fromkeys(("composer", "composers", "composed", "scored", "music"), "composer"),
    **dict.fromkeys(("producer", "producers", "produced"), "producer"),
    **dict.fromkeys(("performer", "performers", "performed", "sang", "sung", "singer",
                     "artist", "recorded"), "performer"),
    **dict.fromkeys(("writer", "writers", "wrote"), "writer"),
    **dict.fromkeys(("father", "dad", "daddy", "papa"), "father"),
    **dict.fromkeys(("mother", "mom", "mum", "mommy", "mummy", "mama"), "mother"),
    **dict.fromkeys(("grandfather", "grandpa", "granddad", "grandad", "granddaddy"),
                    "grandfather"),
    **dict.fromkeys(("grandmother", "grandma", "granny", "gran"), "grandmother"),
    **dict.fromkeys(("husband", "hubby"), "husband"),
    **dict.fromkeys(("wife", "missus", "wifey"), "wife"),
    **dict.fromkeys(("spouse", "married"), "spouse"),
    **dict.fromkeys(("vs", "versus", "or"), "or"),
    **dict.fromkeys(("between",), "between"),
    **dict.fromkeys(("nationality", "citizenship"), "nationality"),
    **dict.fromkeys(("birthplace",), "birthplace"),
    **dict.fromkeys(("birthday", "birthdate", "dob"), "birthday"),
    **dict.fromkeys(("deathdate", "dod"), "deathday"),
}
QUESTION = wordset("who whom whose which what when where how why whoever whichever")
AUX = wordset("is was were are did does do has had have 's 'd will would can could be been "
              "got")
EVENTS = wordset("born died buried released birthplace birthday deathday")
ORDERS = wordset("earliest latest older younger newer longer")
ROLES = wordset("director composer producer performer writer screenwriter author founder "
                "creator editor cinematographer lyricist")
KIN = wordset("father mother grandfather grandmother husband wife spouse father-in-law "
              "mother-in-law paternal maternal")
WORKS = wordset("film films movie movies song songs album albums single book novel magazine "
                "play show series opera game newspaper company one ones club clubs team teams "
                "band bands label school university college brewery ship lighthouse bridge "
                "building church station")
PEOPLE = wordset("guy man woman person people someone somebody lady gentleman fellow")
PRONOUNS = wordset("it they them he she his her their its him hers theirs")
DATE_CUES = wordset("when date year day birthday")
PLACE_CUES = wordset("where place city town village birthplace")
# words that say the question asks something no date or page fact settles
NOT_READ = wordset("same both cause why how many much award study studied graduate "
                   "graduated educated school university work worked works stepmother "
                   "stepfather stepmom stepdad uncle aunt brother sister son daughter child "
                   "children sibling cousin nephew niece second third ex former")
# words names hold between their capitalised words
LINKS = wordset("of the a an in on at de la le du del der den von van da di y and for with "
                "to & 's ' , ( ) . - – : !")
SEPARATORS = wordset("- – — : , ; ? ! /")

_TOKEN = re.compile(r"\w+(?:[-.’'](?!s\b|d\b|t\b)\w+)*|['’][sdt]\b|[^\w\s]")


@dataclass(frozen=True)
class Word:
    """One word of a question: as typed, in canonical form, where it is, and whether it is
    part of the question's frame rather than a name."""

    text: str
    canon: str
    start: int
    end: int
    frame: bool


def words_of(question: str) -> list[Word]:
    """The question's words in canonical form, phrases joined, frame words marked."""
    raw = [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(question)]
    out: list[Word] = []
    at = depth = 0
    while at < len(raw):
        lowered = tuple(t.lower().replace("’", "'") for t, _, _ in raw[at:at + 3])
        phrase = next((p for p in sorted(PHRASES, key=len, reverse=True)
                       if lowered[:len(p)] == p), None)
        if phrase is not None and not depth:
            text = question[raw[at][1]:raw[at + len(phrase) - 1][2]]
            out.append(Word(text, PHRASES[phrase], raw[at][1], raw[at + len(phrase) - 1][2],
                            True))
            at += len(phrase)
            continue
        text, start, end = raw[at]
        low = lowered[0]
        canon = CANON.get(low, low)
        depth = max(0, depth + {"(": 1, ")": -1}.get(text, 0))
        inside = depth > 0 or text == ")"  # "(son of Louis XV)" is part of a name
        out.append(Word(text, canon, start, end, not inside and _is_frame(text, canon, out)))
        at += 1
    return out


def _is_frame(text: str, canon: str, before: list[Word]) -> bool:
    """Whether a word belongs to the frame: a frame word in lower case, or capitalised at
    the start of the question or of a part ("Changed It - Where was ...")."""
    if canon == "'s":  # "who's", "one's": a verb; "Peter's Friends", "It's Love": a name's
        return bool(before) and before[-1].canon in QUESTION | WORKS and before[-1].frame
    known = canon in QUESTION | AUX | EVENTS | ORDERS | ROLES | KIN | WORKS | PEOPLE | \
        PRONOUNS | DATE_CUES | PLACE_CUES | NOT_READ | {"or", "between", "nationality",
                                                        "country", "from", "lived", "behind",
                                                        "'d", "whose", "that",
                                                        "side", "than", "other"}
    if not known:
        return False
    if text[:1].islower() or text[:1] in "'’":
        return True
    if canon in PEOPLE | WORKS | ORDERS:
        return False  # "Woman Without a Past", "Last Tango in Paris"
    return not before or before[-1].text in SEPARATORS and before[-1].text not in (",", "!")


def _separates(words: list[Word], at: int) -> bool:
    """Whether the punctuation at ``at`` separates parts of the question (a frame word
    beside it) rather than being part of a name ("Killer: Dead or Alive")."""
    if at == len(words) - 1 or words[at].text in (";", "—"):
        return True
    if words[at].text in ("?", "!"):  # "Do You Believe? (Film)", "Author! Author!"
        after = words[at + 1]
        return after.frame and after.canon not in ("or", "and") or after.text in SEPARATORS
    if words[at].text not in SEPARATORS:
        return False
    before = words[at - 1] if at else None
    after = words[at + 1]
    return (before is None or before.frame and before.canon not in LINKS) or \
        (after.frame and after.canon not in ("'s",)) or after.text in SEPARATORS


def _hard(words: list[Word], at: int) -> bool:
    """Whether the word at ``at`` ends a name: a frame word other than a linking one, or
    punctuation that separates."""
    word = words[at]
    if word.text in SEPARATORS or word.text in ("—", "!"):
        return _separates(words, at)
    return word.frame and word.canon not in LINKS


def _trim(words: list[Word], lo: int, hi: int) -> tuple[int, int]:
    """``words[lo:hi]`` without linking words, fillers and works at either end (but a
    leading "The" typed so stays: "The Bedford Incident")."""
    def loose(w: Word, leading: bool) -> bool:
        if w.frame:
            return True
        if leading and (w.text == "(" or w.text[:1].isupper()):
            return False  # "The Bedford Incident", "La Marca", "(1862–1933)"
        return (w.canon in LINKS or w.text in ("?", "!")) and w.text != ")"
    while lo < hi and loose(words[lo], True):
        lo += 1
    while hi > lo and loose(words[hi - 1], False):
        hi -= 1
    return lo, hi


def _span(question: str, words: list[Word], lo: int, hi: int) -> str:
    return question[words[lo].start:words[hi - 1].end].strip() if lo < hi else ""


def _names(words: list[Word]) -> list[tuple[int, int]]:
    """The runs of content words, each as (start, end) word positions, trimmed."""
    runs, lo = [], None
    for at in range(len(words) + 1):
        if at == len(words) or _hard(words, at):
            if lo is not None:
                span = _trim(words, lo, at)
                if span[0] < span[1] and any(not w.frame and w.canon not in LINKS
                                             for w in words[span[0]:span[1]]):
                    runs.append(span)
            lo = None
        elif lo is None:
            lo = at
    return runs


def comparison(question: str) -> Comparison | None:
    """The comparison a question asks for, or None when it asks for none that dates can
    settle: an order word ("first", "older", "more recently", "newer") and two options
    ("A or B", "A vs B", "between A and B", "which of A and B"), with the event compared
    (born, died, lived, or a work's date) and the role it goes through ("whose director")."""
    words = words_of(question)
    options = _options(words)
    if options is None:
        return None
    (a_lo, a_hi), (b_lo, b_hi) = options
    entities = (_span(question, words, a_lo, a_hi), _span(question, words, b_lo, b_hi))
    if not all(entities) or entities[0].lower() == entities[1].lower() or \
            any(len(e.split()) > MAX_NAME_WORDS for e in entities):
        return None
    frame = [w for i, w in enumerate(words)
             if w.frame and not (a_lo <= i < a_hi or b_lo <= i < b_hi)]
    canon = [w.canon for w in frame]
    orders = [c for c in canon if c in ORDERS]
    if not orders or set(canon) & {"same", "both", "how", "why"}:
        return None
    roles = [c for c in canon if c in ROLES | {"father", "mother", "husband", "wife",
                                               "spouse"}]
    role = roles[0] if roles else None
    said = set(canon)
    if "longer" in said:
        if not {w.canon for w in words} & {"lived", "live", "life"}:
            return None  # "longer" of something other than a life
        return Comparison(entities, "lived", "latest", role)
    order: Order = "earliest" if orders[0] in ("earliest", "older") else "latest"
    event = _event(said, role)
    return Comparison(entities, event, order, role) if event else None


def _event(said: set[str], role: str | None) -> Event | None:
    """The event a comparison's frame compares (None: none a date settles)."""
    event: Event
    if "born" in said:
        event = "born"
    elif "died" in said:
        event = "died"
    elif "released" in said or "newer" in said:
        event = "date"
    elif said & {"older", "younger"}:
        # "who's older", "the older director": a birth; "the older film": a work's date
        person = role or said & (PEOPLE | {"who", "whom"})
        if not person and said & WORKS - {"one", "ones"}:
            event = "date"
        else:
            event = "born" if person or not said & WORKS else "date"
    elif role is None and said & {"who", "whom"}:
        return None  # "who ... first" with no event: not a date question
    else:
        event = "date"
    if role and event == "date":
        event = "born"  # "the director who is older": the person's birth
    return event


def _options(words: list[Word]) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The two options a comparison joins, as word spans: around "vs", around "and" after
    "between"/"out of"/"which of", around a lowercase "or", or around "and" in a part of
    their own ("A and B - who ..."); a capitalised "Or" is a name's ("Dead Or Alive"), and
    beside "vs" or a cued "and" so is a lowercase one ("Killer: Dead or Alive vs B")."""
    def joins(kinds: tuple[str, ...]) -> list[int]:
        return [at for at, w in enumerate(words)
                if w.text.lower().rstrip(".") in kinds and w.text.islower()]
    cued = [at for at in joins(("and",)) if _joins_pair(words, at, cued=True)]
    loose = [at for at in joins(("and",)) if _joins_pair(words, at, cued=False)]
    for at in [*joins(("vs", "versus")), *cued, *joins(("or",)), *loose]:
        inner = at in cued or words[at].text.lower().startswith("v")

        def stop(i: int, inner: bool = inner) -> bool:
            return _hard(words, i) and not (inner and words[i].text == "or")
        left = at - 1 if at and words[at - 1].text == "," else at  # "A, or B?"
        while left > 0 and not stop(left - 1):
            left -= 1
        right = at + 1
        while right < len(words) and not stop(right):
            right += 1
        a, b = _trim(words, left, at), _trim(words, at + 1, right)
        if at in loose and a[0] == 0 < a[1] - 1 and words[0].canon == "of":
            a = (1, a[1])  # "Of A and B, who's older?"
        if a[0] < a[1] and b[0] < b[1]:
            return a, b
    return None


def _joins_pair(words: list[Word], at: int, *, cued: bool) -> bool:
    """Whether the "and" at ``at`` joins a comparison's two options: after "between", "out
    of" or "which of" (``cued``), or in a part of the question of its own ("A and B - who
    ...")."""
    left = at
    while left > 0 and not _hard(words, left - 1):
        if cued and words[left - 1].canon == "of" and left >= 2 and \
                words[left - 2].canon in QUESTION:
            return True  # "which of A and B", "which of Taming of the Fire and B"
        left -= 1
    before = words[left - 1] if left else None
    if cued:
        return before is not None and before.canon == "between"
    return before is None or before.text in SEPARATORS


# a relative asked for: the kin words in the order a possessive says them ("his father's
# mother"), read as (the relative to go through, the relative read there)
GRAND = {("paternal", "grandfather"): ("father", "father"),
         ("paternal", "grandmother"): ("father", "mother"),
         ("maternal", "grandfather"): ("mother", "father"),
         ("maternal", "grandmother"): ("mother", "mother")}
PLAIN_KIN = {"father": "father", "mother": "mother", "spouse": "spouse",
             "husband": "spouse", "wife": "spouse"}


def fact_question(question: str) -> FactQuestion | None:
    """What a question asks of a person, and of whom, or None: a birth, death or burial
    (where or when: "Where was the director of film X born?", "X director birthplace",
    "when did the guy who directed X pass away"), a nationality ("Which country X's father
    is from?"), a relative ("Who is the paternal grandfather of X?", "X's grandma on his
    dad's side?", "who was her father's father")."""
    words = words_of(question)
    canon = [w.canon for w in words if w.frame]
    said = set(canon)
    if said & NOT_READ or said & ORDERS or "or" in said:
        return None
    names = _names(words)
    if not names:
        return None
    lo, hi = max(names, key=lambda s: sum(not w.frame for w in words[s[0]:s[1]]))
    entity = _span(question, words, lo, hi)
    frame = [w.canon for i, w in enumerate(words)
             if (w.frame or w.canon == "of") and not lo <= i < hi]
    kin = _kin(frame)
    if kin is None:
        return None
    roles = [c for c in frame if c in ROLES]
    if len(set(roles)) > 1:
        return None
    role = roles[0] if roles else None
    fact = _fact(set(frame), bool(kin))
    if fact is None and kin:
        through, fact = kin[:-1], PLAIN_KIN.get(kin[-1])
        if fact is None:
            return None
        relation = role or (through[0] if through else None)
        if role and through or len(through) > 1:
            return None  # three pages away ("the paternal grandfather of the director of X")
        return FactQuestion(entity, fact, relation)  # type: ignore[arg-type]
    if fact is None or len(kin) > 1 or (kin and role):
        return None
    relation = role or (kin[0] if kin else None)
    return FactQuestion(entity, fact, relation)  # type: ignore[arg-type]


def _kin(frame: list[str]) -> list[str] | None:
    """The relatives a question's frame goes through, innermost first ("X's father's
    mother", "the mother of the father of X" → father, mother); None when a grandparent's
    side is not said."""
    kin = [c for c in frame if c in KIN]
    if "paternal" in kin or "maternal" in kin or "grandfather" in kin or \
            "grandmother" in kin:
        side = next((c for c in kin if c in ("paternal", "maternal")), None)
        grand = next((c for c in kin if c in ("grandfather", "grandmother")), None)
        if grand is None:
            return None
        if side is None:  # "grandma on his dad's side"
            after = frame[frame.index(grand) + 1:]
            if "side" not in after:
                return None
            parent = next((c for c in after if c in ("father", "mother")), None)
            side = {"father": "paternal", "mother": "maternal"}.get(parent or "")
            if side is None:
                return None
        return list(GRAND[(side, grand)])
    if "father-in-law" in kin or "mother-in-law" in kin:
        return ["spouse", "father" if "father-in-law" in kin else "mother"]
    kin = [PLAIN_KIN.get(k, k) if k == "spouse" else k for k in kin]
    if len(kin) == 2 and "of" in frame[frame.index(kin[0]) + 1:frame.index(kin[0]) + 3]:
        kin.reverse()  # "the mother of the father of X"
    return kin


def _fact(said: set[str], kin: bool) -> str | None:
    """The life fact a question's frame asks (None: none, or not which)."""
    if "nationality" in said or ("country" in said and "from" in said):
        return "nationality"
    if "birthplace" in said:
        return "birth_place"
    if "birthday" in said:
        return "birth_date"
    if "deathday" in said:
        return "death_date"
    place, date = bool(said & PLACE_CUES), bool(said & DATE_CUES)
    if "buried" in said:
        return "burial_place" if place or not date else None
    for event, name in (("born", "birth"), ("died", "death")):
        if event in said:
            if place and not date:
                return f"{name}_place"
            if date and not place:
                return f"{name}_date"
            return None
    return None
