"""Family and nationality as an encyclopedia lead states them: parents ("the son of A and
his wife B", "was born in Rabat to A and B"), spouses ("He married C", "the wife of D"),
whether a person is a man or a woman, and a nationality ("was an Austrian-born American
composer").

"The son of Clara Jane Bryant Ford and the only child of Henry Ford" names a mother first;
"the daughter of actors Amrita Singh and Saif Ali Khan" does not say which is which; the
first name beside "son of", which finds a director beside "directed by", is not a father.
Questions such as "Who is the paternal grandfather of X?" go through two pages and two
such readings (2Wiki's inference questions, BENCHMARKS §16). Pure functions over strings,
like :mod:`sleuth.facts.lives`: the ``person_fact`` tool finds the pages and follows the names
read here from one to the next.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from sleuth.facts.fields import fields, heading_end
from sleuth.text.lexicon import NAME_LINKS, wordset

Sex = Literal["male", "female"]

MALE = wordset("king prince duke count earl baron marquess margrave landgrave elector emperor "
               "archduke viscount lord sir mr tsar sultan shah actor father husband son "
               "brother nobleman")
FEMALE = wordset("queen princess duchess countess baroness marchioness margravine landgravine "
                 "electress empress archduchess viscountess lady dame mrs miss tsarina actress "
                 "mother wife daughter sister noblewoman")
# A title a name goes on with after a comma ("Albert III, Duke of Bavaria", "William de
# Beauchamp, 1st Baron Bergavenny"); or an ordinal ("5th").
RANKS = wordset("king queen prince princess duke duchess count countess earl baron baroness "
                "marquess marchioness margrave margravine landgrave elector electress emperor "
                "empress archduke archduchess viscount viscountess lord lady sultan shah tsar "
                "grand infante infanta dauphin crown palatine heiress")
# Honorifics a page title leaves out ("Queen Marie Leszczyńska" is "Marie Leszczyńska").
HONORIFICS = RANKS | wordset("sir dame saint st. hon. dr. mr. mrs. the rev. master")
LINKS = NAME_LINKS | wordset("zu und")
# Words between "and" and a name that say it is not a parent or spouse named beside another,
# or before a name, that it is someone else ("the daughter of a coffee planter of Campinas",
# "married into the family of the circus's founder, Anselmo Fénix")
NOT_PARENTS = wordset("became was is had has succeeded inherited later then brother sister "
                      "half-brother half-sister nephew niece cousin grandson granddaughter "
                      "successor to with in at on near from consort of into")
# Lowercase words that may follow a name; any other makes the capitalised words before it
# a description ("married to the Polish artist, Anna Rajecka")
AFTER_NAMES = wordset("and or in on at of the who whom whose which that with from for to by "
                      "after before until since but was is were had has when while where as "
                      "a an between during around about near born died also he she they it "
                      "his her their")
_TOKEN = re.compile(r"[^\W\d_][\w'’.-]*|\d+(?:st|nd|rd|th)\b\.?|\d+|[(),;:—–]|\S")
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)$", re.IGNORECASE)
# "the son of", "the fourth son of", "only child of", "born in Rabat to", "born 1459 to"
_PARENTS = re.compile(r"\b(?:sons?|daughters?|child|children|stepson|stepdaughter)"
                      r"(?:\s+and\s+(?:heir|successor)\s+|\s*—[^—]{1,60}—\s*|\s+)of\s+|"
                      r"\bborn\b(?:(?!\band\b)[^.;()]){0,60}?\bto\s+"
                      r"(?=[A-Z]|(?:the\s+)?[a-z]+\s+[A-Z])",
                      re.IGNORECASE)
# "Philippa de Beauchamp, daughter of ...", "Gaitelgrima, a daughter of ...": an apposition
# about someone else the page names
_APPOSED = re.compile(r"[A-Z][\w'’.-]*,\s+(?:(?:a|an|the)\s+)?(?:\w+\s+)?$")
_NAMED_PARENT = re.compile(r"\b(?:his|her|their)\s+(?P<kin>father|mother)\s*(?:,|was|is)\s+",
                           re.IGNORECASE)
_SPOUSE = re.compile(r"\b(?:married|wed)\s+(?:(?:in|on)\s+[^,.;]{1,25}?\s+)?(?:to\s+)?|"
                     r"\b(?:wife|husband|widow|widower|spouse)\s+of\s+|"
                     r"\b(?:his|her)\s+(?:wife|husband|spouse)(?:,\s*|\s+was\s+|\s+(?=[A-Z]))",
                     re.IGNORECASE)
_DEMONYM = re.compile(r"[A-Z][a-zà-ÿ]+(?:an|ian|ese|ish|ch|sh|ic|i|ite)$")
DEMONYMS = wordset("Greek Thai Swiss Filipino Basque Lao Inuit Maori")
# Capitalised words of a lead that end like a nationality and are none
NOT_DEMONYMS = wordset("Christian Lutheran Anglican Republican Catholic Islamic Olympic "
                       "Gothic Victorian Elizabethan Edwardian Georgian Shi'i Sunni")
_SUBJECT = re.compile(r"\b(?:is|was|were)\s+(?:an?|the)\s+", re.IGNORECASE)


@dataclass(frozen=True)
class Relative:
    """A person a page names in a family role, as written, with the sex the words around
    the name give (None: they do not say)."""

    name: str
    sex: Sex | None = None


def _tidy(text: str) -> str:
    """Spacing some encyclopedia dumps break ("Orléans- Braganza", "Paris( the")."""
    text = re.sub(r"(?<=\w)- (?=\w)", "-", text)
    return re.sub(r"(?<=\w)\(", " (", text)


def _sex_of(words: list[str]) -> Sex | None:
    lowered = [w.lower().rstrip(",.") for w in words]
    male = sum(w in MALE for w in lowered)
    female = sum(w in FEMALE for w in lowered)
    return "male" if male > female else "female" if female > male else None


def _name(tokens: list[str], at: int) -> tuple[str | None, list[str], int]:
    """The name starting at or after ``tokens[at]`` (after up to a few describing words:
    "actors", "his wife ,", "Queen", "the Polish artist ,"), the describing words with the
    name's own, and where the name ends."""
    said: list[str] = []
    for _ in range(3):  # capitalised words that describe ("Polish", "Nobel Prize laureate")
        while at < len(tokens) and len(said) < 8 and (tokens[at][:1].islower() or
                                                      tokens[at] == ","):
            if tokens[at] in ("and", "or"):
                break
            said.append(tokens[at])
            at += 1
            if said[-1].endswith("."):
                return None, said, at  # "whom she married three years later. From 1936"
        if any(w in NOT_PARENTS or w.endswith("ed") for w in said):
            return None, said, at  # "and became Duke of ...", "and half-brother to ..."
        words, at = _run(tokens, at)
        following = tokens[at] if at < len(tokens) else ""
        if not (words and following[:1].islower() and following not in AFTER_NAMES and
                not words[-1].endswith(".")):
            break
        said += words
    else:
        return None, said, at
    if not words:
        return None, said, at
    name = " ".join(words).replace(" ,", ",")
    return name, said + words, at


