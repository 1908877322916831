"""How each real OpenAI-compatible server behaves, for :class:`~sleuth.testing.fake.FakeLLMServer`.

The scripted server answers in the shape of one server family, chosen by its ``mode``. Each
mode reproduces that server's documented behaviour: which requests it refuses and with which
error body, where it puts tool calls and reasoning, and what its usage reports. The sources
followed are named in each class. ``default`` is the scripted server as it always was: it
accepts every request and answers in OpenAI's format.

Like the server, this module imports nothing else of Sleuth.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any, Literal

ModeName = Literal["default", "openai", "azure", "vllm", "ollama", "llamacpp-jinja",
                   "reasoning"]
MODES: tuple[str, ...] = ModeName.__args__  # type: ignore[attr-defined]


class Rejected(Exception):
    """A request the fake refuses like a real server would: the status and the JSON body."""

    def __init__(self, status: int, message: str, body: Mapping[str, Any] | None = None,
                 *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.body = dict(body) if body is not None else error_body(status, message, param, code)


_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "model_not_found"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}


def error_body(status: int, message: str, param: str | None = None,
               code: str | None = None) -> dict[str, Any]:
    """OpenAI's error object: ``{"error": {"message", "type", "param", "code"}}``."""
    default = ("server_error" if status >= 500 else "invalid_request_error", None)
    kind, default_code = _ERROR_KINDS.get(status, default)
    return {"error": {"message": message, "type": kind, "param": param,
                      "code": code or default_code}}


