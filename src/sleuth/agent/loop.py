"""The ReAct loop: the model calls one retrieval tool per step until it answers.

Budgets are explicit (max steps, context tokens); when one runs out the model is asked for
a final answer without tools. Malformed arguments, unknown tools and tool errors return to
the model as observations; LLM failures (after the client's retries) raise ``LLMError``.

An answer goes through stages in a fixed order: the first search and the tools of the
question (:mod:`sleuth.agent.first`), then one answering stage (a tool's settled verdict, the
first answer without tools, or the tool loop), then the declared answer checks
(``agent.checks``, :mod:`sleuth.agent.checks`) over the typed draft, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sleuth.agent.checks import CheckContext, Chosen, choose, run_checks, sends_on
from sleuth.agent.context import ContextWatch
from sleuth.agent.draft import Draft
from sleuth.agent.first import FirstStages, settled_answer, with_passages
from sleuth.agent.run import Run, StepCallback
from sleuth.agent.toolcalls import assistant_message, call_key, execute, repeated
from sleuth.llm import ChatResponse
from sleuth.prompts import prompt
from sleuth.text.tokens import count_tokens
from sleuth.tools import Tool, ToolContext

__all__ = ["BASE_CHECKS", "Agent", "StepCallback", "prompt", "settled_answer",
           "with_passages"]

MAX_REPEATS = 2  # turns in a row that only repeat earlier calls before the answer is forced
# the checks of an agent that names none (the A-RAG variants): a question about a term the
# corpus never holds, an answer that names a passage, an answer with no words
BASE_CHECKS = ("unfounded", "quote_named", "silence")


@dataclass
class Agent(FirstStages):
    """An LLM with retrieval tools over one index."""

    system_prompt: str = field(default_factory=lambda: prompt("full"))
    # the answer checks, in order (:mod:`sleuth.agent.checks`; ``agent.checks`` where set
    # replaces them: the one switch of each)
    checks: Sequence[str] = BASE_CHECKS

    def __post_init__(self) -> None:
        listing = "\n".join(f"- {t.name}: {t.description.split('. ')[0]}." for t in self.tools)
        self.system_prompt = self.system_prompt.replace("{tools}", listing)
        if self.settings.checks is not None:
            self.checks = tuple(self.settings.checks)
        self.chosen: tuple[Chosen, ...] = choose(self.checks)

    def respond(self, run: Run, history: Sequence[dict[str, Any]]) -> str:
        """The loop's answer. Follow-ups see what was already retrieved (the session's
        tracker) and the earlier turns; a history without a system message (a chat client's
        turns) gets this agent's."""
        draft = Draft(run.answer.question)
        run.answer.checks = [c.spec for c in self.chosen]
        budget = self._budget()
        ctx = ToolContext(self.index, run.tracker, full_chunks=self.full_chunks,
                          token_budget=budget)
        messages: list[dict[str, Any]] = list(history)
        if not messages or messages[0].get("role") != "system":
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        first_choice = settled = None
        tools = list(self.tools)  # with the also_first tools that were called
        if self.first_as_call and self.retrieve_first:
            messages.append({"role": "user", "content": draft.question})
            first_choice, settled = self._first_call(run, ctx, draft, messages, tools)
        else:
            messages.append({"role": "user", "content": self._preload(run, ctx,
                                                                      draft.question)})
        run.answer.messages = messages
        checking = CheckContext(run, self.index, messages, tools, ctx, self.settings)
        if settled is not None and self.settings.settled_answers == "tool":
            draft = replace(draft, answer=settled_answer(settled), source="verdict")
        else:
            if self.answer_first and self.settings.answer_first:
                draft = self._answer_first(draft, self.chosen, checking, history)
            if draft.source != "first":
                watch = ContextWatch(run, ctx, self.tools, self.settings, budget)
                draft = self._steps(draft, checking, watch, first_choice)
        draft.shown = _shown(draft.answered or messages)
        draft = run_checks(self.chosen, draft, checking)
        if draft.abstained:
            run.answer.abstained = True
        messages.append({"role": "assistant", "content": draft.answer})
        return draft.answer

    def _steps(self, draft: Draft, checking: CheckContext, watch: ContextWatch,
               first_choice: str | None = None) -> Draft:
        """Tool calls of the tools offered until the model answers (an ``answer`` check may
        send it on); when a budget runs out, a forced answer. ``first_choice`` is the first
        call's tool choice ("required": search further)."""
        run, messages, tools = checking.run, checking.messages, checking.tools
        answer = run.answer
        schemas = [t.schema() for t in tools]
        made: dict[str, int] = {}  # each distinct call, with the step that made it
        repeats = 0  # consecutive turns that only repeated earlier calls
        while answer.loops < self.settings.max_steps:
            choice, first_choice = first_choice, None
            response = self._chat(run, messages, schemas, tool_choice=choice)
            if not response.tool_calls:
                text = response.content or ""
                sent = sends_on(self.chosen, replace(draft, answer=text), checking)
                if sent is None:
                    return replace(draft, answer=text, source="loop", facts=response.facts)
                draft = replace(sent, answer="")
                continue
            answer.loops += 1
            if self._call_tools(run, checking.tool_context, messages, tools, response, made,
                                watch):
                repeats = 0
            else:
                repeats += 1
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
        return replace(draft, answer=response.content or "", source="loop",
                       facts=response.facts)

    def _call_tools(self, run: Run, ctx: ToolContext, messages: list[dict[str, Any]],
                    tools: Sequence[Tool], response: ChatResponse, made: dict[str, int],
                    watch: ContextWatch) -> bool:
        """Run the turn's tool calls (the first only, unless ``agent.parallel_tool_calls``),
        each result written into the dialogue and recorded as a step; a call made before is
        not run again (a small model stuck in a loop). Whether any call was new."""
        calls = list(response.tool_calls)
        if not self.settings.parallel_tool_calls:
            calls = calls[:1]
        messages.append(assistant_message(response, calls))
        fresh = False
        for call in calls:
            key = call_key(call)
            if key in made:
                step = run.record(repeated(call, response, run.next_step, made[key]))
            else:
                step = run.record(execute(tools, ctx, call, response, run.next_step))
                made[key], fresh = step.step, True
            messages.append({"role": "tool", "tool_call_id": call.id,
                             "content": step.tool_output})
            if step.tool_name == "summarize" and step.error is None:
                watch.compact(messages, step)
        return fresh

    def _budget(self) -> int:
        """The context budget, kept under the model's window when the client knows it
        (a local model's context is much smaller than the 128k default)."""
        window = getattr(self.llm, "context_window", None)
        return min(self.settings.token_budget, int(0.75 * window)) if window else \
            self.settings.token_budget

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


def _shown(messages: Sequence[dict[str, Any]]) -> str:
    """The text of the passages an answer came from: its request's user and tool messages
    (the first answer's request where it answered, else the loop's dialogue)."""
    return " ".join(str(m.get("content") or "") for m in messages
                    if m.get("role") in ("user", "tool"))
