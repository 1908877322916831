"""Retrieval tools, defined once and served to the agent, the CLI and the servers."""

from sleuth.tools.base import Tool, ToolContext, ToolResult, tool
from sleuth.tools.corpus import (
    CORPUS_TOOLS,
    chunk_read,
    keyword_search,
    naive_embedding_search,
    semantic_search,
)
from sleuth.tools.documents import DOCUMENT_TOOLS, find, search, summarize
from sleuth.tools.documents import open as open_document
from sleuth.tools.graph import GRAPH_TOOLS, graph_entity, graph_neighbors, graph_path, graph_ppr

TOOLS: dict[str, Tool] = {t.name: t for t in (*CORPUS_TOOLS, *DOCUMENT_TOOLS, *GRAPH_TOOLS)}


def register_tool(t: Tool) -> Tool:
    """Make a tool available by name to agents, the CLI and the servers."""
    TOOLS[t.name] = t
    return t


__all__ = [
    "TOOLS", "Tool", "ToolContext", "ToolResult", "chunk_read", "find", "graph_entity",
    "graph_neighbors", "graph_path", "graph_ppr", "keyword_search",
    "naive_embedding_search", "open_document", "register_tool", "search", "semantic_search",
    "summarize", "tool",
]
