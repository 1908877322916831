"""Reading a streamed reply: its chunks assembled into the completion the non-streaming call
returns, and its answer text passed on as it arrives.

:func:`assemble` feeds ``chat.completion.chunk`` events to the SDK's own accumulator
(``ChatCompletionStreamState``), so tool-call deltas, reasoning and usage end up exactly where
a non-streamed completion has them. Two readers decide what of the text is answer:
:class:`TextGate` for a native reply (inline ``<think>`` reasoning and tool calls written as
text are held back), :class:`JsonAnswer` for the JSON tool protocol (only the ``"answer"``
string of the reply object, decoded as it arrives). Both hand text on as the growth of one
string (:class:`Relay`), so a final :meth:`Relay.finish` with the parsed answer adds only
what the stream did not already show.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from openai.lib.streaming.chat import ChatCompletionStreamState

from sleuth.llm.base import TextCallback

_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_CALL_OPENINGS = ("{", "```", "<tool_call>")  # how a tool call written as text starts
_LONGEST_ESCAPE = 6  # "\uXXXX"


def assemble(stream: Iterable[Any], on_content: TextCallback) -> Any:
    """The completion ``stream`` adds up to (as ``chat.completions.create`` without streaming
    returns it), with each content delta of the first choice passed to ``on_content``."""
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for chunk in stream:
        state.handle_chunk(chunk)
        for choice in chunk.choices:
            if choice.index == 0 and choice.delta.content:
                on_content(choice.delta.content)
    completion = state.current_completion_snapshot
    for choice in completion.choices:  # a tool-call turn: no text, as the plain call has it
        if choice.message.tool_calls and not choice.message.content:
            choice.message.content = None
    return completion


class Relay:
    """Hands on a text that only grows: each offer passes on what it adds to what was sent."""

    def __init__(self, on_text: TextCallback) -> None:
        self.on_text = on_text
        self.sent = ""

    def say(self, piece: str) -> None:
        """Pass ``piece`` on as the next part of the text."""
        if piece:
            self.sent += piece
            self.on_text(piece)

    def offer(self, text: str) -> None:
        """The text so far is ``text``: pass on its new end (nothing if it does not extend
        what was sent, since sent text cannot be taken back)."""
        if text.startswith(self.sent):
            self.say(text[len(self.sent):])

    def finish(self, answer: str | None) -> None:
        """The reply is complete and ``answer`` is its answer text (None: it called tools);
        what the stream held back of it goes on now."""
        if answer is not None:
            self.offer(answer)


class TextGate(Relay):
    """A native reply's content, passed on as it arrives, except what may not be answer: a
    leading ``<think>…</think>`` (reasoning, not answer) and, where tools were offered, text
    that opens like a tool call written as text, held until :meth:`finish` tells."""

    def __init__(self, on_text: TextCallback, *, tools: bool) -> None:
        super().__init__(on_text)
        self.tools = tools
        self.pending = ""
        self.live = False
        self.thought = False  # a <think> block was closed: the answer starts after blanks

    def feed(self, piece: str) -> None:
        if self.live:
            self.say(piece)
            return
        self.pending += piece
        text = self.pending.lstrip()
        if self.thought:
            self.pending = text
        elif text.startswith(_THINK_OPEN):
            end = text.find(_THINK_CLOSE)
            if end < 0:
                return
            self.thought = True
            self.pending = text = text[end + len(_THINK_CLOSE):].lstrip()
        if not text or _THINK_OPEN.startswith(text) or (self.tools and any(
                text.startswith(o) or o.startswith(text) for o in _CALL_OPENINGS)):
            return
        self.live = True
        self.say(self.pending)
        self.pending = ""


class JsonAnswer(Relay):
    """The ``"answer"`` string of a JSON reply object (``{"facts": …, "answer": "…"}``),
    decoded and passed on as its characters arrive; a key of that name inside a nested
    object (a tool's arguments) is not it."""

    def __init__(self, on_text: TextCallback) -> None:
        super().__init__(on_text)
        self.restart()

    def restart(self) -> None:
        """Read a new reply (a re-ask); what was sent stays sent."""
        self.depth = 0
        self.in_string = self.escape = False
        self.token: list[str] = []
        self.key: str | None = None  # the last string closed at the top level
        self.value_of: str | None = None  # the key whose value comes next
        self.raw: list[str] | None = None  # the answer string's text so far, still escaped
        self.done = False

    def feed(self, piece: str) -> None:
        for char in piece:
            if self.done:
                break
            if self.raw is not None:
                self._answer_char(char)
            elif self.in_string:
                self._string_char(char)
            else:
                self._structure_char(char)
        if self.raw is not None:
            self.offer(_decoded("".join(self.raw)))

    def _answer_char(self, char: str) -> None:
        assert self.raw is not None
        if not self.escape and char == '"':
            self.done = True
            return
        self.escape = not self.escape and char == "\\"
        self.raw.append(char)

    def _string_char(self, char: str) -> None:
        if self.escape:
            self.escape = False
        elif char == "\\":
            self.escape = True
        elif char == '"':
            self.in_string = False
            if self.depth == 1:
                self.key = "".join(self.token)
            return
        self.token.append(char)

    def _structure_char(self, char: str) -> None:
        if char.isspace():
            return
        expected, self.value_of = self.value_of, None
        if char == '"':
            if self.depth == 1 and expected == "answer":
                self.raw = []
            else:
                self.in_string, self.token = True, []
        elif char in "{[":
            self.depth += 1
        elif char in "}]":
            self.depth -= 1
        elif char == ":" and self.depth == 1:
            self.value_of = self.key


def _decoded(raw: str) -> str:
    """The text of a JSON string body cut anywhere: an escape not yet complete (and a high
    surrogate whose pair is still to come) is left for later."""
    for cut in range(len(raw), max(-1, len(raw) - _LONGEST_ESCAPE - 1), -1):
        try:
            text = str(json.loads(f'"{raw[:cut]}"', strict=False))
        except json.JSONDecodeError:
            continue
        return text[:-1] if text and "\ud800" <= text[-1] <= "\udbff" else text
    return ""
