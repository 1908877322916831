r"""Sleuth: agentic retrieval-augmented generation with hierarchical retrieval tools.

An index of a document, searched, and a question answered with a citation. The scripted
OpenAI-compatible server of :mod:`sleuth.testing.fake` stands in for the model and, with its
hashed embeddings, for the embedder (give ``Settings`` your endpoint's ``base_url`` and
``model`` instead, or nothing for the offline model)::

>>> import pathlib, shutil, tempfile
>>> import sleuth
>>> from sleuth.testing.fake import FakeLLMServer, reply
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "curie.md").write_text("# Marie Curie\n\nMarie Curie discovered radium.\n")
>>> model = FakeLLMServer([reply("Marie Curie discovered radium. [curie.md#0]")])
>>> settings = sleuth.Settings.load(
...     llm={"base_url": model.base_url, "model": "scripted"},
...     embed={"model": "openai:hashed", "base_url": model.base_url})
>>> with sleuth.Index.open(folder / "index", settings=settings, create=True) as index:
...     report = index.add([folder / "curie.md"])
...     hits = index.keyword_search(["radium"], top_k=1)
...     answer = sleuth.ask("Who discovered radium?", index=index, settings=settings)
>>> report.added, [hit.chunk_id for hit in hits]
(['curie.md'], ['curie.md#0'])
>>> answer.answer
'Marie Curie discovered radium. [curie.md#0]'
>>> [citation.chunk_id for citation in answer.citations]
['curie.md#0']
>>> model.close()
>>> shutil.rmtree(folder)
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
