"""A model's tool call, run and recorded as a :class:`~sleuth.types.Step`; and the assistant
message that carries the calls in the dialogue."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from sleuth.errors import ToolError
from sleuth.llm import ChatResponse, ToolCall
from sleuth.tools import Tool, ToolContext, ToolResult
from sleuth.types import Step


def execute(tools: Sequence[Tool], ctx: ToolContext, call: ToolCall, response: ChatResponse,
            number: int) -> Step:
    """Run ``call`` with one of ``tools``; a bad call or a tool error becomes the step's
    output, for the model to read and recover from."""
    started = time.perf_counter()
    reasoning = (response.content or response.reasoning or "").strip()
    tool = next((t for t in tools if t.name == call.name), None)
    error: str | None = None
    try:
        if tool is None:
            names = ", ".join(t.name for t in tools)
            raise ToolError(f"unknown tool {call.name!r}; available tools: {names}")
        result = tool.run(ctx, call.arguments)
    except ToolError as exc:
        error = str(exc)
        result = ToolResult(f"Error: {error}", tokens=0)
    return Step(number, call.name, _decoded(call.arguments), result.text, reasoning,
                result.retrieved_tokens, error, time.perf_counter() - started)


def call_key(call: ToolCall) -> str:
    """The call's tool and arguments in one canonical string (key order and spacing do not
    matter), to notice a model repeating itself."""
    arguments = _decoded(call.arguments)
    return call.name + " " + (json.dumps(arguments, sort_keys=True) if not
                              isinstance(arguments, str) else arguments)


def repeated(call: ToolCall, response: ChatResponse, number: int, first: int) -> Step:
    """The step for a call the model already made at step ``first``: not run again (its
    result is in the dialogue), with an observation that says what to do instead."""
    text = (f"You already made this exact call at step {first}; its result is above. Do not "
            "repeat it: answer now if the evidence is sufficient, or call a tool with "
            "different arguments (other keywords, a sub-question, chunk_read of a chunk id "
            "shown above).")
    return Step(number, call.name, _decoded(call.arguments), text,
                (response.content or response.reasoning or "").strip(), 0,
                f"repeated call (same as step {first})", 0.0)


def assistant_message(response: ChatResponse, calls: Sequence[ToolCall]) -> dict[str, Any]:
    """The model's turn as it stays in the dialogue, with only the ``calls`` that were run."""
    message = response.to_message()
    message["tool_calls"] = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in calls
    ]
    return message


def _decoded(arguments: str) -> Any:
    try:
        return json.loads(arguments) if arguments else {}
    except json.JSONDecodeError:
        return arguments
