"""``OpenAIClient``: the :class:`~sleuth.llm.base.LLM` backend for any OpenAI-compatible server.

It uses the official ``openai`` SDK, including its retries: connection errors, timeouts and
HTTP 408/409/429/5xx are retried up to ``max_retries`` times with exponential backoff
(0.5 s, 1 s, 2 s, 4 s, capped at 8 s, minus up to 25 % jitter), or after the server's
``Retry-After`` / ``retry-after-ms`` delay when it sends one (up to the SDK's cap). A
failure that survives the retries becomes an :class:`~sleuth.errors.LLMError` (or
:class:`~sleuth.errors.EmbedderError` for embeddings) whose message is one line saying what
to fix. No message names a credential: the endpoint's URL is given without its userinfo, and
the API key, the URL's password and key-like strings in what the server said are masked
(:func:`~sleuth.errors.redact`).

It adapts to the server it finds (see :mod:`sleuth.llm.adapt`) and says what it did, in a
warning and in :attr:`OpenAIClient.adaptations`: an optional parameter the server refuses
is left out (``max_tokens`` becomes ``max_completion_tokens`` where that is what the server
asks for) and the request sent again; a server that refuses native tool calls, or a model
that writes its calls as text, gets the JSON tool protocol for the rest of the process; a
server that ignores ``tool_choice: "none"`` is sent no tools when no call is allowed; a
server that refuses to stream answers :meth:`OpenAIClient.stream_chat` whole. Azure
OpenAI is reached through the SDK's ``AzureOpenAI`` client when an API version is given or
is in the base URL.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import openai

from sleuth.errors import ConfigError, EmbedderError, LLMError, LLMUnreachable, redact
from sleuth.llm.adapt import (
    AzureTarget,
    azure_target,
    learnt,
    needs_api_version,
    refused_parameter,
    refuses_streaming,
    refuses_tools,
    sent_fields,
    split_thinking,
    text_tool_calls,
)
from sleuth.llm.base import ChatResponse, TextCallback, ToolCall, Usage
from sleuth.llm.jsontools import JsonToolCalls
from sleuth.llm.streaming import TextGate, assemble

__all__ = ["OpenAIClient", "embed_texts"]

#: The SDK insists on an API key; local servers ignore whatever is sent.
PLACEHOLDER_API_KEY = "not-needed"

_MAX_DETAIL = 300


def _one_line(text: str, limit: int = _MAX_DETAIL) -> str:
    """Collapse whitespace and truncate so the detail fits in a one-line error message."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _server_message(err: openai.APIStatusError) -> str:
    """The server's own error message, from an OpenAI-style body or the raw text."""
    body = err.body
    if isinstance(body, Mapping):
        message = body.get("message") or body.get("detail") or body.get("error")
        if isinstance(message, str) and message:
            return _one_line(message)
    if isinstance(body, str) and body.strip():
        return _one_line(body)
    return _one_line(err.message)


def _sdk_retries(err: openai.APIStatusError) -> bool:
    """Whether the SDK retried this status (mirrors its rules, incl. ``x-should-retry``)."""
    hint = err.response.headers.get("x-should-retry")
    if hint in ("true", "false"):
        return hint == "true"
    status = err.status_code
    return status in (408, 409, 429) or status >= 500


def _attempts(n: int) -> str:
    return f"{n} attempt" if n == 1 else f"{n} attempts"


def _describe_connection_error(
    err: openai.APIConnectionError, where: str, attempts: int, timeout: float
) -> str:
    tries = _attempts(attempts)
    if isinstance(err, openai.APITimeoutError):
        return (
            f"{where} did not answer within {timeout:g}s ({tries}); check SLEUTH_BASE_URL, "
            "that the server is running and not overloaded, or raise the timeout"
        )
    cause = err.__cause__
    detail = _one_line(str(cause) or type(cause).__name__) if cause else _one_line(err.message)
    return (
        f"cannot reach {where} after {tries} ({detail}); "
        "check SLEUTH_BASE_URL and that the server is running"
    )


