"""Tools that read facts from entities' own pages and settle a question without a model:
``compare_dates`` (which of several entities was born, died or dated first) and
``person_fact`` (when or where a person was born, died or was buried, their parents,
spouses and nationality).

A small model with both dates in front of it still picks the wrong one about half the time,
and given the right page it answers a place question with a date (2Wiki, BENCHMARKS §16);
ordering two dates and reading a birthplace from an encyclopedia lead need no model. Each
tool finds the entity's page (or, with ``relation``, the page of the person its page names
in that role: "the director of film X", "X's father"), reads every value the page offers for
the fact (:mod:`sleuth.facts.dates`, :mod:`sleuth.facts.lives`, :mod:`sleuth.facts.kin`),
and quotes the passages it read with their chunk ids.

A verdict (the result's ``data["answer"]``, which the default agent gives without a model
call) is given only where the pages are unambiguous (:mod:`sleuth.facts.readings`): every
page read is an entity's own page, decided for that document (:mod:`sleuth.facts.entity`:
not an obituary, a CV or a family blog indexed beside encyclopedia pages), a relative's page
is titled with the name given (:mod:`sleuth.facts.pages`), and the values said of the page's
subject (:mod:`sleuth.facts.subject`: not a father's birth, not an aside about a teacher)
agree. Elsewhere the candidates are quoted with their chunk ids and the model judges them.
Whether the pack applies at all is decided per document too: a question whose names have no
entity page of their own (a manual's settings, a filing) gets a result that says
``applies: false`` and touches nothing, whatever else the index holds.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from datetime import date as calendar
from typing import Annotated, Any, Literal

from pydantic import Field

from sleuth.facts.asks import comparison, fact_question
from sleuth.facts.dates import Date, Event, date_readings, work_readings
from sleuth.facts.fields import heading_end
from sleuth.facts.kin import family, nationality
from sleuth.facts.lives import KIN_FACTS, place_readings
from sleuth.facts.pages import (
    KIN,
    Person,
    described,
    find_page,
    full_name,
    kin,
    page_subject,
    qualifies,
    stated_of_others,
    title_of,
    titled,
)
from sleuth.facts.places import country_from, is_burial_site, is_place
from sleuth.facts.readings import Settled, same_date, same_place, settle
from sleuth.facts.subject import Reading, judge_for, sentence_spans
from sleuth.retrieval import HybridRetriever
from sleuth.text.lexicon import plain
from sleuth.text.querytext import bridge_names
from sleuth.tools.base import QUERY, ToolContext, ToolResult, tool
from sleuth.tools.corpus import StrList
from sleuth.types import Chunk

QUOTE_CHARS = 200  # of a page's lead, quoted beside the date read from it
EVENTS = {"born": "born", "died": "died", "lived": "lived", "date": "dated"}
NO_DATE = {"born": "birth date", "died": "death date", "lived": "birth and death dates",
           "date": "date"}
WHOSE = {"subject": "said of the page's subject", "other": "said of someone else",
         "unknown": "whose is unclear"}


@dataclass
class _Found:
    """What was read for one entity: its page, the person its page names (``relation``),
    the page the date came from, the date, and why the pages read settle nothing where
    they do not (``doubt``: a page that is no entity's own, a relative's page found by a
    name that is not the one given) or what the page offers instead (``candidates``)."""

    entity: str
    page: Chunk | None = None
    person: str | None = None
    source: Chunk | None = None
    value: Date | tuple[Date, Date] | None = None
    doubt: str | None = None
    candidates: list[tuple[str, str]] = field(default_factory=list)
    # the values a page allows where it gives its own subject several ("January 25, 1881 or
    # 1884"): a comparison that comes out the same for each of them is settled
    options: list[Date | tuple[Date, Date]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"entity": self.entity, "chunk_id": self.page.chunk_id if self.page else None,
                "person": self.person,
                "source_chunk_id": self.source.chunk_id if self.source else None,
                "date": _show(self.value) if self.value else None,
                "candidates": [{"date": d, "whose": w} for d, w in self.candidates],
                "doubt": self.doubt}


def _show(value: Date | tuple[Date, Date]) -> str:
    return f"{value[0]} – {value[1]}" if isinstance(value, tuple) else str(value)


def _days(life: tuple[Date, Date]) -> tuple[int, bool]:
    """Days lived (whole years when a date lacks its day), and whether to the day."""
    born, died = life
    if born.day and died.day and born.year > 0:  # no calendar before the common era
        return (calendar(died.year, died.month, died.day) -
                calendar(born.year, born.month, born.day)).days, True
    return 365 * (died.year - born.year), False


def question_arguments(question: str, top_k: int) -> dict[str, Any] | None:
    """The call that settles a comparison question ("Who was born first, A or B?"), or None
    for a question that compares no dates."""
    found = comparison(question)
    return found.arguments() if found else None


@tool(command="compare", from_question=question_arguments)
def compare_dates(
    ctx: ToolContext,
    entities: Annotated[list[str], StrList, Field(min_length=2, max_length=5), QUERY],
    event: Literal["born", "died", "lived", "date"] = "date",
    order: Literal["earliest", "latest"] = "earliest",
    relation: Annotated[str | None, Field(max_length=40)] = None,
) -> ToolResult:
    """Compare dates without guessing: for each entity, find its page, read the date of the
    event from it and say which entity comes first (or last). Use it for questions such as
    "Who was born first, A or B?", "Which film came out earlier, X or Y?" or "Which film
    has the director who died later, X or Y?" (relation "director"). Each date is quoted
    with its chunk id; an entity whose page or date is not found is said so.

    Args:
        entities: The names to compare, as the question states them.
        event: "born", "died", "lived" (the length of a life), or "date" (the date a page
            gives a work or organisation: released, published, founded).
        order: "earliest" (first, older, earlier) or "latest" (later, younger, more
            recent, lived longer).
        relation: Compare the person each entity's page names in this role instead (e.g.
            "director" for "the director of film X").
    """
    retriever = HybridRetriever(ctx.index)
    found = [_read(ctx, retriever, name, event, relation) for name in entities]
    lines = [_line(f, event, relation) for f in found]
    verdict, winner = _verdict(found, event, order, relation)
    applies = _entity_pages(ctx, [f.page for f in found])
    cited = _read_chunks(ctx, [c for f in found for c in (f.page, f.source)] if applies else [])
    text = f"Dates read from the entities' pages ({_asked(event, order, relation)}):\n" + \
        "\n".join(lines) + "\n" + verdict
    return ToolResult(text, {"entities": [f.to_dict() for f in found], "answer": winner,
                             "event": event, "order": order, "relation": relation,
                             "cited": cited, "applies": applies})


def _entity_pages(ctx: ToolContext, pages: list[Chunk | None]) -> bool:
    """Whether the pack applies to what the question names: at least one name has a page
    that is an entity's own (:func:`qualifies`, decided per document). A question about a
    manual's settings, a filing or a user's notes finds no such page, and a result that
    does not apply marks nothing read and is left out of an agent's run
    (:attr:`~sleuth.tools.base.Tool.from_question`); every verdict still needs each page
    it reads to qualify."""
    return any(page is not None and qualifies(ctx, page) is None for page in pages)


def _read_chunks(ctx: ToolContext, chunks: list[Chunk | None]) -> list[str]:
    """The ids of the chunks a verdict was read from, in order, each marked as seen."""
    ids = list(dict.fromkeys(c.chunk_id for c in chunks if c is not None))
    for chunk_id in ids:
        ctx.tracker.saw(chunk_id, 1.0)
    return ids


def _read(ctx: ToolContext, retriever: HybridRetriever, name: str, event: Event,
          relation: str | None) -> _Found:
    """``name``'s date of ``event`` (with ``relation``, of the person its page names so),
    settled only where the pages read are unambiguous; else the candidates."""
    found = _hop(ctx, retriever, name, relation)
    if found.source is None:
        return found
    options: list[Date | tuple[Date, Date]] = []
    if event == "date":
        got = settle(work_readings(found.source.text), NO_DATE["date"], same_date)
        value: Date | tuple[Date, Date] | None = got.value if isinstance(got.value, Date) \
            else None
        options = list(_own(got))  # "a 2018 film ... released in the US on February 22, 2019"
    elif event == "lived":
        subject = page_subject(ctx, found.source)
        born, died = (settle(date_readings(found.source.text, e, subject), NO_DATE[e],
                             same_date) for e in ("born", "died"))
        both = isinstance(born.value, Date) and isinstance(died.value, Date) and \
            not died.value < born.value
        value = (born.value, died.value) if both else None  # type: ignore[assignment]
        got = Settled(value, born.readings + died.readings, born.why or died.why)
        options = [(b, d) for b in _own(born) for d in _own(died) if not d < b]
    else:
        got = settle(date_readings(found.source.text, event, page_subject(ctx, found.source)),
                     NO_DATE[event], same_date)
        value = got.value if isinstance(got.value, Date) else None
        options = list(_own(got))
    hard = found.doubt or _doubt(ctx, found)  # a page that is no entity's own, or the like
    found.doubt = hard or (got.why if value is None else None)
    found.candidates = [(str(r.value), r.whose) for r in got.readings]
    if value is not None and found.doubt:
        found.candidates = found.candidates or [(_show(value), "subject")]
        value = None
    found.value = value
    found.options = options if value is None and hard is None and len(options) > 1 else []
    return found


def _own(got: Settled) -> list[Date]:
    """The dates a settled reading allows: its value; where it settled none, every date the
    page gives of its own subject when it gives only those ("(January 25, 1881 or 1884 — "),
    else none."""
    if isinstance(got.value, Date):
        return [got.value]
    if not got.readings or any(r.whose != "subject" for r in got.readings):
        return []
    return list(dict.fromkeys(r.value for r in got.readings if isinstance(r.value, Date)))


def _doubt(ctx: ToolContext, found: _Found) -> str | None:
    """Why the pages ``found`` read settle nothing whatever they say: one of them is no
    entity's own page (None: both are)."""
    for chunk in dict.fromkeys(c for c in (found.page, found.source) if c is not None):
        why = qualifies(ctx, chunk)
        if why:
            return why
    return None


