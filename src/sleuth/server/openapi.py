"""What the HTTP API's OpenAPI document says beyond the routes: the error body, the status
codes each route answers with, the security schemes, and the shapes of path and query
parameters.

Routes list the statuses they can answer with (:func:`responses`), so a client generated
from ``/openapi.json`` knows every outcome; the parameter shapes here are the ones the
routes check, so a value the document allows is one the server takes.
"""

from __future__ import annotations

import re
from typing import Any

from sleuth.errors import (
    Busy,
    ForbiddenError,
    IngestError,
    LLMError,
    MissingDependency,
    NotFoundError,
    ReadOnlyIndex,
    RequestError,
    SleuthError,
    ToolError,
    TooMany,
)
from sleuth.tools.base import NOT_BLANK as NOT_BLANK  # the faces' schemas use it from here

try:
    from fastapi.security import APIKeyHeader, APIKeyQuery, HTTPBearer
    from pydantic import BaseModel, Field
except ImportError as exc:  # pragma: no cover - the serve extra is missing
    raise MissingDependency(exc.name or "fastapi", "serve") from None


class ErrorBody(BaseModel):
    """Every error answer: one line saying what was wrong and what to do about it."""

    detail: str = Field(..., description="What was wrong, and what to do about it")


class ToolAnswer(BaseModel):
    """A tool's result: ``text`` as the model sees it, ``data`` for programs."""

    text: str = Field(..., description="The result as the agent's model reads it")
    data: dict[str, Any] = Field(..., description="The result as structured data")
    retrieved_tokens: int = Field(..., description="Tokens of retrieved text in `text`")


_ERROR_SCHEMA = ErrorBody.model_json_schema()
#: The HTTP status of each kind of library error (any other: 500).
STATUS = {NotFoundError: 404, ForbiddenError: 403, RequestError: 400, ToolError: 400,
          IngestError: 400, ReadOnlyIndex: 409, LLMError: 502, TooMany: 429, Busy: 503}


def status_for(exc: SleuthError) -> int:
    """The HTTP status a route answers ``exc`` with."""
    for kind, code in STATUS.items():
        if isinstance(exc, kind):
            return code
    return 500

_STATUS_TEXT = {
    400: "Invalid request: a bad argument or value, or over one of this server's limits",
    401: "Missing or invalid API key",
    403: "The key may not do this",
    404: "Not found: no such tool, document, session, run, question or chunk",
    409: "The index is read here from a copy that takes no writes (a PostgreSQL hot standby): "
         "add and delete documents through a server of its primary",
    413: "Request body over this server's limit (serve.max_body_bytes)",
    415: "A body of a type this route does not read: send application/json (or a multipart "
         "upload where files are taken)",
    422: "Malformed request: a body that is not JSON or not the declared shape, or a path "
         "or query parameter of the wrong form",
    429: "This key already has as many such requests going as the server allows "
         "(serve.asks_per_key, serve.uploads_per_key, serve.calls_per_key) or sent more "
         "than its rate (serve.rate_per_key); send it again after Retry-After seconds",
    500: "A server-side failure, such as a file that cannot be written",
    502: "The LLM endpoint failed or answered something unusable",
    503: "Busy: the workers and their queue are full, or the index's database cannot be "
         "reached, and nothing was done; send it again after Retry-After seconds",
}
_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"description": "Always `Bearer`", "required": True,
                               "schema": {"type": "string"}}},
    503: {"Retry-After": {"description": "Seconds to wait before sending it again",
                          "required": True, "schema": {"type": "string",
                                                       "pattern": "^[0-9]+$"}}},
}
_HEADERS[429] = _HEADERS[503]


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` entries of error ``codes``, each with the error body."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:  # JSON also where the route answers HTML or events
        out[code] = {"description": _STATUS_TEXT[code],
                     "content": {"application/json": {"schema": _ERROR_SCHEMA}}}
        if code in _HEADERS:
            out[code]["headers"] = _HEADERS[code]
    return out


# The three ways a request may carry its API key (see sleuth.service.service.presented_key). They
# declare the security schemes; the key itself is read by the routes' auth dependency.
BEARER = HTTPBearer(scheme_name="bearer", auto_error=False,
                    description="`Authorization: Bearer KEY`, a key of serve.api_keys")
HEADER_KEY = APIKeyHeader(name="X-API-Key", scheme_name="apiKeyHeader", auto_error=False,
                          description="`X-API-Key: KEY`, a key of serve.api_keys")
QUERY_KEY = APIKeyQuery(name="api_key", scheme_name="apiKeyQuery", auto_error=False,
                        description="`?api_key=KEY` (for a browser opening /viewer)")

# Parameter shapes, as JSON schema patterns. They are ASCII and read the same in ECMA 262 (what
# JSON Schema uses), Python and Rust, so the server checks exactly what the document says.
# Session ids: the service's (at most 64 letters, digits, '.', '-', '_'), ASCII, without a
# leading '.' ("." and ".." are not ids a URL can carry).
SESSION_PATTERN = "^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$"
SESSION_ID = {"type": "string", "pattern": SESSION_PATTERN, "minLength": 1, "maxLength": 64}
# Document, chunk and run ids are paths: no control characters.
PATH_ID_PATTERN = r"^[^\x00-\x1f\x7f]+$"
PATH_ID_MAX = 1024
# Collection and group names (sleuth.text.access.check_name, in ASCII), and a comma-separated list.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
GROUPS_PATTERN = rf"^ *({_NAME})? *(, *({_NAME})? *)*$"
_SESSION = re.compile(SESSION_PATTERN)


def check_session_id(session_id: str | None) -> None:
    """A RequestError (HTTP 400) for a session id the document does not allow."""
    if session_id is not None and not _SESSION.fullmatch(session_id):
        raise RequestError(f"invalid session id {session_id!r}: use letters, digits, '.', "
                           "'-' and '_' (at most 64, not starting with '.')")


def check_pattern(what: str, value: str | None, pattern: str) -> None:
    """A RequestError (HTTP 400) when ``value`` does not match ``pattern``."""
    if value is not None and not re.fullmatch(pattern, value):
        raise RequestError(f"invalid {what} {value!r}")