def _run(tokens: list[str], at: int) -> tuple[list[str], int]:
    """The capitalised words of a name from ``tokens[at]``, with linking words inside and a
    title after a comma ("Albert III, Duke of Bavaria"); cut at a sentence's end."""
    words: list[str] = []
    while at < len(tokens):
        token = tokens[at]
        if token[:1].isupper() or (words and (token.lower() in LINKS or
                                              _ORDINAL.match(token.rstrip(".")))):
            words.append(token)
            at += 1
            if token.endswith(".") and len(token.rstrip(".")) > 1 and \
                    token.lower() not in HONORIFICS:
                words[-1] = token.rstrip(".")
                break  # a sentence ends with this name
            continue
        following = tokens[at + 1] if at + 1 < len(tokens) else ""
        if token == "," and words and (following.lower() in RANKS or
                                       _ORDINAL.match(following.rstrip("."))):
            words.append(",")
            at += 1
            continue
        break
    while words and (words[-1].lower() in LINKS or words[-1] == ","):
        words.pop()
        at -= 1
    return words, at


def _skip_aside(tokens: list[str], at: int) -> int:
    """Past a parenthesis, a dash-enclosed aside or a short apposition after a name ("(the
    Orléanist claimant)", "—Stanislaus I of Poland–", ", the last Emperor of Austria,")."""
    while at < len(tokens):
        if tokens[at] == "(":
            depth = 0
            for end in range(at, len(tokens)):
                depth += {"(": 1, ")": -1}.get(tokens[end], 0)
                if depth == 0:
                    break
            at = end + 1
        elif tokens[at] in ("—", "–"):
            ends = [i for i in range(at + 1, min(len(tokens), at + 16)) if tokens[i] in
                    ("—", "–")]
            if not ends:
                return at
            at = ends[0] + 1
        elif tokens[at] == "," and at + 1 < len(tokens) and tokens[at + 1][:1].islower() and \
                tokens[at + 1] not in ("and", "or"):
            ends = [i for i in range(at + 1, min(len(tokens), at + 14)) if tokens[i] == ","]
            if not ends or any(t in (".", ";") for t in tokens[at:ends[0]]):
                return at
            at = ends[0] + 1
        else:
            return at
    return at