def _hop(ctx: ToolContext, retriever: HybridRetriever, name: str,
         relation: str | None) -> _Found:
    """``name``'s page and, with ``relation``, the person it names in that role and their
    page: the page a fact is read from is ``source`` (None where one is not found). A page
    not titled with the name asked for, a relation the page names several people in, a
    relative's page found by another name: ``doubt`` says so."""
    found = _Found(name)
    found.page = find_page(ctx, retriever, name)
    title = title_of(ctx, found.page) if found.page is not None else ""
    if found.page is not None and not titled(title, name) and \
            not described(title, name, found.page.text):
        found.doubt = f"[{found.page.chunk_id}] is titled {title!r}"
    if found.page is None or not relation:
        found.source = found.page
        return found
    if relation in KIN:
        people = kin(ctx, retriever, found.page, relation)
        if people:
            found.person, found.source = people[0].name, people[0].page
            found.doubt = found.doubt or _kin_doubt(people, relation)
        return found
    sentences = [s.text for s in found.page.sentences] or [found.page.text]
    # asked with the page's title: a name typed in lower case ("motema ya mawa") would read
    # as words of the relation
    people_named = bridge_names(f"Who is the {relation} of {title or name}?", sentences,
                                cued=True)
    if people_named:
        found.person = full_name(people_named[0], found.page.text)
        found.source = find_page(ctx, retriever, found.person)
        if found.source is not None and not titled(title_of(ctx, found.source), found.person):
            found.doubt = found.doubt or f"[{found.source.chunk_id}] is titled " \
                f"{title_of(ctx, found.source)!r}, not {found.person!r}"
    return found


