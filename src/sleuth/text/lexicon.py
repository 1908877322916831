"""The words Sleuth reads text with: every word list, the one tokenizer and the one
normaliser of the core, in one place.

Each list is general English, written for any corpus: no word is here because one dataset's
questions are phrased with it. A list that only makes sense for one kind of corpus (the
relations an encyclopedia's kin pages state, a filing's line items) belongs to that kind's
pack (:mod:`sleuth.facts`, :mod:`sleuth.statements`), not here; ``tests/test_lexicon.py``
keeps the core's other modules from defining lists of their own.

- **Tokenizer**, :func:`words`: a word is a maximal run of word characters (``re``'s
  ``\\w``: letters and digits of any script, and the underscore), lower-cased. It is the
  index's own definition (:mod:`sleuth.store.keyword` tokenizes chunks with it), so a
  query's words are the indexed words: ``io_combine_limit`` is one word, ``don't`` two
  (``don``, ``t``), ``Mecklenburg-Güstrow`` two.
- **Normaliser**, :func:`plain`: a text's words, accents folded, joined by single spaces,
  for comparing answers, names and spans without case, accents, spacing or punctuation
  ("Louis Xv." and "louis XV" are both ``louis xv``); :func:`name_key` is it without a
  leading article, the key names merge on; :func:`title_key` also reads "&" as "and" and
  drops a French, Spanish, Italian, German or Dutch article, to tell whether a title typed
  carelessly names a page. :func:`stem` is the crude stem both sides of a
  comparison of word forms take. (``sleuth.eval.metrics.normalize_answer`` is the
  benchmarks' scorer, kept exactly as the papers' SQuAD-style normalisation, articles
  dropped; it is not used to read text.)
- **Stop words**, :data:`STOPWORDS`: function words (articles, prepositions, pronouns,
  auxiliaries, conjunctions), the words a question asks with (:data:`QUESTION_WORDS`, of which
  :data:`WH_WORDS` open a wh-question) and
  the words a request is phrased with rather than what it asks about
  (:data:`REQUEST_WORDS`: "please give details based on ...").
- **Relations**, :data:`RELATIONS`: what one thing is to another (kin, making a work,
  birth and death, places, membership, ownership), each relation the words that state it
  and the nouns that name who holds it (:data:`ROLES`: "director", "father").
- **Names**: :data:`NAME_LINKS` (lower-case words inside a name, "Louis of Luxembourg"),
  :data:`CLAUSE_OPENERS` (capitalised words that open a clause, not a name),
  :data:`ABBREVIATIONS` (a final period that ends no sentence), :data:`MONTHS`,
  :data:`THIRD_PERSON`.
- **Kinds**, :data:`GENERIC`: nouns that name a kind of thing ("film", "year") and words
  that compare, never an entity or a relation on their own; :data:`COMPARES`, the words by
  which a question compares two things ("both", "same", "than").
- **Figures**, :data:`FIGURE_NOUNS` (what a question asks a number of: "size", "limit") and
  :data:`NUMBER_WORDS` (a figure written without digits: "three", "unlimited").

This module imports nothing of Sleuth.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass


def wordset(text: str) -> frozenset[str]:
    """The space-separated words of ``text`` as a set (how the lists here are written)."""
    return frozenset(text.split())


# -- the tokenizer and the normaliser -----------------------------------------------------

WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased, in order (see the module: the tokenizer)."""
    return WORD.findall(text.lower())


def word_matches(text: str) -> Iterator[re.Match[str]]:
    """The words of ``text`` as written, with their places (the same words as
    :func:`words`, not lower-cased)."""
    return WORD.finditer(text)