def _token(chars: int) -> int:
    return max(1, chars // 4)


def _random_id(length: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(alphabet[b % len(alphabet)] for b in os.urandom(length))


def hermes_text(calls: list[dict[str, Any]]) -> str:
    """Tool calls written as text the way Hermes-style templates (Qwen2.5) make models write
    them: one ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` block per call."""
    blocks = []
    for call in calls:
        try:
            arguments: Any = json.loads(call["arguments"])
        except json.JSONDecodeError:
            arguments = call["arguments"]
        blocks.append("<tool_call>\n" + json.dumps({"name": call["name"],
                                                     "arguments": arguments}) + "\n</tool_call>")
    return "\n".join(blocks)


class Default:
    """The scripted server as it always was: every request accepted, OpenAI's format."""

    name: str = "default"
    honours_tool_choice = False  # a scripted call under tool_choice "none" is an error

    def __init__(self, model: str) -> None:
        self.model = model

    def route(self, raw_path: str) -> str:
        """The endpoint a request path names (``/chat/completions``, ``/embeddings``,
        ``/models``), or a :class:`Rejected` for paths the server does not serve."""
        path = raw_path.split("?", 1)[0].rstrip("/")
        return path[3:] if path.startswith("/v1") else path

    def authorised(self, headers: Mapping[str, str], api_key: str) -> bool:
        """Whether ``headers`` (lower-case names) carry ``api_key`` as this server wants."""
        return headers.get("authorization") == f"Bearer {api_key}"

    def unauthorised(self) -> Rejected:
        return Rejected(401, "Incorrect API key provided.")

    def check(self, body: Mapping[str, Any]) -> None:
        """Refuse what this server refuses, before the script is consulted."""

    def calls_as_text(self, body: Mapping[str, Any], turn: Mapping[str, Any]) -> bool:
        """Whether the model's tool calls come back written in ``content``."""
        return bool(turn.get("as_text"))

    def shape(self, response: dict[str, Any], body: Mapping[str, Any],
              turn: Mapping[str, Any]) -> None:
        """Give the completion this server's own fields (ids, usage details, reasoning)."""


class OpenAI(Default):
    """api.openai.com. Unknown request fields are refused ("Unrecognized request argument
    supplied: reasoning_effort", with ``param`` and ``code`` null, as reported against
    gpt-4o-mini in davidmigloz/langchain_dart#712). Reasoning models (o-series, gpt-5) refuse
    ``max_tokens`` ("Unsupported parameter: 'max_tokens' is not supported with this model. Use
    'max_completion_tokens' instead.", param ``max_tokens``, code ``unsupported_parameter``:
    griptape-ai/ComfyUI-Griptape#312, teilomillet/gollm#33) and any ``temperature`` but 1
    ("Unsupported value: 'temperature' does not support 0.0 with this model. Only the default
    (1) value is supported.", code ``unsupported_value``: OpenHands/OpenHands#4131); they
    take ``max_completion_tokens`` and ``reasoning_effort``. A tool call under
    ``tool_choice: "none"`` cannot happen there, so such a script turn is an error."""

    name = "openai"
    honours_tool_choice = True
    KNOWN = frozenset({
        "model", "messages", "tools", "tool_choice", "parallel_tool_calls", "temperature",
        "top_p", "n", "stop", "stream", "stream_options", "max_tokens", "max_completion_tokens",
        "reasoning_effort", "response_format", "seed", "logprobs", "top_logprobs",
        "presence_penalty", "frequency_penalty", "logit_bias", "user", "metadata", "store",
        "service_tier", "modalities", "audio", "prediction", "verbosity", "web_search_options",
        "prompt_cache_key", "safety_identifier", "functions", "function_call"})

    @property
    def reasoning_model(self) -> bool:
        return bool(re.match(r"(o\d|gpt-5)(?!-chat)", self.model))

    def check(self, body: Mapping[str, Any]) -> None:
        unknown = sorted(set(body) - self.KNOWN)
        if unknown:
            raise Rejected(400, f"Unrecognized request argument supplied: {unknown[0]}")
        if not self.reasoning_model:
            if "reasoning_effort" in body:
                raise Rejected(400, "Unrecognized request argument supplied: reasoning_effort")
            return
        if "max_tokens" in body:
            raise Rejected(400, "Unsupported parameter: 'max_tokens' is not supported with "
                           "this model. Use 'max_completion_tokens' instead.",
                           param="max_tokens", code="unsupported_parameter")
        temperature = body.get("temperature")
        if temperature is not None and temperature != 1:
            raise Rejected(400, f"Unsupported value: 'temperature' does not support "
                           f"{json.dumps(temperature)} with this model. Only the default (1) "
                           "value is supported.", param="temperature", code="unsupported_value")


class Azure(OpenAI):
    """Azure OpenAI: ``/openai/deployments/{deployment}/chat/completions?api-version=...``
    with the key in an ``api-key`` header. Without ``api-version`` the service answers 404
    ``{"error": {"code": "404", "message": "Resource not found"}}``
    (MicrosoftDocs/azure-docs#114602), an unknown version 400 ``{"error": {"code":
    "BadRequest", "message": "API version not supported"}}`` (hotovo/aider-desk#460), an
    unknown deployment 404 ``DeploymentNotFound`` (openai/openai-python#362 and Microsoft Q&A
    1189174), a wrong key 401. The deployment's model follows OpenAI's parameter rules."""

    name = "azure"
    API_VERSIONS = ("2024-02-01", "2024-06-01", "2024-10-21", "2024-12-01-preview",
                    "2025-01-01-preview", "2025-04-01-preview")
    _PATH = re.compile(r"^/openai/deployments/([^/]+)(/chat/completions|/embeddings)$")

    def route(self, raw_path: str) -> str:
        path, _, query = raw_path.partition("?")
        version = urllib.parse.parse_qs(query).get("api-version", [""])[0]
        match = self._PATH.match(path.rstrip("/"))
        if not match or not version:
            raise Rejected(404, "Resource not found",
                           {"error": {"code": "404", "message": "Resource not found"}})
        if version not in self.API_VERSIONS:
            raise Rejected(400, "API version not supported",
                           {"error": {"code": "BadRequest",
                                      "message": "API version not supported"}})
        if urllib.parse.unquote(match.group(1)) != self.model:
            message = ("The API deployment for this resource does not exist. If you created "
                       "the deployment within the last 5 minutes, please wait a moment and try "
                       "again.")
            raise Rejected(404, message, {"error": {"code": "DeploymentNotFound",
                                                    "message": message}})
        return match.group(2)

    def authorised(self, headers: Mapping[str, str], api_key: str) -> bool:
        return headers.get("api-key") == api_key

    def unauthorised(self) -> Rejected:
        message = ("Access denied due to invalid subscription key or wrong API endpoint. Make "
                   "sure to provide a valid key for an active subscription and use a correct "
                   "regional API endpoint for your resource.")
        return Rejected(401, message, {"error": {"code": "401", "message": message}})


class Vllm(Default):
    """vLLM started without ``--enable-auto-tool-choice``. A request with tools defaults to
    ``tool_choice: "auto"`` (vLLM's ``check_tool_usage``), which such a server refuses: 400
    ``{"object": "error", "message": "\\"auto\\" tool choice requires --enable-auto-tool-choice
    and --tool-call-parser to be set", "type": "BadRequestError", "param": null, "code":
    400}`` (vllm-project/vllm#9986, langchain4j/langchain4j#3475). ``"required"`` and a named
    tool are served by structured outputs without a parser (docs.vllm.ai, "Tool Calling"),
    so their calls come back as ``tool_calls``. With ``tool_choice: "none"`` or without tools
    nothing parses the model's output: a call comes back written as Hermes-style text in
    ``content``, with no ``tool_calls`` field."""

    name = "vllm"

    def check(self, body: Mapping[str, Any]) -> None:
        if body.get("tools") and body.get("tool_choice", "auto") == "auto":
            message = ('"auto" tool choice requires --enable-auto-tool-choice and '
                       "--tool-call-parser to be set")
            raise Rejected(400, message, {"object": "error", "message": message,
                                          "type": "BadRequestError", "param": None,
                                          "code": 400})

    def calls_as_text(self, body: Mapping[str, Any], turn: Mapping[str, Any]) -> bool:
        choice = body.get("tool_choice")
        guided = bool(body.get("tools")) and (choice == "required" or isinstance(choice, dict))
        return not guided or bool(turn.get("as_text"))


class Ollama(Default):
    """Ollama's ``/v1`` compatibility layer: ``tool_choice`` is ignored, so a call comes back
    even under ``"none"`` (ollama/ollama#8421, #17921); the API key is ignored (docs.ollama.com,
    "OpenAI compatibility"); a thinking model's text is in ``message.reasoning``, not
    ``reasoning_content`` (ollama/ollama#15288); ids look like ``chatcmpl-123`` and
    ``call_hk81qg8b`` with ``system_fingerprint: "fp_ollama"``; an unknown model is a 404
    ``model "x" not found, try pulling it first`` of type ``api_error``."""

    name = "ollama"

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.counter = 0

    def authorised(self, headers: Mapping[str, str], api_key: str) -> bool:
        return True

    def check(self, body: Mapping[str, Any]) -> None:
        if body.get("model") != self.model:
            message = f'model "{body.get("model")}" not found, try pulling it first'
            raise Rejected(404, message, {"error": {"message": message, "type": "api_error",
                                                    "param": None, "code": None}})

    def shape(self, response: dict[str, Any], body: Mapping[str, Any],
              turn: Mapping[str, Any]) -> None:
        self.counter += 1
        response["id"] = f"chatcmpl-{self.counter}"
        response["system_fingerprint"] = "fp_ollama"
        message = response["choices"][0]["message"]
        message.pop("refusal", None)
        if "reasoning_content" in message:
            message["reasoning"] = message.pop("reasoning_content")
        for call in message.get("tool_calls") or ():
            call["id"] = f"call_{_random_id(8)}"
        if message.get("tool_calls") and message.get("content") is None:
            message["content"] = ""


class LlamaCppJinja(Default):
    """llama-server started with ``--jinja``: the chat template's parser turns the model's
    calls into ``tool_calls``; ``tool_choice`` is one of ``none``, ``auto``, ``required``
    ("Invalid tool_choice: ..." otherwise) and a ``grammar`` beside tools is refused with
    "Cannot use custom grammar constraints with tools."; ``response_format`` json_schema is
    accepted (turned into a grammar); ``max_completion_tokens`` is read as ``n_predict``.
    The response has no ``refusal``, random 32-character ids, ``system_fingerprint`` set to
    the build, a ``timings`` object (cache_n, prompt_n, prompt_ms, predicted_n, ...) and
    ``usage.prompt_tokens_details.cached_tokens``: the prompt prefix reused from the previous
    request. Errors are ``{"error": {"code": 400, "message", "type"}}``. Followed:
    tools/server/server-task.cpp and server-common.cpp of ggml-org/llama.cpp."""

    name = "llamacpp-jinja"
    honours_tool_choice = True

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.previous = ""

    @staticmethod
    def _error(message: str) -> Rejected:
        return Rejected(400, message, {"error": {"code": 400, "message": message,
                                                 "type": "invalid_request_error"}})

    def check(self, body: Mapping[str, Any]) -> None:
        choice = body.get("tool_choice", "auto")
        if isinstance(choice, str) and choice not in ("none", "auto", "required"):
            raise self._error(f"Invalid tool_choice: {choice}")
        if body.get("tools") and choice != "none" and "grammar" in body:
            raise self._error("Cannot use custom grammar constraints with tools.")
        kind = (body.get("response_format") or {}).get("type", "text")
        if kind not in ("text", "json_object", "json_schema"):
            raise self._error(f'response_format type must be one of "text", "json_object" '
                              f'or "json_schema", but got: {kind}')

    def shape(self, response: dict[str, Any], body: Mapping[str, Any],
              turn: Mapping[str, Any]) -> None:
        response["id"] = f"chatcmpl-{_random_id(32)}"
        response["system_fingerprint"] = "b6500-fake"
        message = response["choices"][0]["message"]
        message.pop("refusal", None)
        for call in message.get("tool_calls") or ():
            call["id"] = _random_id(32)
        prompt = json.dumps(body.get("messages"), ensure_ascii=False, sort_keys=True)
        shared = len(os.path.commonprefix([prompt, self.previous]))
        self.previous = prompt
        usage = response.get("usage")
        if not usage:
            return
        cached = min(_token(shared) if shared else 0, usage["prompt_tokens"] - 1)
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
        evaluated, predicted = usage["prompt_tokens"] - cached, usage["completion_tokens"]
        response["timings"] = {
            "cache_n": cached, "prompt_n": evaluated, "prompt_ms": 2.0 * evaluated,
            "prompt_per_token_ms": 2.0, "prompt_per_second": 500.0,
            "predicted_n": predicted, "predicted_ms": 20.0 * predicted,
            "predicted_per_token_ms": 20.0, "predicted_per_second": 50.0}


class Reasoning(Default):
    """A reasoning model (DeepSeek-R1 through DeepSeek's API, vLLM's reasoning parser or
    llama.cpp's ``--reasoning-format deepseek``): every message has ``reasoning_content``
    beside ``content``, and a tool-call turn has empty ``content``. As DeepSeek documents
    (api-docs.deepseek.com, "Reasoning Model"), ``reasoning_content`` sent back in the input
    messages is a 400, ``logprobs`` and ``top_logprobs`` are refused, and ``temperature``
    and the penalties are accepted but have no effect."""

    name = "reasoning"
    THINKING = "Let me think about what the question needs before I answer."

    def check(self, body: Mapping[str, Any]) -> None:
        for message in body.get("messages") or ():
            if isinstance(message, Mapping) and "reasoning_content" in message:
                raise Rejected(400, "The reasoning_content is an intermediate result for "
                               "display purposes only and will not be included in the context "
                               "for inference. Please remove the reasoning_content from your "
                               "input messages.")
        for name in ("logprobs", "top_logprobs"):
            if name in body:
                raise Rejected(400, f"Unsupported parameter: {name} is not supported with "
                               "this model", param=name)

    def shape(self, response: dict[str, Any], body: Mapping[str, Any],
              turn: Mapping[str, Any]) -> None:
        message = response["choices"][0]["message"]
        reasoning = message.setdefault("reasoning_content", self.THINKING)
        if message.get("tool_calls") and not message.get("content"):
            message["content"] = ""
        usage = response.get("usage")
        if usage:
            thinking = _token(len(reasoning))
            usage["completion_tokens_details"] = {"reasoning_tokens": thinking}


_BY_NAME: dict[str, type[Default]] = {
    "default": Default, "openai": OpenAI, "azure": Azure, "vllm": Vllm, "ollama": Ollama,
    "llamacpp-jinja": LlamaCppJinja, "reasoning": Reasoning}


def behaviour(name: str, model: str) -> Default:
    """The behaviour of the server family called ``name`` serving ``model``."""
    if name not in _BY_NAME:
        raise ValueError(f"unknown fake server mode {name!r}; choose one of: "
                         f"{', '.join(MODES)}")
    return _BY_NAME[name](model)
