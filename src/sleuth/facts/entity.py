"""Whether one document is an entity's page: an encyclopedia-style article about one
person, work or organisation, whose lead says what its subject is ("Teutberga (died 11
November 875) was a queen of Lotharingia", "The Tender Years is a 1948 American drama
film", "Onika Tanya Maraj-Petty (born December 8, 1982), known professionally as Nicki
Minaj, is a rapper").

The facts pack reads such pages without a model: on them the first sentence names the
subject and the facts around it are the subject's. An obituary ("John Smith, 84, of
Dayton, died peacefully on ..."), a plaque ("Here lived ..."), a CV, a family blog ("My
grandfather was born ..."), a record table or a list ("X may refer to:") states the same
kinds of facts in other ways, for several people at once, and gets no verdict: the model
reads the candidates the tools quote. The test is made for each document, never for an
index: a user's own papers indexed beside an encyclopedia dump are not read as entries.

A page is an entity's page when the first sentence of its lead (after a first line that
repeats the title, as a Markdown heading does) has a copula ("is", "was", "are", "were",
"has been") whose subject part, outside parentheses, opens with a capital, names a word of
the title and holds no possessive ("Rose's mother"), relative pronoun, first- or
second-person word or verb of a life's events ("died", "passed", "survived"): the shape of
"X (...) was a ...", not of a sentence about X. On the 6,119 passages of the 2Wiki corpus
94 % qualify; the rest are lists, disambiguation pages and leads that lost their subject's
name.
"""

from __future__ import annotations

import re
import weakref
from typing import Any

from sleuth.facts.subject import sentence_spans
from sleuth.text.lexicon import wordset
from sleuth.types import Chunk

LEAD_CHARS = 600  # of a page's text the test reads
_COPULA = re.compile(r"\b(?:is|was|are|were|has\s+been|had\s+been)\b")
# lowercase words in a lead's subject part that make it a sentence about its subject, not
# a definition of it ("X, who ... was", "My grandfather was", "X, 84, died ... He was")
NOT_A_LEAD = wordset("who whom whose which that where when while i me we us you my our "
                       "your here there this these those died passed survived lived loved "
                       "says said")
_CACHE: weakref.WeakKeyDictionary[Any, dict[str, bool]] = weakref.WeakKeyDictionary()
# a lead that opens with a name and a parenthesis holding a year: "Name (1401 – 1460) ..."
_LIFE_AFTER_NAME = re.compile(r"([^()]{1,160}?)\s*\([^()]*\b\d{3,4}\b[^()]*\)")


def _without_parentheses(text: str) -> str:
    previous = None
    while previous != text:
        previous, text = text, re.sub(r"\([^()]*\)", " ", text)
    return text


def _name(title: str) -> str:
    """A title without its disambiguation ("Harbour Lights (1951 film)")."""
    return re.sub(r"\s*\([^()]*\)\s*$", "", title.strip())


def entity_page(title: str, text: str) -> bool:
    """Whether a document titled ``title`` whose text starts with ``text`` is an entity's
    page (see the module's rule)."""
    lines = text.lstrip().split("\n", 1)
    heading = re.sub(r"^#+\s*", "", lines[0]).strip().lower()
    if heading in (title.strip().lower(), _name(title).lower()) and len(lines) > 1:
        text = lines[1]
    lead = " ".join(text[:LEAD_CHARS].split())
    lead = re.sub(r"(?<=\w)- (?=\w)", "-", lead)  # "Mecklenburg- Güstrow"
    name = _name(title)
    words = re.findall(r"\w+", name)
    spelled = re.match(r"[\W_]*" + r"[\W_]*".join(map(re.escape, words)) + r"\b", lead,
                       re.IGNORECASE) if words else None
    if spelled:
        lead = "Title" + lead[spelled.end():]  # "Author! Author! is", "Way ... Way Out is"
    bare = _without_parentheses(lead)
    spans = sentence_spans(bare)
    first = bare[:spans[0][1]] if spans else bare
    copula = _COPULA.search(first)
    if copula is None:
        life = _LIFE_AFTER_NAME.match(lead)
        # "Albert III the Pious of Bavaria-Munich (27 March 1401 – 29 February 1460), since
        # 1438 Duke of ...": no copula, but a name and its life's dates open the lead (the
        # name in one sentence, no field's label: "Clubs: Orlando Pirates (2007–2013)")
        name_part = life.group(1) if life else ""
        return bool(name_part) and ":" not in name_part and \
            len(sentence_spans(name_part)) == 1 and _subject_part(name_part, title)
    return _subject_part(first[:copula.start()], title, lead)


def _subject_part(said: str, title: str, lead: str | None = None) -> bool:
    """Whether ``said``, the part of a lead's first sentence before its copula (``lead``
    given) or before the life's dates that open a lead without one, is its subject's name:
    it opens with a capital, holds no possessive, relative, first- or second-person word or
    verb of a life, and its words are found before the copula (parentheses included) or,
    without one, in the title."""
    opening = said.lstrip(" \"“'‘")
    if not opening or not (opening[0].isupper() or opening[0].isdigit()):
        return False
    title_words = {w.lower() for w in re.findall(r"[\w'’.-]+", title)}
    possessive = re.search(r"([A-Z][\w.-]*['’]s)\s+[a-z]", said)
    if possessive and possessive.group(1).lower() not in title_words:
        return False  # "Rose's mother, Nora Kelly, was": a sentence about someone else
    words = re.findall(r"[^\W_][\w'’.-]*", said)
    if any(w.lower() in NOT_A_LEAD and w != "I" and w.lower() not in title_words
           for w in words):
        return False
    if said.startswith("Title"):
        return True
    # the title's words in the subject part, its parentheses included ("Un giorno da leoni(
    # internationally released as A Day for Lionhearts) is a 1961 film")
    named = {w.lower() for w in words} - {"the", "of", "a", "an", "and", "for"}
    if lead is None:  # no copula: the name itself must share a word with the title
        return bool(named & title_words)
    return bool(named & {w.lower() for w in re.findall(r"\w+", _before_copula(lead))})


def _before_copula(lead: str) -> str:
    """``lead`` up to its first copula outside parentheses, parentheses kept."""
    for match in _COPULA.finditer(lead):
        head = lead[:match.start()]
        if head.count("(") <= head.count(")"):
            return head
    return ""


def entity_chunk(index: Any, chunk: Chunk, title: str | None = None) -> bool:
    """Whether the document ``chunk`` opens is an entity's page, decided once per document
    and version of the index (a new ``index.titles()`` after each change)."""
    titles = index.titles()
    seen = _CACHE.setdefault(titles, {})
    if chunk.doc_id not in seen:
        if title is None:
            docs = index.document_list([chunk.doc_id])
            title = docs[0].title if docs else ""
        seen[chunk.doc_id] = entity_page(title, chunk.text)
    return seen[chunk.doc_id]
