"""The MCP server (``sleuth serve mcp``), built on the official ``mcp`` SDK's low-level Server.

Every retrieval tool is exposed one-to-one with the description and JSON input schema the
agent sees (``Tool.schema()["function"]``), plus ``ask``. Calls go through
:class:`sleuth.service.Service` (same limits as the HTTP API); a tool error comes back as an
``isError`` result whose text says what was wrong, so the calling model can recover.
"""

from __future__ import annotations

from typing import Any, Literal

import anyio

from sleuth.errors import MissingDependency, SleuthError
from sleuth.service import Service
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


def build_mcp(service: Service) -> Server[Any]:
    """An MCP server exposing ``service``'s tools and ``ask``."""

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=mcp_tools())

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        try:
            if params.name == "ask":
                record = await anyio.to_thread.run_sync(lambda: _ask(service, arguments))
                text, data = str(record.get("answer", "")), record
            else:
                result = await anyio.to_thread.run_sync(
                    lambda: service.call_tool(params.name, arguments))
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


def _ask(service: Service, arguments: dict[str, Any]) -> dict[str, Any]:
    question = arguments.get("question")
    if not isinstance(question, str):
        from sleuth.errors import RequestError

        raise RequestError("ask needs a 'question' string")
    return service.ask(question, str(arguments.get("agent") or "full"),
                       arguments.get("session"))


def serve_mcp(service: Service, transport: Transport = "stdio", *, host: str = "127.0.0.1",
              port: int = 8765) -> None:
    """Serve over stdio (for a client that launches Sleuth) or streamable HTTP at /mcp."""
    server = build_mcp(service)
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        async def run() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run)
        return
    import uvicorn

    uvicorn.run(server.streamable_http_app(host=host), host=host, port=port, log_level="warning")