def _kin_doubt(people: list[Person], relation: str) -> str | None:
    """Why the relative ``people`` lists does not settle whose page to read: the page names
    several in the relation, or the first's page was found by another name."""
    if len(people) > 1:
        return f"the page names more than one {relation}: " + \
            ", ".join(p.name for p in people)
    if not people[0].exact and people[0].page is not None:
        return f"[{people[0].page.chunk_id}] was found by a name other than " \
            f"{people[0].name!r}"
    return None


def _lead(chunk: Chunk) -> str:
    text = " ".join(chunk.text.split())
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS].rsplit(" ", 1)[0] + " ..."


def _line(f: _Found, event: str, relation: str | None) -> str:
    if f.page is None:
        return f"- {f.entity}: no page titled so found"
    if relation and f.person is None:
        return f"- {f.entity}: its page [{f.page.chunk_id}] names no {relation}"
    if relation and f.source is None:
        return f"- {f.entity}: {relation} {f.person} [{f.page.chunk_id}]; no page titled " \
               f"{f.person} found"
    who = f"{f.entity}: {relation} {f.person} [{f.page.chunk_id}]; " if relation else \
        f"{f.entity}: "
    assert f.source is not None
    if f.value is None and f.candidates:
        offered = "; ".join(f"{d} ({WHOSE[w]})" for d, w in f.candidates)
        return f"- {who}{NO_DATE[event]} not settled from [{f.source.chunk_id}] " \
               f"({f.doubt}): it offers {offered}: \"{_lead(f.source)}\""
    if f.value is None:
        return f"- {who}no {NO_DATE[event]} read from [{f.source.chunk_id}] " \
               f"\"{_lead(f.source)}\""
    shown = _show(f.value)
    if event == "lived" and isinstance(f.value, tuple):
        days, exact = _days(f.value)
        shown += f" ({days // 365} years)" if exact else f" (about {days // 365} years)"
    return f"- {who}{EVENTS[event]} {shown} [{f.source.chunk_id}] \"{_lead(f.source)}\""