def _describe_status_error(
    err: openai.APIStatusError, where: str, model: str, attempts: int
) -> str:
    status = err.status_code
    message = _server_message(err)
    if status in (401, 403):
        return f"{where} rejected the API key (HTTP {status}: {message}); check SLEUTH_API_KEY"
    if status == 404:
        return (
            f"{where}: model {model!r} or endpoint not found (HTTP 404: {message}); "
            "check SLEUTH_MODEL and SLEUTH_BASE_URL"
        )
    after = f" after {_attempts(attempts)}" if _sdk_retries(err) and attempts > 1 else ""
    if status == 429:
        return (
            f"{where} is rate limiting requests (HTTP 429{after}: {message}); "
            "wait, lower the request rate, or raise max_retries"
        )
    if status >= 500:
        return f"{where} failed with HTTP {status}{after}: {message}"
    return f"{where} rejected the request (HTTP {status}): {message}"


def _describe(
    err: openai.OpenAIError,
    *,
    label: str,
    base_url: str,
    model: str,
    attempts: int,
    timeout: float,
) -> str:
    """Turn an SDK exception into one line that says what went wrong and what to fix."""
    where = f"the {label} endpoint at {base_url}"
    if isinstance(err, openai.APIConnectionError):
        return _describe_connection_error(err, where, attempts, timeout)
    if isinstance(err, openai.APIStatusError):
        return _describe_status_error(err, where, model, attempts)
    return f"{where} returned an unusable response: {_one_line(str(err))}"


def _text(value: Any) -> str:
    """Tool-call arguments as text; some servers send a JSON object instead of a string."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


def _tool_calls(raw: Sequence[Any] | None) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for i, tc in enumerate(raw or (), start=1):
        function = getattr(tc, "function", None)
        if function is not None:
            name, arguments = function.name, function.arguments
        else:  # a "custom" tool call
            custom = getattr(tc, "custom", None)
            name = getattr(custom, "name", "")
            arguments = getattr(custom, "input", "")
        calls.append(ToolCall(id=tc.id or f"call_{i}", name=name or "", arguments=_text(arguments)))
    return tuple(calls)


def _reasoning(message: Any) -> str | None:
    """``reasoning_content`` (or ``reasoning``) from the message's non-standard fields."""
    extra = getattr(message, "model_extra", None) or {}
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    details = getattr(raw, "prompt_tokens_details", None)  # OpenAI and llama.cpp report it
    return Usage(
        prompt_tokens=int(getattr(raw, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(raw, "completion_tokens", 0) or 0),
        cached_tokens=int(getattr(details, "cached_tokens", 0) or 0),
    )


class _ToolsRefused(Exception):
    """The server refused a request for its tools (no native tool calling there)."""


def _sdk_client(base_url: str | None, api_key: str | None, azure: AzureTarget | None,
                timeout: float, max_retries: int) -> openai.OpenAI:
    key = api_key or PLACEHOLDER_API_KEY
    if azure is None:
        return openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout,
                             max_retries=max_retries)
    if azure.deployment_url:
        return openai.AzureOpenAI(api_key=key, api_version=azure.api_version,
                                  base_url=azure.deployment_url, timeout=timeout,
                                  max_retries=max_retries)
    return openai.AzureOpenAI(api_key=key, api_version=azure.api_version,
                              azure_endpoint=azure.endpoint or "", timeout=timeout,
                              max_retries=max_retries)


