"""Sleuth: agentic retrieval-augmented generation with hierarchical retrieval tools.

>>> import sleuth
>>> index = sleuth.Index.open("docs-index", create=True)   # doctest: +SKIP
>>> index.add(["docs/"])                                   # doctest: +SKIP
>>> index.keyword_search(["Marie Curie"], top_k=5)         # doctest: +SKIP
>>> sleuth.ask("Who discovered radium?", index=index)      # doctest: +SKIP
"""

from sleuth._version import __version__
from sleuth.agent import VARIANTS, Agent, Tracker, build_agent
from sleuth.api import ask, index_paths
from sleuth.errors import (
    ConfigError,
    EmbedderError,
    IndexNotFound,
    IngestError,
    LLMError,
    SleuthError,
    StoreError,
    ToolError,
)
from sleuth.index.read import ReadIndex, ReadResult
from sleuth.index.write import AddReport, Index
from sleuth.service.sessions import Session
from sleuth.settings import Settings
from sleuth.tools import TOOLS, Tool, ToolContext, ToolResult, tool
from sleuth.types import Answer, Chunk, Citation, Document, Hit, Sentence, Step

__all__ = [
    "TOOLS", "VARIANTS", "AddReport", "Agent", "Answer", "Chunk", "Citation", "ConfigError",
    "Document", "EmbedderError", "Hit", "Index", "IndexNotFound", "IngestError", "LLMError",
    "ReadIndex", "ReadResult", "Sentence", "Session", "Settings", "SleuthError", "Step",
    "StoreError", "Tool", "ToolContext", "ToolError", "ToolResult", "Tracker", "__version__",
    "ask", "build_agent", "index_paths", "tool",
]
