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
