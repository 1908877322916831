"""The ReAct loop: the model calls one retrieval tool per step until it answers.

Budgets are explicit (max steps, context tokens); when one runs out the model is asked for
a final answer without tools. Malformed arguments, unknown tools and tool errors return to
the model as observations; LLM failures (after the client's retries) raise ``LLMError``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sleuth.agent.citations import cite_holder
from sleuth.agent.context import ContextWatch
from sleuth.agent.echo import past_echo
from sleuth.agent.keylines import key_lines, with_key_lines
from sleuth.agent.readout import read_out
from sleuth.agent.run import NOT_SAID, ModelRunner, Run, StepCallback, abstention
from sleuth.agent.span import answer_step, names_only, quote_named
from sleuth.agent.support import support_step
from sleuth.agent.toolcalls import assistant_message, call_key, execute, repeated
from sleuth.llm import ChatResponse, ToolCall
from sleuth.prompts import prompt
from sleuth.retrieval import HybridRetriever
from sleuth.text.abstain import abstains
from sleuth.text.ids import cite, cited_ids, strip_citations
from sleuth.text.querytext import (
    asks_beyond_bridge,
    covers,
    identifier_terms,
    phrased_otherwise,
    proper_names,
    relation_cues,
    spelled_like,
    stem,
    stops_at_bridge,
    writing_task,
)
from sleuth.text.tokens import count_tokens
from sleuth.tools import TOOLS, Tool, ToolContext, ToolResult, hybrid_passages, lead_block
from sleuth.tools.tracker import Tracker
from sleuth.types import Step

if TYPE_CHECKING:
    from sleuth.index.read import ReadIndex

__all__ = ["Agent", "StepCallback", "prompt"]

MAX_REPEATS = 2  # turns in a row that only repeat earlier calls before the answer is forced
BRIDGE_CHARS = 1500  # of each passage about the entity an answer stopped at


def settled_answer(result: ToolResult) -> str:
    """The answer a page-fact tool's verdict gives, citing the chunks it was read from: what
    the model wrote from it 60 times in 61 on 2Wiki (BENCHMARKS §16), without its ~27 s
    call on two cores (``agent.settled_answers``)."""
    cited = " ".join(cite(c) for c in result.data.get("cited", []))
    answer = f"{result.data['answer']} {cited}".strip()
    because = result.data.get("because")  # how the tool got it (a computation's figures)
    return f"{answer}\n\n{because}" if because else answer


def with_passages(question: str, passages: str) -> str:
    """The user message of a request that answers from retrieved passages (naive RAG's,
    and the default agent's first answer: the same text, so the same cached reply)."""
    return f"Question: {question}\n\nRetrieved passages:\n{passages}"


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


# a question that asks for something in place of a term ("the postgres equivalent of
# mysql GROUP_CONCAT"): an answer naming what the corpus holds instead is one
SUBSTITUTE = re.compile(r"\b(?:equivalents?|instead|alternatives?|replacements?|replac(?:e|es|ing)|"
                        r"counterparts?|analog(?:ue)?s?|substitutes?|versus|vs|compared|"
                        r"migrat(?:e|es|ing|ion)|port(?:ing)?\s+from|in\s+place\s+of|"
                        r"rather\s+than)\b", re.IGNORECASE)


@dataclass
class Agent(ModelRunner):
    """An LLM with retrieval tools over one index."""

    system_prompt: str = field(default_factory=lambda: prompt("full"))
    full_chunks: bool = False
    retrieve_first: int = 0  # chunks retrieved for the question before the model's first call
    first_tool: str = "naive_embedding_search"  # what retrieves them
    # the retrieval as the model's own first call (True), or as passages in the question
    # (False: naive RAG). As a call, the model must search further when the passages do not
    # cover the question (the offline sufficiency test) and may answer at once when they do.
    first_as_call: bool = False
    # tools called after the first, as calls of the model's too, where they apply to the
    # question (their ``from_question``: ``compare_dates`` on "who was born first, A or
    # B?"); one that applies lets the model answer at once, whether it settles the
    # question (its data's "answer") or says what the pages do not state
    also_first: tuple[str, ...] = ()
    # an answer that names only the entity a multi-hop question goes through ("Henry Ford"
    # for "where did Edsel Ford's father die?") gets that entity's passages and one more
    # turn (:func:`sleuth.text.querytext.stops_at_bridge`)
    check_bridge: bool = False
    # after the draft, one call for the span of the evidence that answers, checked against
    # its passage (:mod:`sleuth.agent.span`)
    answer_span: bool = False
    # a draft that says the documents do not say, where the model's own facts read the
    # answer out of the passages shown, gives way to those facts (:mod:`sleuth.agent.readout`)
    read_facts: bool = False
    # after the first retrieval, one answer-only request over its passages (naive-rag's
    # prompt: no tools offered, nothing else in the dialogue); :meth:`_answer_first` says
    # where the tool loop answers instead
    answer_first: bool = False
    # the first answer's request shows this many of the first search's best chunks whole
    # (``hybrid_search`` as the first tool; the loop's dialogue keeps the search's own text)
    first_whole: int = 0
    # an answer whose citations do not hold its first sentence's words cites the chunk
    # retrieved that does (:func:`sleuth.agent.citations.cite_holder`; no model call)
    cite_holders: bool = False
    # an answer that only repeats the question's words ("Chemotherapy" for "What is the role
    # of chemotherapy in thyroid cancer?") gives way to the model's facts under it, read from
    # the passages, or to one more request over them (:mod:`sleuth.agent.echo`)
    past_echo: bool = False
    # an answer followed by the model's facts under it as its support, where they state it
    # in the words of the passages shown (:mod:`sleuth.agent.support`)
    with_support: bool = False

    def __post_init__(self) -> None:
        listing = "\n".join(f"- {t.name}: {t.description.split('. ')[0]}." for t in self.tools)
        self.system_prompt = self.system_prompt.replace("{tools}", listing)

    def respond(self, run: Run, history: Sequence[dict[str, Any]]) -> str:
        """The loop's answer. Follow-ups see what was already retrieved (the session's
        tracker) and the earlier turns; a history without a system message (a chat client's
        turns) gets this agent's."""
        question = run.answer.question
        budget = self._budget()
        ctx = ToolContext(self.index, run.tracker, full_chunks=self.full_chunks,
                          token_budget=budget)
        messages: list[dict[str, Any]] = list(history)
        if not messages or messages[0].get("role") != "system":
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        first_choice = settled = None
        tools = list(self.tools)  # with the also_first tools that were called
        if self.first_as_call and self.retrieve_first:
            messages.append({"role": "user", "content": question})
            first_choice, settled = self._first_call(run, ctx, question, messages, tools)
        else:
            messages.append({"role": "user", "content": self._preload(run, ctx, question)})
        run.answer.messages = messages
        watch = ContextWatch(run, ctx, self.tools, self.settings, budget)
        if settled is not None and self.settings.settled_answers == "tool":
            final = settled_answer(settled)
        else:
            first = self._answer_first(run, ctx, messages, history) \
                if self.answer_first and self.settings.answer_first else None
            if first is not None:
                final = first
            else:
                final = self._steps(run, ctx, messages, watch, tools, first_choice)
                if self.read_facts:
                    final = self._read_facts(run, messages, final) or final
            if self.past_echo:
                final = past_echo(run, question, final, self._shown(run, messages),
                                  messages, tools) or final
            spanned = None  # the answer step's answer: the phrase and its sentence
            if self.answer_span and self.settings.answer_span and \
                    strip_citations(final).strip():
                spanned = answer_step(run, self.index, question, final)
                final = spanned or final
            final = self._unfounded(run, question, final) or final
            if self.cite_holders and not abstains(final):
                final = self._cite_holder(run, question, final) or final
            if self.with_support and self.settings.answer_support and spanned is None:
                final = support_step(run, question, final,  # cited as the answer is
                                     self._shown(run, messages)) or final
            named = names_only(final)
            if named:
                final = self._quote_named(run, question, named) or final
        if not strip_citations(final).strip() or names_only(final):  # nothing but ids
            final = f"{abstention(self._silence(run))} {final}".strip()
            run.answer.abstained = True
        messages.append({"role": "assistant", "content": final})
        return final

    def _steps(self, run: Run, ctx: ToolContext, messages: list[dict[str, Any]],
               watch: ContextWatch, tools: Sequence[Tool],
               first_choice: str | None = None) -> str:
        """Tool calls of ``tools`` until the model answers; when a budget runs out, a forced
        answer. ``first_choice`` is the first call's tool choice ("required": search
        further)."""
        answer = run.answer
        schemas = [t.schema() for t in tools]
        made: dict[str, int] = {}  # each distinct call, with the step that made it
        repeats = 0  # consecutive turns that only repeated earlier calls
        checked = not self.check_bridge or run.scratch.get("bridged", False)
        while answer.loops < self.settings.max_steps:
            choice, first_choice = first_choice, None
            response = self._chat(run, messages, schemas, tool_choice=choice)
            if not response.tool_calls:
                text = response.content or ""
                if checked or not self._past_bridge(run, ctx, messages, text):
                    run.scratch["facts"] = response.facts
                    return text
                checked = True
                continue
            answer.loops += 1
            calls = list(response.tool_calls)
            if not self.settings.parallel_tool_calls:
                calls = calls[:1]
            messages.append(assistant_message(response, calls))
            fresh = False
            for call in calls:
                key = call_key(call)
                if key in made:  # a small model stuck in a loop: do not run it again
                    step = run.record(repeated(call, response, run.next_step, made[key]))
                else:
                    step = run.record(execute(tools, ctx, call, response, run.next_step))
                    made[key], fresh = step.step, True
                messages.append({"role": "tool", "tool_call_id": call.id,
                                 "content": step.tool_output})
                if step.tool_name == "summarize" and step.error is None:
                    watch.compact(messages, step)
            repeats = 0 if fresh else repeats + 1
            if repeats >= MAX_REPEATS:
                answer.forced = "repeated_calls"
                break
            if not watch.check(messages, self._context_tokens(response, messages)):
                answer.forced = "token_budget"
                break
        else:  # the step budget ran out
            answer.forced = "max_steps"
        messages.append({"role": "user", "content": prompt("force_answer")})
        response = self._chat(run, messages, schemas, tool_choice="none")
        run.scratch["facts"] = response.facts
        return response.content or ""

    def _answer_first(self, run: Run, ctx: ToolContext, messages: list[dict[str, Any]],
                      history: Sequence[dict[str, Any]]) -> str | None:
        """The answer of one request that shows the model the first search's passages and
        offers no tool (naive-rag's prompt and message), or None: the tool loop answers.
        On the PostgreSQL manual that request answered 57.3 % of 117 questions where the
        same passages as a tool result, with tools offered, answered 45.6 (BENCHMARKS §30-31):
        a 1.5B model offered tools writes "the documents do not say" of passages that say
        it. The loop answers where the question names a term the corpus never holds (its
        answer gives way to the documents' silence anyway), where a tool of
        :attr:`also_first` applied (its result is in the loop's dialogue, not here), in a
        conversation's later turns (this request has no history), and where this answer
        says the documents do not say or stops at the entity a multi-hop question goes
        through; the loop's dialogue is left as it was, so it starts as it would have
        without this request."""
        first = run.scratch.get("first")
        earlier = any(m.get("role") == "user" for m in history)
        if not first or earlier or run.scratch.get("unseen") or run.scratch.get("applied"):
            return None
        started = time.perf_counter()
        request = [{"role": "system", "content": prompt(self._answer_prompt(run))},
                   {"role": "user", "content": with_passages(run.answer.question, first)}]
        response = run.chat(request, None, tool_choice="none", may_answer=True,
                            unless_abstains=True)
        text = response.content or ""
        if strip_citations(text).strip() and not abstains(text):
            if self.check_bridge and self._past_bridge(run, ctx, messages, text):
                return None  # the loop goes on from its bridge passages (its step says so)
            run.scratch["facts"] = response.facts
            run.scratch["answered"] = request  # the request the answer came from
            return text
        run.observe("answer_first", {}, strip_citations(text).strip()[:600],
                    "the answer from the first passages (this step's output) says the "
                    "documents do not say: the tools search on", started)
        return None

    def _answer_prompt(self, run: Run) -> str:
        """The first answer's system prompt: naive-rag's (a short answer, then its support;
        the same request, so the same cached reply), or, for a request to write something
        (:func:`~sleuth.text.querytext.writing_task`: "Draft an advisory on ...", "As an
        intern, compose a SOAP note"), one that asks for the whole piece from the passages
        (``agent.writing_tasks``; BENCHMARKS §41)."""
        if self.settings.writing_tasks and writing_task(run.answer.question):
            return "compose"
        return "naive_rag"

    def _read_facts(self, run: Run, messages: Sequence[dict[str, Any]],
                    final: str) -> str | None:
        """The facts the model read out of the passages, in place of its ``final`` answer
        that the documents do not say, where the passages shown hold every value they add
        to the question (:func:`sleuth.agent.readout.read_out`); recorded as a step. None:
        the answer stands."""
        facts = run.scratch.get("facts")
        if not facts:
            return None
        started = time.perf_counter()
        shown = [str(m.get("content") or "") for m in messages if m.get("role") == "tool"]
        ids = list(dict.fromkeys([*cited_ids(final), *run.tracker.retrieved]))
        chunks = {c.chunk_id: c.text for c in self.index.read(ids).chunks}
        answer = read_out(run.answer.question, final, facts, shown, chunks, cited_ids(final),
                          common=self._common)
        if answer is None:
            return None
        run.observe("read_facts", {"chunk_ids": cited_ids(answer)}, facts,
                    "the model's facts hold values the passages state, but its answer said "
                    "the documents do not: the facts are the answer", started)
        return answer

    @staticmethod
    def _shown(run: Run, messages: Sequence[dict[str, Any]]) -> str:
        """The text of the passages the answer came from: the first answer's request where
        it answered, else the loop's dialogue."""
        first = run.scratch.get("answered")
        return " ".join(str(m.get("content") or "") for m in (first or messages)
                        if m.get("role") in ("user", "tool"))

    def _cite_holder(self, run: Run, question: str, final: str) -> str | None:
        """``final`` citing the retrieved chunk that holds what it answers, where the chunks
        it cites do not (:func:`sleuth.agent.citations.cite_holder`), recorded as a step;
        None: its citations stand."""
        started = time.perf_counter()
        chunks = self.index.read(list(run.tracker.retrieved)).chunks
        found = cite_holder(final, question, chunks)
        if found is None:
            return None
        answer, holder = found
        run.observe("cite_holder", {"chunk_ids": [holder]}, holder,
                    "the chunks the answer cites do not hold its words: it cites the "
                    "retrieved chunk that does", started)
        return answer

    def _quote_named(self, run: Run, question: str, named: Sequence[str]) -> str | None:
        """For an answer made only of the chunk ids ``named``, what the first of them says to
        the question (:func:`sleuth.agent.span.quote_named`), recorded as a step; None: none
        of them was retrieved by the run."""
        started = time.perf_counter()
        quoted = quote_named(self.index, question, named, list(run.tracker.retrieved))
        if quoted is None:
            return None
        run.observe("quote_named", {"chunk_ids": cited_ids(quoted)}, quoted,
                    "the answer named a passage, not what it says: the passage's sentences on "
                    "the question are the answer", started)
        return quoted

    def _unfounded(self, run: Run, question: str, final: str) -> str | None:
        """The documents' silence, in place of an answer to a question about a term the
        corpus never holds ("The default CONN_MAX_AGE in Django is 6 seconds", "The default
        size of the InnoDB buffer pool is 8MB", asked of the PostgreSQL manual); None: the
        answer stands. The model was told the corpus never mentions the term and answered
        from memory anyway (BENCHMARKS §25-26). Only where the question asks for something
        in its place does an answer stand that names an identifier the corpus holds, other
        than its common vocabulary ("string_agg" for "the equivalent of MySQL's
        GROUP_CONCAT" stands, "PostgreSQL" does not make "UUIDv7" an answer); what a term
        does or defaults to is not told by another's description ("what does summarize_wal
        do?" answered with auto_explain's log_wal). The withheld answer is recorded as a step
        (a listener that heard it streamed hears the abstention after that step)."""
        unseen = run.scratch.get("unseen") or []
        if not unseen:
            return None
        if SUBSTITUTE.search(question) and self._names_held(question, final):
            return None
        run.answer.abstained = True
        if not abstains(final):  # the model's answer, withheld: on the record
            run.observe("unseen_terms", {"terms": unseen}, strip_citations(final).strip()[:600],
                        "the question names what the corpus never holds: the model's answer "
                        "(this step's output) is withheld")
        return f"{NOT_SAID}: the corpus never mentions " \
               f"{', '.join(repr(t) for t in unseen)}."

    def _names_held(self, question: str, final: str) -> bool:
        """Whether ``final`` names an identifier the corpus holds that ``question`` does not,
        other than the corpus's common vocabulary: a term in a tenth of its chunks
        ("PostgreSQL" in the PostgreSQL manual) is no sign the answer came from it."""
        own = {t.lower() for t in identifier_terms(question)}
        return any(t.lower() not in own and self.index.keyword_search(t, 1) and
                   not self._common(t) for t in identifier_terms(strip_citations(final)))

    def _common(self, term: str) -> bool:
        """Whether ``term`` is the corpus's common vocabulary: in a tenth of its chunks
        ("PostgreSQL" in the PostgreSQL manual) or more, at least 20."""
        common = max(20, self.index.stats().chunks // 10)
        return len(self.index.keyword_search(term, common)) >= common

    @staticmethod
    def _silence(run: Run) -> str:
        """Why an answer with no words is one (a 1.5B model stuck in a loop of repeated calls
        answered "[2wiki-00317#0]", once in 100 questions)."""
        forced = run.answer.forced
        return f"the model's answer had no words after {run.answer.loops} steps" + \
            (f" (the search ended: {forced.replace('_', ' ')})" if forced else "")

    def _past_bridge(self, run: Run, ctx: ToolContext, messages: list[dict[str, Any]],
                     text: str) -> bool:
        """When the answer ``text`` stops at the entity the question goes through (judged
        on the passages retrieved so far), show the model that entity's passages with its
        answer's shortfall and return True: the loop goes on. The passages are quoted even
        when shown before; a small model reads what is next to the question."""
        question = run.answer.question
        if not asks_beyond_bridge(question):  # the usual case: no chunk is read
            return False
        chunks = self.index.read(list(run.tracker.retrieved)).chunks
        sentences = [s.text for c in chunks for s in c.sentences] or [c.text for c in chunks]
        name = stops_at_bridge(question, text, sentences)
        ids = HybridRetriever(self.index).pages(name) if name else []
        if not name or not ids:
            return False
        started = time.perf_counter()
        blocks = [lead_block(ctx, chunk, chars=BRIDGE_CHARS)
                  for chunk in self.index.read(ids).chunks]
        bridge, cues = relation_cues(question)
        words = re.findall(r"[A-Za-z]+", question)
        said = {"name": name, "question": question, "result": "\n\n".join(blocks),
                "bridge": " ".join(w for w in words if stem(w.lower()) in bridge) or "entity",
                "beyond": ", ".join(w for w in words if stem(w.lower()) in cues - bridge)}
        note = prompt("bridge_answer")
        for key, value in said.items():
            note = note.replace("{" + key + "}", value)
        run.observe("bridge_passages", {"chunk_ids": ids}, said["result"],
                    f"the answer {text.strip()[:200]!r} stopped at {name}, the entity the "
                    "question goes through: its passages shown with the question", started,
                    tokens=sum(count_tokens(b) for b in blocks))
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": note}]
        run.scratch["bridged"] = True  # once
        return True

    def _budget(self) -> int:
        """The context budget, kept under the model's window when the client knows it
        (a local model's context is much smaller than the 128k default)."""
        window = getattr(self.llm, "context_window", None)
        return min(self.settings.token_budget, int(0.75 * window)) if window else \
            self.settings.token_budget

    def _preload(self, run: Run, ctx: ToolContext, question: str) -> str:
        """Retrieve once before the model's first call (naive RAG's single shot, or the
        hybrid agent's first step), put the chunks in the user message and record the step
        (``on_step`` sees it too: a person watching the agent sees what it starts from)."""
        if not self.retrieve_first:
            return question
        started = time.perf_counter()
        arguments = TOOLS[self.first_tool].question_arguments(question, self.retrieve_first)
        result = TOOLS[self.first_tool].run(ctx, arguments)
        run.record(Step(1, self.first_tool, arguments, result.text,
                        "retrieved before the first call", result.retrieved_tokens, None,
                        time.perf_counter() - started, kind="retrieval"))
        return with_passages(question, result.text)

    def _first_call(self, run: Run, ctx: ToolContext, question: str,
                    messages: list[dict[str, Any]],
                    tools: list[Tool]) -> tuple[str | None, ToolResult | None]:
        """The retrieval before the model's first call, written into the dialogue as that
        call and its result and recorded as the first step, then the :attr:`also_first`
        tools that apply (each added to ``tools``: the model is offered a tool where it
        applies and its prompt stays short elsewhere). Returns the first call's tool choice,
        "required" when the passages do not cover the question and no such tool applied
        (the model searches on before answering), and the result of a tool that settled the
        question (its data's "answer"), if one did."""
        started = time.perf_counter()
        arguments = TOOLS[self.first_tool].question_arguments(question, self.retrieve_first)
        before = Tracker(read=list(run.tracker.read))  # what the search shows as new
        result = TOOLS[self.first_tool].run(ctx, arguments)
        evidence = " ".join(c.text for c in self.index.read(result.chunk_ids).chunks)
        query = str((arguments or {}).get("query", question))
        run.scratch["first"] = self._first_text(before, query, result)
        # said beside the passages, so the model says the documents do not answer rather
        # than answering from memory
        unseen = unseen_terms(self.index, question, evidence)
        run.scratch["unseen"] = unseen
        if unseen:
            result = ToolResult(result.text + "\n\nNot in the documents: the corpus never "
                                f"mentions {', '.join(repr(t) for t in unseen)}.",
                                result.data, result.tokens)
        call = ToolCall("call_first", self.first_tool, json.dumps(arguments))
        messages += [{"role": "assistant", "content": None, "tool_calls": [call.to_dict()]},
                     {"role": "tool", "tool_call_id": call.id, "content": result.text}]
        covered = covers(question, evidence)
        covered = covered or bool(unseen)  # nothing to search for: it may say so at once
        run.record(Step(
            1, self.first_tool, arguments, result.text,
            "retrieved before the first call; " + ("it covers the question" if covered else
                                                   "it does not cover the question: search on"),
            result.retrieved_tokens, None, time.perf_counter() - started, kind="retrieval"))
        settled = None
        for name in self.also_first:
            applied = self._also_call(run, ctx, name, question, messages)
            if applied is not None and TOOLS[name] not in tools:
                tools.append(TOOLS[name])
            if applied is not None and applied.data.get("answer") is not None:
                settled = settled or applied
            # a tool that applied has looked the question's entities up, settled or not: the
            # model may answer at once (forced to search on, a 1.5B model made 4.4 calls for
            # 1 right answer in 22 such questions, BENCHMARKS §16)
            covered = covered or applied is not None
        return (None if covered or not self.tools else "required"), settled

    def _first_text(self, before: Tracker, query: str, result: ToolResult) -> str:
        """The first search's text for the first answer: as the search wrote it, or with its
        :attr:`first_whole` best new chunks whole (``hybrid_search``'s ranking, rendered again
        for what ``before`` had read: nothing is marked read by it). On the PostgreSQL
        manual the two best whole answered 68.9 % of 117 questions where the search's
        windows answered 57.3 (BENCHMARKS §31-32): a manual's chunk holds a dozen settings,
        and the windows picked for the question miss the one it asks about one time in
        six; in the loop's request the same text read worse (§30), so the loop keeps the
        windows. With ``agent.key_lines``, the sentences of these chunks that match the
        question best come first (:mod:`sleuth.agent.keylines`; off, §40)."""
        method = result.data.get("method")
        if not self.first_whole or not isinstance(method, str) or not result.data.get("hits"):
            return result.text
        ranked = {h["chunk_id"]: h["score"] for h in result.data["hits"]}
        text, _ = hybrid_passages(ToolContext(self.index, before), query, ranked, method,
                                  whole=self.first_whole)
        lines = key_lines(self.index, query, list(ranked), self.settings.key_lines)
        return with_key_lines(text, lines)

    def _also_call(self, run: Run, ctx: ToolContext, name: str, question: str,
                   messages: list[dict[str, Any]]) -> ToolResult | None:
        """Call ``name`` for the whole question when it applies, written into the dialogue as
        the model's call and recorded as a step; its result (None: it does not apply)."""
        chosen = TOOLS[name]
        if chosen.suits is not None and not chosen.suits(self.index):
            return None  # not a corpus it reads (the facts pack off entity pages)
        arguments = chosen.question_arguments(question, self.retrieve_first)
        if arguments is None:
            return None
        started = time.perf_counter()
        step = run.next_step
        result = TOOLS[name].run(ctx, arguments)
        call = ToolCall(f"call_first_{step}", name, json.dumps(arguments))
        messages += [{"role": "assistant", "content": None, "tool_calls": [call.to_dict()]},
                     {"role": "tool", "tool_call_id": call.id, "content": result.text}]
        settled = result.data.get("answer") is not None
        run.scratch["applied"] = True  # its result is in the dialogue: the loop answers
        run.record(Step(step, name, arguments, result.text,
                        "called before the first call: it applies to the question" +
                        ("" if settled else ", without settling it"),
                        result.retrieved_tokens, None, time.perf_counter() - started,
                        kind="retrieval"))
        return result

    def _chat(self, run: Run, messages: list[dict[str, Any]], schemas: list[dict[str, Any]],
              tool_choice: str | None = None) -> ChatResponse:
        """A call of the loop: its reply is the answer unless it calls a tool."""
        if not schemas:  # no tools offered: this call is for the final answer
            tool_choice = "none"
        return run.chat(messages, schemas or None, tool_choice=tool_choice,
                        parallel_tool_calls=self.settings.parallel_tool_calls if schemas
                        else None, may_answer=True)

    def _context_tokens(self, response: ChatResponse, messages: list[dict[str, Any]]) -> int:
        """Tokens the next call will send: the last prompt plus what was appended since."""
        if response.usage.prompt_tokens:
            appended = messages[-2:]
            return response.usage.prompt_tokens + sum(
                count_tokens(str(m.get("content") or "")) for m in appended
            ) + response.usage.completion_tokens
        return sum(count_tokens(str(m.get("content") or "")) for m in messages)
