"""The OpenAI-compatible chat API: ``GET /v1/models`` and ``POST /v1/chat/completions``, so
Open WebUI, LibreChat or any OpenAI SDK can use Sleuth as a model.

Every agent is a model: ``sleuth-<name>`` for each registered variant and ``sleuth-auto``,
the default agent (:data:`~sleuth.settings.DEFAULT_AGENT`, the one every face answers with
when none is named) first, as a client that picks the first model picks it.
The last user message is the question. A chat client keeps the conversation itself and
resends it whole, with no session id, so the user and assistant turns before the question
are handed to the agent as its history (:meth:`Service.ask` with ``history``: an ephemeral
session seeded with them, saved nowhere); system messages are left out, since the agent
keeps its own prompt.

The answer is the agent's text, as it streams, followed by its sources as Markdown links to
the app's passage view (:func:`passage_link`). The agent's work is its reasoning: one line
per tool call (the tool, its arguments, a short view of what came back), per answer check
that applied, per context-budget event and, streamed, before each model call what it reads
and how long that takes here ("reading 5 passages (about 40 s here)"), sent as
``reasoning_content`` (the message's field, or streamed deltas
ahead of the answer's), the field vLLM and DeepSeek servers use and Open WebUI and LibreChat
show as a collapsible thinking section, while the answer's ``content`` stays plain for SDKs.

Keys and tenants apply as on every route (the same dependency). Errors here have OpenAI's
shape, ``{"error": {"message", "type", "param", "code"}}``, which OpenAI's SDKs read; inside
a stream that has begun, an error is one ``data: {"error": ...}`` event, as OpenAI sends it.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Annotated, Any
from urllib.parse import quote

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from sleuth.errors import Busy, MissingDependency
from sleuth.llm.adapt import split_thinking
from sleuth.server.auth import Unauthorized
from sleuth.server.events import ask_events
from sleuth.server.failures import told
from sleuth.server.markdown import Stream, markdown_text, neutralise
from sleuth.server.openapi import NOT_BLANK, responses, status_for
from sleuth.service.callers import LOCAL, Caller
from sleuth.service.service import Service
from sleuth.settings import DEFAULT_AGENT, ServeSettings

try:
    from fastapi import APIRouter, Depends, Request, Response
    from fastapi.responses import JSONResponse, StreamingResponse
    from fastapi.routing import APIRoute
    from starlette.exceptions import HTTPException
except ImportError as exc:  # pragma: no cover - the serve extra is missing
    raise MissingDependency(exc.name or "fastapi", "serve") from None

PREFIX = "sleuth-"
OPENAI_PATHS = ("/v1/chat/", "/v1/models")  # errors here, the key check's too, in OpenAI's shape
SOURCES = "\n\nSources:\n"  # heads the links after the answer (and is cut from history)
# between streamed text that turned out not to be the answer (a model that wrote before it
# called a tool; a draft the agent withheld or revised against the evidence) and the answer;
# an earlier answer sent back as history is what follows the last one
REVISED = "\n\n---\nRevised after checking the evidence:\n\n"
_SHORT = 160  # characters of a tool's result shown in its reasoning line
_WHERE_PAGE = re.compile(r"\bpages? (\d+)")
_WHERE_LINES = re.compile(r"\blines? (\d+)(?:\s*[–-]\s*(\d+))?")


def model_names() -> list[str]:
    """The models this server offers: one per agent, the default agent's first."""
    from sleuth.agent.router import AUTO
    from sleuth.agent.variants import VARIANTS

    names = [DEFAULT_AGENT, *(n for n in [*VARIANTS, AUTO] if n != DEFAULT_AGENT)]
    return [PREFIX + name for name in names]