class OpenAIClient:
    """An :class:`~sleuth.llm.base.LLM` for OpenAI and OpenAI-compatible servers.

    ``base_url`` defaults to the SDK's (``OPENAI_BASE_URL`` or api.openai.com); ``api_key`` may
    be ``None`` for local servers that need none. ``temperature``, ``max_tokens`` and
    ``reasoning_effort`` are sent only when set. ``extra_body`` is merged into every request
    body (for server-specific options). ``timeout`` is per attempt, in seconds.
    ``api_version`` (or an ``api-version`` in ``base_url``) means Azure OpenAI: ``base_url``
    is then the resource endpoint (the model names the deployment) or a deployment's URL.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        reasoning_effort: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 4,
        extra_body: Mapping[str, Any] | None = None,
        api_version: str | None = None,
    ) -> None:
        if not model:
            raise ConfigError("no LLM model given; set SLEUTH_MODEL")
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"LLM base URL {redact(base_url, api_key)!r} must start with http:// or "
                "https://; "
                "check SLEUTH_BASE_URL"
            )
        if timeout <= 0:
            raise ConfigError(f"LLM timeout must be positive, got {timeout!r}")
        if max_retries < 0:
            raise ConfigError(f"LLM max_retries must be >= 0, got {max_retries!r}")
        if max_tokens is not None and max_tokens <= 0:
            raise ConfigError(f"max_tokens must be positive, got {max_tokens!r}")
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.reasoning_effort = reasoning_effort
        self.timeout = timeout
        self.max_retries = max_retries
        self.extra_body = dict(extra_body) if extra_body else None
        azure = azure_target(base_url, api_version)
        if azure is None and needs_api_version(base_url):
            raise ConfigError(
                f"{redact(str(base_url), api_key)} is an Azure OpenAI resource: set its API "
                "version with "
                "SLEUTH_LLM__API_VERSION (e.g. 2024-10-21) or ?api-version=... in "
                "SLEUTH_BASE_URL"
            )
        self._client = _sdk_client(base_url, api_key, azure, timeout, max_retries)
        self.base_url = str(self._client.base_url).rstrip("/")
        # what messages may not show: the key, and the password of a URL with userinfo
        self._secrets = (api_key, urlsplit(self.base_url).password)
        self.shown_url = self._redact(self.base_url)
        self._learnt = learnt(self.base_url, model)
        self._json: JsonToolCalls | None = None

    def __repr__(self) -> str:
        return f"OpenAIClient(model={self.model!r}, base_url={self.shown_url!r})"

    def _redact(self, text: str) -> str:
        """``text`` without this client's credentials (see :func:`sleuth.errors.redact`)."""
        return redact(text, *self._secrets)

    def close(self) -> None:
        """Close the underlying HTTP connection pool."""
        self._client.close()

    @property
    def adaptations(self) -> list[str]:
        """What was changed, in this process, to work with this endpoint and model."""
        return list(self._learnt.notes)

    def _error(self, err: openai.OpenAIError, label: str, model: str) -> str:
        return self._redact(_describe(
            err,
            label=label,
            base_url=self.shown_url,
            model=model,
            attempts=self.max_retries + 1,
            timeout=self.timeout,
        ))

    def _request(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        tool_choice: str | None,
        parallel_tool_calls: bool | None,
        response_format: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments for ``chat.completions.create``; unset options are left out."""
        kwargs: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages]}
        if response_format is not None:
            kwargs["response_format"] = dict(response_format)
        if tools:
            kwargs["tools"] = [dict(t) for t in tools]
            if tool_choice is not None:
                kwargs["tool_choice"] = tool_choice
            if parallel_tool_calls is not None:
                kwargs["parallel_tool_calls"] = parallel_tool_calls
        optional = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "reasoning_effort": self.reasoning_effort,
        }
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        return kwargs

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        tool_choice: str | None = None,
        parallel_tool_calls: bool | None = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> ChatResponse:
        """Send one chat-completions request; see :meth:`sleuth.llm.base.LLM.chat`.

        ``tool_choice`` and ``parallel_tool_calls`` are sent only together with ``tools``;
        ``response_format`` (e.g. a ``json_schema``) constrains the reply where the server
        supports it.
        """
        return self._chat(messages, tools, tool_choice, parallel_tool_calls, response_format,
                          None)

    def stream_chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        tool_choice: str | None = None,
        parallel_tool_calls: bool | None = None,
        response_format: Mapping[str, Any] | None = None,
        on_text: TextCallback,
    ) -> ChatResponse:
        """:meth:`chat` with the request streamed, the reply's answer text passed to
        ``on_text`` as it arrives (see :class:`~sleuth.llm.base.Streaming`); the response is
        the one :meth:`chat` returns. A server that refuses to stream is learnt, said once,
        and asked without streaming from then on; its answer reaches ``on_text`` whole."""
        gate = TextGate(on_text, tools=bool(tools))
        response = self._chat(messages, tools, tool_choice, parallel_tool_calls,
                              response_format, gate)
        gate.finish(None if response.tool_calls else response.content)
        return response

    def _chat(self, messages: Sequence[Mapping[str, Any]],
              tools: Sequence[Mapping[str, Any]] | None, tool_choice: str | None,
              parallel_tool_calls: bool | None, response_format: Mapping[str, Any] | None,
              gate: TextGate | None) -> ChatResponse:
        learnt = self._learnt
        if tools and learnt.json_tools:
            return self._json_chat(messages, tools, tool_choice, parallel_tool_calls, gate)
        if tools and tool_choice == "none" and learnt.omit_tools_when_none:
            tools = parallel_tool_calls = None
        try:
            response = self._send(self._request(messages, tools, tool_choice,
                                                parallel_tool_calls, response_format), gate)
        except _ToolsRefused as refused:
            learnt.json_tools = True
            learnt.note(f"{self._where} refuses native tool calls ({refused}): using the "
                        "JSON tool protocol")
            return self._json_chat(messages, tools, tool_choice, parallel_tool_calls, gate)
        if tools and tool_choice != "none" and not response.tool_calls:
            calls = text_tool_calls(response.content, tools or ())
            if calls:
                learnt.json_tools = True
                learnt.note(f"{self._where} wrote tool calls as text: using the JSON tool "
                            "protocol")
                return replace(response, content=None, tool_calls=calls,
                               finish_reason="tool_calls")
        if tools and tool_choice == "none" and response.tool_calls:
            learnt.omit_tools_when_none = True
            learnt.note(f"{self._where} ignores tool_choice 'none': no tools are sent when "
                        "no call is allowed")
            return self._chat(messages, None, None, None, response_format, gate)
        return response

    def _json_chat(self, messages: Sequence[Mapping[str, Any]],
                   tools: Sequence[Mapping[str, Any]] | None, tool_choice: str | None,
                   parallel_tool_calls: bool | None, gate: TextGate | None) -> ChatResponse:
        """The call through the JSON tool protocol; streamed where ``gate`` listens."""
        protocol = self._json_protocol()
        if gate is None:
            return protocol.chat(messages, tools, tool_choice=tool_choice,
                                 parallel_tool_calls=parallel_tool_calls)
        return protocol.stream_chat(messages, tools, tool_choice=tool_choice,
                                    parallel_tool_calls=parallel_tool_calls, on_text=gate.say)

    @property
    def _where(self) -> str:
        return f"the LLM endpoint at {self.shown_url} (model {self.model!r})"

    def _json_protocol(self) -> JsonToolCalls:
        """Tool calls as JSON replies, through this client's tool-less requests."""
        if self._json is None:
            self._json = JsonToolCalls(self)
        return self._json

    def _send(self, kwargs: dict[str, Any], gate: TextGate | None = None) -> ChatResponse:
        """One completion (streamed into ``gate`` when given); a refused optional parameter
        is learnt and the request sent again without it (once per parameter)."""
        tried: set[str] = set()
        while True:
            request = self._learnt.apply(dict(kwargs))
            try:
                completion = self._create(request, gate)
                break
            except (openai.BadRequestError, openai.UnprocessableEntityError) as err:
                name = refused_parameter(err, sent_fields(request))
                if name is not None and name not in tried:
                    tried.add(name)
                    self._learn(name, err)
                    continue
                if request.get("tools") and refuses_tools(err):
                    raise _ToolsRefused(self._redact(_server_message(err))) from err
                raise LLMError(self._error(err, "LLM", self.model)) from err
            except openai.APIConnectionError as err:  # refused, timed out: after retries
                raise LLMUnreachable(self._error(err, "LLM", self.model)) from err
            except openai.OpenAIError as err:
                raise LLMError(self._error(err, "LLM", self.model)) from err
        return self._response(completion)

    def _create(self, request: dict[str, Any], gate: TextGate | None) -> Any:
        """The completion of ``request``: streamed, its content fed to ``gate``, when there
        is one and the server streams; else as one response."""
        if gate is None or self._learnt.no_stream:
            return self._client.chat.completions.create(**request)
        try:
            stream = self._client.chat.completions.create(
                **request, stream=True, stream_options={"include_usage": True})
        except (openai.BadRequestError, openai.UnprocessableEntityError) as err:
            if not refuses_streaming(err):
                raise
            self._learnt.no_stream = True
            self._learnt.note(f"{self._where} refuses streaming "
                              f"({self._redact(_server_message(err))}): "
                              "answers arrive whole")
            return self._client.chat.completions.create(**request)
        with stream:
            return assemble(stream, gate.feed)

    def _learn(self, name: str, err: openai.APIStatusError) -> None:
        """Remember that the server refuses ``name``: leave it out, or send
        ``max_completion_tokens`` instead of ``max_tokens`` where the server asks for it."""
        message = self._redact(_server_message(err))
        if name == "max_tokens" and "max_completion_tokens" in message:
            self._learnt.renamed[name] = "max_completion_tokens"
            self._learnt.note(f"{self._where} refuses max_tokens ({message}): sending "
                              "max_completion_tokens instead")
        else:
            self._learnt.dropped.add(name)
            self._learnt.note(f"{self._where} refuses {name} ({message}): leaving it out")

    def _response(self, completion: Any) -> ChatResponse:
        """The :class:`ChatResponse` of a completion; inline ``<think>`` reasoning is kept
        apart from the answer."""
        choices = getattr(completion, "choices", None)
        if not choices:
            raise LLMError(
                f"the LLM endpoint at {self.shown_url} returned no choices for model "
                f"{self.model!r}; check that it is an OpenAI-compatible chat endpoint"
            )
        choice = choices[0]
        message = choice.message
        inline, content = split_thinking(message.content)
        return ChatResponse(
            content=content,
            tool_calls=_tool_calls(message.tool_calls),
            usage=_usage(completion.usage),
            model=completion.model or self.model,
            finish_reason=choice.finish_reason,
            reasoning=_reasoning(message) or inline,
        )

    def embed(
        self, texts: Sequence[str], model: str | None = None, *, batch_size: int = 256
    ) -> list[list[float]]:
        """Embed ``texts`` with the server's ``/embeddings`` endpoint, in input order.

        ``model`` defaults to the client's model. Texts go in batches of ``batch_size``.
        Failures raise :class:`~sleuth.errors.EmbedderError`.
        """
        if batch_size <= 0:
            raise ConfigError(f"batch_size must be positive, got {batch_size!r}")
        name = model or self.model
        vectors: list[list[float]] = []
        for start in range(0, len(texts), batch_size):
            batch = list(texts[start : start + batch_size])
            vectors.extend(self._embed_batch(batch, name))
        return vectors

    def _embed_batch(self, batch: list[str], model: str) -> list[list[float]]:
        try:
            response = self._client.embeddings.create(
                model=model, input=batch, encoding_format="float"
            )
        except openai.OpenAIError as err:
            raise EmbedderError(self._error(err, "embeddings", model)) from err
        data = sorted(response.data or (), key=lambda item: item.index)
        if len(data) != len(batch):
            raise EmbedderError(
                f"the embeddings endpoint at {self.shown_url} returned {len(data)} vectors "
                f"for {len(batch)} texts (model {model!r})"
            )
        return [[float(x) for x in item.embedding] for item in data]


def embed_texts(
    base_url: str | None,
    api_key: str | None,
    model: str,
    texts: Sequence[str],
    *,
    timeout: float = 60.0,
    max_retries: int = 4,
    batch_size: int = 256,
) -> list[list[float]]:
    """One-shot helper: embed ``texts`` through an OpenAI-compatible ``/embeddings`` endpoint.

    Returns one vector per text, in input order. Raises :class:`~sleuth.errors.EmbedderError`.
    """
    client = OpenAIClient(model, base_url, api_key, timeout=timeout, max_retries=max_retries)
    try:
        return client.embed(texts, batch_size=batch_size)
    finally:
        client.close()