def _asked(event: str, order: str, relation: str | None) -> str:
    one = f"each one's {relation}" if relation else "each one"
    return {"born": f"when {one} was born, {order} wanted",
            "died": f"when {one} died, {order} wanted",
            "date": f"the date of each one's page, {order} wanted",
            "lived": f"how long {one} lived, longest wanted"}[event]


def _verdict(found: list[_Found], event: str, order: str,
             relation: str | None) -> tuple[str, str | None]:
    """The line that settles the comparison, and the winning entity (None: unsettled)."""
    doubtful = [f.entity for f in found if f.value is None and f.candidates and not f.options]
    if doubtful:
        return (f"Not settled: the pages of {', '.join(doubtful)} do not settle the date "
                "(the candidates are quoted above); judge them from the passages "
                "(chunk_read)."), None
    missing = [f.entity for f in found if f.value is None and not f.options]
    if missing:
        return (f"Not settled: no date for {', '.join(missing)}; search their pages "
                "(keyword_search) or read them (chunk_read)."), None
    choices = [[f.value] if f.value is not None else f.options for f in found]
    if math.prod(len(c) for c in choices) > MAX_CHOICES:
        return "Not settled: the pages give too many dates to compare each.", None
    winners = {_first([f.entity for f in found], values, event, order)
               for values in itertools.product(*choices)}
    several = [f.entity for f in found if f.options]
    if len(winners) > 1 or None in winners:
        if several:
            return (f"Not settled: the pages of {', '.join(several)} give more than one date "
                    "(quoted above), and the answer turns on which is right; judge them "
                    "from the passages (chunk_read)."), None
        return ("Not settled: the dates compared are too close for the precision the pages "
                "give."), None
    best = winners.pop()
    which = {"born": "first", "died": "first", "date": "earliest", "lived": "longest"}[event]
    if order == "latest" and event != "lived":
        which = "last" if event in ("born", "died") else "latest"
    verb = {"born": "was born", "died": "died", "date": "is dated", "lived": "lived"}[event]
    whose = f"has the {relation} who {verb} {which}" if relation else f"{verb} {which}"
    either = f" whichever date the page of {', '.join(several)} gives" if several else ""
    return f"So {best} {whose}{either}.\nAnswer: {best}", best


MAX_CHOICES = 16  # combinations of several dates a comparison reads, at most


def _first(entities: list[str], values: tuple[Date | tuple[Date, Date], ...], event: str,
           order: str) -> str | None:
    """The entity whose value comes first in the wanted order; None when undecided."""
    best = 0
    for other in range(1, len(values)):
        ahead = _ahead(values[other], values[best], event, order)
        if ahead is None:
            return None
        if ahead:
            best = other
    return entities[best]


def _ahead(a: Date | tuple[Date, Date], b: Date | tuple[Date, Date], event: str,
           order: str) -> bool | None:
    """Whether value ``a`` comes before ``b`` in the wanted order; None when undecided."""
    if event == "lived":
        assert isinstance(a, tuple) and isinstance(b, tuple)
        (da, exact_a), (db, exact_b) = _days(a), _days(b)
        if da == db or (not (exact_a and exact_b) and abs(da - db) < 365):
            return None
        return da > db
    assert isinstance(a, Date) and isinstance(b, Date)
    earlier = a.before(b)
    if earlier is None:
        return None
    return earlier if order == "earliest" else not earlier


FACTS = {"birth_date": "born", "birth_place": "born in", "death_date": "died",
         "death_place": "died in", "burial_place": "buried in", "father": "father",
         "mother": "mother", "spouse": "married", "nationality": "nationality"}


def fact_arguments(question: str, top_k: int) -> dict[str, Any] | None:
    """The call that reads what a question asks of a person ("Where was the director of
    film X born?", "Who is the paternal grandfather of X?"), or None for a question that
    asks none of the facts the tool reads."""
    found = fact_question(question)
    return found.arguments() if found else None


