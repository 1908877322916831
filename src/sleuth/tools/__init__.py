"""Retrieval tools, defined once and served to the agent, the CLI and the servers.

:data:`TOOLS` is the registry every face reads when it is asked, so a tool registered with
:func:`register` (a typed function under ``@tool``, exactly like the built-ins) is at once
an agent tool, ``sleuth tool NAME``, ``POST /v1/tools/NAME`` and an MCP tool. The registry
is filled through :mod:`sleuth.plugins` (group ``sleuth.tools``): the core tools
(:mod:`sleuth.tools.builtin`), the ``facts`` pack, then installed packages' tools.
"""

from sleuth.plugins import TOOLS as TOOL_PLUGINS
from sleuth.plugins import Registry
from sleuth.tools.base import QUERY, TOP_K, Arg, Cli, Tool, ToolContext, ToolResult, tool
from sleuth.tools.corpus import (
    chunk_read,
    hybrid_passages,
    hybrid_search,
    keyword_search,
    lead_block,
    naive_embedding_search,
    semantic_search,
)
from sleuth.tools.documents import find, search, summarize
from sleuth.tools.documents import open as open_document
from sleuth.tools.graph import graph_entity, graph_neighbors, graph_path, graph_ppr

TOOLS: Registry[Tool]  # filled on first use: the core tools, the facts pack, installed ones
# Names the faces give their own options and parameters (``--index``, ``?session=``, ...).
RESERVED_ARGUMENTS = frozenset({"index", "json", "config", "session", "help"})


def register(t: Tool) -> Tool:
    """Make a tool available by name to agents, the CLI and the servers (replacing a tool of
    the same name). An argument named like an option every face adds is refused."""
    TOOLS.load()  # the plugins first, so this registration wins over theirs
    clash = RESERVED_ARGUMENTS & set(t.args.model_fields)
    if clash:
        raise ValueError(f"tool {t.name!r}: argument {sorted(clash)[0]!r} is reserved for "
                         f"the faces' own options ({', '.join(sorted(RESERVED_ARGUMENTS))})")
    TOOLS[t.name] = t
    return t


register_tool = register  # the earlier name
TOOLS = Registry(TOOL_PLUGINS, register)


__all__ = [
    "QUERY", "TOOLS", "TOP_K", "Arg", "Cli", "Tool", "ToolContext", "ToolResult", "chunk_read",
    "find", "graph_entity", "graph_neighbors", "graph_path", "graph_ppr", "hybrid_passages",
    "hybrid_search", "keyword_search", "lead_block",
    "naive_embedding_search", "open_document", "register", "register_tool", "search",
    "semantic_search", "summarize", "tool",
]
