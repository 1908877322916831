"""The LLM protocol and the value types every backend returns.

The agent talks to models only through :class:`LLM`; it never sees SDK objects. Messages and
tool schemas are plain dicts in the OpenAI chat-completions format.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["LLM", "ChatResponse", "Streaming", "TextCallback", "ToolCall", "Usage"]

#: Receives a reply's answer text in pieces, as the model writes it.
TextCallback = Callable[[str], None]


@dataclass(frozen=True)
class ToolCall:
    """One function call requested by the model.

    ``arguments`` is the raw JSON text exactly as the model produced it; it may be malformed,
    and parsing (and reporting a parse failure back to the model) is the caller's job.
    """

    id: str
    name: str
    arguments: str

    def to_dict(self) -> dict[str, Any]:
        """This call in the OpenAI ``tool_calls`` item format."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True)
class Usage:
    """Token counts for one request (zeros when the server does not report them)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens the server reused from its cache (not processed)

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        """Sum two usages (handy for running totals)."""
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
        )


@dataclass(frozen=True)
class ChatResponse:
    """One assistant turn: text and/or tool calls, with usage and metadata."""

    content: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None
    reasoning: str | None = None
    # the facts a facts-first answer object read out before its answer (JsonToolCalls'
    # ``facts_first``): what the passages state, in the model's words
    facts: str | None = None

    def to_message(self) -> dict[str, Any]:
        """The assistant message to append to the history (OpenAI chat format).

        ``content`` is kept as ``None`` only when the turn carries tool calls (the format allows
        it there); a turn with neither gets ``""``. ``reasoning`` is not echoed back, since many
        servers reject unknown message fields.
        """
        message: dict[str, Any] = {"role": "assistant"}
        if self.tool_calls:
            message["content"] = self.content
            message["tool_calls"] = [tc.to_dict() for tc in self.tool_calls]
        else:
            message["content"] = self.content if self.content is not None else ""
        return message


@runtime_checkable
class LLM(Protocol):
    """Anything that can answer a chat-completions request."""

    model: str

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        tool_choice: str | None = None,
        parallel_tool_calls: bool | None = None,
    ) -> ChatResponse:
        """Send ``messages`` (and optional tool schemas) and return the assistant's turn.

        Raises :class:`sleuth.errors.LLMError` when the endpoint fails after retries.
        """
        ...


@runtime_checkable
class Streaming(LLM, Protocol):
    """An :class:`LLM` that can also hand over a reply's answer text as it is written."""

    def stream_chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        tool_choice: str | None = None,
        parallel_tool_calls: bool | None = None,
        on_text: TextCallback,
    ) -> ChatResponse:
        """What :meth:`LLM.chat` returns for the same request; meanwhile ``on_text`` gets
        the reply's answer text, in pieces as the server streams it (whole, once, where it
        does not). A reply that turns out to be tool calls may have passed on text written
        before them; inline reasoning and tool calls written as text are held back."""
        ...