def fold(text: str) -> str:
    """``text`` with its accents taken off ("Žalica" → "Zalica", "Nestlé" → "Nestle")."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def plain(text: str) -> str:
    """``text`` normalised for comparison: accents folded, then its :func:`words`,
    single-spaced ("Louis Xv." → "louis xv", "Nestlé's" → "nestle s")."""
    return " ".join(words(fold(text)))


_ARTICLE = re.compile(r"^(?:the|a|an)\s+")


def name_key(name: str) -> str:
    """The key names are compared and merged by: :func:`plain`, a leading article dropped
    ("The Beatles" → "beatles"). The knowledge graph stores its entities under it."""
    return _ARTICLE.sub("", plain(name))


# A title's leading article in the languages whose titles an English corpus keeps ("La
# Dolce Vita", "Il Postino", "Les Misérables", "Das Boot", "L'Avventura", "Het Verloren Kind").
_TITLE_ARTICLE = re.compile(
    r"^(?:the|a|an|la|le|les|l|el|lo|los|las|il|gli|der|die|das|het|os|as) (?=\S)")


def title_key(title: str) -> str:
    """A title as people type it, for telling whether two name the same thing: :func:`plain`
    with "&" read as "and" and a leading article dropped, of English or of a language whose
    titles an English corpus keeps ("La Última Zafra" and "ultima zafra", "Hedenmark &
    Söner" and "hedenmark and soner" are one). Whether the thing so named is unambiguous
    is the caller's to say: "Heat" and "The Heat" share a key."""
    return _TITLE_ARTICLE.sub("", plain(title.replace("&", " and ")))


_SUFFIXES = ("ation", "ing", "ed", "er", "or", "ion", "s")


def stem(word: str) -> str:
    """A crude stem, the same on both sides: "directed", "director" → "direct"; a stem keeps
    at least four letters ("does" stays)."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[:-len(suffix)]
    return word


# -- stop words ----------------------------------------------------------------------------

# The words a question asks with, and that open or close it around its names ("Who is",
# "... in the"): taken off the ends of a run of capitalised words ("Who Directed Jaws" →
# "Directed Jaws" is not cut further; "When did The Beatles" → "The Beatles" keeps "The"
# only inside a name).
WH_WORDS = wordset("who whom whose what which when where why how")
QUESTION_WORDS = WH_WORDS | wordset(
    "is are was were do does did can could will would should has have had in on of the a an "
    "and or both between according")
# Words that phrase a request rather than what it asks about: "Please give details based on
# ...", "Answer the question using ...", "Show the response".
REQUEST_WORDS = wordset(
    "please give show provide using use based answer response question details")
FUNCTION_WORDS = wordset(
    "to for by with from at as into about over than that this these those it its be been "
    "being not no there their they them he she his her him we our us you your i me my any "
    "all some such if then so also only more most here everyone everybody someone somebody "
    "anyone anybody nobody let")
STOPWORDS = QUESTION_WORDS | REQUEST_WORDS | FUNCTION_WORDS
# Third-person pronouns: on a page about someone, they stand for the page's subject.
THIRD_PERSON = wordset("he she it they his her its their")
# An answer that is no value of its own ("yes", "none").
NOT_VALUES = wordset("yes no not true false none")
# The answers to a yes-no question, and with "true" and "false" an answer that is a verdict
# rather than a word a passage would hold.
YES_NO = wordset("yes no")
VERDICT_WORDS = YES_NO | wordset("true false")
# Words that state no relation of their own on a sentence's parse path from a name to its
# verb (light verbs, "also", relative pronouns), unlike "directed", "by", "wife".
NO_RELATION = wordset("be have do also which who that")
# Words that ask for one thing in place of another ("the equivalent of X", "X instead",
# "migrating from X", "in place of X").
SUBSTITUTE_WORDS = wordset(
    "equivalent equivalents instead alternative alternatives replacement replacements replace "
    "replaces replacing counterpart counterparts analog analogs analogue analogues substitute "
    "substitutes versus vs compared migrate migrates migrating migration")
SUBSTITUTE_PHRASES = ("port from", "porting from", "in place of", "rather than")


# -- kinds ---------------------------------------------------------------------------------

# Nouns that name a kind of thing or a time rather than a thing, and words that compare:
# never an entity on their own ("Film", capitalised at a question's start) nor a relation a
# question goes through ("the same year", "which film").
GENERIC = wordset(
    "film films movie song album book novel place date year time day week month today "
    "tomorrow yesterday tonight world company user person people name first last later "
    "earlier older younger same which many much one two out cause reason")
# Words by which a question compares two things ("Are A and B from the same country?", "Is
# A older than B?"): a yes or no to it rests on what is said of both. Not "and" nor "or":
# "Did sales grow between 2021 and 2022?" asks of one thing.
COMPARES = wordset("both same either neither than different differ alike vs versus")


# -- figures -------------------------------------------------------------------------------

# Nouns that name a figure when a question asks for one ("the default size of ...", "max
# number of ..."): its answer states a number. Not "count" nor "port": a count's and a
# port's names ("count of flanders", "which port did she sail from") answer with a name.
FIGURE_NOUNS = wordset("number amount size length limit percentage percent")
# Words that state a figure without digits: number words, a count or amount said in words
# ("both", "several", "free"), and those of none, no bound or no change ("unlimited",
# "off", "flat").
NUMBER_WORDS = wordset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
    "eighty ninety hundred hundreds thousand thousands million millions billion billions "
    "trillion dozen dozens half quarter once twice thrice single both several few couple "
    "free none no nil unlimited infinite infinity unbounded disabled off flat unchanged")


# -- relations -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Relation:
    """One relation: the nouns that name who holds it (``roles``: "director") and the other
    words that state it (``words``: "directed", "directing")."""

    roles: frozenset[str]
    words: frozenset[str]

    @property
    def all(self) -> frozenset[str]:
        return self.roles | self.words


def _relation(roles: str, other: str = "") -> Relation:
    return Relation(wordset(roles), wordset(other))


# What one thing is to another. A question word of a relation brings the whole relation
# (compared by crude stems): "father" finds "son of" and "daughter of", "director" finds
# "directed by".
RELATIONS: tuple[Relation, ...] = (
    _relation("father mother parent parents son sons daughter daughters child children "
              "grandfather grandmother grandson granddaughter grandparent heir uncle aunt "
              "nephew niece cousin stepfather stepmother", "paternal maternal"),
    _relation("spouse wife husband widow widower partner", "married marry marriage wed"),
    _relation("sibling brother sister"),
    _relation("director filmmaker", "directed direct directing"),
    _relation("", "born birth birthplace native"),
    _relation("", "died die dies death dead killed murdered executed"),
    _relation("", "buried burial grave interred"),
    _relation("", "award awards awarded won win wins prize received receive nominated "
              "nomination honour"),
    _relation("alumnus", "educated education studied study graduated graduate attended school "
              "college university"),
    _relation("founder", "founded established founding"),
    _relation("composer", "composed composition music musical score"),
    _relation("producer", "produced production"),
    _relation("writer author screenwriter", "wrote written screenplay"),
    _relation("performer singer", "performed sung sang recorded"),
    _relation("", "released release premiered published publication came"),
    _relation("citizen", "nationality citizenship country national"),
    _relation("star actor actress", "starring stars starred cast appeared"),
    _relation("employer", "employed worked work works"),
    _relation("", "occupation profession job career"),
    _relation("", "located location situated lies"),
    _relation("member members", "joined"),
    _relation("publisher", "publishing"),
    _relation("creator", "created create creating"),
    _relation("editor", "edited editing"),
    _relation("owner", "owned owns ownership"),
    _relation("designer developer manufacturer architect", "designed developed manufactured"),
    _relation("president chairman ceo leader", "led leads headed"),
    _relation("successor predecessor", "succeeded preceded"),
)
ROLES: frozenset[str] = frozenset().union(*(r.roles for r in RELATIONS))
RELATION_WORDS: frozenset[str] = frozenset().union(*(r.all for r in RELATIONS))


# -- names ---------------------------------------------------------------------------------

# Lower-case words a name may contain ("Louis of Luxembourg", "Ibn al-Athir", "Ortega y
# Gasset").
NAME_LINKS = wordset("of the de von van der den da di la le del du des bin ibn al y")
# Lower-case words a place name may contain ("Stratford-upon-Avon", "Frankfurt am Main").
PLACE_LINKS = wordset("of de la le du del der den am an upon on the y da di in")
# Words with a final period that do not end a sentence.
ABBREVIATIONS = wordset("jr sr st dr mr mrs ms mt ft no co inc ltd corp bros vs gen col capt "
                        "lt sgt rev hon prof sen gov pres fr u.s u.k")
# Words a name does not end with: prepositions, "and", "the", a possessive's "s".
NOT_NAME_ENDS = wordset("s in of and on at by for to the with from")
# Titles before a name ("Queen Victoria", "Dr. Smith"): an honorific, not part of the name.
HONORIFICS = wordset(
    "king queen emperor empress tsar czar sultan pharaoh pope prince princess lord lady duke "
    "duchess sir dame dr doctor mr mrs ms miss president general gen captain capt colonel "
    "admiral rev reverend bishop archbishop cardinal count countess earl baron baroness "
    "marquis marquess marchioness viscount viscountess senator governor chancellor professor "
    "prof judge")
# Words that tell two people of one name apart by generation ("John Smith Jr.").
GENERATIONAL = wordset("jr junior sr senior elder younger")
# Capitalised words that open a sentence or a clause rather than a name.
CLAUSE_OPENERS = wordset("in on at by the a an from during after before since with when while "
                         "his her its their this that these those he she it they")
_ROMAN = (("", "x", "xx", "xxx"), ("", "i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix"))


def roman(number: int) -> str:
    """``number`` (1 to 39) as a lower-case roman numeral, as names number their holders
    ("Louis XV", "Lothair II")."""
    return _ROMAN[0][number // 10] + _ROMAN[1][number % 10]


MONTHS = wordset("january february march april may june july august september october "
                 "november december")
