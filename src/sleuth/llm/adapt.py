"""What :class:`~sleuth.llm.client.OpenAIClient` learns about a server, and how it reads it.

OpenAI-compatible servers differ in what they accept: OpenAI's reasoning models refuse
``max_tokens`` and any ``temperature`` but 1, its other models refuse ``reasoning_effort``,
vLLM without ``--enable-auto-tool-choice`` refuses tools, Ollama ignores ``tool_choice``,
small models behind any server write their tool calls as text, and a few proxies refuse
``stream``. The client adapts once
per endpoint and model and remembers it for the rest of the process (:func:`learnt`);
each adaptation is logged once, as a warning, and listed in :attr:`Adaptations.notes`.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import urllib.parse
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai

from sleuth.llm.base import ToolCall
from sleuth.llm.jsontools import json_objects

log = logging.getLogger("sleuth")

#: Request fields a server may refuse that the client can leave out (or rename) and go on.
OPTIONAL = ("temperature", "max_tokens", "max_completion_tokens", "reasoning_effort",
            "parallel_tool_calls", "response_format")

_UNSUPPORTED = re.compile(
    r"unsupported (?:parameter|value)|unrecognized request argument|not supported|"
    r"unknown (?:parameter|field|argument)|does not support (?:the )?param|"
    r"extra (?:inputs|fields) (?:are )?not permitted|is not allowed", re.I)
_TOOLS_REFUSED = re.compile(
    r"enable-auto-tool-choice|does not support tools|tools param requires --jinja|"
    r"tool(?:s| calling| use)? (?:is |are )?not supported", re.I)
_STREAM_REFUSED = re.compile(
    r"\bstream(?:ing|_options)?\b[^.]*(?:not supported|unsupported|not allowed|not permitted)|"
    r"(?:unsupported|unknown|unrecognized|not supported)[^.]*\bstream", re.I)
_THINK = re.compile(r"^\s*(?:<think>)?(.*?)</think>\s*", re.S)


@dataclass
class Adaptations:
    """What one endpoint and model were found to need, for the rest of the process."""

    dropped: set[str] = field(default_factory=set)
    renamed: dict[str, str] = field(default_factory=dict)
    json_tools: bool = False  # tool calls through the JSON protocol, not native
    omit_tools_when_none: bool = False  # tool_choice "none" is ignored: send no tools
    no_stream: bool = False  # streaming is refused: answers come whole
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        """Record ``text`` and log it as a warning, once."""
        if text not in self.notes:
            self.notes.append(text)
            log.warning("%s", text)

    def apply(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """``kwargs`` for ``chat.completions.create`` with what was learnt applied."""
        extra = dict(kwargs.pop("extra_body", None) or {})
        for name in self.dropped:
            kwargs.pop(name, None)
            extra.pop(name, None)
        for old, new in self.renamed.items():
            if old in kwargs:
                kwargs[new] = kwargs.pop(old)
        if extra:
            kwargs["extra_body"] = extra
        return kwargs


_known: dict[tuple[str, str], Adaptations] = {}
_lock = threading.Lock()


def learnt(base_url: str, model: str) -> Adaptations:
    """The adaptations learnt so far for ``model`` at ``base_url`` (shared by every client
    of this process)."""
    with _lock:
        return _known.setdefault((base_url, model), Adaptations())


def _error_fields(err: openai.APIStatusError) -> tuple[str, str | None]:
    """The server's message and the ``param`` it names, whatever the body's shape."""
    body = err.body
    if isinstance(body, Mapping):
        error = body.get("error")
        inner: Mapping[str, Any] = error if isinstance(error, Mapping) else body
        message = inner.get("message") or inner.get("detail") or err.message
        param = inner.get("param")
        return str(message), param if isinstance(param, str) else None
    return str(body or err.message), None


def refused_parameter(err: openai.APIStatusError, sent: Sequence[str]) -> str | None:
    """The optional request field a 400 says the server does not support, if any."""
    if err.status_code not in (400, 422):
        return None
    message, param = _error_fields(err)
    if not _UNSUPPORTED.search(message):
        return None
    where = {n: m.start() for n in sent
             if (m := re.search(rf"(?<!\w){re.escape(n)}(?!\w)", message))}
    if param is not None and param in sent:
        return param
    return min(where, key=where.__getitem__) if where else None


def refuses_tools(err: openai.APIStatusError) -> bool:
    """Whether a 400 says the server cannot take native tool calls (vLLM without
    ``--enable-auto-tool-choice``, llama.cpp without ``--jinja``, an Ollama model
    without tools)."""
    return err.status_code == 400 and bool(_TOOLS_REFUSED.search(_error_fields(err)[0]))


def refuses_streaming(err: openai.APIStatusError) -> bool:
    """Whether a 400 says the server does not stream (``stream`` or ``stream_options``)."""
    return err.status_code in (400, 422) and bool(_STREAM_REFUSED.search(_error_fields(err)[0]))


def text_tool_calls(content: str | None, tools: Sequence[Mapping[str, Any]]
                    ) -> tuple[ToolCall, ...]:
    """Calls of ``tools`` a model wrote as text (``<tool_call>`` tags, fenced or bare JSON
    with a tool's name and its arguments); none when the text is anything else."""
    if not content:
        return ()
    names = {t.get("function", {}).get("name") for t in tools}
    calls = []
    for obj in json_objects(content):
        name = obj.get("name") or obj.get("tool")
        arguments = obj.get("arguments", obj.get("parameters"))
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                return ()
        if name not in names or not isinstance(arguments, dict):
            return ()
        calls.append(ToolCall(f"call_{uuid.uuid4().hex[:12]}", str(name),
                              json.dumps(arguments, ensure_ascii=False)))
    return tuple(calls)


def split_thinking(content: str | None) -> tuple[str | None, str | None]:
    """(reasoning, answer) of a reply whose reasoning is inline (``<think>...</think>``,
    as a reasoning model writes without the server's reasoning parser)."""
    if not content or "</think>" not in content:
        return None, content
    match = _THINK.match(content)
    if not match:
        return None, content
    return match.group(1).strip() or None, content[match.end():]


@dataclass(frozen=True)
class AzureTarget:
    """Where the SDK's ``AzureOpenAI`` client goes: a resource endpoint (deployments named
    by the model) or a deployment's own URL, and the API version."""

    api_version: str
    endpoint: str | None = None
    deployment_url: str | None = None


def azure_target(base_url: str | None, api_version: str | None) -> AzureTarget | None:
    """The Azure target ``base_url`` and ``api_version`` describe, or None for any other
    server. An ``api-version`` in the URL counts as the setting when none is given."""
    if not base_url:
        return None
    parts = urllib.parse.urlsplit(base_url)
    query = urllib.parse.parse_qs(parts.query)
    version = api_version or query.get("api-version", [None])[0]
    azure_host = parts.hostname is not None and parts.hostname.endswith(
        (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"))
    if not version or (azure_host and "/openai/v1" in parts.path):
        return None
    path = parts.path.rstrip("/")
    root = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    if "/openai/deployments/" in path:
        deployment = path[: path.index("/openai/deployments/")] + "/openai/deployments/"
        name = path[len(deployment):].split("/", 1)[0]
        return AzureTarget(version, deployment_url=f"{root}{deployment}{name}")
    prefix = path[: path.index("/openai")] if "/openai" in path else path
    return AzureTarget(version, endpoint=f"{root}{prefix}")


def needs_api_version(base_url: str | None) -> bool:
    """Whether ``base_url`` is an Azure resource that cannot be reached without an API
    version (its deployment routes; not its ``/openai/v1`` route)."""
    if not base_url:
        return False
    parts = urllib.parse.urlsplit(base_url)
    return bool(parts.hostname and parts.hostname.endswith(
        (".openai.azure.com", ".cognitiveservices.azure.com"))
        and "/openai/v1" not in parts.path)


def sent_fields(kwargs: Mapping[str, Any]) -> list[str]:
    """The optional fields of a request, its ``extra_body`` keys included."""
    extra = kwargs.get("extra_body") or {}
    return [n for n in (*OPTIONAL, *extra) if n in kwargs or n in extra]
