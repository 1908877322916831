"""``compute_metric``: a metric a question defines, computed from the figures the
statements state.

"What is the FY2017 operating cash flow ratio for Adobe? Operating cash flow ratio is
defined as: cash from operations / total current liabilities." The 1.5B model, shown the
right pages, divided the wrong figures ("0.54" for 0.83) and could not plan the arithmetic
itself (BENCHMARKS §33). This tool reads the definitions (:mod:`sleuth.statements.formula`),
searches the index for each figure (the company, the line item, the year), reads it from
the statement's row and column (:mod:`sleuth.statements.rows`) and computes the formula
exactly (:func:`sleuth.tools.calc.evaluate`). Every figure is quoted with its line and chunk
id; the result settles the question (the default agent answers with it, no model) only
when every figure was read. Otherwise it says which were not found, and the model goes on
from there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Annotated, Any

from pydantic import Field

from sleuth.errors import ToolError
from sleuth.retrieval import HybridRetriever
from sleuth.statements.filing import filing_chunk
from sleuth.statements.formula import (
    MAX_FORMULA,
    MAX_PLACES,
    Figure,
    asked_year,
    definitions,
    parse,
    places,
)
from sleuth.statements.rows import STATEMENT, Row, labels, plain, read_row
from sleuth.text.lexicon import STOPWORDS
from sleuth.tools.base import QUERY, ToolContext, ToolResult, tool
from sleuth.tools.calc import evaluate, rounded
from sleuth.types import Chunk

SEARCHED = 8  # chunks searched for each figure
MAX_SUBJECT = 200  # characters of the subject (the tool's argument)
UNREAD = ("write it as '<metric> is defined as: <terms>' with + - * / and parentheses, each "
          "term a number, another defined name, or a line item with its year ('FY2017 COGS', "
          "'average total assets between FY2016 and FY2017'), or give year")
# What the schema publishes of a formula: at least one definition as
# sleuth.statements.formula.definitions reads them, "<Name> is defined as: <formula>" or
# "<Name> = <formula>", at the start or after a sentence's end. (Whether its terms are line
# items with years, no JSON schema says: such a formula is answered "Not computed", why.)
FORMULA_PATTERN = (r"(?:^|[.?!:]\s)[A-Z][\w&/()' -]{0,60}?\s+(?:is|are)\s+defined\s+as:?\s*"
                   r"[^\s.?]|(?:^|[.?!:;]\s)[A-Z][\w&/ -]{0,40}?\s*=\s*[^\s.;]")
_SUBJECT = re.compile(r"\b[A-Z][\w&.'’-]*(?:\s+(?:&\s+)?[A-Z][\w&.'’-]*)*")
_NOT_SUBJECT = STOPWORDS | {"fy", "round", "calculate"}  # "Round your answer", "FY2018"


@dataclass(frozen=True)
class _Read:
    figure: Figure
    row: Row | None
    chunk_id: str | None
    query: str


def metric_arguments(question: str, top_k: int) -> dict[str, Any] | None:
    """The arguments that compute the metric ``question`` defines, or None where it
    defines none (a question with no "<metric> is defined as: ..." this reads)."""
    formula = parse(question)
    if formula is None:
        return None
    written = ". ".join(f"{name} is defined as: {words}"
                        for name, words in definitions(question).items())
    if len(written) > MAX_FORMULA:
        return None
    return {"subject": subject(question, formula.metric), "formula": written,
            "year": asked_year(question), "places": places(question)}


def subject(question: str, metric: str) -> str:
    """Whom a question asks about: the capitalised names of the sentence that asks it (up
    to its "?"), but for the sentence's first word, the metric's words, a year and a
    question word ("Coca Cola", "Amazon", "Lockheed Martin")."""
    asked = re.split(r"(?<=[.:!])\s", question.split("?", 1)[0])[-1]
    asked = asked.split(None, 1)[1] if len(asked.split()) > 1 else ""
    taken = set(plain(metric).split()) | {w.lower() for w in re.findall(r"\(([A-Z]+)\)", asked)}
    names: list[str] = []
    for match in _SUBJECT.finditer(asked):
        words = [w for w in re.sub(r"[’']s\b", "", match.group(0)).split()
                 if w.lower().strip(".") not in _NOT_SUBJECT | taken
                 and not re.match(r"(?:FY)?\d", w)]
        if words:
            names.append(" ".join(words))
    found = " ".join(dict.fromkeys(names))
    return found if len(found) <= MAX_SUBJECT else found[:MAX_SUBJECT].rsplit(" ", 1)[0]


@tool(command="metric", from_question=metric_arguments)
def compute_metric(
    ctx: ToolContext,
    subject: Annotated[str, Field(max_length=MAX_SUBJECT), QUERY],
    formula: Annotated[str, Field(min_length=3, max_length=MAX_FORMULA, json_schema_extra={
        "pattern": FORMULA_PATTERN})],
    year: Annotated[int | None, Field(ge=1900, le=2100)] = None,
    places: Annotated[int | None, Field(ge=0, le=MAX_PLACES)] = None,
) -> ToolResult:
    """Compute a financial metric from the figures its definition names, read from the
    statements (balance sheet, income and cash flow statements) of the company: each
    figure is searched for, read from its row and year column and quoted with its chunk
    id, then the formula is computed exactly. Use it for a question that defines its
    metric, e.g. subject "Adobe", formula "Operating cash flow ratio is defined as: cash
    from operations / total current liabilities", year 2017.

    Args:
        subject: The company (or other subject) the statements are of, e.g. "Coca Cola".
        formula: The definitions as the question writes them, "<metric> is defined as:
            <formula>", several separated by ". "; terms such as "average total assets
            between FY2016 and FY2017", "change in inventory between FY2016 and FY2017",
            "FY2017 COGS" or "net income" (of ``year``).
        year: The fiscal year of a figure named without one.
        places: Decimal places of the result.
    """
    parsed = parse(formula, year)
    if parsed is None:
        if not definitions(formula):  # what the published pattern refuses: no definition
            raise ToolError(f"cannot read the formula: {UNREAD}")
        # a definition whose terms are not line items this reads: said, as a figure not
        # found is (no JSON schema can say which words are line items)
        return ToolResult(f"Not computed: cannot read the formula's terms: {UNREAD}.",
                          {"answer": None, "formula": None, "figures": [], "cited": []})
    retriever = HybridRetriever(ctx.index)
    pages: list[Chunk] = []
    found = [_read(ctx, retriever, subject, figure, pages) for figure in parsed.figures]
    found = [r if r.row else _read(ctx, retriever, subject, r.figure, pages, again=True)
             for r in found]  # from the statements the later figures were read from
    lines = [_line(r) for r in found]
    cited = list(dict.fromkeys(r.chunk_id for r in found if r.chunk_id and r.row))
    for chunk_id in cited:
        ctx.tracker.saw(chunk_id, 1.0)
    missing = [r for r in found if r.row is None]
    head = f"{parsed.written}\nFigures read from the statements ({subject or 'no subject'}):\n" \
        + "\n".join(lines)
    data = {"answer": None, "formula": parsed.written, "figures": [_data(r) for r in found],
            "cited": cited}
    if missing:
        return ToolResult(f"{head}\nNot computed: {', '.join(r.figure.name for r in missing)} "
                          "not found in a statement's row.", data)
    try:
        value, computed = evaluate(parsed.expression, [f"{r.figure.name} = {r.row.value}"
                                                       for r in found if r.row is not None])
    except ToolError as problem:  # a figure of 0 divided by: said, not raised mid-answer
        return ToolResult(f"{head}\nNot computed: {problem}.", data)
    shown = _shown(value, places if places is not None else parsed.places)
    result = f"{parsed.metric} = {computed} = {shown}"
    strangers = [r.chunk_id for r in found if r.chunk_id and not _of(r.chunk_id, subject)]
    if strangers:  # a figure of another company's filing: evidence, not a verdict
        return ToolResult(f"{head}\n{result}\nNot settled: {', '.join(strangers)} not of "
                          f"{subject or 'the subject'}'s documents.", data)
    because = f"{parsed.written}, with\n" + "\n".join(lines) + f"\n{result}"
    return ToolResult(f"{head}\n{result}", {**data, "answer": shown, "value": str(value),
                                             "because": because})


def _read(ctx: ToolContext, retriever: HybridRetriever, subject: str, figure: Figure,
          pages: list[Chunk], again: bool = False) -> _Read:
    """``figure`` read from the statements other figures were read from (``pages``, which
    gets the chunk it is read from), else from the chunks found for it: searched for by
    the label statements give the item, then by the item's own words, then as a line of
    the consolidated statements, only in the subject's documents where some are found;
    in what each search adds, a row labelled exactly with one of the item's names first,
    then one whose label adds words to it. Rows are read from the chunks of filings only
    (:func:`~sleuth.statements.filing.filing_chunk`, decided per document)."""
    names = labels(figure.item)
    queries = list(dict.fromkeys(f"{subject} {name} {figure.year}".strip()
                                 for name in names[:2]))
    queries.append(f"{subject} consolidated statements {names[0]} {figure.year}".strip())
    tried: set[str] = set()  # a chunk read in an earlier batch had neither row
    for query in [""] + ([] if again else queries):  # "": the pages read from so far
        batch = [c for c in (_found(ctx, retriever, query, subject) if query else pages)
                 if c.chunk_id not in tried]
        tried.update(c.chunk_id for c in batch)
        batch = [c for c in batch if filing_chunk(ctx.index, c)]  # figures of filings only
        for exact in (True, False):
            for chunk in batch:
                row = read_row(chunk.text, figure.item, figure.year, exact=exact)
                if row is not None:
                    if chunk not in pages:
                        pages.append(chunk)
                    return _Read(figure, row, chunk.chunk_id, query or queries[0])
    return _Read(figure, None, None, " / ".join(queries))


def _found(ctx: ToolContext, retriever: HybridRetriever, query: str,
           subject: str) -> list[Chunk]:
    """The chunks found for ``query``, best first, those of the subject's documents only
    where there are some."""
    ids = retriever.hybrid(query, SEARCHED)
    chunks = {c.chunk_id: c for c in ctx.index.read(ids).chunks}
    ranked = [chunks[i] for i in ids if i in chunks]
    own = [c for c in ranked if _of(c.doc_id, subject)] or ranked
    return sorted(own, key=lambda c: not STATEMENT.search(c.text))  # the statements first


def _of(doc_id: str, subject: str) -> bool:
    """Whether a document (or chunk) id names the subject (``COCACOLA_2017_10K`` for
    "Coca Cola")."""
    name = plain(doc_id).replace(" ", "")
    words = plain(subject).split()
    return bool(words) and ("".join(words) in name or any(len(w) > 3 and w in name
                                                           for w in words))


def _line(read: _Read) -> str:
    row = read.row
    if row is None:
        return f"- {read.figure.name}: not found (searched {read.query!r})"
    columns = "/".join(str(y) for y in row.years)
    return f"- {read.figure.name} = {rounded(row.value)} (\"{row.label}\", {row.written} in " \
        f"the {row.year} column of {columns}, in {row.scale}) [{read.chunk_id}]"


def _data(read: _Read) -> dict[str, Any]:
    row = read.row
    return {"name": read.figure.name, "item": read.figure.item, "year": read.figure.year,
            "value": None if row is None else str(row.value),
            "label": None if row is None else row.label, "chunk_id": read.chunk_id}


def _shown(value: Decimal, places: int | None) -> str:
    """The result as the question asks it rounded (else as a person reads it)."""
    if places is None:
        return rounded(value)
    return f"{value.quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP):,f}"
