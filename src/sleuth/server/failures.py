"""What a caller is told when something beyond its request fails, and what the operator's
log keeps of it.

Every HTTP request gets an id (:class:`RequestIds`), sent back as ``X-Request-Id``. When the
language model fails, its message says what the operator must fix (the endpoint's answer,
its host, what to check) and that is none of a tenant's business, so :func:`told` turns it
into one generic line naming the request id:

- **503** with ``Retry-After``: the endpoint cannot be reached (refused, timed out after the
  client's retries) or was found unreachable moments ago;
- **502**: it answered with an error (a rejected key, a bad request, its own 5xx) or with
  something unusable;
- **500**: the embedding endpoint or model failed, or a bug (an exception that is no
  :class:`~sleuth.errors.SleuthError`).

The operator's log (logger ``sleuth``, which the servers write to stderr) gets the id, the
key's name and the whole message, credentials masked (:func:`~sleuth.errors.redact`); a
bug's traceback too. An admin key, and the local user (MCP over stdio), is the operator: its
answer carries the masked detail as well. Every other library error (a bad request, not
found, busy) is the caller's own business and passes unchanged.
"""

from __future__ import annotations

import logging
import secrets
from contextvars import ContextVar
from typing import Any

from sleuth.errors import (
    EmbedderError,
    LLMError,
    LLMUnavailable,
    LLMUnreachable,
    SleuthError,
    redact,
)
from sleuth.service.callers import Caller
from sleuth.service.service import LLM_PAUSE

log = logging.getLogger("sleuth")

#: The id of the HTTP request being answered (None outside one).
REQUEST_ID: ContextVar[str | None] = ContextVar("sleuth_request_id", default=None)
HEADER = "X-Request-Id"
ELSEWHERE = "the operator's log has the details"


def request_id() -> str:
    """The id of the request being answered, or a new one outside a request."""
    return REQUEST_ID.get() or secrets.token_hex(8)


class RequestIds:
    """ASGI middleware: each HTTP request gets a new id, in :data:`REQUEST_ID` while it is
    answered and in the ``X-Request-Id`` header of the answer. A client's own
    ``X-Request-Id`` is not taken: it would let anyone write into the operator's log."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = secrets.token_hex(8)
        header = (HEADER.lower().encode(), rid.encode())

        async def answer(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), header]}
            await send(message)

        token = REQUEST_ID.set(rid)
        try:
            await self.app(scope, receive, answer)
        finally:
            REQUEST_ID.reset(token)


class Told(SleuthError):
    """An error as :func:`told` says it (told once: it passes through again unchanged)."""

    request_id: str


class _LLMFailed(Told, LLMError):
    pass


class _LLMDown(Told, LLMUnavailable):
    pass


class _EmbedderFailed(Told, EmbedderError):
    pass


class _Internal(Told, SleuthError):
    pass


def told(exc: Exception, caller: Caller | None = None, *,
         rid: str | None = None) -> SleuthError:
    """``exc`` as ``caller`` is told it: a failure of the language model, the embedding
    model or a bug as one line naming request ``rid`` (default: the current request's), its
    detail logged; any other library error unchanged. ``caller`` None is told as a tenant."""
    if isinstance(exc, Told) or (isinstance(exc, SleuthError) and not isinstance(
            exc, LLMError | LLMUnavailable | EmbedderError)):
        return exc
    rid = rid or request_id()
    who = caller.name if caller is not None else "a caller not yet known"
    if isinstance(exc, SleuthError):
        detail = redact(str(exc))
        log.error("request %s (%s): %s", rid, who, detail)
    else:
        detail = redact(f"{type(exc).__name__}: {exc}")
        log.error("request %s (%s): internal error", rid, who, exc_info=exc)
    said: SleuthError
    if isinstance(exc, LLMUnreachable | LLMUnavailable):
        wait = exc.retry_after if isinstance(exc, LLMUnavailable) else LLM_PAUSE
        said = _LLMDown(_line("the language model cannot be reached just now", rid, detail,
                              caller, f"; try again in {wait} s"), wait)
    elif isinstance(exc, LLMError):
        said = _LLMFailed(_line("the language model failed to answer", rid, detail, caller))
    elif isinstance(exc, EmbedderError):
        said = _EmbedderFailed(_line("the embedding model failed", rid, detail, caller))
    else:
        said = _Internal(_line("internal error", rid, detail, caller))
    said.request_id = rid
    return said


def _line(what: str, rid: str, detail: str, caller: Caller | None, wait: str = "") -> str:
    """The one line said: the detail to the operator (an admin key), else where it is."""
    if caller is not None and caller.admin:
        return f"{what} (request id {rid}){wait}: {detail}"
    return f"{what} (request id {rid}){wait}; {ELSEWHERE}"