def passage_link(citation: Mapping[str, Any], base: str) -> str:
    """The app's view of a cited passage: ``{base}/#/passage?doc=…&chunk=…`` with
    ``&lines=a-b`` and ``&page=n`` where the citation has them (its ``lines`` and ``page``,
    or, in a record saved before those fields, its ``where``)."""
    def value(text: Any) -> str:
        return quote(str(text), safe="")

    link = (f"{base}/#/passage?doc={value(citation.get('doc_id', ''))}"
            f"&chunk={value(citation.get('chunk_id', ''))}")
    where = str(citation.get("where") or "")
    lines = citation.get("lines")
    if isinstance(lines, Sequence) and len(lines) == 2:
        link += f"&lines={value(f'{lines[0]}-{lines[1]}')}"
    elif found := _WHERE_LINES.search(where):
        link += f"&lines={value(f'{found.group(1)}-{found.group(2) or found.group(1)}')}"
    page = citation.get("page")
    if page is None and (found := _WHERE_PAGE.search(where)):
        page = found.group(1)
    if page is not None:
        link += f"&page={value(page)}"
    return link


class ChatError(Exception):
    """An error answered in OpenAI's shape."""

    def __init__(self, status: int, message: str, *, param: str | None = None,
                 code: str | None = None, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.param, self.code = status, param, code
        self.retry_after = retry_after

    @property
    def headers(self) -> dict[str, str]:
        return {} if self.retry_after is None else {"Retry-After": str(self.retry_after)}

    def body(self) -> dict[str, Any]:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return {"error": {"message": str(self), "type": kind, "param": self.param,
                          "code": self.code}}

    @classmethod
    def of(cls, exc: Exception, caller: Caller | None = None) -> ChatError:
        """``exc`` (a library error or a bug) as the error these routes answer; a failure
        of the LLM or a bug as ``caller`` is told it (:func:`sleuth.server.failures.told`)."""
        if isinstance(exc, ChatError):
            return exc
        if isinstance(exc, RecursionError):
            return cls(400, "the request body is nested too deeply to read")
        said = told(exc, caller)
        return cls(status_for(said), str(said),
                   retry_after=said.retry_after if isinstance(said, Busy) else None)


class ChatRoute(APIRoute):
    """A route whose errors, its key check's included, answer in OpenAI's shape."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(request)
            except Unauthorized as exc:
                return _error(ChatError(401, str(exc), code="invalid_api_key"),
                              {"WWW-Authenticate": "Bearer"})
            except HTTPException as exc:
                return _error(ChatError(exc.status_code, str(exc.detail)), exc.headers)
            except Exception as exc:
                return _error(ChatError.of(exc, getattr(request.state, "caller", None)))

        return route


async def _caller(request: Request) -> Caller:
    """The caller the router's key check found (it runs first)."""
    found: Caller = getattr(request.state, "caller", LOCAL)
    return found


Who = Annotated[Caller, Depends(_caller)]


def _error(error: ChatError, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status,
                        headers={**error.headers, **(headers or {})})


_ERROR_SCHEMA = {"type": "object", "required": ["error"], "properties": {"error": {
    "type": "object", "required": ["message", "type", "param", "code"], "properties": {
        "message": {"type": "string"}, "type": {"type": "string"},
        "param": {"type": ["string", "null"]}, "code": {"type": ["string", "null"]}}}}}


def _responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The error entries of ``codes`` in OpenAI's shape (413 either: a body over
    serve.max_body_bytes is refused before the route, in Sleuth's; a message over
    serve.max_message_chars by the route, in OpenAI's)."""
    out = responses(*codes)
    for code, entry in out.items():
        schema = entry["content"]["application/json"]["schema"]
        if code == 413:
            entry["description"] = "Request body over serve.max_body_bytes, or a message " \
                "over serve.max_message_chars"
        entry["content"] = {"application/json": {"schema": _ERROR_SCHEMA if code != 413 else
                                                 {"anyOf": [schema, _ERROR_SCHEMA]}}}
    return out


def _request_schema(models: Sequence[str], max_chars: int) -> dict[str, Any]:
    """What ``POST /v1/chat/completions`` reads of OpenAI's request; other fields are
    accepted and ignored, as OpenAI-compatible servers do. A user message holds text (a
    question of at most ``max_chars``): a string, or parts of which one is text."""
    text = {"type": "string", "minLength": 1, "maxLength": max_chars, "pattern": NOT_BLANK}
    part = {"type": "object", "required": ["type"],
            "properties": {"type": {"type": "string"}, "text": {"type": "string"}}}
    parts = {"type": "array", "items": part}
    text_part = {"type": "object", "required": ["type", "text"],
                 "properties": {"type": {"const": "text"}, "text": text}}
    message = {"type": "object", "required": ["role"], "properties": {
        "role": {"enum": ["system", "developer", "user", "assistant", "tool"]},
        "content": {"anyOf": [{"type": "string"}, parts, {"type": "null"}]}},
        "if": {"properties": {"role": {"const": "user"}}},
        "then": {"required": ["content"], "properties": {"content": {"anyOf": [
            text, {**parts, "minItems": 1, "maxItems": 1, "contains": text_part}]}}}}
    return {"type": "object", "required": ["model", "messages"], "properties": {
        "model": {"type": "string", "enum": list(models),
                  "description": "The agent: `sleuth-auto` or `sleuth-<agent>` (GET /v1/models)"},
        "messages": {"type": "array", "minItems": 1, "items": message,
                     "contains": {"type": "object", "properties": {"role": {"const": "user"}}},
                     "description": "The conversation; the last user message is the question"},
        "stream": {"type": ["boolean", "null"]},
        "stream_options": {"anyOf": [{"type": "null"}, {
            "type": "object", "properties": {"include_usage": {"type": ["boolean", "null"]}}}]},
    }}


# One server-sent event of a streamed completion: `data` is a `chat.completion.chunk` as JSON,
# or `[DONE]` last
_CHUNK_EVENT = {"type": "object", "required": ["data"], "properties": {
    "data": {"type": "string"}, "event": {"type": "string"}}}


def _completion_schema() -> dict[str, Any]:
    message = {"type": "object", "required": ["role", "content"], "properties": {
        "role": {"const": "assistant"}, "content": {"type": "string"},
        "reasoning_content": {"type": "string"}}}
    return {"type": "object", "required": ["id", "object", "created", "model", "choices"],
            "properties": {"object": {"const": "chat.completion"}, "choices": {
                "type": "array", "items": {"type": "object", "properties": {
                    "message": message}}}}}


def chat_router(service: Service, caller: Callable[..., Awaitable[Caller]],
                auth: bool) -> APIRouter:
    """``/v1/models`` and ``/v1/chat/completions`` behind the ``caller`` dependency that
    guards every ``/v1`` route."""
    denied = (401, 429) if auth else ()  # 429: past the key's rate (serve.rate_per_key)
    router = APIRouter(prefix="/v1", dependencies=[Depends(caller)], route_class=ChatRoute,
                       tags=["chat (OpenAI-compatible)"],
                       responses=_responses(*denied, 400, 500))
    models = model_names()
    schema = _request_schema(models, service.limits.max_query_chars)
    check = Draft202012Validator(schema)

    @router.get("/models")
    async def list_models() -> dict[str, Any]:
        """The agents as OpenAI models (the list object of ``GET /v1/models``)."""
        return {"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "sleuth"}
            for name in models]}

    @router.post("/chat/completions", responses={
        200: {"description": "A `chat.completion`, or with `stream: true` server-sent "
              "`chat.completion.chunk` events ending in `data: [DONE]`",
              "content": {"application/json": {"schema": _completion_schema()},
                          "text/event-stream": {"schema": _CHUNK_EVENT}}},
        **_responses(400, 404, 413, 415, 429, 502, 503)},
        openapi_extra={"requestBody": {"required": True, "content": {
            "application/json": {"schema": schema}}}})
    async def chat_completions(request: Request, who: Who) -> Response:
        """Answer the last user message with the agent the model names, the earlier turns
        as its history; streamed as OpenAI streams when ``stream`` is true."""
        body = _body(await request.body())
        if body.get("model") not in models:
            raise ChatError(404, f"the model {body.get('model')!r} does not exist; choose one "
                            f"of GET /v1/models: {', '.join(models)}", param="model",
                            code="model_not_found")
        question, history = _conversation(body, check, service.limits.max_message_chars)
        agent = str(body["model"])[len(PREFIX):]
        service.check_ask(question, agent)
        events = ask_events(service, question, agent, caller=who, history=history)
        local = request.scope.get("server")
        reply = _Reply(str(body["model"]), public_url(
            service.settings.serve, (str(local[0]), int(local[1])) if local else None))
        if body.get("stream"):
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return StreamingResponse(reply.chunks(events, usage=usage),
                                     media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache"})
        return JSONResponse(await reply.completion(events))

    return router


def _body(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"null")
    except ValueError as exc:
        raise ChatError(400, f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ChatError(400, "the body must be a JSON object: {\"model\", \"messages\"}")
    return body


def _conversation(body: dict[str, Any], check: Draft202012Validator, max_chars: int
                  ) -> tuple[str, list[dict[str, str]]]:
    """(the question, the turns before it) of a request, checked against its schema; an
    earlier message over ``max_chars`` (``serve.max_message_chars``) is refused with 413.
    The service holds the turns to the model's context (oldest left out first)."""
    messages = body.get("messages")
    for i, message in enumerate(messages if isinstance(messages, list) else ()):
        if isinstance(message, dict) and len(_text(message.get("content"))) > max_chars:
            raise ChatError(413, f"message {i} is over the limit of {max_chars} characters "
                            "(serve.max_message_chars): start a new conversation or shorten "
                            "it", param=f"messages.{i}.content", code="message_too_long")
    if isinstance(messages, list) and not any(
            isinstance(m, dict) and m.get("role") == "user" for m in messages):
        raise ChatError(400, "no user message: the last user message is the question",
                        param="messages")
    if isinstance(messages, list):  # said plainly, before the schema says it its way
        last = max(i for i, m in enumerate(messages)
                   if isinstance(m, dict) and m.get("role") == "user")
        if not _text(messages[last].get("content")).strip():
            raise ChatError(400, "the question (the last user message) is empty",
                            param=f"messages.{last}.content")
    error = best_match(check.iter_errors(body))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or None
        raise ChatError(400, f"invalid request: {where or 'body'}: {error.message}",
                        param=where)
    assert isinstance(messages, list)
    last = max(i for i, m in enumerate(messages) if m["role"] == "user")
    question = _text(messages[last].get("content"))
    history = []
    for message in messages[:last]:
        text = _text(message.get("content"))
        if message["role"] == "assistant":
            text = _answer_only(text)
        if message["role"] in ("user", "assistant") and text.strip():
            history.append({"role": message["role"], "content": text})
    return question, history


def _text(content: Any) -> str:
    """A message's text: the string, or its text parts joined."""
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or "") for p in content
                         if isinstance(p, dict) and p.get("type") == "text")
    return content if isinstance(content, str) else ""