@tool(command="fact", from_question=fact_arguments)
def person_fact(
    ctx: ToolContext,
    entity: Annotated[str, Field(min_length=1, max_length=300), QUERY],
    fact: Literal["birth_date", "birth_place", "death_date", "death_place", "burial_place",
                  "father", "mother", "spouse", "nationality"],
    relation: Annotated[str | None, Field(max_length=40)] = None,
) -> ToolResult:
    """Read a fact of a person from their own page: when or where they were born, died or
    were buried, their father, mother or spouse, their nationality; with relation, of the
    person an entity's page names in that role ("Where was the director of film X born?":
    entity "X", relation "director", fact "birth_place"; "Who is the paternal grandfather
    of Y?": entity "Y", relation "father", fact "father"). The fact is quoted with its
    chunk id; what the page does not say is said so, with the page's first lines.

    Args:
        entity: The person, or the work or person whose page names them (with relation).
        fact: "birth_date", "birth_place", "death_date", "death_place", "burial_place",
            "father", "mother", "spouse" or "nationality".
        relation: The role the wanted person has on the entity's page: "director",
            "composer", "performer", "father", "mother", "husband", "wife", ...
    """
    retriever = HybridRetriever(ctx.index)
    found = _hop(ctx, retriever, entity, relation)
    applies = _entity_pages(ctx, [found.page])
    got = _fact(ctx, retriever, found.source, fact) if found.source else Settled(None)
    value, why = got.value, got.why
    unsure = None  # a place read where the gazetteer knows none: the model judges it
    if value is not None and fact in PLACE_FACTS and \
            (is_burial_site if fact == "burial_place" else is_place)(str(value)) is not True:
        unsure, value = str(value), None
    doubt = found.doubt or (_doubt(ctx, found) if found.source else None)
    if value is not None and doubt:  # what the page says, but not a verdict
        got = Settled(None, got.readings or (Reading(value, -1, "subject"),), doubt)
        value, why = None, doubt
    cited = _read_chunks(ctx, [found.page, found.source] if applies else [])
    what = fact.replace("_", " ")
    asked = f"{what} of {f'the {relation} of ' if relation else ''}{entity}"
    lines = _fact_lines(found, entity, relation, fact, value, unsure, got)
    # what was not found is said plainly: the agent's prompt says how to go on (a small
    # model told to search for it made 4.4 calls for 1 right answer in 22, BENCHMARKS §16)
    verdict = f"Answer: {value}" if value is not None else \
        f"Not settled: read {unsure!r}, which may not be the {what}." if unsure else \
        f"Not settled: {why}; the candidates are quoted above: judge them from the " \
        "passages." if got.readings else \
        f"Not found: the pages read do not state the {what}."
    text = f"Read from the pages ({asked}):\n" + "\n".join(lines) + "\n" + verdict
    return ToolResult(text, {"entity": entity, "fact": fact, "relation": relation,
                             "person": found.person,
                             "chunk_id": found.source.chunk_id if found.source else None,
                             "answer": str(value) if value is not None else None,
                             "candidates": [{"value": str(r.value), "whose": r.whose}
                                            for r in got.readings] if value is None else [],
                             "cited": cited, "applies": applies})


def _fact_lines(found: _Found, entity: str, relation: str | None, fact: str,
                value: object | None, unsure: str | None, got: Settled) -> list[str]:
    """The lines of :func:`person_fact`'s result: the pages followed, then what was read."""
    what = fact.replace("_", " ")
    lines = []
    if found.page is None:
        lines.append(f"- {entity}: no page titled so found")
    elif relation and found.person is None:
        lines.append(f"- {entity}: its page [{found.page.chunk_id}] names no {relation}")
    elif relation:
        lines.append(f"- {entity}: {relation} {found.person} [{found.page.chunk_id}]")
    who = found.person or entity
    source = found.source
    if found.page is not None and source is None and found.person:
        lines.append(f"- {who}: no page titled so found")
    elif source is not None and unsure is not None:
        lines.append(f"- {who}: {FACTS[fact]} {unsure}? [{source.chunk_id}] "
                     f"\"{_quote(source, unsure)}\" ({unsure!r} is not a place the "
                     "gazetteer knows: check what the passage says)")
    elif source is not None and value is None and got.readings:
        lines.append(f"- {who}: its page [{source.chunk_id}] does not settle the {what} "
                     f"({got.why}); it offers:")
        lines += [f"  - {r.value} ({WHOSE[r.whose]}) [{source.chunk_id}] "
                  f"\"{_quote_at(source, r)}\"" for r in got.readings]
    elif source is not None and value is None:
        lines.append(f"- {who}: its page [{source.chunk_id}] gives no {what}"
                     f"{_unstated(fact, source)}: \"{_lead(source)}\"")
    elif source is not None:
        lines.append(f"- {who}: {FACTS[fact]} {value} [{source.chunk_id}] "
                     f"\"{_quote(source, str(value))}\"")
    return lines