def _names_after(text: str, *, pair: bool) -> tuple[list[Relative], int]:
    """The name ``text`` starts with and, when ``pair``, the other parent after "and" ("A
    and his wife B"), each with the sex its words give; and how much of ``text`` they
    take. A name of one word after "and" belongs to the one before ("Charles I and IV",
    "Count Palatine of Simmern and Zweibrücken")."""
    spans = list(_TOKEN.finditer(text[:400]))
    tokens = [m.group(0) for m in spans]
    found: list[Relative] = []
    at = 0
    while len(found) < (3 if pair else 1):
        name, said, at = _name(tokens, at)
        if name is None:
            break
        if found and " " not in name and len(said) == 1:
            found[-1] = Relative(f"{found[-1].name} and {name}", found[-1].sex)
        else:
            found.append(Relative(name, _sex_of(said)))
        if not pair and " of " in name and tokens[at:at + 1] == ["and"]:
            more, more_words, end = _name(tokens, at + 1)  # "Connaught and Strathearn"
            if more and " " not in more and len(more_words) == 1:
                found[-1] = Relative(f"{name} and {more}", found[-1].sex)
                at = end
        at = _skip_aside(tokens, at)
        if at < len(tokens) and tokens[at] == ",":
            at += 1
        if not pair or at >= len(tokens) or tokens[at] not in ("and", "&"):
            break
        at += 1
    used = spans[min(at, len(spans)) - 1].end() if spans and at else 0
    return found[:2], used


@dataclass(frozen=True)
class Family:
    """The parents and spouses a page names, in the order it names them."""

    parents: tuple[Relative, ...] = ()
    spouses: tuple[Relative, ...] = ()


Judge = Callable[[str, int, str], bool]
"""Whether the words at an offset of a (tidied) text state the page subject's own
relation: called with the text, the offset and how the relation is stated ("clause": the
clause's subject's, as "son of", "married"; "possessive": a "his"/"her" opening it, as
"her parents were"; "object": a "her"/"him" after "married")."""


def family(text: str, judge: Judge | None = None) -> Family:
    """The parents ("son of A and B", "born ... to A and B", "His father was A", "Her
    parents were A and B") and the spouses ("married C", "wife of D", "his first wife, E",
    "F married her") a page names. A spouse named inside the parents' phrase ("son of King
    Louis XV and his wife, Queen Marie") is a parent's; a phrase that goes on from the first
    ("son of A and the only child of B") names the other parent; one after another name and
    a comma ("His mother was Anne, the daughter of C") is about that other person, and read
    only when nothing else is. With ``judge``, only what it says is the subject's own is
    read, and no such phrase about another person is."""
    return _stated_family(text) or _lead_family(text, judge)


