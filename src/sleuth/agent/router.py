"""``--agent auto``: route simple questions to plain RAG and complex ones to the tool agent.

A single-fact lookup is answered faster and cheaper by one retrieval and one answer; a
multi-hop, comparison, calculation or explanation question needs the agent's tool loop.
:func:`classify` decides from cheap features of the question, with no LLM:

- ``hops``: relation nouns (director, mother, spouse ...; grandfather and other
  two-step kin count twice) plus one when the question asks an attribute of what it names
  (when / where / born / died / nationality). "Who is the director of Titanic?" is one hop,
  "Where was the director of Titanic born?" two.
- cues: comparison (older, earlier, more ... than, same, both, compare, difference), a
  choice or conjunction between named entities ("..., A or B?", "A and B"), calculation
  (ratio, percentage, growth, change, increase ...), order in time (before, after,
  between ... and), explanation (why, how does, explain, analyse).
- size: three or more entities (:func:`sleuth.retrieval.question_keywords`), two or more
  question marks, more than 35 words.

A question is *complex* when it has two or more hops or any cue, else *simple*; the reason
names what decided it. With ``use_llm`` one tool-less chat call (prompt ``router.md``)
decides instead, falling back to the rule when the reply is not understood or the call
fails. The :class:`Router` wraps the two runners: it runs the chosen one and records the
route on its answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sleuth.agent.run import Prices, Run, Runner, StepCallback
from sleuth.errors import LLMError
from sleuth.llm import LLM
from sleuth.prompts import prompt
from sleuth.text.lexicon import ROLES
from sleuth.text.querytext import question_keywords
from sleuth.tools.tracker import Tracker
from sleuth.types import Answer, Decision, Route

AUTO = "auto"
DESCRIPTION = ("router: simple questions to router.simple_agent (naive-rag), complex ones to "
               "router.complex_agent (hybrid); answers carry the route")
MAX_WORDS = 35
MAX_ENTITIES = 2

# kin two steps away (grandfather, great-aunt, stepmother, uncle, father-in-law): two hops
_KIN2 = re.compile(r"\b(?:grand\w+|great-\w+|step\w+|uncle|aunt|nephew|niece|cousin|\w+-in-law)\b",
                   re.I)
# a relation named by who holds it (director, mother, owner ...): one hop
_ROLES = sorted((r for r in ROLES if not _KIN2.fullmatch(r)), key=lambda r: (-len(r), r))
_RELATION = re.compile(rf"\b(?:{'|'.join(map(re.escape, _ROLES))})s?\b", re.I)
_ATTRIBUTE = re.compile(r"^\W*(?:when|where)\b|\b(?:born|birth|birthplace|die|died|death|"
                        r"nationality|citizenship|country|buried|award|prize|founded)\b", re.I)
_CLAUSE = re.compile(r"\w\s+(?:that|which)\s+\w", re.I)  # "the company that published X"
_PERIOD = re.compile(r"^(?:FY|Q[1-4]|H[12])?\s*'?\d{2,4}(?:\s*Q[1-4])?$|^(?:FY|Q[1-4]|H[12])$",
                     re.I)  # years and fiscal periods are not entities
_CUES: dict[str, re.Pattern[str]] = {
    "comparison": re.compile(
        r"\b(?:older|younger|earlier|later|sooner|longer|shorter|taller|bigger|larger|smaller|"
        r"greater|fewer|(?:more|less|higher|lower) \w+ than|(?:more|less|higher|lower) than|"
        r"compared?|comparison|comparing|differen(?:ce|t)|same|both|versus|vs)\b", re.I),
    "calculation": re.compile(
        r"\b(?:ratio|margin|percent(?:age)?|growth|grow|grew|changed?|changes|increased?|"
        r"decreased?|declined?|drop|improv\w*|calculat\w*|comput\w*|average|CAGR|sum|"
        r"combined|per share)\b|%", re.I),
    "order in time": re.compile(r"\b(?:before|after|prior to|between\b[^.?!]{1,30}?\band)\b",
                                re.I),
    "explanation": re.compile(
        r"\b(?:why|how (?:does|do|did|is|are|was|were|has|have|can|could|would|should|will)|"
        r"explain\w*|analy[sz]e\w*|analysis|assess\w*|evaluat\w*|justif\w*)\b", re.I),
}
_CHOICE = re.compile(r",[^,?]+\bor\b[^,?]+\?\s*$")
_JOINED = re.compile(r"^\W*(?:and|or|&)\W*$", re.I)
_VERDICT = re.compile(r"^\W*(simple|complex)\b\W*(.*)", re.I | re.S)


def classify(question: str) -> Route:
    """Simple or complex, from cheap features of ``question`` (no LLM); see the module doc."""
    entities = [e for e in question_keywords(question)
                if (e[:1].isupper() or e[:1].isdigit()) and not _PERIOD.match(e)]
    words = len(question.split())
    hops = _hops(question)
    cues = {name: m.group(0) for name, pattern in _CUES.items()
            if (m := pattern.search(question))}
    choice = "or" if _CHOICE.search(question) else "and" if _joined(question, entities) else ""
    if choice:
        cues["choice between entities"] = choice
    marks = question.count("?")
    features: dict[str, Any] = {"words": words, "entities": len(entities), "hops": hops,
                                "question_marks": marks, "cues": cues}
    why = [f"{name} cue {text.strip()!r}" for name, text in cues.items()]
    if hops >= 2:
        why.insert(0, f"{hops} hops")
    if len(entities) > MAX_ENTITIES:
        why.append(f"{len(entities)} entities")
    if marks >= 2:
        why.append(f"{marks} question marks")
    if words > MAX_WORDS:
        why.append(f"{words} words")
    count = f"{len(entities)} entit{'y' if len(entities) == 1 else 'ies'}"
    if why:
        if len(entities) <= MAX_ENTITIES:
            why.insert(0, count)
        return Route("complex", "complex: " + ", ".join(why), features)
    return Route("simple", f"simple: {count}, {hops} hop, {words} words, no comparison, "
                 "calculation or explanation cue", features)


def _hops(question: str) -> int:
    relations = len(_RELATION.findall(question)) + 2 * len(_KIN2.findall(question))
    relations += len(_CLAUSE.findall(question))
    return max(1, relations + bool(_ATTRIBUTE.search(question)))


def _joined(question: str, entities: list[str]) -> bool:
    """Two named entities with only "and" / "or" between them ("Are A and B ...")."""
    spans = sorted((m.start(), m.end()) for e in entities
                   if (m := re.search(re.escape(e), question)))
    return any(_JOINED.match(question[a_end:b_start])
               for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False))


def parse_verdict(text: str) -> tuple[Decision, str] | None:
    """``"complex: needs two hops"`` → ``("complex", "needs two hops")``; None if neither."""
    match = _VERDICT.match(text.strip())
    if match is None:
        return None
    decision: Decision = "simple" if match.group(1).lower() == "simple" else "complex"
    reason = match.group(2).strip()
    return decision, reason.splitlines()[0] if reason else ""


@dataclass
class Router:
    """Classify the question, run ``simple_agent`` or ``complex_agent``, record the route.

    The answer keeps the chosen runner's name in ``agent`` and gains ``route``
    (``decision``, ``reason``, ``by``, ``agent``, ``features``). With ``use_llm`` the
    classification call's tokens and cost are added to the answer.
    """

    simple_agent: Runner
    complex_agent: Runner
    llm: LLM
    use_llm: bool = False
    system_prompt: str = field(default_factory=lambda: prompt("router"))
    prices: Prices | None = None
    name: str = AUTO

    def run(self, question: str, *, question_id: str | None = None,
            on_step: StepCallback | None = None, tracker: Tracker | None = None,
            history: Sequence[dict[str, Any]] = ()) -> Answer:
        with Run.start(self.name, self.llm, question, question_id=question_id,
                       prices=self.prices) as run:
            route = self.route(question, run)
            runner = self.complex_agent if route.decision == "complex" else self.simple_agent
            answer = runner.run(question, question_id=question_id, on_step=on_step,
                                tracker=tracker, history=history)
            run.absorb(answer)
            run.adopt(answer).route = replace(route, agent=runner.name)
        return answer

    def route(self, question: str, run: Run) -> Route:
        """The rule's route, or the LLM's when ``use_llm`` (its call on ``run``'s account)."""
        rules = classify(question)
        if not self.use_llm:
            return rules
        messages = [{"role": "system", "content": self.system_prompt},
                    {"role": "user", "content": question}]
        try:
            response = run.chat(messages, None, tool_choice="none")
        except LLMError as exc:
            return _fallback(rules, f"LLM error: {exc}")
        verdict = parse_verdict(response.content or "")
        if verdict is None:
            reply = " ".join((response.content or "").split())[:60]
            return _fallback(rules, f"LLM reply not understood: {reply!r}")
        decision, reason = verdict
        return Route(decision, f"{decision}: {reason}" if reason else decision,
                     rules.features, "llm")


def _fallback(rules: Route, problem: str) -> Route:
    return Route(rules.decision, f"{rules.reason} (rules; {problem})", rules.features, "rules")
