"""The MCP server (``sleuth serve mcp``), built on the official ``mcp`` SDK's low-level Server.

Every retrieval tool is exposed one-to-one with the description the agent sees and its
argument schema within this server's limits (:meth:`sleuth.tools.Tool.input_schema`, the same
as the HTTP API's), plus ``ask``. Calls go through :class:`sleuth.service.service.Service`
(same limits as the HTTP API); a tool error comes back as an ``isError`` result whose text says
what was wrong, so the calling model can recover. ``ask``'s arguments are checked against the
schema it publishes (the HTTP API's). A failure of the LLM or a bug is told as the HTTP API
tells it (:mod:`sleuth.server.failures`): to a tenant's key one line naming a request id, the
detail in the operator's log.

Each MCP session (a stdio or in-process connection, or one ``Mcp-Session-Id`` over
streamable HTTP) has a Sleuth session of its own, kept in memory (:class:`LiveSessions`):
reference ids that ``search`` returns work in ``find`` and ``open`` for the rest of it, as
the server's instructions say. ``ask`` runs in a saved session only when its ``session``
argument names one.

Over stdio the client is the local user (an admin caller). Over streamable HTTP every
request needs an API key of ``serve.api_keys`` (Bearer or ``X-API-Key``; 401 otherwise,
unless ``--no-auth``), and a tenant's key sees only its collection and groups.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from typing import Any, Literal

import anyio

from sleuth.errors import ConfigError, MissingDependency, ToolError
from sleuth.server.auth import KeyCheck, Unauthorized, authenticate
from sleuth.server.bodies import lone_surrogate
from sleuth.server.failures import told
from sleuth.server.guard import Guard, allowed_hosts
from sleuth.server.schemas import ArgumentCheck, ask_schema
from sleuth.service.callers import LOCAL, Caller, KeyRing, load_api_keys
from sleuth.service.pool import RateLimit
from sleuth.service.service import Service
from sleuth.service.sessions import Session
from sleuth.settings import DEFAULT_AGENT, ServeSettings
from sleuth.tools import TOOLS, ToolResult
from sleuth.tools.tracker import Tracker

try:
    import mcp_types as types
    from mcp.server import Server
    from mcp.server.context import ServerRequestContext
    from mcp.server.streamable_http import MCP_SESSION_ID_HEADER as MCP_SESSION_ID
except ImportError as exc:  # pragma: no cover - the serve extra is missing
    raise MissingDependency(exc.name or "mcp", "serve") from None

Transport = Literal["stdio", "http"]

ASK_DESCRIPTION = ("Answer a question with Sleuth's agent, which searches and reads the "
                   "indexed documents and cites the chunks it used. Returns the answer text; "
                   "the structured result is the full record (trajectory, citations).")
INSTRUCTIONS = ("Search and read the documents of a Sleuth index, or ask its agent. Reference "
                "ids that `search` returns (turn1search1, ...) stay valid in `find` and `open` "
                "for the rest of this MCP session; `find` and `open` also take a document id "
                "(the `file` of a search result), which needs no session.")


def mcp_tools(limits: ServeSettings | None = None) -> list[types.Tool]:
    """The MCP tool list: every Sleuth tool as the agent sees it, within the serving
    ``limits`` (default: the defaults of ``settings.serve``), then ``ask``."""
    limits = limits or ServeSettings()
    out = [types.Tool(name=tool.name, description=tool.description,
                      input_schema=tool.input_schema(limits)) for tool in TOOLS.values()]
    out.append(types.Tool(name="ask", description=ASK_DESCRIPTION,
                          input_schema=ask_schema(limits)))
    return out


class LiveSessions:
    """The Sleuth session of each MCP session, per caller, made on its first tool call and
    kept in memory (never saved). It holds the reference ids ``search`` handed out.

    An MCP session is what the SDK serves as one connection: a stdio or in-process client,
    whose requests share the server's lifespan state, or over streamable HTTP (one lifespan
    for every client) the requests carrying one ``Mcp-Session-Id``. A request of the
    stateless 2026-07-28 protocol over HTTP carries none and runs without a session. The
    newest :data:`LIMIT` sessions of a state are kept."""

    LIMIT = 1024

    def __init__(self, service: Service) -> None:
        self.service = service
        self._lock = threading.Lock()

    def get(self, ctx: ServerRequestContext[Any], caller: Caller) -> Session | None:
        """``caller``'s session in the MCP session of the request ``ctx``."""
        key = ""
        if ctx.request is not None:  # streamable HTTP
            key = getattr(ctx.request, "headers", {}).get(MCP_SESSION_ID, "")
            if not key:
                return None
        state = ctx.lifespan_context
        with self._lock:
            sessions: OrderedDict[tuple[str, Caller], Session] = state.setdefault(
                "sleuth_sessions", OrderedDict())
            session = sessions.pop((key, caller), None) or _McpSession(
                self.service.view(caller), persist=False, settings=self.service.settings)
            sessions[key, caller] = session
            while len(sessions) > self.LIMIT:
                sessions.popitem(last=False)
        return session