def _lead_family(text: str, judge: Judge | None = None) -> Family:
    """The family a lead's sentences name (:func:`family`): the page's own text first, its
    heading line only for what the text does not name ("Louis, Dauphin of France (son of
    Louis XV)" names one parent where the lead names both; "Papianilla (wife of Sidonius
    Apollinaris)" names the husband the lead does not)."""
    start = heading_end(text)
    own = _sentences_family(text[start:], judge)
    if "(" not in text[:start] or (own.parents and own.spouses):
        return own  # a heading says a relation only in its parenthesis
    whole = _sentences_family(text, judge)
    return Family(own.parents or whole.parents, own.spouses or whole.spouses)


def _sentences_family(text: str, judge: Judge | None = None) -> Family:
    """The parents and spouses ``text``'s sentences name (:func:`_lead_family`)."""
    text = _tidy(text)
    taken: list[tuple[int, int]] = []
    apposed: list[re.Match[str]] = []
    parents = _parents_of(text, judge, taken, apposed)
    for match in _PARENTS_WERE.finditer(text):
        if parents or (judge is not None and not judge(text, match.start(), "possessive")):
            continue
        names, used = _names_after(text[match.end():], pair=True)
        parents = _paired(names)
        taken.append((match.start(), match.end() + used))
    for match in _NAMED_PARENT.finditer(text):
        if judge is not None and not judge(text, match.start(), "possessive"):
            continue
        if re.match(r"[a-z]+(?:ing|ed)\b", text[match.end():]):
            continue  # "his father was besieging Naples": no name
        sex: Sex = "male" if match["kin"].lower() == "father" else "female"
        for named in _names_after(text[match.end():], pair=False)[0]:
            if all(named.name != p.name for p in parents):
                parents.append(Relative(named.name, sex))
    if not parents and apposed and judge is None:  # "a member of the House of X, the daughter of"
        names, used = _names_after(text[apposed[0].end():], pair=True)
        parents = _paired(names)
        taken.append((apposed[0].start(), apposed[0].end() + used))
    return Family(tuple(parents), tuple(_spouses(text, taken, parents, judge)))


def _parents_of(text: str, judge: Judge | None, taken: list[tuple[int, int]],
                apposed: list[re.Match[str]]) -> list[Relative]:
    """The parents "son of A and B" and "born ... to A and B" name (:func:`family`), the
    phrases read added to ``taken`` and those set beside another name to ``apposed``."""
    parents: list[Relative] = []
    for match in _PARENTS.finditer(text):
        if len(parents) >= 2 or (taken and match.start() > taken[-1][1] + 12):
            break
        if judge is not None:  # whose it is, the judge says ("X, a daughter of", "Her
            if not judge(text, match.start(), "clause"):  # teacher, Ida, daughter of")
                continue
        elif _APPOSED.search(text[max(0, match.start() - 60):match.start()]):
            apposed.append(match)  # likely about another person the page names
            continue
        names, used = _names_after(text[match.end():], pair=True)
        parents += [n for n in names if n.name not in {p.name for p in parents}]
        taken.append((match.start(), match.end() + used))
    return _paired(parents[:2])


# "Her parents were the brewer Konrad Voss and his wife Lina Hartmann"
_PARENTS_WERE = re.compile(r"\b(?:his|her|their)\s+parents\s+(?:were|are)\s+", re.IGNORECASE)
# "Sir Giles Pemberton married her in 1785": the name is the spouse of whom "her" stands for
_MARRIED_OBJECT = re.compile(r"((?:[A-Z][\w'’.-]*\s+(?:(?:of|de|von|van|der)\s+)?)*"
                             r"[A-Z][\w'’.-]*)\s+(?:married|wed)\s+(her|him)\b")


