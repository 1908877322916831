"""Building an index's knowledge graph as ``sleuth graph build`` does, callable from Python:
the extractor chosen by name (offline spaCy, or the configured LLM with its per-chunk cache),
an optional rebuild that keeps reviewed triples, and one report of what happened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from sleuth.errors import StoreError
from sleuth.graph import BuildReport, Graph
from sleuth.graph.base import GraphIndex
from sleuth.graph.extract import OfflineExtractor

if TYPE_CHECKING:
    from sleuth.graph.llm_extract import LLMExtractor

ExtractorName = Literal["offline", "llm"]


@dataclass
class GraphBuild:
    """A build's report, with the LLM extractor's calls, cache hits and failed chunks."""

    report: BuildReport
    calls: int = 0
    cached: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        report = self.report
        return {"processed": report.processed, "unchanged": report.unchanged,
                "removed": report.removed, **report.counts, "calls": self.calls,
                "cached": self.cached,
                "failures": [{"chunk_id": c, "reason": r} for c, r in self.failures],
                "aliases_merged": report.aliases.merged if report.aliases else 0,
                "reviewed_restored": report.restored}


def build_graph(index: GraphIndex, *, extractor: ExtractorName | None = None, rebuild: bool = False,
                on_progress: Callable[[int, int], None] | None = None) -> GraphBuild:
    """Extract entities and relations from the chunks of ``index`` not processed yet with
    ``extractor`` (default: ``settings.graph.extractor``). ``rebuild`` empties the graph
    first (reviewed triples are re-applied; a graph that cannot be opened is dropped)."""
    settings = index.settings
    if rebuild:
        try:
            with Graph.open(index) as old:
                old.store.reset()
        except StoreError:  # unreadable (e.g. an older format): start from nothing
            Graph.drop(index)
    llm_extractor: LLMExtractor | None = None
    with Graph.open(index) as graph:
        if (extractor or settings.graph.extractor) == "llm":
            from sleuth.graph.llm_extract import CACHE_FILE, LLMExtractor
            from sleuth.llm.factory import llm_from_settings

            llm_extractor = LLMExtractor(llm_from_settings(settings),
                                         graph.store.folder / CACHE_FILE,
                                         workers=settings.graph.llm_workers)
        report = graph.build(on_progress=on_progress,
                             extractor=llm_extractor or OfflineExtractor())
    if llm_extractor is None:
        return GraphBuild(report)
    return GraphBuild(report, llm_extractor.calls, llm_extractor.cached,
                      list(llm_extractor.failures))
