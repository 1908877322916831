"""The stages before the tool loop: the first search, the tools of the question, the first
answer without tools.

The ReAct agent (:class:`~sleuth.agent.loop.Agent`) may retrieve for the question before the
model's first call: as passages in the question (naive RAG's single shot) or as the model's
own first call (the default agent), followed by the tools that read their arguments from the
question where they apply (the facts pack's ``compare_dates``: a tool that settles the
question gives the verdict). Then one request without tools may answer from the first
search's passages (naive-rag's prompt), before the tools are offered. What these stages find
goes on the question's :class:`~sleuth.agent.draft.Draft`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sleuth.agent.checks import CheckContext, Chosen, sends_on
from sleuth.agent.checks.unfounded import unseen_terms
from sleuth.agent.draft import Draft
from sleuth.agent.readers import first_prompt
from sleuth.agent.run import ModelRunner, Run
from sleuth.llm import ToolCall
from sleuth.prompts import prompt
from sleuth.text.abstain import abstains
from sleuth.text.ids import cite, strip_citations
from sleuth.text.querytext import covers
from sleuth.tools import TOOLS, Tool, ToolContext, ToolResult, hybrid_passages
from sleuth.tools.tracker import Tracker
from sleuth.types import Step


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


@dataclass
class FirstStages(ModelRunner):
    """The first search and the first answer, as the ReAct agent is configured for them."""

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
    # after the first retrieval, one answer-only request over its passages (naive-rag's
    # prompt: no tools offered); the stage is this variant's, ``agent.answer_first`` the
    # user's switch of it (:meth:`_answer_first` says where the tool loop answers instead)
    answer_first: bool = False
    # the first answer's request shows this many of the first search's best chunks whole
    # (``hybrid_search`` as the first tool; the loop's dialogue keeps the search's own text)
    first_whole: int = 0

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

    def _first_call(self, run: Run, ctx: ToolContext, draft: Draft,
                    messages: list[dict[str, Any]],
                    tools: list[Tool]) -> tuple[str | None, ToolResult | None]:
        """The retrieval before the model's first call, written into the dialogue as that
        call and its result and recorded as the first step, then the :attr:`also_first`
        tools that apply (each added to ``tools``: the model is offered a tool where it
        applies and its prompt stays short elsewhere). Returns the first call's tool choice,
        "required" when the passages do not cover the question and no such tool applied
        (the model searches on before answering), and the result of a tool that settled the
        question (its data's "answer"), if one did. ``draft`` gets the search's text, the
        question's terms the corpus never holds and whether a tool applied."""
        question = draft.question
        started = time.perf_counter()
        arguments = TOOLS[self.first_tool].question_arguments(question, self.retrieve_first)
        before = Tracker(read=list(run.tracker.read))  # what the search shows as new
        result = TOOLS[self.first_tool].run(ctx, arguments)
        evidence = " ".join(c.text for c in self.index.read(result.chunk_ids).chunks)
        query = str((arguments or {}).get("query", question))
        draft.first = self._first_text(before, query, result)
        # said beside the passages, so the model says the documents do not answer rather
        # than answering from memory
        draft.unseen = tuple(unseen_terms(self.index, question, evidence))
        if draft.unseen:
            result = ToolResult(result.text + "\n\nNot in the documents: the corpus never "
                                f"mentions {', '.join(repr(t) for t in draft.unseen)}.",
                                result.data, result.tokens)
        call = ToolCall("call_first", self.first_tool, json.dumps(arguments))
        messages += [{"role": "assistant", "content": None, "tool_calls": [call.to_dict()]},
                     {"role": "tool", "tool_call_id": call.id, "content": result.text}]
        covered = covers(question, evidence)
        covered = covered or bool(draft.unseen)  # nothing to search for: it may say so at once
        run.record(Step(
            1, self.first_tool, arguments, result.text,
            "retrieved before the first call; " + ("it covers the question" if covered else
                                                   "it does not cover the question: search on"),
            result.retrieved_tokens, None, time.perf_counter() - started, kind="retrieval"))
        settled = None
        for name in self.also_first:
            applied = self._also_call(run, ctx, draft, name, messages)
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
        windows."""
        method = result.data.get("method")
        if not self.first_whole or not isinstance(method, str) or not result.data.get("hits"):
            return result.text
        ranked = {h["chunk_id"]: h["score"] for h in result.data["hits"]}
        text, _ = hybrid_passages(ToolContext(self.index, before), query, ranked, method,
                                  whole=self.first_whole)
        return text

    def _also_call(self, run: Run, ctx: ToolContext, draft: Draft, name: str,
                   messages: list[dict[str, Any]]) -> ToolResult | None:
        """Call ``name`` for the whole question when it applies, written into the dialogue as
        the model's call and recorded as a step; its result (None: it does not apply)."""
        chosen = TOOLS[name]
        arguments = chosen.question_arguments(draft.question, self.retrieve_first)
        if arguments is None:
            return None
        started = time.perf_counter()
        step = run.next_step
        result = chosen.run(ctx, arguments)
        if result.data.get("applies") is False:  # not pages of its kind (decided per page)
            run.observe(name, arguments, result.text[:600], "not applied: the pages the "
                        "question's names lead to are not of the kind this tool reads",
                        started)
            return None
        call = ToolCall(f"call_first_{step}", name, json.dumps(arguments))
        messages += [{"role": "assistant", "content": None, "tool_calls": [call.to_dict()]},
                     {"role": "tool", "tool_call_id": call.id, "content": result.text}]
        settled = result.data.get("answer") is not None
        draft.applied = True  # its result is in the dialogue: the loop answers
        run.record(Step(step, name, arguments, result.text,
                        "called before the first call: it applies to the question" +
                        ("" if settled else ", without settling it"),
                        result.retrieved_tokens, None, time.perf_counter() - started,
                        kind="retrieval"))
        return result

    def _answer_first(self, draft: Draft, checks: Sequence[Chosen], ctx: CheckContext,
                      history: Sequence[dict[str, Any]]) -> Draft:
        """The draft answered by one request that shows the model the first search's
        passages and offers no tool (naive-rag's prompt and message; its ``source``
        "first"), or as it was: the tool loop answers. On the PostgreSQL manual that request
        answered 57.3 % of 117 questions where the same passages as a tool result, with tools
        offered, answered 45.6 (BENCHMARKS §30-31): a 1.5B model offered tools writes "the
        documents do not say" of passages that say it. The loop answers where the question
        names a term the corpus never holds (its answer gives way to the documents' silence
        anyway), where a tool of :attr:`also_first` applied (its result is in the loop's
        dialogue, not here), in a conversation's later turns (this request has no history),
        and where this answer says the documents do not say or an ``answer`` check sends it
        on (the bridge: it stopped at the entity a multi-hop question goes through); the
        loop's dialogue is left as it was, so it starts as it would have without this
        request (but for what such a check wrote into it)."""
        run = ctx.run
        earlier = any(m.get("role") == "user" for m in history)
        if not draft.first or earlier or draft.unseen or draft.applied:
            return draft
        started = time.perf_counter()
        request = [{"role": "system", "content": prompt(self._answer_prompt(run))},
                   {"role": "user", "content": with_passages(draft.question, draft.first)}]
        response = run.chat(request, None, tool_choice="none", may_answer=True,
                            unless_abstains=True)
        text = response.content or ""
        if strip_citations(text).strip() and not abstains(text):
            sent = sends_on(checks, replace(draft, answer=text), ctx)
            if sent is not None:
                return replace(sent, answer="")  # the loop goes on (its step says so)
            return replace(draft, answer=text, source="first", facts=response.facts,
                           answered=request)
        run.observe("answer_first", {}, strip_citations(text).strip()[:600],
                    "the answer from the first passages (this step's output) says the "
                    "documents do not say: the tools search on", started)
        return draft

    def _answer_prompt(self, run: Run) -> str:
        """The first answer's system prompt: the one a pack's question reader chooses (the
        writing pack's ``compose`` for a request to write something, "Draft an advisory on
        ...", which asks for the whole piece from the passages; ``agent.writing_tasks``,
        BENCHMARKS §41), else naive-rag's (a short answer, then its support; the same
        request, so the same cached reply)."""
        return first_prompt(run.answer.question, self.settings, "naive_rag")