def _spouses(text: str, taken: list[tuple[int, int]], parents: list[Relative],
             judge: Judge | None = None) -> list[Relative]:
    """The spouses a lead names outside the parents' phrases (``taken``); with ``judge``,
    also the one who "married her" (or "him") where that pronoun is the subject."""
    spouses: list[Relative] = []
    for match in _SPOUSE.finditer(text):
        if any(start <= match.start() < end for start, end in taken):
            continue  # a parent's spouse
        how = "possessive" if match.group(0)[:3].lower() in ("his", "her") else "clause"
        if judge is not None and not judge(text, match.start(), how):
            continue
        for named in _names_after(text[match.end():], pair=False)[0]:
            if " " not in named.name and spouses:  # "his wife Mapy": one named before
                spouses[-1] = _also_named(spouses[-1], named.name, text)
            elif named.name not in {s.name for s in spouses} | {p.name for p in parents}:
                spouses.append(named)
    for match in _MARRIED_OBJECT.finditer(text):
        if judge is None:
            break
        name = re.split(r"(?<=\w\w)\.\s+", match.group(1))[-1]  # "Bath. Sir Giles ..."
        name = re.sub(r"^(?:The|A|An|In|On|At|After|Later|Then)\s+", "", name)
        if name[:1].isupper() and judge(text, match.start(2), "object") and \
                name not in {s.name for s in spouses}:
            spouses.append(Relative(name, "male" if match.group(2) == "her" else "female"))
    return spouses


def _also_named(spouse: Relative, first: str, text: str) -> Relative:
    """A spouse named in full ("married María del Pilar Cordero, who adopted the stage name
    of Mapy Cortés") and later by a first name alone ("his wife Mapy"): the same person, and
    where the page gives that first name in full, under both names."""
    for match in re.finditer(rf"\b{re.escape(first)}((?:\s+[^\W\d_][\w'’-]*)+)", text):
        surname = list(itertools.takewhile(lambda w: w[:1].isupper(), match.group(1).split()))
        full = " ".join([first, *surname])
        if surname and full not in spouse.name:
            return Relative(f"{spouse.name} ({full})", spouse.sex)
    return spouse


def _stated_family(text: str) -> Family | None:
    """Parents and spouses from labelled fields ("Father: A", "Parents: A, B", "Spouse(s):
    C (m. 1990), D"), or None when the page has none."""
    stated = fields(text)
    if not stated.keys() & {"father", "mother", "parents", "spouse"}:
        return None
    parents = [Relative(_field_name(stated[k]), "male" if k == "father" else "female")
               for k in ("father", "mother") if k in stated]
    if not parents and "parents" in stated:
        parents = [Relative(_field_name(p)) for p in re.split(r",|\band\b|&", stated["parents"])
                   if _field_name(p)][:2]
    spouses = [Relative(_field_name(p)) for p in re.split(r",|;|\band\b", stated.get("spouse", ""))
               if _field_name(p)]
    return Family(tuple(_with_opposite_sexes(parents)), tuple(spouses))


def _field_name(value: str) -> str:
    """A name as a field writes it, without its dates ("Jane Roe (m. 1990)")."""
    return re.sub(r"\([^()]*\)", "", value).strip(" .")


def _with_opposite_sexes(parents: list[Relative]) -> list[Relative]:
    sexes = opposite_sexes([p.sex for p in parents])
    return [Relative(p.name, sex) for p, sex in zip(parents, sexes, strict=True)]


def _paired(parents: list[Relative]) -> list[Relative]:
    """Two parents of whom the words tell one's sex: the other is of the other sex; a first
    name alone shares the other's surname ("son of John and Elizabeth Dickens")."""
    if len(parents) == 2 and " " not in parents[0].name and " " in parents[1].name:
        surname = parents[1].name.rsplit(" ", 1)[1]
        parents = [Relative(f"{parents[0].name} {surname}", parents[0].sex), parents[1]]
    sexes = opposite_sexes([p.sex for p in parents])
    return [Relative(p.name, sex) for p, sex in zip(parents, sexes, strict=True)]


