"""unfounded: the documents' silence, in place of an answer about a term the corpus never holds.

Asked of the PostgreSQL manual "what is the default CONN_MAX_AGE in Django?" or "the default
size of the InnoDB buffer pool", a model answers from memory ("6 seconds", "8MB") although
the first search's passages said the corpus never mentions the term (BENCHMARKS §25-26). The
terms are found once, by the first search (:func:`unseen_terms`, the draft's ``unseen``);
the check withholds the answer and says the documents do not mention them. Only where the
question asks for something in the term's place ("the postgres equivalent of MySQL's
GROUP_CONCAT") does an answer stand that names an identifier the corpus holds, other than
its common vocabulary. No model call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sleuth.agent.checks.base import CheckContext, When
from sleuth.agent.draft import Draft
from sleuth.agent.run import NOT_SAID
from sleuth.text.abstain import abstains
from sleuth.text.ids import strip_citations
from sleuth.text.lexicon import SUBSTITUTE_PHRASES, SUBSTITUTE_WORDS, plain
from sleuth.text.querytext import identifier_terms, phrased_otherwise, proper_names, spelled_like

if TYPE_CHECKING:
    from sleuth.index.read import ReadIndex


def unseen_terms(index: ReadIndex, question: str, evidence: str) -> list[str]:
    """The terms of ``question`` the corpus never holds: an identifier ("io_combine_limit"
    asked of a manual of a version without it) that is not a word a corpus may phrase
    otherwise ("FY2018", "DPO"), and a name capitalised mid-sentence ("an Aurora cluster"
    asked of the PostgreSQL manual) that no word of ``evidence`` (the first passages) spells
    nearly (a misspelt "Notorius" is not one) and no chunk holds even inside a word
    ("_Euchologion_"). A dotted identifier whose every part the corpus holds is held
    ("pg_class.relkind": a manual writes the column under its table's name)."""
    unseen = [t for t in identifier_terms(question)
              if not phrased_otherwise(t, question) and not index.keyword_search(t, 1)
              and not _held_otherwise(index, t)]
    unseen += [n for n in proper_names(question) if n not in unseen
               and not index.keyword_search(n, 1) and not spelled_like(n, evidence)
               and not index.keyword_search(n, 1, mode="substring")]
    return unseen


def _held_otherwise(index: ReadIndex, term: str) -> bool:
    """Whether each part of a dotted identifier ("pg_class.relkind") is in the corpus, or a
    hyphenated one written without its hyphens ("SHA-256" as "SHA256")."""
    parts = [p for p in term.split(".") if p]
    if "-" in term.strip("-") and index.keyword_search(term.replace("-", ""), 1):
        return True
    return len(parts) > 1 and all(index.keyword_search(p, 1) for p in parts)


def asks_substitute(question: str) -> bool:
    """Whether ``question`` asks for something in place of a term ("the postgres equivalent
    of mysql GROUP_CONCAT", "what to use instead of X"): an answer naming what the corpus
    holds instead is one (:data:`~sleuth.text.lexicon.SUBSTITUTE_WORDS`)."""
    said = f" {plain(question)} "
    return any(f" {w} " in said for w in SUBSTITUTE_WORDS) or \
        any(f" {p} " in said for p in SUBSTITUTE_PHRASES)


def names_held(ctx: CheckContext, question: str, answer: str) -> bool:
    """Whether ``answer`` names an identifier the corpus holds that ``question`` does not,
    other than the corpus's common vocabulary: a term in a tenth of its chunks
    ("PostgreSQL" in the PostgreSQL manual) is no sign the answer came from it."""
    own = {t.lower() for t in identifier_terms(question)}
    return any(t.lower() not in own and ctx.index.keyword_search(t, 1) and
               not ctx.common(t) for t in identifier_terms(strip_citations(answer)))


@dataclass(frozen=True)
class Unfounded:
    """The documents' silence in place of an answer to a question about a term the corpus
    never holds ("The default CONN_MAX_AGE in Django is 6 seconds", asked of the PostgreSQL
    manual). What a term does or defaults to is not told by another's description ("what
    does summarize_wal do?" answered with auto_explain's log_wal). The withheld answer is
    recorded as a step (a listener that heard it streamed hears the abstention after it)."""

    name: str = "unfounded"
    when: When = "draft"
    calls_model: bool = False
    verdicts: bool = False

    def applies(self, draft: Draft, ctx: CheckContext) -> bool:
        return bool(draft.unseen)

    def check(self, draft: Draft, ctx: CheckContext) -> Draft | None:
        question, final = draft.question, draft.answer
        if asks_substitute(question) and names_held(ctx, question, final):
            return None
        terms = ", ".join(repr(t) for t in draft.unseen)
        if not abstains(final):  # the model's answer, withheld: on the record
            ctx.run.observe("unseen_terms", {"terms": list(draft.unseen)},
                            strip_citations(final).strip()[:600],
                            "the question names what the corpus never holds: the model's "
                            "answer (this step's output) is withheld")
        return draft.revise(self.name, f"the corpus never mentions {terms}",
                            answer=f"{NOT_SAID}: the corpus never mentions {terms}.",
                            abstained=True)
