"""A scripted, OpenAI-compatible HTTP server for tests, docs and offline demos.

Long because it is one self-contained server that imports nothing else of Sleuth but the
behaviours of its modes (the script format documented here, the chat, streaming and embedding
endpoints, its command line).

:class:`FakeLLMServer` answers ``POST /v1/chat/completions`` from a script of turns, over real
HTTP on 127.0.0.1, in the exact chat-completions format, so the real client code path (the
``openai`` SDK, retries, error mapping) is exercised end to end::

    from sleuth.llm import OpenAIClient

    from sleuth.testing.fake import FakeLLMServer, call, reply

    with FakeLLMServer([call("search", query="tides"), reply("High tide is at 6. [1]")]) as srv:
        llm = OpenAIClient("fake-model", srv.base_url)
        first = llm.chat([{"role": "user", "content": "When is high tide?"}], tools=[...])

A turn is a dict (build it with the helpers :func:`reply`, :func:`call`, :func:`calls`,
:func:`raw_call`, :func:`error`) with these keys:

``content``        assistant text (``None`` when the turn only calls tools)
``tool_calls``     list of ``{"name": str, "arguments": str}``; ids ``call_1``, ``call_2``, ...
                   are assigned by the server, unique over its lifetime
``reasoning``      sent as ``message.reasoning_content`` (as vLLM / DeepSeek servers do)
``finish_reason``  overrides the default (``"tool_calls"`` when there are calls, else ``"stop"``)
``status``         an HTTP error status (400-599): the turn answers with an OpenAI-style error
``error``          the error message for a ``status`` turn
``body``           a ``status`` turn's whole body, sent as it is (``text/html``) instead of
                   OpenAI's error object: what a proxy in front of a model answers
``retry_after``    seconds, sent as ``retry-after-ms`` on an error turn (the SDK honours it)
``delay``          seconds to sleep before answering (for timeout tests)
``pace``           seconds between streamed chunks, as a real server generates them (a
                   streamed request only); the time each stream's first content piece is
                   written is kept in ``first_content_at`` (``time.time()``)
``usage``          overrides the computed usage object; ``None`` leaves ``usage`` out
``as_text``        ``True``: the model writes its tool calls as text in ``content``
                   (``<tool_call>{...}</tool_call>``), as small models do, with no ``tool_calls``

Every chat request that reaches the script consumes one turn, including SDK retries. When the
script is exhausted the server answers HTTP 500 ``"fake LLM script exhausted after N turns"``
with ``x-should-retry: false``, so the client fails at once instead of retrying or hanging.

``POST /v1/embeddings`` returns deterministic hashed bag-of-words vectors (L2-normalised, 64
dimensions by default), and ``GET /v1/models`` lists the model. Run it standalone with
``python -m sleuth.testing.fake --script script.json [--port N] [--mode M]``.

``mode`` makes the server behave as one real server family does, from what it refuses to
where it puts tool calls and reasoning (see :mod:`sleuth.testing.fake_modes`): ``default`` (every
request accepted, OpenAI's format), ``openai``, ``azure`` (``base_url`` is then the resource
endpoint; requests go to ``/openai/deployments/{model}/...?api-version=...``), ``vllm``
(without ``--enable-auto-tool-choice``), ``ollama``, ``llamacpp-jinja`` and ``reasoning``.
Requests a mode refuses never reach the script; they are kept in ``rejected``.

``reader`` makes the server answer from each request rather than from a script: a function
of the request body that returns the turn, consulted once the script (which may be empty) is
used up. :mod:`sleuth.testing.readers` holds two, an oracle and a model that answers from
memory, for measuring the agent's answer checks without a model.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, TypedDict

from sleuth.testing.fake_modes import MODES, Rejected, behaviour, error_body, hermes_text

__all__ = [
    "FakeLLMServer",
    "Turn",
    "call",
    "calls",
    "error",
    "fake_embedding",
    "raw_call",
    "reply",
]


class FakeToolCall(TypedDict):
    """A scripted tool call: the name and the raw arguments text."""

    name: str
    arguments: str


class Turn(TypedDict, total=False):
    """One scripted answer; see the module docstring for the meaning of each key."""

    content: str | None
    tool_calls: list[FakeToolCall]
    reasoning: str
    finish_reason: str
    status: int
    error: str
    retry_after: float
    body: str
    delay: float
    pace: float
    usage: dict[str, int] | None
    as_text: bool


_TURN_KEYS = frozenset(Turn.__annotations__)


# --------------------------------------------------------------------------- turn helpers


def reply(content: str, *, reasoning: str | None = None) -> Turn:
    """A final assistant answer with text ``content`` (and optional reasoning text)."""
    turn: Turn = {"content": content}
    if reasoning is not None:
        turn["reasoning"] = reasoning
    return turn


def call(name: str, /, _content: str | None = None, **arguments: Any) -> Turn:
    """One tool call to ``name`` with ``arguments`` JSON-encoded.

    ``_content`` is optional assistant text sent alongside the call (e.g. "thinking" text).
    """
    return raw_call(name, json.dumps(arguments, ensure_ascii=False), content=_content)


def calls(*pairs: tuple[str, Mapping[str, Any]], content: str | None = None) -> Turn:
    """Several parallel tool calls in one turn: ``calls(("search", {"q": "x"}), ...)``."""
    if not pairs:
        raise ValueError("calls() needs at least one (name, arguments) pair")
    return {
        "content": content,
        "tool_calls": [
            {"name": name, "arguments": json.dumps(dict(args), ensure_ascii=False)}
            for name, args in pairs
        ],
    }


def raw_call(name: str, arguments_text: str, *, content: str | None = None) -> Turn:
    """A tool call whose arguments are ``arguments_text`` verbatim (possibly malformed JSON)."""
    return {"content": content, "tool_calls": [{"name": name, "arguments": arguments_text}]}


def error(
    status: int, message: str = "fake LLM error", *, retry_after: float | None = None,
    body: str | None = None,
) -> Turn:
    """An HTTP error answer (e.g. ``error(500)``, ``error(401, "bad key")``).

    ``retry_after`` (seconds) is sent as ``retry-after-ms``; the SDK then waits that long
    before retrying instead of its own backoff. ``body``: the answer's whole body as text
    (a proxy's HTML page) instead of OpenAI's error object holding ``message``.
    """
    turn: Turn = {"status": status, "error": message}
    if retry_after is not None:
        turn["retry_after"] = retry_after
    if body is not None:
        turn["body"] = body
    return turn


def _normalise_turn(index: int, turn: Turn | Mapping[str, Any]) -> dict[str, Any]:
    """Validate one script turn and return a private copy (raises ``ValueError``)."""
    if not isinstance(turn, Mapping):
        raise ValueError(f"script turn {index} must be a mapping, got {type(turn).__name__}")
    unknown = set(turn) - _TURN_KEYS
    if unknown:
        raise ValueError(
            f"script turn {index} has unknown keys {sorted(unknown)}; known: {sorted(_TURN_KEYS)}"
        )
    out = dict(turn)
    if "status" in out:
        status = out["status"]
        if not isinstance(status, int) or not 400 <= status <= 599:
            raise ValueError(f"script turn {index}: status must be an int in 400..599")
        return out
    tool_calls = []
    for item in out.get("tool_calls") or ():
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise ValueError(f"script turn {index}: each tool call needs a string 'name'")
        arguments = item.get("arguments", "{}")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        tool_calls.append({"name": item["name"], "arguments": arguments})
    out["tool_calls"] = tool_calls
    if out.get("content") is None and not tool_calls:
        raise ValueError(f"script turn {index} needs 'content', 'tool_calls' or 'status'")
    return out


# --------------------------------------------------------------------------- embeddings

_WORD = re.compile(r"\w+")


def fake_embedding(text: str, dim: int = 64) -> list[float]:
    """A deterministic, L2-normalised hashed bag-of-words vector for ``text``.

    Texts sharing words get a positive cosine similarity; identical texts get identical vectors.
    """
    vector = [0.0] * dim
    words = _WORD.findall(text.lower()) or [""]
    for word in words:
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        vector[value % dim] += 1.0 if (value >> 63) & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0.0:  # every word cancelled out: fall back to a fixed unit vector
        vector[0], norm = 1.0, 1.0
    return [x / norm for x in vector]


# --------------------------------------------------------------------------- the server

def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"


def _tokens(chars: int) -> int:
    return max(1, chars // 4)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: FakeLLMServer


class _Handler(BaseHTTPRequestHandler):
    """Routes requests to the owning :class:`FakeLLMServer`."""

    server: _HTTPServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default per-request logging to stderr."""

    def do_GET(self) -> None:
        """``GET /v1/models``."""
        try:
            if self.server.owner.behaviour.route(self.path) != "/models":
                raise Rejected(404, f"no route for GET {self.path}")
            self.send_json(200, self.server.owner._models())
        except Rejected as rejected:
            self.send_json(rejected.status, rejected.body)

    def do_POST(self) -> None:
        """``POST /v1/chat/completions`` and ``POST /v1/embeddings``."""
        owner = self.server.owner
        try:
            path = owner.behaviour.route(self.path)
            body = self._read_json()
            owner._check_auth({k.lower(): v for k, v in self.headers.items()})
            if path == "/chat/completions":
                owner._chat(self, body)
            elif path == "/embeddings":
                self.send_json(200, owner._embeddings(body))
            else:
                raise Rejected(404, f"no route for POST {self.path}")
        except Rejected as rejected:
            self.send_json(rejected.status, rejected.body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            self.close_connection = True

    def _read_json(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise Rejected(400, f"request body is not valid JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise Rejected(400, "request body must be a JSON object")
        return body

    def send_json(
        self, status: int, payload: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> None:
        """Write one JSON response with a Content-Length (keep-alive friendly)."""
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def send_text(self, status: int, text: str, headers: Mapping[str, str]) -> None:
        """Write one ``text/html`` response (a proxy's error page)."""
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def send_events(self, events: Iterator[Mapping[str, Any]], pace: float = 0.0,
                    on_content: Callable[[], None] | None = None) -> None:
        """Write a server-sent-events stream ending in ``data: [DONE]``, then close;
        ``pace`` seconds between events, ``on_content`` called once the first content
        piece is on the wire."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for number, event in enumerate(events):
            if pace and number:
                time.sleep(pace)
            self.wfile.write(f"data: {json.dumps(event, ensure_ascii=False)}\n\n".encode())
            if on_content and any((c.get("delta") or {}).get("content")
                                  for c in event.get("choices") or ()):
                self.wfile.flush()
                on_content()
                on_content = None
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


class FakeLLMServer:
    """A scripted OpenAI-compatible server on ``host:port`` (an ephemeral port by default).

    It starts serving on construction, in a daemon thread; use it as a context manager or call
    :meth:`close`. ``requests`` holds the JSON body of every chat-completions request received
    (in order, SDK retries included) and ``embedding_requests`` those for embeddings.
    ``api_key``, when set, makes every request without ``Authorization: Bearer <api_key>``
    (an ``api-key`` header in ``azure`` mode; any key in ``ollama`` mode) fail with HTTP 401.
    ``mode`` picks the server family whose behaviour the fake reproduces (see the module
    docstring); requests it refuses are kept in ``rejected``. ``reader``, where given, writes
    the turn of each request the script does not answer (see the module docstring).
    ``retry_after`` (seconds) is
    the default ``retry-after-ms`` sent with retryable error turns (429/5xx), so tests of
    retries need not wait for the SDK's backoff.
    """

    def __init__(
        self,
        script: Sequence[Turn | Mapping[str, Any]],
        *,
        model: str = "fake-model",
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        embedding_dim: int = 64,
        retry_after: float | None = None,
        mode: str = "default",
        reader: Callable[[dict[str, Any]], Turn | Mapping[str, Any]] | None = None,
    ) -> None:
        self.model = model
        self.reader = reader
        self.mode = mode
        self.behaviour = behaviour(mode, model)
        self.rejected: list[dict[str, Any]] = []
        self.reader_errors: list[str] = []  # what the reader raised, one line each
        self.api_key = api_key
        self.embedding_dim = embedding_dim
        self.retry_after = retry_after
        self.requests: list[dict[str, Any]] = []
        self.embedding_requests: list[dict[str, Any]] = []
        self.first_content_at: list[float] = []
        self._script = [_normalise_turn(i, turn) for i, turn in enumerate(script, start=1)]
        self._next = 0
        self._call_ids = 0
        self._lock = threading.Lock()
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.owner = self
        bound_host, bound_port = self._httpd.server_address[:2]
        self.host = str(bound_host)
        self.port = int(bound_port)
        endpoint = f"http://{self.host}:{self.port}"
        self.base_url = endpoint if mode == "azure" else f"{endpoint}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},  # shutdown() waits up to one poll interval
            name=f"fake-llm-{self.port}",
            daemon=True,
        )
        self._thread.start()
        self._closed = False

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> FakeLLMServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FakeLLMServer(base_url={self.base_url!r}, remaining={self.remaining})"

    def close(self) -> None:
        """Stop serving and release the port (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def remaining(self) -> int:
        """How many script turns have not been consumed yet."""
        with self._lock:
            return len(self._script) - self._next

    @property
    def consumed(self) -> int:
        """How many script turns have been consumed."""
        with self._lock:
            return self._next

    # ------------------------------------------------------------------ request handling

    def _check_auth(self, headers: Mapping[str, str]) -> None:
        """Refuse a request without the key (``headers`` with lower-case names)."""
        if self.api_key is not None and not self.behaviour.authorised(headers, self.api_key):
            raise self.behaviour.unauthorised()

    def _models(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "sleuth"}],
        }

    def _pop(self, body: dict[str, Any]) -> tuple[dict[str, Any] | None, int, list[str]]:
        """Record the request and take the next turn, its number and fresh tool-call ids."""
        with self._lock:
            self.requests.append(body)
            scripted = self._next < len(self._script)
            if scripted:
                turn = self._script[self._next]
                self._next += 1
        if not scripted:
            if self.reader is None:
                return None, self._next, []
            # written outside the lock: requests in flight are read side by side
            try:
                turn = _normalise_turn(len(self.requests), self.reader(body))
            except Exception as exc:  # noqa: BLE001 - the reader's bug, kept for the test
                with self._lock:
                    self.reader_errors.append(f"{type(exc).__name__}: {exc}")
                raise Rejected(500, f"the reader failed: {type(exc).__name__}: {exc}") from exc
        with self._lock:
            ids = []
            for _ in turn.get("tool_calls") or ():
                self._call_ids += 1
                ids.append(f"call_{self._call_ids}")
            return turn, self._next if scripted else len(self.requests), ids

    def _chat(self, handler: _Handler, body: dict[str, Any]) -> None:
        _validate_chat(body)
        try:
            self.behaviour.check(body)
        except Rejected:
            with self._lock:
                self.rejected.append(body)
            raise
        turn, number, ids = self._pop(body)
        if turn is None:
            message = f"fake LLM script exhausted after {number} turns"
            handler.send_json(500, error_body(500, message), {"x-should-retry": "false"})
            return
        if (turn.get("tool_calls") and body.get("tool_choice") == "none"
                and self.behaviour.honours_tool_choice):
            message = (f"script turn {number} calls a tool, but the request says tool_choice "
                       f"'none' and a {self.mode} server never calls one then")
            handler.send_json(500, error_body(500, message), {"x-should-retry": "false"})
            return
        if turn.get("delay"):
            time.sleep(float(turn["delay"]))
        if "status" in turn:
            status = int(turn["status"])
            headers = {}
            retry_after = turn.get("retry_after", self.retry_after)
            if retry_after is not None and (status == 429 or status >= 500):
                headers["retry-after-ms"] = str(max(1, round(float(retry_after) * 1000)))
            message = str(turn.get("error") or _phrase(status))
            if "body" in turn:
                handler.send_text(status, str(turn["body"]), headers)
            else:
                handler.send_json(status, error_body(status, message), headers)
            return
        completion = _completion(body, turn, number, ids,
                                 self.behaviour.calls_as_text(body, turn))
        with self._lock:
            self.behaviour.shape(completion, body, turn)
        if body.get("stream"):
            handler.send_events(_stream_events(completion, body), float(turn.get("pace") or 0),
                                lambda: self.first_content_at.append(time.time()))
        else:
            handler.send_json(200, completion)

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.embedding_requests.append(body)
        if not body.get("model"):
            raise Rejected(400, "you must provide a model parameter")
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise Rejected(400, "'input' must be a string or a non-empty list of strings")
        dim = body.get("dimensions") or self.embedding_dim
        if not isinstance(dim, int) or dim <= 0:
            raise Rejected(400, "'dimensions' must be a positive integer")
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(texts):
            vector = fake_embedding(text, dim)
            embedding: Any = vector
            if as_base64:
                embedding = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode("ascii")
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = _tokens(sum(len(t) for t in texts))
        return {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


def _validate_chat(body: Mapping[str, Any]) -> None:
    if not body.get("model") or not isinstance(body.get("model"), str):
        raise Rejected(400, "you must provide a model parameter")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Rejected(400, "'messages' must be a non-empty array")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or "role" not in message:
            raise Rejected(400, f"messages[{i}] must be an object with a 'role'")


def _completion(
    body: Mapping[str, Any], turn: Mapping[str, Any], number: int, ids: list[str],
    as_text: bool = False,
) -> dict[str, Any]:
    """The chat-completions response object for ``turn``; ``as_text``: its tool calls are
    written in ``content`` rather than sent as ``tool_calls``."""
    tool_calls: list[dict[str, Any]] = [
        {"id": id_, "type": "function", "function": dict(tc)}
        for id_, tc in zip(ids, turn.get("tool_calls") or (), strict=True)
    ]
    content = turn.get("content")
    if as_text and tool_calls:
        written = hermes_text(turn["tool_calls"])
        content, tool_calls = (f"{content}\n{written}" if content else written), []
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if turn.get("reasoning"):
        message["reasoning_content"] = turn["reasoning"]
    finish = turn.get("finish_reason") or ("tool_calls" if tool_calls else "stop")
    prompt_chars = len(json.dumps(body.get("messages"), ensure_ascii=False, sort_keys=True))
    if body.get("tools"):
        prompt_chars += len(json.dumps(body["tools"], ensure_ascii=False, sort_keys=True))
    reply_chars = len(content or "") + len(turn.get("reasoning") or "")
    reply_chars += sum(len(tc["function"]["name"]) + len(tc["function"]["arguments"])
                       for tc in tool_calls)
    prompt_tokens, completion_tokens = _tokens(prompt_chars), _tokens(reply_chars)
    response: dict[str, Any] = {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "system_fingerprint": "fp_sleuth_fake",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    if "usage" in turn:
        if turn["usage"] is None:
            del response["usage"]
        else:
            response["usage"] = dict(turn["usage"])
    return response


def _stream_events(
    completion: Mapping[str, Any], body: Mapping[str, Any]
) -> Iterator[dict[str, Any]]:
    """``completion`` as ``chat.completion.chunk`` events (OpenAI streaming format)."""
    head = {k: completion[k] for k in ("id", "created", "model", "system_fingerprint")}
    head["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    if message.get("reasoning_content"):
        yield chunk({"reasoning_content": message["reasoning_content"]})
    for piece in re.findall(r"\S*\s*", message.get("content") or ""):
        if piece:
            yield chunk({"content": piece})
    for index, tc in enumerate(message.get("tool_calls") or ()):
        function = tc["function"]
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": tc["id"],
                        "type": "function",
                        "function": {"name": function["name"], "arguments": ""},
                    }
                ]
            }
        )
        yield chunk(
            {"tool_calls": [{"index": index, "function": {"arguments": function["arguments"]}}]}
        )
    yield chunk({}, choice["finish_reason"])
    options = body.get("stream_options")
    if isinstance(options, Mapping) and options.get("include_usage") and "usage" in completion:
        yield {**head, "choices": [], "usage": completion["usage"]}


# --------------------------------------------------------------------------- CLI


def _load_script(path: str) -> list[Any]:
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if isinstance(data, Mapping):
        data = data.get("turns", data.get("script"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of turns (or {{'turns': [...]}})")
    return data


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sleuth.testing.fake --script script.json [--port N]``: serve until Ctrl-C."""
    parser = argparse.ArgumentParser(
        prog="python -m sleuth.testing.fake",
        description="Serve a scripted OpenAI-compatible chat-completions API on 127.0.0.1.",
    )
    parser.add_argument("--script", required=True, help="JSON file: a list of turns")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--mode", default="default", choices=MODES,
                        help="the real server whose behaviour to reproduce")
    parser.add_argument("--api-key", default=None, help="the key requests must carry")
    args = parser.parse_args(argv)
    try:
        script = _load_script(args.script)
        server = FakeLLMServer(script, model=args.model, host=args.host, port=args.port,
                               mode=args.mode, api_key=args.api_key)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    print(f"fake LLM serving {len(script)} turns at {server.base_url} as {args.mode}  "
          "(Ctrl-C to stop)")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
