"""The one way a tool call from outside the agent runs (the CLI, the HTTP API, the MCP
server, a server's tool processes): :func:`run_tool` looks the tool up in the registry,
checks the serving limits its definition declares, then calls it, in a session when one is
named (its reference ids are kept)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from sleuth.errors import NotFoundError, RequestError
from sleuth.index.read import ReadIndex
from sleuth.service.sessions import Session
from sleuth.tools import TOOLS, ToolContext, ToolResult
from sleuth.tools.base import Limits
from sleuth.tools.tracker import Tracker

_SESSION_ID = re.compile(r"[\w.-]{1,64}")


def run_tool(index: ReadIndex, name: str, arguments: Mapping[str, Any] | str | None = None, *,
             limits: Limits, session: str | Session | None = None,
             owner: str | None = None) -> ToolResult:
    """Run tool ``name`` on ``index``: its serving ``limits`` checked first, then the call,
    in ``session`` when given: a live :class:`Session` (an MCP connection's), or the id of
    ``owner``'s saved session (created when new). Its reference ids are remembered. Bad
    arguments raise ToolError, an unknown tool NotFoundError."""
    tool = TOOLS.get(name)
    if tool is None:
        raise NotFoundError(f"unknown tool {name!r}; choose one of: {', '.join(TOOLS)}")
    args = arguments_of(arguments)
    tool.check_limits(args, limits)
    if session is None:
        return tool.run(ToolContext(index, Tracker()), args)
    if isinstance(session, str):
        check_session_id(session)
        session = Session.open(index, session, create=True, owner=owner)
    return session.run_tool(name, args)


def arguments_of(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """A tool call's arguments as a dict: a mapping, its JSON text, or none (``{}``);
    RequestError for anything else."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise RequestError(f"tool arguments are not valid JSON: {exc.msg}") from None
    if not isinstance(arguments, Mapping):
        raise RequestError("tool arguments must be a JSON object")
    return dict(arguments)


def check_session_id(session_id: str) -> None:
    if not _SESSION_ID.fullmatch(session_id):
        raise RequestError(f"invalid session id {session_id!r}: use letters, digits, '.', "
                           "'-' and '_' (at most 64)")
