"""Tool calling through JSON replies, for models whose native tool calls are unreliable.

Small local models (Qwen2.5-Coder 0.5B/1.5B under llama.cpp) choose sensible tools but wrap
their calls in Markdown fences instead of the template's tags, so the server never sees a
tool call. :class:`JsonToolCalls` sits between the agent and such a model:

- the tools are described in the system prompt, and the model is told to reply with one
  JSON object, ``{"tool": ..., "arguments": {...}}`` or ``{"answer": "..."}``;
- the reply is constrained to exactly that shape by the server's schema-guided decoding
  (``response_format`` with a JSON schema: llama.cpp turns it into a grammar), with
  ``constrain=False`` for servers without it;
- a call that offers no tools with ``tool_choice="none"`` (a final answer: ``direct``,
  ``naive-rag``) gets the answer shape only; other tool-less calls pass through as free text;
- the reply is parsed (bare JSON, fenced JSON, ``<tool_call>`` tags and ``{"name": ...}``
  shapes are all accepted) and the arguments are validated against the tool's JSON schema;
- an unparseable or invalid reply is sent back with the reason, at most ``max_reasks``
  times; after that the text is returned as a plain answer;
- :meth:`JsonToolCalls.stream_chat` streams the reply and passes on the characters of its
  ``"answer"`` string as they arrive (:class:`~sleuth.llm.streaming.JsonAnswer`).

The agent keeps speaking the OpenAI tool-calling format: the history's tool calls and tool
results are rewritten into the same JSON protocol before each request.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from jsonschema import Draft202012Validator

from sleuth.llm.base import ChatResponse, TextCallback, ToolCall, Usage
from sleuth.llm.streaming import JsonAnswer
from sleuth.text.ids import cite, ids_in

_FENCE = re.compile(r"```[\w-]*\s*(.*?)```", re.S)
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_OBJECT = re.compile(r"\{.*\}", re.S)
_OPEN_ANSWER = re.compile(r'^\s*\{\s*"answer"\s*:\s*"((?:[^"\\]|\\.)*)', re.S)
ANSWER_CHARS = 2000  # longest final answer the schema allows (small models can loop)
FACTS_CHARS = 600  # longest "facts" field of a facts-first answer
_FACTS = ('"facts": "<the facts from the retrieved text that decide the answer, with their '
          'names, dates and numbers>", ')

_PROTOCOL = """

## How to reply
Reply with exactly one JSON object and nothing else.
- To call a tool: {{"tool": "<tool name>", "arguments": {{...}}}}
- To give your final answer: {{"answer": "<your answer, citing chunk ids in square brackets>",
  "sources": ["<id of each chunk the answer relies on>"]}}

Tools and their arguments (JSON schema):
{tools}"""
_ANSWER_ONLY = """