class _McpSession(Session):
    """A session whose calls share only the reference-id table: the client, not this
    server, keeps its context, so no result is cut short as "shown before"."""

    def run_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        old = self.tracker  # called one at a time (the service's session lock)
        self.tracker = Tracker(refs=old.refs, turn=old.turn, searches=old.searches)
        return super().run_tool(name, arguments)


def build_mcp(service: Service, keys: KeyRing | None = None) -> Server[Any]:
    """An MCP server exposing ``service``'s tools and ``ask``; with ``keys``, each call acts
    as the caller whose key its HTTP request carries."""

    live = LiveSessions(service)
    check_ask = ArgumentCheck("ask", ask_schema(service.limits))

    def who(ctx: ServerRequestContext[Any]) -> Caller:
        request = ctx.request
        if not keys or request is None:
            return LOCAL
        try:  # the HTTP middleware answers 401 first; never act as local
            return authenticate(keys, getattr(request, "headers", {}))
        except Unauthorized as exc:
            raise ConfigError(str(exc)) from None

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=mcp_tools(service.limits))

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        caller: Caller | None = None
        try:
            caller = found = who(ctx)
            _check_text(params.name, arguments)
            if params.name == "ask":
                check_ask(arguments)
                record = await asyncio.wrap_future(service.start_ask(
                    lambda: _ask(service, arguments, found), found))
                text, data = str(record.get("answer", "")), record
            else:
                session = live.get(ctx, found)
                answer = await service.pool.run(  # bounded: a full queue is an error result
                    lambda: service.tool_answer(params.name, arguments, found,
                                                session=session), found)
                text, data = answer["text"], answer["data"]
        except Exception as exc:  # a bug too: said without its detail to a tenant
            said = told(exc, caller)
            return types.CallToolResult(content=[types.TextContent(text=str(said))],
                                        is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=text)],
                                    structured_content=data)

    from sleuth._version import __version__

    return Server("sleuth", version=__version__, on_list_tools=list_tools,
                  on_call_tool=call_tool, instructions=INSTRUCTIONS)


def _check_text(name: str, arguments: dict[str, Any]) -> None:
    """A ToolError for arguments whose text holds a lone surrogate (no text at all; the
    transports' JSON readers refuse it before, an in-process client does not)."""
    where = lone_surrogate(arguments)
    if where is not None:
        raise ToolError(f"invalid arguments for {name}: {where}: holds a lone surrogate, "
                        "which is not text")


def _ask(service: Service, arguments: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """``ask`` with arguments its schema allows."""
    return service.ask(arguments["question"], arguments.get("agent") or DEFAULT_AGENT,
                       arguments.get("session"), caller=caller)


def http_app(service: Service, *, host: str = "127.0.0.1", auth: bool = True) -> Any:
    """The streamable-HTTP ASGI app at /mcp; with ``auth``, requests without a valid key of
    ``serve.api_keys`` get 401 before the MCP layer sees them."""
    keys = load_api_keys(service.settings.serve) if auth else {}
    if auth and not keys:
        raise ConfigError("no API keys configured: set serve.api_keys (SLEUTH_SERVE__API_KEYS, "
                          "a {name: key} mapping or a key file) or pass --no-auth for local use")
    app = build_mcp(service, keys).streamable_http_app(host=host)
    hosts = allowed_hosts(service.settings.serve.model_copy(update={"host": host}))
    if not auth:
        return Guard(app, hosts)

    # every path: a key before the body is read (401), and the key's rate (429)
    serve = service.limits
    return Guard(KeyCheck(app, keys, rate=RateLimit(serve.rate_per_key, serve.burst_per_key),
                          guarded=("",), query_key=False), hosts)


def serve_mcp(service: Service, transport: Transport = "stdio", *, host: str = "127.0.0.1",
              port: int = 8765, auth: bool = True) -> None:
    """Serve over stdio (for a client that launches Sleuth) or streamable HTTP at /mcp
    (API keys required unless ``auth`` is False)."""
    if transport == "stdio":
        server = build_mcp(service)
        from mcp.server.stdio import stdio_server

        async def run() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run)
        return
    from sleuth.server import serving

    serve = service.settings.serve.model_copy(update={"host": host, "port": port})
    serving.run(http_app(service, host=host, auth=auth), serve, on_stop=service.close)