def _answer_only(text: str) -> str:
    """An earlier answer as the agent wrote it: without reasoning inlined by a client,
    without the sources this server added, and without a streamed draft it revised."""
    answer = (split_thinking(text)[1] or "").split(SOURCES, 1)[0]
    return answer.rsplit(REVISED, 1)[-1].strip()


def _step_line(step: Any) -> str:
    """One tool call as a line of reasoning: tool, arguments, what came back (short); an
    answer check as ``check: NAME — what it did``."""
    if step.kind == "check":
        return f"- check: {step.tool_name} — {' '.join(str(step.reasoning).split())[:240]}\n"
    arguments = json.dumps(step.tool_input, ensure_ascii=False)
    result = step.error or " ".join(str(step.tool_output).split())
    if len(result) > _SHORT:
        result = result[:_SHORT - 1] + "…"
    return f"- {step.tool_name}({arguments}) → {result}\n"


def _context_line(event: Mapping[str, Any]) -> str:
    action = "summarizing to make room" if event["action"] == "summarize" else "warned"
    return (f"- context: {event['used']} of {event['budget']} tokens ({event['percent']} %), "
            f"{action}\n")


def public_url(serve: ServeSettings, local: tuple[str, int] | None = None) -> str:
    """Where users reach this server: ``serve.public_url``, else the address the connection
    came in on (``local``, the listening socket's, which a client cannot make up), else
    ``serve.host``:``serve.port``. Links are never built from a request's ``Host``, which
    any client can set."""
    if serve.public_url:
        return serve.public_url.rstrip("/")
    host, port = local or (serve.host, serve.port)
    host = "localhost" if host in ("", "0.0.0.0", "::") else host
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}"


