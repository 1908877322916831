"""Sleuth's core tools, as :mod:`sleuth.plugins` registers them (entry ``core`` of
``sleuth.tools``): A-RAG's chunk tools, AgenticRAG's document tools, the graph tools and the
calculator."""

from sleuth.tools.base import Tool
from sleuth.tools.calc import CALC_TOOLS
from sleuth.tools.corpus import CORPUS_TOOLS
from sleuth.tools.documents import DOCUMENT_TOOLS
from sleuth.tools.graph import GRAPH_TOOLS

TOOLS: tuple[Tool, ...] = (*CORPUS_TOOLS, *DOCUMENT_TOOLS, *GRAPH_TOOLS, *CALC_TOOLS)
