"""Which page is whose: an entity's own page found by its name, a relative's page found by
the name a page gives them, and whether each page is one the facts pack may settle a
question from (:func:`sleuth.facts.entity.entity_chunk`).

A relative's page counts as theirs only where it is titled with the name given, written
without honorifics ("Queen Marie Leszczyńska"), with a disambiguation ("John Adams
(merchant)") or with the rest of a title after a comma ("Albert III, Duke of Bavaria"). A
shortened name ("Friedrich of Wessel" for "Count Ludwig Friedrich of Wessel") or a longer
one ("Edmund Rye Jr." for "Edmund Rye") may be someone else's page: what it says is shown,
never settled, unless the page itself says the words left out ("Sufi Master Inayat Khan":
the page of Inayat Khan says he was a Sufi master).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sleuth.facts.entity import entity_chunk
from sleuth.facts.kin import (
    HONORIFICS,
    LINKS,
    Relative,
    Sex,
    extends,
    family,
    opposite_sexes,
    plain_name,
    pronoun_sex,
)
from sleuth.facts.subject import Subject, judge_for, subject_of
from sleuth.retrieval import HybridRetriever
from sleuth.text.lexicon import fold, plain, title_key, words
from sleuth.text.querytext import content_words, passage_names
from sleuth.tools.base import ToolContext
from sleuth.types import Chunk

# family relations, read by :func:`sleuth.facts.kin.family`: (parent or spouse, the sex wanted)
KIN: dict[str, tuple[str, Sex | None]] = {
    "father": ("parent", "male"), "mother": ("parent", "female"), "parent": ("parent", None),
    "spouse": ("spouse", None), "husband": ("spouse", "male"), "wife": ("spouse", "female")}


@dataclass(frozen=True)
class Person:
    """A relative a page names: the name, their own page (None: no page titled so) and
    whether that page was found by the name given (False: a shortened or longer name)."""

    name: str
    page: Chunk | None = None
    exact: bool = True


def find_page(ctx: ToolContext, retriever: HybridRetriever, name: str, *,
              exact: bool = False) -> Chunk | None:
    """The chunk of ``name``'s own page: the first chunk of the document titled so (a title
    search; as people type a title, :func:`~sleuth.text.lexicon.title_key`, where that names
    one title), else the one whose title carries the name's words, when no other title does
    (a "William" among several princes is no one in particular), else the one page whose
    title is the name with words around it that its lead says (:func:`described`); None
    when no page is titled so (a page that only mentions a name gives the dates of someone
    else), or unless ``exact``, only a page titled exactly so."""
    named = ctx.index.document_list(ctx.index.titles().match(content_words(name)))
    for key in (plain, title_key):
        same = [d for d in named if key(d.title) == key(name)]
        if same and len({plain(d.title) for d in same}) == 1:
            return _first_chunk(ctx, same[0].doc_id)
    if exact:
        return None
    chunks = ctx.index.read(retriever.pages(name)).chunks
    titles = {d.doc_id: d.title for d in ctx.index.document_list([c.doc_id for c in chunks])}
    wanted = set(content_words(name))
    carrying = [c for c in chunks if wanted <= set(content_words(titles.get(c.doc_id, "")))]
    if carrying:
        others = [d for d in named if d.doc_id != carrying[0].doc_id and
                  wanted <= set(content_words(d.title))]
        return None if others else carrying[0]
    leads = [(d.title, _first_chunk(ctx, d.doc_id)) for d in named]
    pages = [c for title, c in leads if c is not None and described(title, name, c.text)]
    return pages[0] if len({c.doc_id for c in pages}) == 1 else None


def _first_chunk(ctx: ToolContext, doc_id: str) -> Chunk | None:
    first = ctx.index.chunk_spans(doc_id)[:1]
    return ctx.index.read([first[0][0]]).chunks[0] if first else None


LEAD = 400  # characters of a page's opening that say what it is about
MAX_DESCRIBING = 3  # words around a name that describe who it is ("Kenyan photojournalist")


def described(title: str, name: str, text: str) -> bool:
    """Whether ``name`` is the title of a page whose opening is ``text``, with words around
    it that the opening says of it: "explorer henry lowrie", "gustaf hedenmark architect",
    "daniel kariuki (kenyan photojournalist)" for pages titled "Henry Lowrie" ("... was a
    Scottish explorer"), "Gustaf Hedenmark", "Daniel Kariuki (photographer)". The title's
    words stand together and whole (a middle name left out may be someone else), of two
    words or more, with at most three others around them."""
    bare = re.sub(r"\s*\([^()]*\)\s*$", "", title)
    core = title_key(bare).split()
    typed = title_key(name).split()
    said = set(words(fold(title + " " + text[:LEAD])))
    for at in range(len(typed) - len(core) + 1):
        if typed[at:at + len(core)] == core:
            around = typed[:at] + typed[at + len(core):]
            return len(core) > 1 and 0 < len(around) <= MAX_DESCRIBING and \
                all(w in said for w in around)
    return False


def title_of(ctx: ToolContext, chunk: Chunk) -> str:
    docs = ctx.index.document_list([chunk.doc_id])
    return docs[0].title if docs else ""


def titled(title: str, name: str) -> bool:
    """Whether a page titled ``title`` is titled with the name ``name`` gives: the same
    words, but for a disambiguation in parentheses, honorifics before the name, particles,
    the rest of a title after a comma ("Hugh de Stafford, 2nd Earl of Stafford" for "Hugh
    Stafford"), a leading article and "&" for "and" ("ultima zafra" for "La Última
    Zafra"); not a longer name ("Edmund Rye Jr.", "Henry Ford II")."""
    bare = [re.sub(r"\s*\([^()]*\)\s*$", "", t).strip() for t in (title, name)]
    forms = [{plain(b), plain(plain_name(b)), title_key(b)} for b in bare]
    return bool(forms[0] & forms[1]) or extends(bare[0], bare[1]) or \
        extends(plain_name(bare[0]), plain_name(bare[1]))


def qualifies(ctx: ToolContext, chunk: Chunk) -> str | None:
    """Why a verdict may not be read from ``chunk``'s page (None: it may): a page that is
    no entity's own (:func:`~sleuth.facts.entity.entity_page`), decided once per document."""
    if entity_chunk(ctx.index, chunk, title_of(ctx, chunk)):
        return None
    return f"[{chunk.chunk_id}] is not an encyclopedia entry about one entity"


def page_subject(ctx: ToolContext, chunk: Chunk) -> Subject:
    """Who ``chunk``'s page is about (:func:`~sleuth.facts.subject.subject_of`)."""
    return subject_of(title_of(ctx, chunk), chunk.text)


def person_page(ctx: ToolContext, retriever: HybridRetriever,
                name: str) -> tuple[Chunk | None, bool]:
    """The page of a person named as a relative, and whether it is titled with the name
    given (:func:`titled`): tried as written, without honorifics ("Queen Marie
    Leszczyńska"), then shortened: without the title after a comma ("Archduke Otto von
    Habsburg, Crown Prince of Austria") or the first words ("Sufi Master Inayat Khan"). A
    shortened name's page is the person's only where its text says every word left out."""
    parts = plain_name(name.split(",")[0]).split()
    tries = [name, plain_name(name)] + [" ".join(parts[i:]) for i in range(len(parts))]
    for attempt in dict.fromkeys(tries):
        # one word ("Great Royal Wife Nefertiti") only where a page is titled exactly so
        page = find_page(ctx, retriever, attempt, exact=" " not in attempt)
        if page is None:
            continue
        title = title_of(ctx, page)
        if titled(title, name):
            return page, True
        left = set(words(name)) - set(words(title))
        said = set(words(page.text))
        return page, bool(left) and all(w in said or w in HONORIFICS or w in LINKS
                                         for w in left) and attempt != name
    return None, True


def kin(ctx: ToolContext, retriever: HybridRetriever, page: Chunk,
        relation: str) -> list[Person]:
    """The people ``page`` names as the subject's ``relation`` ("father", "wife", ...),
    with their own pages. Only relations stated of the page's subject are read
    (:func:`~sleuth.facts.subject.judge_for`: not "Her teacher, Ida Kern, daughter of Otto
    Kern"). A parent's sex is what is stated: the words around the name ("his wife",
    "actress", "Duke"), else their own page's pronouns, else the other parent's stated sex;
    where nothing states it, neither is taken for the father (the order "son of A and B"
    does not say it). A parent the page does not name is the named parent's spouse ("born
    to Frederick I": his page says whom he married)."""
    kind, sex = KIN[relation]
    read = family(page.text, judge_for(page_subject(ctx, page)))
    named = read.spouses if kind == "spouse" else read.parents
    # the subject's own page, found by a shortened name ("de Albergaria"), is no relative's
    people = [(r, *_not_own(person_page(ctx, retriever, r.name), page)) for r in named]
    # a page found by another name tells nobody's sex ("Margaret II of Flanders" is not
    # "William II, Count of Flanders")
    sexes = [r.sex or (pronoun_sex(p.text) if p and exact else None) for r, p, exact in people]
    if kind == "parent":
        sexes = opposite_sexes(sexes)
    others = [p for _, p, exact in people if p is not None and exact]
    wanted = [Person(r.name if p or kind == "spouse" else fuller(r.name, others), p, exact)
              for (r, p, exact), s in zip(people, sexes, strict=True)
              if sex is None or s == sex or (kind == "spouse" and s is None)]
    if wanted or kind == "spouse":
        return wanted
    for (_, other, exact), s in zip(people, sexes, strict=True):
        if other is not None and s is not None:  # the other parent's spouse
            spouses = kin(ctx, retriever, other, "wife" if s == "male" else "husband")
            if spouses:
                return [Person(spouses[0].name, spouses[0].page,
                               exact and spouses[0].exact and len(spouses) == 1)]
    return []


def _not_own(found: tuple[Chunk | None, bool], page: Chunk) -> tuple[Chunk | None, bool]:
    """A relative's page (:func:`person_page`) unless it is ``page``'s own document."""
    return (None, True) if found[0] is not None and found[0].doc_id == page.doc_id else found


def stated_of_others(ctx: ToolContext, page: Chunk, relation: str) -> list[Relative]:
    """The relatives ``page`` names in ``relation``'s kind that are not the subject's own
    (an aside about another person, "X married her" where "her" is someone else): shown
    to the model beside a relation the page does not settle."""
    kind = KIN[relation][0]
    every = family(page.text)
    mine = family(page.text, judge_for(page_subject(ctx, page)))
    named, own = (every.spouses, mine.spouses) if kind == "spouse" else \
        (every.parents, mine.parents)
    return [r for r in named if r.name not in {o.name for o in own}]


def fuller(name: str, pages: list[Chunk]) -> str:
    """A parent with no page of their own, named as the other parent's page names its
    spouse where that is fuller ("Prince Arthur, Duke of Connaught" → "Prince Arthur, Duke
    of Connaught and Strathearn"; "Hugh Stafford, 2nd Earl of Stafford" → "Hugh de
    Stafford, ..."): a second page that states the same person, adding only particles and
    the rest of a title after a comma, never a word of the name itself ("Henry Ford II")."""
    for page in pages:
        for spouse in family(page.text).spouses:
            if spouse.name != name and extends(spouse.name, name):
                return spouse.name
    return name


def full_name(name: str, text: str) -> str:
    """A person a page names by surname alone ("produced by Stewart") under the full name
    it gave before ("starring Anita Stewart")."""
    if " " in name:
        return name
    longer = [n for _, n in passage_names(text) if n.endswith(" " + name)]
    return max(longer, key=len) if longer else name
