"""The ReAct loop: the model calls one retrieval tool per step until it answers.

Budgets are explicit (max steps, context tokens); when one runs out the model is asked for
a final answer without tools. Malformed arguments, unknown tools and tool errors return to
the model as observations; LLM failures (after the client's retries) raise ``LLMError``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from sleuth.agent.citations import parse_citations, resolve_sources
from sleuth.agent.context import _ContextManager
from sleuth.agent.tracker import Tracker
from sleuth.errors import ToolError
from sleuth.index import Index
from sleuth.llm import LLM, ChatResponse, ToolCall, cost
from sleuth.settings import AgentSettings
from sleuth.tokens import count_tokens
from sleuth.tools import TOOLS, Tool, ToolContext, ToolResult
from sleuth.types import Answer, Step

StepCallback = Callable[[Step], None]


def prompt(name: str) -> str:
    """A bundled prompt from ``sleuth/agent/prompts/<name>.md``."""
    return resources.files("sleuth.agent.prompts").joinpath(f"{name}.md").read_text("utf-8")


@dataclass
class Agent:
    """An LLM with retrieval tools over one index."""

    index: Index
    llm: LLM
    tools: Sequence[Tool]
    system_prompt: str = field(default_factory=lambda: prompt("full"))
    settings: AgentSettings = field(default_factory=AgentSettings)
    prices: Mapping[str, tuple[float, float]] | None = None
    name: str = "full"
    full_chunks: bool = False
    retrieve_first: int = 0

    def __post_init__(self) -> None:
        listing = "\n".join(f"- {t.name}: {t.description.split('. ')[0]}." for t in self.tools)
        self.system_prompt = self.system_prompt.replace("{tools}", listing)

    def run(self, question: str, *, question_id: str | None = None,
            on_step: StepCallback | None = None, tracker: Tracker | None = None,
            history: Sequence[dict[str, Any]] = ()) -> Answer:
        """Answer ``question``. A session passes its ``tracker`` and the ``history`` of
        earlier turns (the messages of :attr:`Answer.messages`), so follow-ups see what was
        already retrieved."""
        started = time.perf_counter()
        ctx = ToolContext(self.index, tracker or Tracker(), full_chunks=self.full_chunks,
                          token_budget=self._budget())
        answer = Answer(question=question, answer="", question_id=question_id, agent=self.name,
                        model=self.llm.model)
        messages: list[dict[str, Any]] = list(history) or [
            {"role": "system", "content": self.system_prompt}]
        messages.append({"role": "user", "content": self._preload(ctx, answer, question)})
        answer.messages = messages
        schemas = [t.schema() for t in self.tools]
        context = _ContextManager(self, answer, ctx)
        final: str | None = None
        while final is None:
            if answer.loops >= self.settings.max_steps:
                answer.forced = "max_steps"
                break
            response = self._chat(answer, messages, schemas)
            if not response.tool_calls:
                final = response.content or ""
                break
            answer.loops += 1
            calls = list(response.tool_calls)
            if not self.settings.parallel_tool_calls:
                calls = calls[:1]
            messages.append(_assistant(response, calls))
            for call in calls:
                step = self._execute(ctx, call, response, len(answer.trajectory) + 1)
                answer.trajectory.append(step)
                messages.append({"role": "tool", "tool_call_id": call.id,
                                 "content": step.tool_output})
                if on_step:
                    on_step(step)
                if step.tool_name == "summarize" and step.error is None:
                    context.compact(messages, step)
            if not context.check(messages, self._context_tokens(response, messages), on_step):
                answer.forced = "token_budget"
                break
        if final is None:
            messages.append({"role": "user", "content": prompt("force_answer")})
            final = self._chat(answer, messages, schemas, tool_choice="none").content or ""
        messages.append({"role": "assistant", "content": final})
        self._finish(answer, final, ctx.tracker, started)
        return answer

    def _budget(self) -> int:
        """The context budget, kept under the model's window when the client knows it
        (a local model's context is much smaller than the 128k default)."""
        window = getattr(self.llm, "context_window", None)
        return min(self.settings.token_budget, int(0.75 * window)) if window else \
            self.settings.token_budget

    def _preload(self, ctx: ToolContext, answer: Answer, question: str) -> str:
        """Naive RAG: retrieve once, put the chunks in the user message, record the step."""
        if not self.retrieve_first:
            return question
        started = time.perf_counter()
        arguments = {"query": question, "top_k": self.retrieve_first}
        result = TOOLS["naive_embedding_search"].run(ctx, arguments)
        answer.trajectory.append(Step(1, "semantic_search", arguments, result.text,
                                      "single-shot retrieval", result.retrieved_tokens, None,
                                      time.perf_counter() - started))
        return f"Question: {question}\n\nRetrieved passages:\n{result.text}"

    def _chat(self, answer: Answer, messages: list[dict[str, Any]],
              schemas: list[dict[str, Any]], tool_choice: str | None = None) -> ChatResponse:
        if not schemas:  # no tools offered: this call is for the final answer
            tool_choice = "none"
        response = self.llm.chat(
            messages, schemas or None, tool_choice=tool_choice,
            parallel_tool_calls=self.settings.parallel_tool_calls if schemas else None,
        )
        return self._account(answer, response)

    def _account(self, answer: Answer, response: ChatResponse) -> ChatResponse:
        """Add one call's tokens and cost to the run."""
        answer.llm_calls += 1
        answer.prompt_tokens += response.usage.prompt_tokens
        answer.cached_prompt_tokens += response.usage.cached_tokens
        answer.completion_tokens += response.usage.completion_tokens
        answer.total_cost += cost(response.model or self.llm.model, response.usage, self.prices)
        return response

    def _execute(self, ctx: ToolContext, call: ToolCall, response: ChatResponse,
                 number: int) -> Step:
        started = time.perf_counter()
        reasoning = (response.content or response.reasoning or "").strip()
        tool = next((t for t in self.tools if t.name == call.name), None)
        error: str | None = None
        try:
            if tool is None:
                names = ", ".join(t.name for t in self.tools)
                raise ToolError(f"unknown tool {call.name!r}; available tools: {names}")
            result = tool.run(ctx, call.arguments)
        except ToolError as exc:
            error = str(exc)
            result = ToolResult(f"Error: {error}", tokens=0)
        return Step(number, call.name, _decoded(call.arguments), result.text, reasoning,
                    result.retrieved_tokens, error, time.perf_counter() - started)

    def _context_tokens(self, response: ChatResponse, messages: list[dict[str, Any]]) -> int:
        """Tokens the next call will send: the last prompt plus what was appended since."""
        if response.usage.prompt_tokens:
            appended = messages[-2:]
            return response.usage.prompt_tokens + sum(
                count_tokens(str(m.get("content") or "")) for m in appended
            ) + response.usage.completion_tokens
        return sum(count_tokens(str(m.get("content") or "")) for m in messages)

    def _finish(self, answer: Answer, final: str, tracker: Tracker, started: float) -> None:
        answer.answer, answer.citations = parse_citations(
            final, lambda ids: resolve_sources(self.index, tracker, ids))
        answer.chunks_read_ids = list(tracker.read)
        answer.retrieved_ids = list(tracker.retrieved)
        answer.seconds = time.perf_counter() - started


def _assistant(response: ChatResponse, calls: list[ToolCall]) -> dict[str, Any]:
    message = response.to_message()
    message["tool_calls"] = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in calls
    ]
    return message


def _decoded(arguments: str) -> Any:
    import json

    try:
        return json.loads(arguments) if arguments else {}
    except json.JSONDecodeError:
        return arguments
