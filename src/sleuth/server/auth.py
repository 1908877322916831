"""Who a request to a server is: the caller of the API key it presents.

A key comes as ``Authorization: Bearer KEY``, ``X-API-Key: KEY`` or (HTTP API only)
``?api_key=KEY``. Every key a request presents must be valid and all must name the same
caller: a request that also carries a wrong key, or an ``Authorization`` header that is not
``Bearer``, is refused rather than let through on its other key. Both servers (HTTP, MCP over
streamable HTTP) authenticate here, in :class:`KeyCheck`, before a request's body is read,
and hold each key to its rate (:class:`~sleuth.service.pool.RateLimit`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl

from sleuth.errors import TooMany
from sleuth.service.callers import Caller, KeyRing, caller_for_key
from sleuth.service.pool import RateLimit

MISSING = "missing API key: send Authorization: Bearer KEY or X-API-Key"
INVALID = "invalid API key"


class Unauthorized(Exception):
    """A request without a valid API key (HTTP 401); ``str()`` says which."""


def presented_keys(headers: Mapping[str, str], query_key: str | None = None) -> list[str]:
    """Every key the request presents, in header, header, query order. An ``X-API-Key``
    header or ``api_key`` parameter counts even when empty, an ``Authorization`` header once
    it is not blank ("" for another scheme than ``Bearer``); no key matches ""."""
    keys = []
    authorization = headers.get("authorization", "").strip()
    if authorization:
        scheme, _, key = authorization.partition(" ")
        keys.append(key.strip() if scheme.lower() == "bearer" else "")
    keys += [key for key in (headers.get("x-api-key"), query_key) if key is not None]
    return keys


def authenticate(keys: KeyRing, headers: Mapping[str, str],
                 query_key: str | None = None) -> Caller:
    """The one caller every presented key belongs to; :class:`Unauthorized` otherwise."""
    presented = presented_keys(headers, query_key)
    if not presented:
        raise Unauthorized(MISSING)
    callers = {caller_for_key(keys, key) for key in presented}
    found = callers.pop()
    if found is None or callers:
        raise Unauthorized(INVALID)
    return found


Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class KeyCheck:
    """ASGI middleware: a request to a path under one of ``guarded`` presents a valid key
    before anything reads its body (401 with ``WWW-Authenticate: Bearer`` at once
    otherwise, the body never read: FastAPI reads a route's body before its dependencies
    run), and is held to its key's rate (``rate``: 429 with ``Retry-After``). The caller
    found is left in the request's state (``request.state.caller``). Paths under
    ``openai`` answer in OpenAI's error shape, as their routes do; ``query_key``: whether
    ``?api_key=`` counts (the HTTP API's)."""

    def __init__(self, app: Any, keys: KeyRing, *, rate: RateLimit | None = None,
                 guarded: tuple[str, ...] = ("/v1/",), openai: tuple[str, ...] = (),
                 query_key: bool = True) -> None:
        self.app, self.keys, self.rate = app, keys, rate
        self.guarded, self.openai, self.query_key = guarded, openai, query_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith(self.guarded):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers") or []}
        query = [v for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1"),
                                          keep_blank_values=True)
                 if k == "api_key" and self.query_key]
        try:
            caller = authenticate(self.keys, headers, query[-1] if query else None)
            if self.rate is not None:
                self.rate.take(caller)
        except Unauthorized as exc:
            await self._refuse(scope, send, 401, str(exc), "invalid_api_key",
                               [(b"www-authenticate", b"Bearer")])
            return
        except TooMany as exc:
            await self._refuse(scope, send, 429, str(exc), "rate_limit_exceeded",
                               [(b"retry-after", str(exc.retry_after).encode())])
            return
        scope.setdefault("state", {})["caller"] = caller
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, send: Send, status: int, message: str, code: str,
                      headers: list[tuple[bytes, bytes]]) -> None:
        """The answer, the request's body unread (the server closes the connection after
        it, so a body still coming costs nothing)."""
        if str(scope.get("path", "")).startswith(self.openai) and self.openai:
            body: dict[str, Any] = {"error": {"message": message, "type":
                                              "invalid_request_error", "param": None,
                                              "code": code}}
        else:
            body = {"detail": message}
        data = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(data)).encode()), *headers]})
        await send({"type": "http.response.body", "body": data})