def _fact(ctx: ToolContext, retriever: HybridRetriever, page: Chunk, fact: str) -> Settled:
    """``fact`` as ``page`` states it of its subject: a relative's name (every spouse it
    names), a nationality, or a date or place of the person's life; settled only where
    what the page says of its subject is one value (:func:`sleuth.facts.readings.settle`)."""
    what = fact.replace("_", " ")
    if fact in KIN_FACTS:
        return _kin_fact(ctx, retriever, page, fact)
    subject = page_subject(ctx, page)
    if fact == "nationality":
        mine = nationality(page.text, judge_for(subject))
        said = nationality(page.text)
        if mine is None and said is not None:
            return Settled(None, (Reading(said, -1, "unknown"),),
                           "the page does not say it of its subject")
        body = page.text[heading_end(page.text):]
        country = country_from(body[slice(*sentence_spans(body)[0])] if body.strip() else "")
        if mine is not None and country is not None and \
                plain(mine.split()[-1])[:3] != plain(country)[:3]:
            # "a Sámi yoik singer from Norway": a people, and a country
            return Settled(None, (Reading(mine, -1, "subject"), Reading(country, -1, "subject")),
                           "the page gives its subject a people and a country")
        return Settled(mine)
    if fact in ("birth_date", "death_date"):
        event: Literal["born", "died"] = "born" if fact == "birth_date" else "died"
        return settle(date_readings(page.text, event, subject), what, same_date)
    return settle(place_readings(page.text, fact, subject), what, same_place)


def _kin_fact(ctx: ToolContext, retriever: HybridRetriever, page: Chunk,
              fact: str) -> Settled:
    """A relative of the page's subject: every spouse it names, one father or mother
    (several: not settled); relatives the page names of someone else are the candidates
    where it names none of the subject's."""
    people = kin(ctx, retriever, page, fact)
    names = [p.name for p in people]
    if fact == "spouse" and names:
        return Settled(" and ".join(names))
    if len(names) == 1:
        return Settled(names[0])
    if names:
        readings = tuple(Reading(n, -1, "subject") for n in names)
        return Settled(None, readings, f"the page names more than one {fact}")
    others = stated_of_others(ctx, page, fact)
    if others:
        return Settled(None, tuple(Reading(r.name, -1, "other") for r in others),
                       f"the page names no {fact} of its subject")
    return Settled(None)


PLACE_FACTS = ("birth_place", "death_place", "burial_place")


def _unstated(fact: str, page: Chunk) -> str:
    """What a page names where it does not state the relative asked for: parents whose
    sexes it does not say ("daughter of the singer Ana Marin and the director Paul Marin")."""
    if fact not in ("father", "mother"):
        return ""
    parents = [r.name for r in family(page.text).parents]
    return f" (it names the parents {' and '.join(parents)} without saying which is the " \
           f"{fact})" if parents else ""


def _quote(chunk: Chunk, said: str | None) -> str:
    """The words of ``chunk`` around what was read from it (its lead when not found)."""
    text = " ".join(chunk.text.split())
    at = text.find(said.split(" and ")[0]) if said else -1
    if at < QUOTE_CHARS // 2:
        return _lead(chunk)
    start = text.rfind(" ", 0, at - QUOTE_CHARS // 2) + 1
    cut = text[start:start + QUOTE_CHARS]
    return "... " + (cut.rsplit(" ", 1)[0] if len(text) > start + QUOTE_CHARS else cut) + \
        (" ..." if len(text) > start + QUOTE_CHARS else "")


def _quote_at(chunk: Chunk, reading: Reading) -> str:
    """The words of ``chunk`` around where ``reading`` was read (its value where the offset
    is not known)."""
    if reading.at < 0:
        return _quote(chunk, str(reading.value))
    text = chunk.text
    start = max(0, reading.at - QUOTE_CHARS // 3)
    start = text.find(" ", start) + 1 if start else 0  # at a word's start
    cut = " ".join(text[start:start + QUOTE_CHARS].split())
    return ("... " if start else "") + cut + (" ..." if start + QUOTE_CHARS < len(text) else "")
