"""Whose a statement on a page is: the page's own subject's, someone else's, or unclear.

An entity's page states the entity's birth, but often a father's birth, a husband's death
or a grandfather's birthplace from family lore too ("Her father, George Marlow, was born in
1851", "She married Nils Berg, who was born in Malmö", "His partner, John Ferris, son of
Samuel Ferris"). Taking the first "born" of a page answers with someone else's date. A
statement is the subject's where the clause that makes it has the subject as its
grammatical subject: the page's name or a part of it ("Ellery", "Edith"; not "Paul
Ellery"), or a pronoun whose antecedent is the subject, at the clause's start, after any
opening phrase ("In 1950,", "Born in Leeds,"). A clause about a relative ("His father",
"Rose's mother", "Her husband, the painter Luc Salle,"), a relative clause ("..., who was
born in Malmö"), an apposition after another name ("John Ferris, son of ...") and a "he" on
a page about a woman are someone else's; what cannot be told is ``unknown``.

General rules of English sentences, not any corpus's wording; pure functions over strings.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from sleuth.facts.kin import FEMALE, HONORIFICS, LINKS, MALE, Sex, pronoun_sex
from sleuth.text.lexicon import wordset

Whose = Literal["subject", "other", "unknown"]

KIN_MALE = wordset("father son brother husband grandfather grandson uncle nephew stepfather "
                     "stepson widower fiancé boyfriend")
KIN_FEMALE = wordset("mother daughter sister wife grandmother granddaughter aunt niece "
                       "stepmother stepdaughter widow fiancée girlfriend")
KIN_NOUNS = KIN_MALE | KIN_FEMALE | wordset(
    "parents parent child children family grandparents grandchildren cousin cousins "
    "spouse partner ancestors descendants relatives siblings brothers sisters sons "
    "daughters great-grandfather great-grandmother")
# words that open a clause before its subject ("In 1950 she married", "After the war,")
OPENERS = wordset("in on at after before during following from by as since until when "
                  "while although though later then however early subsequently eventually "
                  "finally meanwhile thereafter afterwards also according between around "
                  "about under upon throughout despite for over within without once soon "
                  "thus there")
AUXILIARIES = wordset("is was were are has had have did does do will would can could may "
                      "might and or")
# a participle opening a clause with the subject's own description ("Born in Leeds, he")
PARTICIPLES = wordset("born died raised educated having trained")
PRONOUNS: dict[str, Sex | None] = {"he": "male", "she": "female", "they": None}
POSSESSIVES: dict[str, Sex | None] = {"his": "male", "her": "female", "their": None}
FIRST_PERSON = wordset("i we my our me us")
RELATIVES = wordset("who whom whose which")
# words with a final period that end no sentence
ABBREVIATIONS = wordset("jr sr st dr mr mrs ms mt ft no co inc ltd vs gen col capt lt sgt "
                          "rev hon prof sen gov pres fr maj adm lit fl ca c b d oct nov dec "
                          "jan feb mar apr aug sep sept")
_WORD = re.compile(r"[^\W_][\w'’.-]*|[,;:()]")
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)$", re.IGNORECASE)


@dataclass(frozen=True)
class Reading:
    """One value a page offers for a fact (a date, a place, a name), where it says it
    (``at``: the offset of the words that state it), whose it is and how it is stated
    ("field": a labelled field; "lead": the lead's parenthesis; "sentence"; "hedged": a
    sentence's date with a hedge before it, which may agree but adds no precision)."""

    value: object
    at: int
    whose: Whose
    how: str = "sentence"


@dataclass(frozen=True)
class Subject:
    """Who a page is about: the lowercase words of the names it goes by (its title and the
    name its lead opens with) and, where its pronouns say, whether a man or a woman."""

    names: frozenset[str]
    sex: Sex | None = None

    def named(self, mention: str) -> bool:
        """Whether ``mention`` ("Ellery", "Edith Marlow") names the subject: every word of
        it is one of the subject's names ("Paul Ellery" is another Ellery)."""
        words = _name_words(mention)
        return bool(words) and all(w in self.names or any(_spelled(w, n) for n in self.names)
                                   for w in words)


def _spelled(word: str, name: str) -> bool:
    """Whether ``word`` is another spelling of the name word ``name`` ("Theresia" for
    "Theresa"): the first five letters the same and the lengths within two."""
    return len(word) >= 5 and word[:5] == name[:5] and abs(len(word) - len(name)) <= 2


def _name_words(name: str) -> frozenset[str]:
    """The words of a name that tell one person from another, a hyphenated one's parts
    apart ("Bavaria-Munich", "Bavaria- Munich"): not its linking words, honorifics ("Sir",
    "Lady", "Duke") or ordinals."""
    words = re.findall(r"[^\W_]+(?:['’][^\W_]+)*\.?", re.sub(r"\([^()]*\)", " ",
                                                              name.lower()))
    return frozenset(w for w in words if w not in LINKS and w not in HONORIFICS and
                     w.rstrip(".") not in HONORIFICS and not _ORDINAL.match(w))


def plain_words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def subject_of(title: str, text: str) -> Subject:
    """The subject of a page titled ``title``: the title's name (without a disambiguation
    such as "(film)") and the capitalised words the page opens with ("Onika Tanya
    Maraj-Petty" on the page "Nicki Minaj"), and the sex its pronouns give."""
    lines = text.lstrip().split("\n")
    if len(lines) > 1 and plain_words(lines[0]) == plain_words(title):
        lines = lines[1:]  # the title, as an index's chunk or a Markdown heading repeats it
    opening = []
    for word in _WORD.findall(lines[0][:200]):
        if not (word[:1].isupper() or word.lower() in LINKS or _ORDINAL.match(word)) or \
                re.search(r"['’]s$", word):
            break
        opening.append(word)
    if opening and opening[0].lower() in NOT_NAMES:
        opening = []  # "Our grandfather", "Here lived", "The family"
    lead = "\n".join(lines)
    return Subject(_name_words(title) | _name_words(" ".join(opening)),
                   _subject_sex([title, *opening], lead))


def _subject_sex(names: list[str], lead: str) -> Sex | None:
    """Whether a page is about a man or a woman: a title in its name ("Archduchess Maria
    Theresa", "Prince Jacques"), else what its lead says it was ("was an English actress",
    "was the son of"), else the pronoun that opens its sentences ("She was born"), else the
    most of its pronouns (a page about a woman says "his" of her husband and father)."""
    said = [w.lower().rstrip(",.") for w in " ".join(names).split()]
    copula = re.search(r"\b(?:is|was)\s+((?:[^\s.;]+\s+){1,8})", lead[:400])
    described = copula.group(1).lower().split() if copula else []  # within its sentence
    for words in (said, described):
        male = any(w in MALE for w in words)
        female = any(w in FEMALE for w in words)
        if male != female:
            return "male" if male else "female"
    opening = re.search(r"(?:^|[.!?]\s+|\n)(He|She)\s", lead)
    if opening:
        return "male" if opening.group(1) == "He" else "female"
    return pronoun_sex(lead)


# capitalised words that open a sentence, not a name
NOT_NAMES = wordset("the a an our my his her their its this these those here there in on at "
                      "after before during from by for we i it they he she")


@functools.lru_cache(maxsize=256)
def sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    """The (start, end) of each sentence of ``text``: a break after ".", "!" or "?" before a
    capital (not after an initial or a known abbreviation: "C. Maurice", "Dr. Amos",
    "Oct. 4"), or at a line's end."""
    spans, start = [], 0
    for m in re.finditer(r"(?<=[.!?])[\"”’)]?\s+(?=[\"“(]?[A-Z0-9À-Þ])|\n+", text):
        word = re.search(r"(\w+)\.[\"”’)]?\s*$", text[start:m.start() + 1])
        if m.group(0)[0] != "\n" and word and (word.group(1).lower() in ABBREVIATIONS or
                                               len(word.group(1)) == 1):
            continue
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return tuple(s for s in spans if s[1] > s[0])


def clause_after(text: str, end: int, limit: int = 90) -> str:
    """The words after ``end`` up to the end of their sentence, a semicolon, a line's end or
    a comma before a new clause's pronoun ("Born on Paros, he studied in Athens"), at most
    ``limit`` characters: where a cue's date or place is looked for."""
    spans = sentence_spans(text)
    i = _sentence_at(text, end)
    stop = min(spans[i][1], end + limit) if spans else end + limit
    return re.split(r";|\n|,\s+(?:he|she|they|it|his|her|their)\b", text[end:stop])[0]


def _sentence_at(text: str, at: int) -> int:
    spans = sentence_spans(text)
    return next((i for i, (s, e) in enumerate(spans) if s <= at < e + 1), len(spans) - 1)


def whose(text: str, at: int, subject: Subject) -> Whose:
    """Whose statement the words at ``at`` of ``text`` are (a "born", a "son of", a
    "married"): the subject's, someone else's or unclear (see the module's rules)."""
    spans = sentence_spans(text)
    i = _sentence_at(text, at)
    start = spans[i][0]
    start = _clause_start(text, start, at)
    head = text[start:at]
    apposed = _apposed(head)
    if apposed is not None:
        # "Prof. Alan Reed, born 1950", "married Jane Doe (born 1850)": of the name before
        return "subject" if subject.named(apposed) else "other"
    relative = _last_relative(head)
    resumed = re.search(r",\s*(?=(?:he|she|they)\s)", head[relative.end():]) if relative \
        else None
    if relative is not None and resumed:  # "the struggles which led to ..., he was banished"
        start += relative.end() + resumed.end()
        head = text[start:at]
    elif relative is not None:
        return _relative(text, start, relative, subject, i)
    if re.fullmatch(r"\s*(?:The|An?|One)\s+(?:[a-z]+\s+){0,2}", head) and \
            re.match(r"(?:sons?|daughters?|child|heir|widow)\s", text[at:]):
        # "The daughter of A and B, she married": of the main clause's subject
        return _main_subject(text[at:spans[i][1]], subject, text, i)
    found = _clause_subject(text, start, at, subject, i)
    if found == "subject" and _kin_between(text, start, at):
        return "other"  # "Edith married Tom in 1912 and their son was born in 1915"
    return found


# a capitalised word, with an apostrophe inside ("O'Brien") but not a possessive ("Rose's")
_CAPITAL = r"[A-Z][\w.-]*(?:['’](?!s\b)[\w.-]+)*"
_NAME_RUN = rf"(?:{_CAPITAL}\s+(?:(?:of|de|von|van|der|the)\s+)?)*{_CAPITAL}"
# a place named after a preposition, with the parts after its commas ("born at New Haven,
# Connecticut,"): no person an apposition is about
_PLACE_TAIL = re.compile(rf"\b(?:in|at|near|from|to|of|for|by)\s+{_NAME_RUN}"
                         rf"(?:\s*,\s*{_NAME_RUN})*\s*(?:,|\(\s*)$")


def _apposed(head: str) -> str | None:
    """The name a statement is set beside ("John Ferris, son of", "Jane Doe (born"), where
    ``head`` (the clause up to it) ends with one that does not open the clause and is no
    place; an article and a word may follow the comma ("married Eulália Prado, the
    daughter of", "Gaitelgrima, a younger daughter of")."""
    head = re.sub(r",\s*(?:a|an|the)\s+(?:[a-z]+\s+)?$", ",", head)
    found = re.search(rf"({_NAME_RUN})\s*(?:,|\(\s*)$", head)
    if found is None or not head[:found.start()].strip(" \"“'") or _PLACE_TAIL.search(head):
        return None
    if re.search(r"\b(?:another|other|namesake)\s+$", head[:found.start()]):
        return "another " + found.group(1)  # "another Papianilla (wife of ...)": not her
    return found.group(1)


def _clause_start(text: str, start: int, at: int) -> int:
    """Where the clause holding ``at`` starts: after the last semicolon before it outside a
    parenthesis ("(born 1890; died 1944) was" is one clause)."""
    depth, found = 0, start
    for k in range(start, at):
        char = text[k]
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == ";" and depth <= 0:
            found = k + 1
    return found


def whose_possessive(text: str, at: int, subject: Subject) -> Whose:
    """Whose relative a possessive pronoun at ``at`` names ("Her parents were ...", "his
    wife, Anne"): the subject's where it opens its clause and its antecedent is the subject,
    or where the clause is about the subject; else someone else's."""
    word = text[at:at + 6].split()[0].lower() if text[at:at + 6].split() else ""
    sex = POSSESSIVES.get(word)
    if word not in POSSESSIVES:
        return "unknown"
    spans = sentence_spans(text)
    i = _sentence_at(text, at)
    start = spans[i][0]
    head = text[start:at]
    if subject.sex and sex and sex != subject.sex:
        return "other"
    if not _opening(head).strip():
        return _pronoun(text, i, sex, subject)
    if _last_relative(head) is not None:
        return "other"
    found = _clause_subject(text, start, at, subject, i)
    if found == "subject" and _kin_between(text, start, at):
        return "other"
    return found


def _opening(head: str) -> str:
    """What a clause holds before the words asked about, less an opening phrase."""
    return _skip_openers(head)


def _last_relative(head: str) -> re.Match[str] | None:
    found = None
    for m in re.finditer(r"\b(?:who|whom|whose|which)\b", head):
        found = m
    return found


def _relative(text: str, start: int, relative: re.Match[str], subject: Subject,
              i: int) -> Whose:
    """A relative clause's subject: after "after which", "to whom" the words that follow
    ("after which he married"); else the name before the pronoun ("Nils Berg, who")."""
    head = text[start:start + relative.start()]
    word = relative.group(0)
    if word in ("which", "whom") and re.search(r"\b(?:after|before|in|to|with|by|from|of|"
                                               r"for|during)\s*$", head):
        return _clause_subject(text, start + relative.end(), start + relative.end() + 200,
                               subject, i, after=True)
    if word == "whose":
        return "other"
    before = re.search(rf"({_NAME_RUN})\s*,?\s*$", head)
    if before and subject.named(before.group(1)):
        return "subject"
    copula = re.search(r"\b(?:is|was)\s+(?:an?|the|one)\b[^,;()]*$", head)
    if copula and not before and \
            _clause_subject(text, start, start + copula.start(), subject, i) == "subject":
        return "subject"  # "X was a devoted father who passed away on ..."
    if not before and not head.strip(" ,"):
        return "unknown"
    return "other"


def _skip_openers(head: str) -> str:
    """``head`` without the phrase a clause opens with: "In 1950", "After the war,", "Born in
    Leeds,", "According to family tradition,", "The son of a farmer,"."""
    rest = head.lstrip(" \"“'")
    for _ in range(3):
        words = rest.split()
        if not words:
            return rest
        first = words[0].lower().strip(",")
        # "Turning to films, he", "Originally focused on ..., Briscoe": not "Baring was"
        gerund = first.endswith(("ing", "ed", "ly")) and len(words) > 1 and \
            words[1][:1].islower() and words[1] not in AUXILIARIES
        if first in OPENERS or first in PARTICIPLES or gerund:
            date = re.match(r"\S+\s+(?:(?:the\s+)?(?:early|late|mid)?\s*\d{3,4}s?|"
                            r"(?:\d{1,2}\s+)?[A-Z][a-z]+\.?\s+(?:\d{1,2},?\s+)?\d{3,4})"
                            r"\s*,?\s*(?!and\b)", rest)
            after_comma = re.search(r",\s*(?=(?:he|she|they)\b)", rest)
            pronoun = re.search(r"(?<=\s)(?:he|she|they)\b", rest)
            comma = rest.find(",")
            if after_comma:  # "Born in Jasra, Bahrain, he became", "Between 974 and 998, he"
                rest = rest[after_comma.end():]
            elif date and first not in PARTICIPLES:
                rest = rest[date.end():]  # "In 1785 he married"
            elif pronoun and (comma < 0 or pronoun.start() < comma):
                rest = rest[pronoun.start():]
            elif comma >= 0:
                rest = rest[comma + 1:].lstrip()
            else:
                return ""
            continue
        lead = re.match(r"(?:The|An?)\s+(?:[a-z]+\s+){0,2}(?:son|daughter|child|widow|"
                        r"grandson|granddaughter|heir)\s+of\b", rest)
        if lead:
            pronoun = re.search(r",\s*(?:he|she)\b", rest)
            rest = rest[pronoun.start() + 1:].lstrip() if pronoun else ""
            continue
        return rest
    return rest


def _clause_subject(text: str, start: int, at: int, subject: Subject, i: int, *,
                    after: bool = False) -> Whose:
    """Whom the clause from ``start`` (its sentence ``i``) is about, by the words it opens
    with once an opening phrase is skipped."""
    head = _skip_openers(text[start:at] if not after else text[start:at])
    words = head.split()
    if not words:
        # the words asked about open the clause ("Born in Leeds, Smith ...": the main clause's
        # subject, after the phrase)
        return _main_subject(text[at:sentence_spans(text)[i][1]], subject, text, i)
    first = words[0].lower().strip(",")
    if first in PRONOUNS:
        return _pronoun(text, i, PRONOUNS[first], subject)
    if first in POSSESSIVES or first in FIRST_PERSON:
        return "other"
    if first in ("the", "a", "an", "this", "that", "these", "those", "there", "it", "its",
                 "family", "according"):
        return "other" if first != "it" else "unknown"
    name = re.match(rf"((?:{_CAPITAL}|(?:of|de|von|van|der|the|la|le|du|da|di)(?=\s+[A-Z]))"
                    rf"(?:\s+(?:{_CAPITAL}|of|de|von|van|der|the|la|le|du|da|di|"
                    r"\d+(?:st|nd|rd|th)))*)", head)
    if name is None:
        return "unknown"
    rest = head[name.end():]
    if re.match(r"['’]s?\b", rest):
        return "other"  # "Rose's mother", "Raghnall's father"
    mention = re.sub(r"\s+(?:himself|herself)$", "", name.group(1))
    return "subject" if subject.named(mention) else "other"


def _main_subject(tail: str, subject: Subject, text: str, i: int) -> Whose:
    """The subject of the main clause after an opening phrase that holds the words asked
    about ("Born in Hoboken, New Jersey, Sinatra began"): the first pronoun or name after a
    comma, followed by a lowercase word."""
    for m in re.finditer(r",\s*((?:[A-Z][\w'’.-]*\s+)*[A-Z][\w'’.-]*|he|she|they)\s+(?=[a-z])",
                         tail):
        word = m.group(1)
        if word in PRONOUNS:
            return _pronoun(text, i, PRONOUNS[word], subject)
        if subject.named(word):
            return "subject"
    return "unknown"


def _pronoun(text: str, i: int, sex: Sex | None, subject: Subject) -> Whose:
    """Whom a pronoun (of ``sex``) in sentence ``i`` stands for: the person the nearest
    sentence before opens with whose sex does not contradict it (sentences about a thing,
    "The film", "Her career", are passed over); where none, the subject if its sex does not
    contradict the pronoun's."""
    if sex is None:
        return "unknown"  # "they": a couple, a family
    if subject.sex and sex != subject.sex:
        return "other"
    spans = sentence_spans(text)
    for j in range(i - 1, max(-1, i - 6), -1):
        start, end = spans[j]
        kind, found_sex = _opening_of(text[start:end], subject)
        if kind in ("pronoun", "thing") or (found_sex and found_sex != sex):
            continue
        if kind == "subject":
            return "subject"
        return "other" if found_sex == sex else "unknown"
    return "subject"


def _opening_of(sentence: str, subject: Subject) -> tuple[str, Sex | None]:
    """What a sentence opens with: the "subject", a "pronoun", another "person" (with the
    sex its words give: "His father" is a man) or a "thing" ("The film", "Her career")."""
    head = _skip_openers(sentence)
    words = [w.strip(",").lower() for w in head.split()[:4]]
    if not words:
        return "thing", None
    if words[0] in PRONOUNS:
        return "pronoun", PRONOUNS[words[0]]
    possessed = re.match(rf"(?:his|her|their|its|{_CAPITAL}['’]s?)\s+(?:[a-z]+\s+)?([a-z-]+)",
                         head, re.IGNORECASE)
    determined = re.match(r"(?:the|an?|one)\s+(?:[a-z]+\s+)?([a-z-]+)", head, re.IGNORECASE)
    found = possessed or determined
    if found and (possessed or words[0] in ("the", "a", "an", "one")):
        noun = found.group(1).lower()
        if noun in KIN_NOUNS or noun in PERSON_NOUNS:
            return "person", _kin_sex(noun)
        return "thing", None
    name = re.match(rf"{_NAME_RUN}", head)
    if name and words[0] not in FIRST_PERSON:
        return ("subject", subject.sex) if subject.named(name.group(0)) else ("person", None)
    return "thing", None


# nouns of a person who is no relative ("Her teacher, Ida Kern, ...")
PERSON_NOUNS = wordset("friend teacher partner colleague student pupil mentor rival lover "
                         "companion tutor patron master servant successor predecessor "
                         "assistant secretary guardian")


def _kin_sex(word: str | None) -> Sex | None:
    return "male" if word in KIN_MALE else "female" if word in KIN_FEMALE else None


def _kin_between(text: str, start: int, at: int) -> bool:
    """Whether a relative becomes the clause's subject before ``at``: "and their son was",
    "and his wife died" (a "son of" names the subject's parents and does not)."""
    between = text[start:at]
    for m in re.finditer(r"\b(?:his|her|their)\s+(?:[a-z]+\s+)?([a-z-]+)\b(?!\s+of\b)",
                         between):
        if m.group(1) in KIN_NOUNS:
            return True
    return False


def whose_object(text: str, at: int, subject: Subject) -> Whose:
    """Whom an object pronoun at ``at`` stands for ("Sir Giles Pemberton married her"): the
    subject of the nearest sentence before of its sex, as :func:`_pronoun` resolves it."""
    word = text[at:at + 4].split()[0].lower() if text[at:at + 4].split() else ""
    sex: Sex | None = "female" if word == "her" else "male" if word == "him" else None
    if sex is None:
        return "unknown"
    return _pronoun(text, _sentence_at(text, at), sex, subject)


def judge_for(subject: Subject) -> Callable[[str, int, str], bool]:
    """A :data:`sleuth.facts.kin.Judge` that keeps what is said of ``subject``."""
    readers = {"clause": whose, "possessive": whose_possessive, "object": whose_object}

    def judge(text: str, at: int, how: str) -> bool:
        return readers[how](text, at, subject) == "subject"
    return judge

