"""The MCP server (``sleuth serve mcp``), built on the official ``mcp`` SDK's low-level Server.

Every retrieval tool is exposed one-to-one with the description and JSON input schema the
agent sees (``Tool.schema()["function"]``), plus ``ask``. Calls go through
:class:`sleuth.service.Service` (same limits as the HTTP API); a tool error comes back as an
``isError`` result whose text says what was wrong, so the calling model can recover.

Over stdio the client is the local user (an admin caller). Over streamable HTTP every
request needs an API key of ``serve.api_keys`` (Bearer or ``X-API-Key``; 401 otherwise,
unless ``--no-auth``), and a tenant's key sees only its collection and groups.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import anyio

from sleuth.errors import ConfigError, MissingDependency, SleuthError
from sleuth.service import (
    LOCAL,
    Caller,
    KeyRing,
    Service,
    caller_for_key,
    load_api_keys,
    presented_key,
)
from sleuth.tools import TOOLS

try:
    import mcp_types as types
    from mcp.server import Server
    from mcp.server.context import ServerRequestContext
except ImportError as exc:  # pragma: no cover - the serve extra is missing
    raise MissingDependency(exc.name or "mcp", "serve") from None

Transport = Literal["stdio", "http"]

ASK_DESCRIPTION = ("Answer a question with Sleuth's agent, which searches and reads the "
                   "indexed documents and cites the chunks it used. Returns the answer text; "
                   "the structured result is the full record (trajectory, citations).")
ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "The question to answer"},
        "agent": {"type": "string", "default": "full",
                  "description": "Agent variant (see `sleuth agents`)"},
        "session": {"type": "string",
                    "description": "Session id: follow-up questions see earlier turns"},
    },
    "required": ["question"],
}


def mcp_tools() -> list[types.Tool]:
    """The MCP tool list: every Sleuth tool as the agent sees it, then ``ask``."""
    out = []
    for tool in TOOLS.values():
        function = tool.schema()["function"]
        out.append(types.Tool(name=function["name"], description=function["description"],
                              input_schema=function["parameters"]))
    out.append(types.Tool(name="ask", description=ASK_DESCRIPTION, input_schema=ASK_SCHEMA))
    return out


def build_mcp(service: Service, keys: KeyRing | None = None) -> Server[Any]:
    """An MCP server exposing ``service``'s tools and ``ask``; with ``keys``, each call acts
    as the caller whose key its HTTP request carries."""

    def who(ctx: ServerRequestContext[Any]) -> Caller:
        request = ctx.request
        if not keys or request is None:
            return LOCAL
        caller = caller_for_key(keys, presented_key(getattr(request, "headers", {})))
        if caller is None:  # the HTTP middleware answers 401 first; never act as local
            raise ConfigError("invalid API key")
        return caller

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=mcp_tools())

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        try:
            caller = who(ctx)
            if params.name == "ask":
                record = await anyio.to_thread.run_sync(
                    lambda: _ask(service, arguments, caller))
                text, data = str(record.get("answer", "")), record
            else:
                result = await service.pool.run(  # bounded: a full queue is an error result
                    lambda: service.call_tool(params.name, arguments, caller=caller))
                text, data = result.text, result.data
        except SleuthError as exc:
            return types.CallToolResult(content=[types.TextContent(text=str(exc))],
                                        is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=text)],
                                    structured_content=data)

    from sleuth._version import __version__

    return Server("sleuth", version=__version__, on_list_tools=list_tools,
                  on_call_tool=call_tool,
                  instructions="Search and read the documents of a Sleuth index, or ask its "
                  "agent. Reference ids from `search` stay valid within this server.")


def _ask(service: Service, arguments: dict[str, Any], caller: Caller) -> dict[str, Any]:
    question = arguments.get("question")
    if not isinstance(question, str):
        from sleuth.errors import RequestError

        raise RequestError("ask needs a 'question' string")
    return service.ask(question, str(arguments.get("agent") or "full"),
                       arguments.get("session"), caller=caller)


def http_app(service: Service, *, host: str = "127.0.0.1", auth: bool = True) -> Any:
    """The streamable-HTTP ASGI app at /mcp; with ``auth``, requests without a valid key of
    ``serve.api_keys`` get 401 before the MCP layer sees them."""
    keys = load_api_keys(service.settings.serve) if auth else {}
    if auth and not keys:
        raise ConfigError("no API keys configured: set serve.api_keys (SLEUTH_SERVE__API_KEYS, "
                          "a {name: key} mapping or a key file) or pass --no-auth for local use")
    app = build_mcp(service, keys).streamable_http_app(host=host)
    if not auth:
        return app

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                       for k, v in scope.get("headers", [])}
            presented = presented_key(headers)
            if caller_for_key(keys, presented) is None:
                detail = "invalid API key" if presented else \
                    "missing API key: send Authorization: Bearer KEY or X-API-Key"
                body = json.dumps({"detail": detail}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


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
    import uvicorn

    uvicorn.run(http_app(service, host=host, auth=auth), host=host, port=port,
                log_level="warning")
