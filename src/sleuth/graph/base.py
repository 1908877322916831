"""What the graph's modules need of the index and of a graph, as Protocols.

The index opens its graph (:meth:`sleuth.index.read.ReadIndex.graph`) and a graph's build
restores reviewed triples (:mod:`sleuth.graph.review`), so the graph cannot import the
index, nor the review module the graph: both sides name these Protocols instead, which
:class:`~sleuth.index.read.ReadIndex` and :class:`~sleuth.graph.Graph` satisfy.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from sleuth.embed import Embedder
from sleuth.settings import Settings
from sleuth.store.base import Store
from sleuth.store.graphs import Entity, GraphBackend
from sleuth.types import Chunk

SEED_CUTOFF = 0.85  # string similarity of a confident lexical match (no embedding needed)


class Chunks(Protocol):
    """What a read returns (:class:`sleuth.index.read.ReadResult`)."""

    @property
    def chunks(self) -> list[Chunk]: ...


class GraphIndex(Protocol):
    """The index a graph is built over, as the graph reads it."""

    @property
    def store(self) -> Store: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def folder(self) -> Path: ...

    def read(self, chunk_ids: Sequence[str], adjacent: int = 0) -> Chunks: ...


class ReviewedGraph(Protocol):
    """A graph as human review reads and updates it (:class:`sleuth.graph.Graph`)."""

    @property
    def index(self) -> GraphIndex: ...

    @property
    def store(self) -> GraphBackend: ...

    def lookup(self, name: str, limit: int = 5, cutoff: float = 0.75) -> list[Entity]: ...

    def forget_caches(self) -> None: ...
