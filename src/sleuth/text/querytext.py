"""Query text into search terms: a question's entities and noun phrases, its content words.

Pure functions over strings; this module imports nothing of Sleuth but the word lists of
:mod:`sleuth.text.lexicon`, so the index, the retrieval rankings, the knowledge graph and the
agents' router can all use it without importing each other.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Sequence

from sleuth.text.lexicon import (
    ABBREVIATIONS,
    CLAUSE_OPENERS,
    FIGURE_NOUNS,
    GENERIC,
    MONTHS,
    NAME_LINKS,
    QUESTION_WORDS,
    RELATION_WORDS,
    RELATIONS,
    STOPWORDS,
    WH_WORDS,
    stem,
    word_matches,
    words,
)

# Words that are not an entity of a question on their own ("Film", "Director" capitalised):
# stop words, kinds of things and relations.
ENTITY_STOPWORDS = STOPWORDS | GENERIC | RELATION_WORDS
_UNSEARCHED = STOPWORDS | GENERIC  # words a question's keyword search never looks for alone
# A run of capitalised words (or numbers), with linking words such as "of the" inside.
_LINKS = "|".join(sorted(NAME_LINKS, key=lambda w: (-len(w), w)))
CAPITALISED = re.compile(
    rf"[A-Z0-9][\w'.:-]*(?:\s+(?:(?:{_LINKS})\s+)*[A-Z0-9][\w'.:-]*)*"
)
_QUOTED = re.compile(r"[\"“]([^\"”]{2,80})[\"”]")


def question_keywords(question: str) -> list[str]:
    """Entities and noun-phrase-like spans of a question, for keyword search.

    Quoted spans and runs of capitalised words (with linking words such as "of the") are
    kept whole; a leading question word is dropped. A lone stop word, kind of thing or
    relation word ("Film", "Director") is none, but an acronym is ("ALL", "US"). With none
    found, the content words but the kinds of things (:data:`~sleuth.text.lexicon.GENERIC`).
    """
    found: list[str] = [m.group(1).strip() for m in _QUOTED.finditer(question)]
    for match in CAPITALISED.finditer(question):
        parts = match.group(0).strip(" ?.,").split()
        while parts and parts[0].lower() in QUESTION_WORDS:
            parts = parts[1:]
        while parts and parts[-1].lower() in QUESTION_WORDS:
            parts = parts[:-1]
        phrase = re.sub(r"['’]s$", "", " ".join(parts).strip("():"))
        acronym = len(phrase) > 1 and phrase.isalpha() and phrase.isupper()  # "ALL", "US"
        if phrase and (acronym or phrase.lower() not in ENTITY_STOPWORDS):
            found.append(phrase)
    if not found:  # the content words, but kinds of things ("film", "time", "many")
        found = [m.group(0) for m in word_matches(question)
                 if m.group(0).lower() not in _UNSEARCHED]
    return list(dict.fromkeys(found))


def content_words(query: str) -> list[str]:
    """The query's words without stop words (:data:`~sleuth.text.lexicon.STOPWORDS`): its
    BM25 terms; all its words where every one is a stop word."""
    said = words(query)
    return list(dict.fromkeys(w for w in said if w not in STOPWORDS)) or said


# the tokens a name is read from: words with their inner apostrophes, periods and hyphens
# ("O'Brien", "St.", "Jean-Luc"), and the punctuation that ends a name
_TOKEN = re.compile(r"[^\W_][\w'’.-]*|[,;:()\"“”]")


def passage_names(text: str, *, single: bool = False) -> list[tuple[int, str]]:
    """Names in a passage, with their character offsets: runs of capitalised words (any
    script: "Pjer Žalica"), with linking words such as "of the" inside, cut at sentence
    ends ("Leo Fong. It" is "Leo Fong"), without a leading "In"/"The", a trailing
    possessive, or a leading number ("1948 French" is no name); dates ("12 August 1932")
    are left out, and so are names of one word unless ``single``. The same name may occur
    more than once."""
    out: list[tuple[int, str]] = []
    run: list[re.Match[str]] = []

    def close() -> None:
        while run and run[-1].group(0).lower() in NAME_LINKS:
            run.pop()
        while run and (run[0].group(0).lower() in CLAUSE_OPENERS or run[0].group(0)[0].isdigit()):
            run.pop(0)
        lowered = [t.group(0).rstrip(".").lower() for t in run]
        dated = any(w in MONTHS for w in lowered) and any(w[:1].isdigit() for w in lowered)
        if (len(run) > 1 or (single and run and len(lowered[0]) > 2)) and not dated:
            name = text[run[0].start():run[-1].end()].rstrip(".")
            out.append((run[0].start(), re.sub(r"['’]s$", "", name)))
        run.clear()

    for token in _TOKEN.finditer(text):
        word = token.group(0)
        capital = word[0].isupper() or (word[0].isdigit() and bool(run))
        if capital or (run and word.lower() in NAME_LINKS):
            run.append(token)
            stem = word.rstrip(".").lower()
            if word.endswith(".") and len(stem) > 1 and stem not in ABBREVIATIONS:
                close()  # a sentence ends here
        else:
            close()
    close()
    return out


def relation_group(word_stem: str) -> frozenset[str]:
    """The stems of the :data:`~sleuth.text.lexicon.RELATIONS` a stem belongs to ("fath" →
    the stems of father, son, daughter, ...), or just the stem."""
    return _INTENT_OF.get(word_stem, frozenset({word_stem}))


def _intent_of() -> dict[str, frozenset[str]]:
    groups = [frozenset(stem(w) for w in r.all) for r in RELATIONS]
    return {s: frozenset().union(*(g for g in groups if s in g)) for g in groups for s in g}


_INTENT_OF = _intent_of()


def relation_stems(text: str) -> list[str]:
    """The stems of ``text``'s relational words (those of
    :data:`~sleuth.text.lexicon.RELATIONS`: "grandfather", "born", "directed"), in order."""
    stems = (stem(w) for w in words(text))
    return list(dict.fromkeys(s for s in stems if s in _INTENT_OF))


def same_stem(one: str, other: str) -> bool:
    """Whether two crude stems are forms of one word: one begins the other, or they share
    their first four letters ("die", "died"; "marry", "married"), but "father" and
    "grandfather" are two relations."""
    shared = len(os.path.commonprefix([one, other]))
    return shared >= min(4, len(one), len(other))


def relation_cues(question: str) -> tuple[frozenset[str], frozenset[str]]:
    """The stems of a question's relational words, each widened to its
    :data:`~sleuth.text.lexicon.RELATIONS` group: (the *bridge* relation, all of them). The bridge
    relation is the one nearest a named entity, written before it ("the director of film
    X") or after its possessive ("X's mother"); the others ask about what lies beyond it
    ("where was ... born")."""
    lowered = question.lower()
    spans = []
    for name in question_keywords(question):
        at = lowered.find(name.lower())
        if at >= 0 and name[:1].isupper():
            end = at + len(name)
            possessive = re.match(r"['’]s?\b", question[end:])
            spans.append((at, end + possessive.end() if possessive else end,
                          possessive is not None))
    generic = {stem(w) for w in GENERIC}
    distance: dict[frozenset[str], int] = {}
    for match in word_matches(question):
        word = match.group(0).lower()
        if match.group(0)[0].isupper() and match.start() > 0 or not word.isalpha() or \
                word in STOPWORDS or len(word) < 3 or stem(word) in generic:
            continue
        if any(start <= match.start() < end for start, end, _ in spans):
            continue
        gaps = [len(words(lowered[match.end():start])) for start, _, _ in spans
                if start >= match.end()]
        gaps += [len(words(lowered[end:match.start()])) for _, end, owned in spans
                 if owned and end <= match.start()]
        gap = min(gaps, default=len(lowered))
        group = relation_group(stem(word))
        distance[group] = min(distance.get(group, gap), gap)
    if not distance:
        return frozenset(), frozenset()
    nearest = min(distance.values())
    bridge = frozenset().union(*(g for g, gap in distance.items() if gap == nearest))
    return bridge, frozenset().union(*distance)


def bridge_names(question: str, sentences: Sequence[str], *, cued: bool = False) -> list[str]:
    """The names in a passage's ``sentences`` that most likely stand for the entity a
    multi-hop question goes through ("the director of film X": the name after "directed
    by" in X's page), best first. Tiers: a name right after "<cue> by" (a passive: directed
    by, written by); a name within three words of a bridge cue ("son of", "married");
    then the names of sentences with a cue, nearest first (the bridge relation before the
    others); then the rest in order. Names the question states are left out; a name of one
    word counts only in the first two tiers and when no lowercase word follows it ("son of
    Yesugei" is a name, "by American rapper Tyga" is not). ``cued``: the first two tiers
    only."""
    return list(dict.fromkeys(name for tier, name in _bridge_tiers(question, sentences)
                              if tier <= 1 or not cued))


def _bridge_tiers(question: str, sentences: Sequence[str]) -> list[tuple[int, str]]:
    """:func:`bridge_names` with each name's tier (0 and 1: named beside a bridge cue)."""
    bridge, cues = relation_cues(question)
    asked = question.lower()
    ranked: list[tuple[int, int, int, str]] = []
    for sentence in sentences:
        said = [(m.start(), m.end(), stem(m.group(0).lower())) for m in word_matches(sentence)]
        for at, name in passage_names(sentence, single=True):
            if name.lower() in asked:
                continue
            before = [w for w in said if w[1] <= at][-4:]
            after = [w for w in said if w[0] >= at + len(name)][:3]
            tier, gap = 4, 0
            agent = _agent_cue(sentence[max(0, at - _AGENT_REACH):at])
            if agent is not None and agent not in cues and agent in _INTENT_OF:
                continue  # "written by the guitarist and singer A": A is the writer
            passive = len(before) >= 2 and before[-1][2] == "by"
            if agent is not None and agent in cues:  # "recorded by the griot singer A"
                tier = 0 if agent in bridge else 1
            elif passive and any(w[2] in cues for w in before[:-1]):
                tier = 0 if any(w[2] in bridge for w in before[:-1]) else 1
            elif _cue_near(sentence, before[-3:], after, bridge):
                tier = 1
            else:
                cue_at = [w[0] for w in said if w[2] in cues]
                if cue_at:
                    tier, gap = 2 if any(w[2] in bridge for w in said) else 3, \
                        min(abs(at - c) for c in cue_at)
            if " " not in name:  # a lone capitalised word: next to a cue, not an adjective
                following = re.match(r"\W*(\w+)", sentence[at + len(name):])
                modifies = following is not None and following.group(1).islower() and \
                    following.group(1) not in STOPWORDS
                if tier > 1 or modifies:
                    continue
            ranked.append((tier, gap, len(ranked), name))
    ranked.sort()
    return [(tier, name) for tier, *_, name in ranked]


LIST_WORDS = {"and", "or"}  # a cue after one of these belongs to the next name in a list
# "<verb> by <a few words describing the name>" right before a name, in one clause (looked
# for in the characters before the name only: the words are few)
_AGENT_REACH = 100
_AGENT = re.compile(r"\b([a-z]+)\s+by\s+((?:[\w'’-]+\s+){1,5})$")


def _agent_cue(before: str) -> str | None:
    """The stem of the passive verb whose agent the name after ``before`` is, where words
    that describe the name stand between "by" and it ("recorded by the griot singer"): at
    most one capitalised word among them (no other name) and no verb of another relation
    ("directed by A and starring"); None where there is none."""
    match = _AGENT.search(before)
    if match is None:
        return None
    between = match.group(2).split()
    if sum(w[:1].isupper() for w in between) > 1 or any(
            w.endswith(("ed", "ing")) and stem(w.lower()) in _INTENT_OF for w in between):
        return None
    return stem(match.group(1))


def _cue_near(sentence: str, before: Sequence[tuple[int, int, str]],
              after: Sequence[tuple[int, int, str]], bridge: frozenset[str]) -> bool:
    """Whether a bridge cue is within three words of a name and is the name's: one before it,
    or one after it ("Leslie Jones, the editor") unless a name follows that cue or "and" or
    "or" comes first: then the cue is the next name's ("producer JoAnne Sellar, editor
    Leslie Jones, and composer Jonny Greenwood": the editor is Leslie Jones)."""
    if any(w[2] in bridge and all(v[2] != "for" for v in before[:i])
           for i, w in enumerate(before)):
        return True  # but "written for the singer A": A is whom it was for, not its singer
    for _, end, word in after:
        if word in LIST_WORDS:
            return False
        if word in bridge:
            return not re.match(r"\W*[A-Z]", sentence[end:])
    return False


def asks_beyond_bridge(question: str) -> bool:
    """Whether a question asks about what its bridge entity leads to ("where did the
    director of film X die?"), not for the entity itself ("who directed film X?")."""
    bridge, cues = relation_cues(question)
    return bool(bridge and cues - bridge)


def stops_at_bridge(question: str, answer: str, sentences: Sequence[str]) -> str | None:
    """The entity a multi-hop answer stopped at, or None. A question that asks beyond its
    bridge relation ("where did the director of film X die?") is answered by what the
    bridge entity leads to, not by the entity: an ``answer`` that says nothing but a name
    the evidence ``sentences`` put beside a bridge cue ("directed by Joseph W. Smiley"),
    and words of the question, stopped one hop short. Names of one word are not judged."""
    if not asks_beyond_bridge(question):
        return None
    said = re.sub(r"\[[^\]]*\]", " ", answer).lower()  # citations left out
    asked = set(words(question)) | STOPWORDS
    for tier, name in _bridge_tiers(question, sentences):
        if tier > 1 or " " not in name or name.lower() not in said:
            continue
        rest = set(words(said.replace(name.lower(), " "))) - asked
        if not any(len(w) > 2 and not w.isdigit() for w in rest):
            return name
    return None


COVERAGE = 0.8  # share of the question's content words the evidence must contain


def covers(question: str, evidence: str) -> bool:
    """The offline sufficiency test: every named entity of the question (its capitalised
    keywords) and at least :data:`COVERAGE` of its content words occur in ``evidence``."""
    text = evidence.lower()
    if not text:
        return False
    names = [k for k in question_keywords(question) if k[:1].isupper()]
    if any(name.lower() not in text for name in names):
        return False
    content = [w for w in content_words(question) if len(w) > 2]
    return not content or sum(w in text for w in content) / len(content) >= COVERAGE


# a term written as code or a product name: snake_case, dotted or hyphenated identifiers
# with a digit or an underscore, CamelCase, an ACRONYM, a --flag, the name of an
# annotation or decorator ("@Transactional", "@dataclass": the name, without its "@"), an
# acronym numbered after a hyphen ("SHA-256", "ISO-8859-1")
_IDENTIFIER = re.compile(r"(?<![\w-])(?:--?[a-z][\w-]+|[A-Za-z][\w.]*_[\w.]*\w|"
                         r"[A-Za-z]+\d[\w]*|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|[A-Za-z_]\w+\.[A-Za-z_]\w+|"
                         r"[A-Z]{2,}(?:-\d+)+[A-Za-z]?|[A-Z]{3,}\d*|(?<=@)[A-Za-z]\w+)(?![\w-])")


def identifier_terms(question: str) -> list[str]:
    """The terms of a question written as identifiers ("io_combine_limit", "CONN_MAX_AGE",
    "UUIDv7", "pg_basebackup", "--incremental", "WAL", "@Transactional"): names a corpus
    either holds verbatim or does not hold at all, unlike words, which it may phrase
    otherwise."""
    return list(dict.fromkeys(m.group(0).rstrip(".") for m in _IDENTIFIER.finditer(question)))


# a capitalised word after a lower-case one ("an Aurora PostgreSQL cluster", "a Rails
# app", "of Spring's"): a name; one that opens a sentence, a list or a parenthesis may be
# any word, unless it owns something ("Spring's default propagation", not "Today's")
_NAME_WORD = re.compile(r"(?:(?<=[a-z] )|^)[A-Z][a-z]{2,}(?=['’]s\b)|"
                        r"(?<=[a-z] )[A-Z][a-z]{2,}(?![\w'’-])")
# words that open a question owning something, or shortened with "'s", and are no name
# ("Today's", "Everyone's", "Film's")
_NOT_NAMES = ENTITY_STOPWORDS


def proper_names(question: str) -> list[str]:
    """The words of ``question`` capitalised mid-sentence ("Aurora", "Amazon", "Rails"):
    names of things that a corpus about them holds verbatim, though perhaps in another
    spelling (see :func:`spelled_like`)."""
    found = [m.group(0) for m in _NAME_WORD.finditer(question)
             if m.group(0).lower() not in _NOT_NAMES]
    return list(dict.fromkeys(found))


def spelled_like(word: str, text: str, cutoff: float = 0.8) -> bool:
    """Whether ``text`` holds a word spelled nearly as ``word`` ("Notorius" in a question,
    "Notorious" in the page; "Canadien", "Canadian"): a misspelling, not another name."""
    held = {w for w in words(text) if len(w) >= 3}
    return bool(difflib.get_close_matches(word.lower(), held, n=1, cutoff=cutoff))


# a period written short ("FY2018", "Q3", "H1'23", "CY2020", "FY2023Q1", "Q1FY24"): a
# filing says "fiscal 2018", "the first quarter of fiscal 2023"
_PERIOD = re.compile(r"(?:(?:FY|CY|Q[1-4]|H[12])(?:['’]?\d{2}|\d{4})?)+", re.IGNORECASE)


def phrased_otherwise(term: str, question: str) -> bool:
    """Whether an identifier term of ``question`` is one a corpus may well write otherwise,
    so that its absence does not mean the corpus is silent: a period written short
    ("FY2018"), an acronym of four letters or fewer ("PPNE", "DPO": a filing says "property,
    plant and equipment") or one the question spells out just before it ("cash conversion
    cycle (CCC)"). "SQLSTATE", "BLCKSZ", "CONN_MAX_AGE", "UUIDv7" are not."""
    if _PERIOD.fullmatch(term):
        return True
    if not term.isalpha() or not term.isupper():
        return False
    if len(term) <= 4:
        return True
    before = [m.group(0) for m in word_matches(question[:question.find(term)])]
    before = before[-len(term) - 2:]
    return term in "".join(w[0] for w in before).upper()


# what a question asks for: what follows "what"/"which" (with "is", "'s" and an article)
_THING_ASKED = re.compile(r"^\s*(?:what|which)(?:['’]s|\s+(?:is|are|was|were))?\s+"
                          r"(?:(?:the|a|an)\s+)?", re.IGNORECASE)
_HOW_MANY = re.compile(r"\bhow\s+(?:many|much)\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[,;:?!()]")


def asks_figure(question: str) -> bool:
    """Whether ``question`` asks for a figure: it asks "how many" or "how much"; or what
    follows its "what"/"which" ends, before the first stop word, in a lower-case noun of
    :data:`~sleuth.text.lexicon.FIGURE_NOUNS` ("what's the default rename detection limit
    for ..."); or it is a compound noun, no stop word in it, whose last word is one
    ("http.postBuffer default size"; not "function that gives a table's total size"). A
    question
    that opens with another question word asks something else ("Is there a limit on how
    many ...?" asks yes or no; "How long ...?" may be answered "until the session ends")."""
    said = words(question)
    if not said:
        return False
    if _HOW_MANY.search(question):
        return said[0] in WH_WORDS or said[0] not in QUESTION_WORDS
    lead = _THING_ASKED.match(question)
    if lead is None:  # a compound noun, no stop word in it: its last word
        return not set(said) & STOPWORDS and said[-1] in FIGURE_NOUNS
    head = None
    for match in word_matches(_CLAUSE_END.split(question[lead.end():], maxsplit=1)[0]):
        if match.group(0).lower() in STOPWORDS:
            break
        head = match.group(0)
    return head in FIGURE_NOUNS
