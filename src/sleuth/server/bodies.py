"""Request bodies hold text: a JSON body with a string that holds a lone surrogate is refused
(400) as it is read, before any route acts on it.

JSON lets a string escape a UTF-16 surrogate without its pair (``"\\ud800"``; RFC 8259 §8.2
leaves such strings to the reader) and Python reads it into a ``str`` that cannot be
written as UTF-8: a question holding one failed only once it was sent to the model, stored
or logged (500, or a dropped connection). A surrogate pair (``"\\ud83d\\ude00"``, as
``ensure_ascii`` encoders write an emoji) is one character and passes. MCP's transports
read JSON with pydantic, which refuses lone surrogates already; its in-process face checks
arguments with :func:`lone_surrogate`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sleuth.errors import MissingDependency

try:
    from fastapi import HTTPException
except ImportError as exc:  # pragma: no cover - the serve extra is missing
    raise MissingDependency(exc.name or "fastapi", "serve") from None

_ESCAPE = re.compile(rb"\\[uU][dD][89a-fA-F]")  # a surrogate's escape somewhere in the bytes
_SURROGATE = re.compile("[\ud800-\udfff]")  # in a parsed string: one without its pair


def lone_surrogate(value: Any) -> str | None:
    """Where in ``value`` (parsed JSON) a string, or an object's key, holds a lone surrogate
    (``messages.0.content``; ``body`` for the value itself), or None."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return ".".join(str(p) for p in path) or "body"
        elif isinstance(item, dict):
            for key, inner in item.items():
                stack += [((*path, key), key), ((*path, key), inner)]
        elif isinstance(item, list):
            stack += [((*path, i), inner) for i, inner in enumerate(item)]
    return None


def surrogate_problem(raw: bytes) -> str | None:
    """What is wrong with JSON ``raw`` whose text holds a lone surrogate, or None (also for
    a body that is no JSON: its route says so)."""
    if not _ESCAPE.search(raw):
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    where = lone_surrogate(value)
    if where is None:
        return None
    return (f"invalid request: {where}: holds a lone surrogate (a \\ud800-\\udfff escape "
            "without its pair), which is not text")


class TextBodies:
    """ASGI middleware: 400 for a body whose JSON text holds a lone surrogate, raised as the
    route reads the body's last part (an HTTPException, which FastAPI passes through), so
    nothing is read before the route asks for it. Multipart uploads pass unread."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        kind = dict(scope.get("headers") or []).get(b"content-type", b"")
        if scope["type"] != "http" or kind.lower().startswith(b"multipart/"):
            await self.app(scope, receive, send)
            return
        parts: list[bytes] = []

        async def read() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                parts.append(message.get("body", b""))
                if not message.get("more_body", False):
                    problem = surrogate_problem(b"".join(parts))
                    parts.clear()
                    if problem:
                        raise HTTPException(400, problem)
            return message

        await self.app(scope, read, send)
