"""An abstention that the model's own reading of the passages contradicts.

With a facts-first answer object (``{"facts": ..., "answer": ...}``,
:class:`~sleuth.llm.jsontools.JsonToolCalls`), a 1.5B model sometimes reads the answer out of
the passages into "facts" and then answers "The documents do not say" anyway: on the
PostgreSQL manual, "facts": "The default value for the amount of memory reserved to store
the text of the currently executing command ... is 1024 bytes.", "answer": "The documents do
not say". When every value the facts add to the question (a number with its unit, an
identifier, a name) is in the passages the model was shown, the facts are the answer, cited
with the chunks that hold those values. Facts that add no value ("Yes, MGM Resorts paid
dividends"), or one the passages do not hold (a ratio the model computed, a name it
remembered), leave the abstention standing; so do facts that abstain in words of their own
and facts about another relation than the question's ("Johann Nicolaus Bach's father was
Johann Christoph Bach" for his paternal grandfather: a hop short).
No model is called: the check reads strings only, and only where the model wrote facts
(the ``small`` profile asks for them: ``agent.facts_first``) and the tool loop answered.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from sleuth.agent.checks.base import CheckContext, When
from sleuth.agent.draft import Draft
from sleuth.text.abstain import abstains
from sleuth.text.ids import cite, cited_ids, strip_citations
from sleuth.text.lexicon import STOPWORDS
from sleuth.text.querytext import identifier_terms, passage_names, relation_stems, same_stem

MAX_CITED = 3  # chunks cited for the facts: those that hold their values, cited ones first

# a number on its own ("-1", "1,024", "$3.8", "34%"), not part of a word or a range
_NUMBER = re.compile(r"(?<![\w.-])-?\$?\d[\d,]*(?:\.\d+)?%?(?![\w])")
_BACKTICKED = re.compile(r"`([^`\n]{1,80})`")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_TOKEN = re.compile(r"(?<![\w.])-\d+(?:\.\d+)?%?|\d+(?:\.\d+)?%?|[^\W_]+(?:_+[^\W_]+)*", re.UNICODE)


def plain(text: str) -> str:
    """``text`` as lower-case tokens between single spaces, numbers without thousands
    separators or currency signs ("$1,024.5" → "1024.5"), for matching one text in
    another: ``f" {plain(part)} " in f" {plain(whole)} "``."""
    text = _THOUSANDS.sub("", text.replace("`", " ").replace("$", " "))
    return " ".join(_TOKEN.findall(text.lower()))


def values(facts: str) -> list[str]:
    """The values a statement names, each as :func:`plain` tokens: each number with the
    word after it when that word is not a function word ("1024 bytes", "-1", "65535"),
    each identifier ("log_min_duration_statement") and backticked span, and each name
    ("Henry Otto", "PostgreSQL")."""
    found: list[str] = []
    for match in _NUMBER.finditer(facts):
        after = re.match(r"\s+([A-Za-z]+)", facts[match.end():])
        unit = after.group(1) if after and after.group(1).lower() not in STOPWORDS \
            else ""
        found.append(f"{match.group(0)} {unit}")
    found += identifier_terms(facts)
    found += [m.group(1) for m in _BACKTICKED.finditer(facts)]
    found += [name for _, name in passage_names(facts, single=True)]
    return [v for v in dict.fromkeys(plain(v) for v in found) if v]


def _held(value: str, text: str) -> bool:
    """Whether ``text`` (:func:`plain`, padded with spaces) holds ``value``; a number of
    three digits or more may stand without the unit the facts gave it ("65535 parameters"
    for "... is 65,535"), a shorter one may not ("1 second" is not any "1")."""
    if f" {value} " in text:
        return True
    number, _, unit = value.partition(" ")
    return bool(unit) and sum(c.isdigit() for c in number) >= 3 and \
        re.fullmatch(r"-?\d+(?:\.\d+)?%?", number) is not None and f" {number} " in text


def read_out(question: str, draft: str, facts: str | None, shown: Iterable[str],
             chunks: Mapping[str, str], cited: Sequence[str] = (),
             common: Callable[[str], bool] = lambda value: False) -> str | None:
    """The answer the model's ``facts`` give where its ``draft`` abstains and every value
    the facts add to ``question`` is in the passages ``shown`` to it; cited with the chunks
    (by id, ``cited`` first, then the rest of ``chunks``) that hold those values. A value
    other than a number that is ``common`` (the corpus's own vocabulary: "PostgreSQL" in
    its manual) adds nothing. None: the draft stands."""
    if not facts or not abstains(draft) or abstains(facts):
        return None
    stated = relation_stems(facts)
    if not all(any(same_stem(r, s) for s in stated) for r in relation_stems(question)):
        return None  # another relation: "X's father was Y" for "X's paternal grandfather"
    asked = f" {plain(question)} "
    new = [v for v in values(strip_citations(facts)) if f" {v} " not in asked
           and (_NUMBER.match(v) or not common(v))]
    seen = f" {plain(' '.join(shown))} "
    if not new or not all(_held(v, seen) for v in new):
        return None
    order = [*[c for c in cited if c in chunks], *[c for c in chunks if c not in cited]]
    texts = {c: f" {plain(chunks[c])} " for c in order}
    holding = [c for c in order if any(_held(v, texts[c]) for v in new)][:MAX_CITED]
    if not holding:
        return None
    return f"{' '.join(strip_citations(facts).split())} {' '.join(cite(c) for c in holding)}"


@dataclass(frozen=True)
class ReadFacts:
    """The facts the model read out of the passages, in place of its loop answer that the
    documents do not say, where the passages shown hold every value they add to the
    question (:func:`read_out`); recorded as a step. The first answer without tools is
    left alone (it abstains only to let the tools search on)."""

    name: str = "read_facts"
    when: When = "draft"
    calls_model: bool = False
    verdicts: bool = False

    def applies(self, draft: Draft, ctx: CheckContext) -> bool:
        return draft.source == "loop" and bool(draft.facts)

    def check(self, draft: Draft, ctx: CheckContext) -> Draft | None:
        started = time.perf_counter()
        shown = [str(m.get("content") or "") for m in ctx.messages if m.get("role") == "tool"]
        ids = list(dict.fromkeys([*draft.citations, *ctx.retrieved]))
        chunks = {c.chunk_id: c.text for c in ctx.index.read(ids).chunks}
        answer = read_out(draft.question, draft.answer, draft.facts, shown, chunks,
                          draft.citations, common=ctx.common)
        if answer is None:
            return None
        ctx.run.observe("read_facts", {"chunk_ids": cited_ids(answer)}, draft.facts or "",
                        "the model's facts hold values the passages state, but its answer said "
                        "the documents do not: the facts are the answer", started)
        return draft.revise(self.name, "the model's facts, held by the passages, replace "
                            "its answer that the documents do not say", answer=answer)