## How to reply
Reply with exactly one JSON object and nothing else: {"answer": "<your final answer, citing
chunk ids in square brackets>", "sources": ["<id of each chunk the answer relies on>"]}.
No more tools can be called."""


_ANSWER_NOW = ("No more tools can be called now. Reply with exactly one JSON object and "
               'nothing else: {"answer": "<your final answer, citing chunk ids in square '
               'brackets>", "sources": ["<id of each chunk the answer relies on>"]}.')


class _ChatClient(Protocol):
    model: str

    def chat(self, messages: Sequence[Mapping[str, Any]],
             tools: Sequence[Mapping[str, Any]] | None = None, *,
             tool_choice: str | None = None, parallel_tool_calls: bool | None = None,
             response_format: Mapping[str, Any] | None = None) -> ChatResponse: ...


@runtime_checkable
class _StreamingClient(_ChatClient, Protocol):
    def stream_chat(self, messages: Sequence[Mapping[str, Any]],
                    tools: Sequence[Mapping[str, Any]] | None = None, *,
                    tool_choice: str | None = None, parallel_tool_calls: bool | None = None,
                    response_format: Mapping[str, Any] | None = None,
                    on_text: TextCallback) -> ChatResponse: ...


class JsonToolCalls:
    """An :class:`~sleuth.llm.LLM` that gets tool calls from a model as JSON replies."""

    def __init__(self, inner: _ChatClient, *, constrain: bool = True, max_reasks: int = 2,
                 context_window: int | None = None, require_tool_first: bool = False,
                 facts_first: bool = False) -> None:
        self.inner = inner
        self.model = inner.model
        # the final answer object starts with "facts": the evidence the answer rests on, so
        # a small model reads the deciding facts out before it answers (kept as reasoning)
        self.facts_first = facts_first
        # small models tend to answer from memory at once: make the first reply a tool call
        self.require_tool_first = require_tool_first
        self.context_window = context_window  # the agent keeps its budget under this
        self.constrain = constrain
        self.max_reasks = max_reasks
        self.reasks = 0  # re-asks sent so far (for measurements)

    @property
    def adaptations(self) -> list[str]:
        """What the inner client changed to work with its server (see ``OpenAIClient``)."""
        return list(getattr(self.inner, "adaptations", []))

    def chat(self, messages: Sequence[Mapping[str, Any]],
             tools: Sequence[Mapping[str, Any]] | None = None, *,
             tool_choice: str | None = None,
             parallel_tool_calls: bool | None = None) -> ChatResponse:
        return self._chat(messages, tools, tool_choice, None)

    def stream_chat(self, messages: Sequence[Mapping[str, Any]],
                    tools: Sequence[Mapping[str, Any]] | None = None, *,
                    tool_choice: str | None = None, parallel_tool_calls: bool | None = None,
                    on_text: TextCallback) -> ChatResponse:
        """:meth:`chat`, with the answer's text passed to ``on_text`` as the reply streams
        (whole, once, where the inner client does not stream)."""
        return self._chat(messages, tools, tool_choice, JsonAnswer(on_text))

    def _chat(self, messages: Sequence[Mapping[str, Any]],
              tools: Sequence[Mapping[str, Any]] | None, tool_choice: str | None,
              reader: JsonAnswer | None) -> ChatResponse:
        if not tools and tool_choice != "none":  # free text (memory updates, the judge)
            return self.inner.chat(messages)
        functions = {t["function"]["name"]: t["function"] for t in tools or ()}
        offered = {} if tool_choice == "none" else functions
        answer_allowed = tool_choice != "required" and not (
            self.require_tool_first and offered
            and not any(m.get("role") == "tool" for m in messages))
        # the system prompt lists every tool on every step, so that a server's prompt cache
        # keeps the whole conversation; a step without tools says so in a last message
        history = _rewrite(messages, functions, self.facts_first)
        if functions and not offered:
            history.append({"role": "user", "content": _with_facts(_ANSWER_NOW,
                                                                   self.facts_first)})
        schema = reply_schema(offered, answer=answer_allowed, sources=_seen_ids(messages),
                              facts=self.facts_first)
        response_format = ({"type": "json_schema", "json_schema": {"name": "reply",
                                                                   "schema": schema}}
                           if self.constrain else None)
        reader = reader if answer_allowed else None
        usage = Usage()
        for attempt in range(self.max_reasks + 1):
            response = self._ask(history, response_format, reader)
            usage += response.usage
            text = response.content or ""
            try:
                answer, calls = parse_reply(text, offered)
            except ValueError as problem:
                salvaged = _truncated_answer(text) if response.finish_reason == "length" else None
                if salvaged:  # cut off by max_tokens mid-answer: keep what was written
                    _finish(reader, salvaged)
                    return ChatResponse(salvaged, (), usage, response.model, "length")
                if attempt == self.max_reasks:
                    break
                self.reasks += 1
                history = [*history, {"role": "assistant", "content": text},
                           {"role": "user", "content": f"That reply was not valid: {problem}. "
                            "Reply again with one JSON object as instructed."}]
                continue
            _finish(reader, answer)
            facts = _facts_of(text) if answer is not None else None
            return ChatResponse(answer, tuple(calls), usage, response.model,
                                "tool_calls" if calls else response.finish_reason,
                                facts if answer is not None else response.reasoning, facts)
        _finish(reader, text)
        return ChatResponse(text, (), usage, response.model, response.finish_reason)

    def _ask(self, history: list[dict[str, Any]], response_format: dict[str, Any] | None,
             reader: JsonAnswer | None) -> ChatResponse:
        """One reply, streamed through ``reader`` where there is one and the inner client
        streams."""
        if reader is None or not isinstance(self.inner, _StreamingClient):
            return self.inner.chat(history, response_format=response_format)
        reader.restart()
        return self.inner.stream_chat(history, response_format=response_format,
                                      on_text=reader.feed)


def _finish(reader: JsonAnswer | None, answer: str | None) -> None:
    if reader is not None:
        reader.finish(answer)


def reply_schema(functions: Mapping[str, Mapping[str, Any]], *, answer: bool = True,
                 sources: Sequence[str] = (), facts: bool = False) -> dict[str, Any]:
    """One JSON object: a call of one of ``functions``, or (when allowed) the final answer,
    whose ``sources`` must be chunk ids the tools have shown (when they have shown any);
    with ``facts``, the answer object starts with the facts it rests on."""
    final: dict[str, Any] = {
        "type": "object",
        "properties": {"answer": {"type": "string", "maxLength": ANSWER_CHARS}},
        "required": ["answer"], "additionalProperties": False,
    }
    if facts:  # first: schema-guided decoding writes properties in this order
        final["properties"] = {"facts": {"type": "string", "maxLength": FACTS_CHARS},
                               **final["properties"]}
        final["required"] = ["facts", "answer"]
    if sources:
        final["properties"]["sources"] = {"type": "array", "items": {"enum": list(sources)},
                                          "minItems": 1, "maxItems": 5}
        final["required"] = [*final["required"], "sources"]
    calls = [{"type": "object",
              "properties": {"tool": {"const": name},
                             "arguments": _plain_schema(f.get("parameters") or {})},
              "required": ["tool", "arguments"], "additionalProperties": False}
             for name, f in functions.items()]
    if not calls:
        return final
    return {"anyOf": [*calls, final] if answer else calls}


def _plain_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema without descriptions and defaults (they only lengthen the grammar)."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("description", "default", "title"):
            continue
        if key == "properties":
            value = {name: _plain_schema(sub) for name, sub in value.items()}
        elif isinstance(value, Mapping):
            value = _plain_schema(value)
        out[key] = value
    return out


def parse_reply(text: str, functions: Mapping[str, Mapping[str, Any]]
                ) -> tuple[str | None, list[ToolCall]]:
    """(answer, tool calls) from a reply; ``ValueError`` says what is wrong with it.

    Text with no JSON object in it is taken as a plain answer.
    """
    objects = list(json_objects(text))
    if not objects:
        if text.lstrip().startswith(("{", "```", "<tool_call>")) or not text.strip():
            raise ValueError("it is not one complete JSON object")
        return text.strip(), []
    calls: list[ToolCall] = []
    for obj in objects:
        if isinstance(obj.get("answer"), str) and not calls:
            return _with_sources(obj["answer"], obj.get("sources")), []
        name = obj.get("tool") or obj.get("name")
        if not isinstance(name, str):
            continue
        arguments = obj.get("arguments", obj.get("parameters", {}))
        if isinstance(arguments, str):  # some models double-encode
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                raise ValueError(f"the arguments of {name} are not a JSON object") from None
        _check_call(name, arguments, functions)
        calls.append(ToolCall(f"call_{uuid.uuid4().hex[:12]}", name, json.dumps(arguments)))
    if not calls:
        raise ValueError('the JSON object has neither "tool" nor "answer"')
    return None, calls


def _check_call(name: str, arguments: Any, functions: Mapping[str, Mapping[str, Any]]) -> None:
    if name not in functions:
        available = ", ".join(functions) or "none (give your answer)"
        raise ValueError(f"there is no tool {name!r}; available tools: {available}")
    if not isinstance(arguments, dict):
        raise ValueError(f"the arguments of {name} must be a JSON object")
    schema = functions[name].get("parameters") or {}
    error = next(iter(Draft202012Validator(schema).iter_errors(arguments)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        raise ValueError(f"invalid arguments for {name}{f' ({where})' if where else ''}: "
                         f"{error.message}")


def _with_sources(answer: str, sources: Any) -> str:
    """The answer with a citation for each listed source it does not cite."""
    if not isinstance(sources, list):
        return answer
    missing = [s for s in dict.fromkeys(map(str, sources)) if cite(s) not in answer]
    return answer.rstrip() + (" " + " ".join(map(cite, missing)) if missing else "")


def _with_facts(text: str, facts: bool) -> str:
    """A protocol text whose answer object starts with the "facts" field when ``facts``."""
    if not facts:
        return text
    return text.replace('{{"answer": ', "{{" + _FACTS.replace("{", "{{").replace("}", "}}")
                        + '"answer": ').replace('{"answer": ', "{" + _FACTS + '"answer": ')


def _facts_of(text: str) -> str | None:
    """The "facts" field of a reply's answer object, if it has one."""
    for obj in json_objects(text):
        if isinstance(obj.get("facts"), str) and obj["facts"].strip():
            return str(obj["facts"]).strip()
    return None


def _seen_ids(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Chunk ids and reference ids named in tool results and user messages (retrieved
    passages), first seen first."""
    found: dict[str, None] = {}
    for message in messages:
        if message.get("role") in ("tool", "user"):
            found.update(dict.fromkeys(ids_in(str(message.get("content") or ""))))
    return list(found)


def _truncated_answer(text: str) -> str | None:
    """The text of an ``{"answer": "...`` object that was cut off before it closed."""
    match = _OPEN_ANSWER.match(text)
    if not match or not match.group(1).strip():
        return None
    body = match.group(1).rstrip("\\")
    try:
        return str(json.loads(f'"{body}"')).strip() + " …"
    except json.JSONDecodeError:
        return body.strip() + " …"


def json_objects(text: str) -> Iterable[dict[str, Any]]:
    """JSON objects in a reply: the whole text, fenced blocks, tagged blocks, or a {...} span."""
    candidates = [text, *_FENCE.findall(text), *_TAGGED.findall(text)]
    span = _OBJECT.search(text)
    if span:
        candidates.append(span.group(0))
    for candidate in candidates:
        try:
            value = json.loads(candidate.strip())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            yield value
            return
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            yield from value
            return


def _rewrite(messages: Sequence[Mapping[str, Any]],
             functions: Mapping[str, Mapping[str, Any]],
             facts: bool = False) -> list[dict[str, Any]]:
    """The OpenAI tool-calling history in the JSON protocol: calls as the JSON the model
    wrote, results as user messages, the protocol appended to the system prompt."""
    listing = "\n".join(
        f"- {name}: {f.get('description', '')}\n  arguments: "
        f"{json.dumps(_plain_schema(f.get('parameters') or {}))}"
        for name, f in functions.items()
    )
    protocol = (_with_facts(_PROTOCOL, facts).format(tools=listing) if functions
                else _with_facts(_ANSWER_ONLY, facts))
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            calls = [c["function"] for c in message["tool_calls"]]
            names.update({c["id"]: c["function"]["name"] for c in message["tool_calls"]})
            content = "\n".join(json.dumps({"tool": c["name"],
                                            "arguments": _loads(c.get("arguments"))})
                                for c in calls)
            out.append({"role": "assistant", "content": content})
        elif role == "tool":
            name = names.get(str(message.get("tool_call_id")), "the tool")
            out.append({"role": "user", "content": f"Result of {name}:\n{message['content']}"})
        else:
            out.append({"role": role, "content": message.get("content") or ""})
    if out and out[0]["role"] == "system":
        out[0] = {"role": "system", "content": out[0]["content"] + protocol}
    else:
        out.insert(0, {"role": "system", "content": protocol.strip()})
    return out


def _loads(arguments: Any) -> Any:
    try:
        return json.loads(arguments) if isinstance(arguments, str) else (arguments or {})
    except json.JSONDecodeError:
        return arguments