class _Reply:
    """One answer as OpenAI's objects: a completion, or its chunks."""

    def __init__(self, model: str, base: str) -> None:
        self.model, self.base = model, base
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())

    def sources(self, record: Mapping[str, Any]) -> str:
        """The answer's citations as a numbered list of Markdown links."""
        lines = []
        for n, citation in enumerate(record.get("citations") or (), 1):
            label = citation.get("title") or citation.get("doc_id") or "source"
            if citation.get("where"):
                label += f", {citation['where']}"
            label = markdown_text(label)  # a title is the document's: anybody's
            lines.append(f"{n}. [{label}]({passage_link(citation, self.base)})")
        return SOURCES + "\n".join(lines) if lines else ""

    @staticmethod
    def usage(record: Mapping[str, Any]) -> dict[str, int]:
        prompt, completion = int(record["prompt_tokens"]), int(record["completion_tokens"])
        return {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion}

    async def completion(self, events: AsyncIterator[tuple[str, Any]]) -> dict[str, Any]:
        reasoning: list[str] = []
        async for event, data in events:
            if event == "step":
                reasoning.append(neutralise(_step_line(data), self.base))
            elif event == "context":
                reasoning.append(_context_line(data))
            elif event == "error":
                raise ChatError.of(data)
            elif event == "answer":
                message = {"role": "assistant",
                           "content": neutralise(data["answer"], self.base) +
                           self.sources(data)}
                if reasoning:
                    message["reasoning_content"] = "".join(reasoning)
                return {"id": self.id, "object": "chat.completion", "created": self.created,
                        "model": self.model, "choices": [{"index": 0, "message": message,
                                                          "logprobs": None,
                                                          "finish_reason": "stop"}],
                        "usage": self.usage(data)}
        raise ChatError(500, "the agent ended without an answer")

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> str:
        return self.event({"choices": [{"index": 0, "delta": delta, "logprobs": None,
                                        "finish_reason": finish}]})

    def event(self, fields: dict[str, Any]) -> str:
        data = {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model, **fields}
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

    async def chunks(self, events: AsyncIterator[tuple[str, Any]], *,
                     usage: bool) -> AsyncIterator[str]:
        """``chat.completion.chunk`` events: reasoning per step, content per token, the
        sources, the finish, the usage when asked for, ``[DONE]``."""
        yield self.chunk({"role": "assistant", "content": ""})
        spoken = resumed = False  # content streamed since the last step; and before it
        shown = Stream(self.base)  # the content, made harmless as it streams
        async for event, data in events:
            if event in ("step", "error", "answer") and (held := shown.flush()):
                yield self.chunk({"content": held})
            if event == "step":
                resumed, spoken = resumed or spoken, False
                yield self.chunk({"reasoning_content": neutralise(_step_line(data),
                                                                  self.base)})
            elif event == "context":
                yield self.chunk({"reasoning_content": _context_line(data)})
            elif event == "progress":  # what the model reads now, and for about how long
                yield self.chunk({"reasoning_content": f"- {data['text']}\n"})
            elif event == "token":
                piece = shown.feed(REVISED if resumed and not spoken else "") + \
                    shown.feed(data)  # REVISED: what came before was not the answer
                spoken = True
                if piece:
                    yield self.chunk({"content": piece})
            elif event == "error":
                yield f"data: {json.dumps(ChatError.of(data).body(), ensure_ascii=False)}\n\n"
                return
            elif event == "answer":
                sources = self.sources(data)
                if sources:
                    yield self.chunk({"content": sources})
                yield self.chunk({}, "stop")
                if usage:
                    yield self.event({"choices": [], "usage": self.usage(data)})
        yield "data: [DONE]\n\n"
