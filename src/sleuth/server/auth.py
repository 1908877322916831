"""Who a request to a server is: the caller of the API key it presents.

A key comes as ``Authorization: Bearer KEY``, ``X-API-Key: KEY`` or (HTTP API only)
``?api_key=KEY``. Every key a request presents must be valid and all must name the same
caller: a request that also carries a wrong key, or an ``Authorization`` header that is not
``Bearer``, is refused rather than let through on its other key. Both servers (HTTP, MCP over
streamable HTTP) authenticate here.
"""

from __future__ import annotations

from collections.abc import Mapping

from sleuth.service.callers import Caller, KeyRing, caller_for_key

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