def opposite_sexes(sexes: list[Sex | None]) -> list[Sex | None]:
    """The sexes of two parents of whom one's is known: the other's is the other."""
    if len(sexes) != 2 or (sexes[0] is None) == (sexes[1] is None):
        return sexes
    other: Sex = "female" if (sexes[0] or sexes[1]) == "male" else "male"
    return [sex or other for sex in sexes]


def pronoun_sex(text: str) -> Sex | None:
    """Whether a person's page speaks of a man or a woman (its pronouns), or None."""
    words = re.findall(r"\b(?:he|his|him|she|her|hers)\b", text.lower())
    male = sum(w in ("he", "his", "him") for w in words)
    female = len(words) - male
    if max(male, female) < 1 or male == female:
        return None
    return "male" if male > female else "female"


def extends(longer: str, name: str) -> bool:
    """Whether ``longer`` writes the person ``name`` more fully: every word of ``name`` in
    order, with only particles between them ("Hugh de Stafford" for "Hugh Stafford") and
    anything more only after a comma, as the rest of a title ("Princess Madeleine, Duchess
    of Hälsingland", "Prince Arthur, Duke of Connaught and Strathearn")."""
    long_words = re.findall(r"[\w'’.-]+|,", longer.lower())
    short_words = re.findall(r"[\w'’.-]+|,", name.lower())
    at = 0
    for word in short_words:
        while at < len(long_words) and long_words[at] != word and long_words[at] in LINKS:
            at += 1
        if at == len(long_words) or long_words[at] != word:
            return False
        at += 1
    return at == len(long_words) or "," in long_words[:at + 1]


def plain_name(name: str) -> str:
    """A name without its leading honorifics ("Queen Marie Leszczyńska" → "Marie
    Leszczyńska"), as a page would be titled."""
    words = name.split()
    while len(words) > 2 and words[0].lower() in HONORIFICS:
        words = words[1:]
    return " ".join(words)


def nationality(text: str, judge: Judge | None = None) -> str | None:
    """The nationality a person's lead gives ("is a former Pakistani singer" →
    "Pakistani"): the first word that reads as one after "is a", "was an" and at most two
    lowercase words, or None. Two nationalities are given as stated ("was an Austrian-born
    American film composer" → "Austrian-born American"): which one a question means (where
    they were from, what they became) is not the page's to say. With ``judge``, only a
    sentence about the page's subject is read ("Her father was a Polish officer" is not)."""
    stated = fields(text).get("nationality")  # "Nationality: Indian"
    if stated:
        return stated.split(",")[0].strip()
    text = _tidy(text)
    for match in _SUBJECT.finditer(text[:600]):
        if judge is not None and not judge(text, match.start(), "clause"):
            continue
        words = re.findall(r"[\w'’-]+", text[match.end():match.end() + 80])[:5]
        lead = 0
        while lead < min(2, len(words)) and words[lead][:1].islower():
            lead += 1
        if {"of", "to"} & set(words[:lead]):
            continue  # "was the son of Henri": a name, not a nationality
        found: list[str] = list(itertools.takewhile(_is_demonym, words[lead:lead + 2]))
        after = words[lead + len(found)] if lead + len(found) < len(words) else ""
        if found and after[:1].islower():
            if found[0].lower().endswith("-born"):
                return " ".join(found) if len(found) == 2 else found[0][:-len("-born")]
            return found[0]
    return None


def _is_demonym(word: str) -> bool:
    parts = [p for p in word.split("-") if p.lower() != "born"]
    return bool(parts) and all((_DEMONYM.match(p) or p in DEMONYMS) and p not in NOT_DEMONYMS
                               for p in parts)
