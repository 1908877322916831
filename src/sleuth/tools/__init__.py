"""Retrieval tools, defined once and served to the agent, the CLI and the servers."""

from sleuth.tools.base import Tool, ToolContext, ToolResult, tool
from sleuth.tools.corpus import (
    CORPUS_TOOLS,
    chunk_read,
    keyword_search,
    naive_embedding_search,
    semantic_search,
)

TOOLS: dict[str, Tool] = {t.name: t for t in CORPUS_TOOLS}


def register_tool(t: Tool) -> Tool:
    """Make a tool available by name to agents, the CLI and the servers."""
    TOOLS[t.name] = t
    return t


__all__ = [
    "TOOLS", "Tool", "ToolContext", "ToolResult", "chunk_read", "keyword_search",
    "naive_embedding_search",
    "register_tool", "semantic_search", "tool",
]
