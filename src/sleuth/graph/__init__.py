"""The knowledge graph over an index (A2RAG): build it, look entities up, walk it.

``Graph.open(index)`` opens ``graph.db`` in the index folder. ``build()`` extracts entities
and relations from every chunk not yet processed (incremental with the index; interrupted
builds keep finished batches). The queries: ``lookup`` (lexical match of a name against
entity names and aliases), ``neighbors`` (relations of an entity with their source
chunks), ``path`` (shortest connection between two entities, breadth-first) and ``ppr``
(degree-normalised Personalized PageRank from seed entities, mapped back to the chunks
that mention the top entities).
"""

from __future__ import annotations

import difflib
import hashlib
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from sleuth.errors import StoreError
from sleuth.graph.extract import OfflineExtractor, iter_batches
from sleuth.graph.store import Entity, GraphStore, norm

if TYPE_CHECKING:
    from sleuth.index import Index

BATCH_CHUNKS = 64
DAMPING = 0.5  # probability of following an edge; 1 - DAMPING teleports back to the seeds
SEED_CUTOFF = 0.85  # string similarity a question entity needs to seed on a node
MAP_BACK_NODES = 30  # top PPR entities whose chunks are ranked
BRIDGE_HOPS = 2  # bridge entities lie within this many hops of two seeds
LOCAL_RELATIONS = 30  # one-hop relations per seed gathered at the local stage
COVERAGE = 0.8  # share of the question's content words the evidence must contain


@dataclass
class BuildReport:
    processed: int = 0
    unchanged: int = 0
    removed: int = 0
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class _Adjacency:
    ids: np.ndarray  # entity id per row
    row_of: dict[int, int]
    matrix: Any  # scipy.sparse CSR, symmetric edge counts
    degree: np.ndarray
    transition: Any  # row-stochastic: matrix rows divided by degree


class Graph:
    """The knowledge graph of one index."""

    def __init__(self, index: Index, store: GraphStore) -> None:
        self.index = index
        self.store = store
        self._adjacency: _Adjacency | None = None
        self._names: list[tuple[int, str, str, str]] | None = None
        self._keys: dict[str, tuple[int, str, str]] | None = None  # norm → live entity
        self._removed: frozenset[int] = frozenset()

    @property
    def removed(self) -> frozenset[int]:
        """Entity ids hidden from every query (the extraction-loss simulation)."""
        return self._removed

    @removed.setter
    def removed(self, ids: frozenset[int]) -> None:
        self._removed = frozenset(ids)
        self._adjacency = None
        self._keys = None

    def simulate_loss(self, fraction: float, seed: int = 0) -> int:
        """Hide a random ``fraction`` of the entities (with their edges and mentions), as
        extraction loss would; 0 restores the whole graph. Returns how many are hidden."""
        ids = np.array(sorted(e[0] for e in self.entity_names()), dtype=np.int64)
        count = int(round(fraction * len(ids)))
        chosen = np.random.default_rng(seed).choice(ids, size=count, replace=False)
        self.removed = frozenset(int(i) for i in chosen)
        return count

    def entity_names(self) -> list[tuple[int, str, str, str]]:
        if self._names is None:
            self._names = self.store.entities()
        return self._names

    @classmethod
    def open(cls, index: Index) -> Graph:
        folder = getattr(index.store, "root", None)
        if folder is None:
            raise StoreError("the knowledge graph needs an index folder (the embedded store)")
        return cls(index, GraphStore(folder))

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Graph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- building ----------------------------------------------------------------------

    def build(self, *, on_progress: Callable[[int, int], None] | None = None,
              extractor: OfflineExtractor | None = None) -> BuildReport:
        """Extract from new or changed chunks; forget chunks that left the index."""
        extractor = extractor or OfflineExtractor()
        done = self.store.extracted()
        chunks = list(self.index.store.iter_chunks())
        digests = {c.chunk_id: hashlib.sha256(
            f"{extractor.name}\0{c.text}".encode()).hexdigest()[:16] for c in chunks}
        live = set(digests)
        stale = [cid for cid, (_, digest) in done.items()
                 if cid not in live or digests.get(cid) != digest]
        report = BuildReport(removed=sum(1 for cid in stale if cid not in live))
        if stale:
            self.store.forget(stale)
        todo = [c for c in chunks if c.chunk_id in live and (
            c.chunk_id not in done or c.chunk_id in stale)]
        report.unchanged = len(chunks) - len(todo)
        titles = self.index.store.document_titles()
        for batch in iter_batches(todo, BATCH_CHUNKS):
            results = [(chunk.chunk_id, digests[chunk.chunk_id], found)
                       for chunk, found in extractor.extract(batch, titles)]
            self.store.add(results, extractor.name)
            report.processed += len(batch)
            if on_progress:
                on_progress(report.processed, len(todo))
        self._adjacency = None
        self._names = None
        self._keys = None
        report.counts = self.store.counts()
        return report

    # -- queries -----------------------------------------------------------------------

    def lookup(self, name: str, limit: int = 5, cutoff: float = 0.75) -> list[Entity]:
        """Entities whose normalised name (or alias) matches ``name``: exact first, then by
        string similarity above ``cutoff``."""
        key = norm(name)
        exact = self.store.by_key(key)
        if self._keys is None:
            self._keys = {n: (i, display, t) for i, n, display, t in self.entity_names()
                          if i not in self.removed}
        keys = self._keys
        close = difflib.get_close_matches(key, keys, n=limit + 1, cutoff=cutoff)
        out = [exact] if exact and exact.id not in self.removed else []
        for match in close:
            entity_id, display, kind = keys[match]
            if not any(e.id == entity_id for e in out):
                out.append(Entity(entity_id, display, kind))
        return out[:limit]

    def neighbors(self, entity: Entity, relation: str | None = None,
                  limit: int = 50) -> list[dict[str, Any]]:
        """Relations of ``entity`` (optionally only those whose label contains
        ``relation``), each with the other entity, the direction and the source chunk."""
        rows = self.store.relations_of(entity.id)
        if relation:
            wanted = relation.lower()
            rows = [r for r in rows if wanted in r["relation"].lower()]
        out = []
        seen: set[tuple[str, str, str]] = set()
        for r in rows:
            outgoing = r["subject_id"] == entity.id
            other = r["object"] if outgoing else r["subject"]
            key = (r["relation"], other, r["chunk_id"])
            if key in seen:
                continue
            seen.add(key)
            out.append({"relation": r["relation"], "direction": "out" if outgoing else "in",
                        "entity": other, "entity_id": r["object_id"] if outgoing
                        else r["subject_id"],
                        "type": r["object_type"] if outgoing else r["subject_type"],
                        "qualifiers": r["qualifiers"], "chunk_id": r["chunk_id"],
                        "start": r["start"], "end": r["end"]})
        return out[:limit]

    def path(self, source: Entity, target: Entity, max_hops: int = 4) -> list[int] | None:
        """The entity ids of a shortest path from ``source`` to ``target`` (or None)."""
        adjacency = self.adjacency()
        if source.id not in adjacency.row_of or target.id not in adjacency.row_of:
            return None
        start, goal = adjacency.row_of[source.id], adjacency.row_of[target.id]
        previous = {start: -1}
        frontier = deque([(start, 0)])
        while frontier:
            row, hops = frontier.popleft()
            if row == goal:
                rows = [row]
                while previous[rows[-1]] != -1:
                    rows.append(previous[rows[-1]])
                return [int(adjacency.ids[r]) for r in reversed(rows)]
            if hops == max_hops:
                continue
            matrix = adjacency.matrix
            for nxt in matrix.indices[matrix.indptr[row]:matrix.indptr[row + 1]]:
                if int(nxt) not in previous:
                    previous[int(nxt)] = row
                    frontier.append((int(nxt), hops + 1))
        return None

    def relation_between(self, a: int, b: int) -> dict[str, Any] | None:
        for r in self.store.relations_of(a):
            if {r["subject_id"], r["object_id"]} == {a, b}:
                return r
        return None

    def ppr(self, seeds: Sequence[Entity], *, damping: float = DAMPING,
            iterations: int = 40) -> dict[int, float]:
        """Degree-normalised Personalized PageRank: the teleport distribution puts weight
        1/degree on each seed (hubs count less), walks follow edges in proportion to their
        counts. Returns entity id → score for entities with a positive score."""
        adjacency = self.adjacency()
        rows = [adjacency.row_of[s.id] for s in seeds if s.id in adjacency.row_of]
        if not rows:
            return {}
        personal = np.zeros(len(adjacency.ids))
        for row in rows:
            personal[row] += 1.0 / max(1.0, float(adjacency.degree[row]))
        personal /= personal.sum()
        backward = adjacency.transition.T.tocsr()
        scores = personal.copy()
        for _ in range(iterations):
            scores = (1 - damping) * personal + damping * (backward @ scores)
        return {int(adjacency.ids[i]): float(scores[i]) for i in np.flatnonzero(scores > 0)}

    def map_back(self, scores: dict[int, float], top_nodes: int = 20,
                 top_k: int = 10) -> list[tuple[str, float]]:
        """Chunks mentioning the top-scored entities, scored by the sum of their entities'
        scores (each spread over the chunks that mention it)."""
        best = sorted((e for e in scores if e not in self.removed),
                      key=lambda e: -scores[e])[:top_nodes]
        mentions = self._mentions(best)
        chunk_scores: dict[str, float] = {}
        for entity in best:
            chunks = mentions.get(entity, [])
            for chunk_id in chunks:
                chunk_scores[chunk_id] = chunk_scores.get(chunk_id, 0.0) + \
                    scores[entity] / len(chunks)
        return sorted(chunk_scores.items(), key=lambda item: -item[1])[:top_k]

    def seeds(self, question: str) -> list[Entity]:
        """The question's entities aligned to graph nodes (confident lexical matches)."""
        from sleuth.retrieval import question_keywords

        found: dict[int, Entity] = {}
        for name in question_keywords(question):
            for entity in self.lookup(name, limit=1, cutoff=SEED_CUTOFF):
                found.setdefault(entity.id, entity)
        return list(found.values())

    def rank(self, question: str, top_k: int = 20) -> list[str]:
        """Chunk ids for a question: PPR from its seed entities, mapped back to chunks."""
        seeds = self.seeds(question)
        if not seeds:
            return []
        return [c for c, _ in self.map_back(self.ppr(seeds), top_nodes=MAP_BACK_NODES,
                                              top_k=top_k)]

    def progressive(self, question: str, top_k: int = 10, max_hops: int = BRIDGE_HOPS,
                    sufficient: Callable[[str, list[str]], bool] | None = None
                    ) -> tuple[list[str], str]:
        """A2RAG's progressive retrieval: (chunk ids, stage reached).

        Stage ``local``: the seeds' own chunks and those of their one-hop relations. Stage
        ``bridge``: entities within ``max_hops`` of at least two seeds and the relations on
        the short paths to them. Stage ``ppr``: degree-normalised PPR mapped back to chunks.
        After each stage ``sufficient(question, chunk_ids)`` decides whether to stop (the
        offline coverage test by default); ``failed`` means no stage satisfied it (the
        evidence gathered is still returned). ``none`` means no seed was found.
        """
        check = sufficient or self.covers
        seeds = self.seeds(question)
        if not seeds:
            return [], "none"
        evidence: dict[str, None] = {}
        for seed in seeds:
            evidence.update(dict.fromkeys(self._mentions([seed.id]).get(seed.id, [])[:3]))
            for relation in self.neighbors(seed, limit=LOCAL_RELATIONS):
                evidence.setdefault(relation["chunk_id"])
        if check(question, list(evidence)[:top_k]):
            return list(evidence)[:top_k], "local"
        if len(seeds) >= 2:
            for chunk_id in self._bridge_chunks(seeds, max_hops):
                evidence.setdefault(chunk_id)
            ranked = list(evidence)
            if check(question, ranked[:top_k]):
                return ranked[:top_k], "bridge"
        mapped = [c for c, _ in self.map_back(self.ppr(seeds), top_nodes=MAP_BACK_NODES,
                                               top_k=top_k)]
        merged = list(dict.fromkeys([*mapped, *evidence]))[:top_k]
        return merged, "ppr" if check(question, merged) else "failed"

    def _bridge_chunks(self, seeds: Sequence[Entity], max_hops: int) -> list[str]:
        """Chunks of the relations on the shortest paths between pairs of seeds."""
        out: dict[str, None] = {}
        for i, a in enumerate(seeds):
            for b in seeds[i + 1:]:
                ids = self.path(a, b, max_hops * 2)
                if not ids:
                    continue
                for left, right in zip(ids, ids[1:], strict=False):
                    relation = self.relation_between(left, right)
                    if relation:
                        out.setdefault(relation["chunk_id"])
        return list(out)

    def covers(self, question: str, chunk_ids: list[str]) -> bool:
        """The offline sufficiency test: every named entity of the question and at least
        ``COVERAGE`` of its content words occur in the evidence."""
        from sleuth.retrieval import content_words, question_keywords

        if not chunk_ids:
            return False
        text = " ".join(c.text for c in self.index.read(chunk_ids).chunks).lower()
        names = [k for k in question_keywords(question) if k[:1].isupper()]
        if any(name.lower() not in text for name in names):
            return False
        words = [w for w in content_words(question) if len(w) > 2]
        return not words or sum(w in text for w in words) / len(words) >= COVERAGE

    def _mentions(self, entity_ids: Sequence[int]) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for start in range(0, len(entity_ids), 900):
            part = list(entity_ids[start : start + 900])
            marks = ",".join("?" * len(part))
            for entity, chunk_id in self.store.db.execute(
                    f"SELECT DISTINCT entity, chunk_id FROM mentions WHERE entity IN ({marks})",
                    part):
                out.setdefault(int(entity), []).append(chunk_id)
        return out

    def adjacency(self) -> _Adjacency:
        if self._adjacency is None:
            from scipy import sparse

            edges = [(a, b) for a, b in self.store.edges()
                     if a not in self.removed and b not in self.removed]
            ids = np.array(sorted({e for edge in edges for e in edge}), dtype=np.int64)
            row_of = {int(e): i for i, e in enumerate(ids)}
            rows = np.array([row_of[a] for a, b in edges] + [row_of[b] for a, b in edges],
                            dtype=np.int64)
            cols = np.array([row_of[b] for a, b in edges] + [row_of[a] for a, b in edges],
                            dtype=np.int64)
            data = np.ones(len(rows))
            matrix = sparse.csr_matrix((data, (rows, cols)), shape=(len(ids), len(ids)))
            degree = np.asarray(matrix.sum(axis=1)).ravel()
            inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
            transition = matrix.multiply(inverse[:, None]).tocsr()
            self._adjacency = _Adjacency(ids, row_of, matrix, degree, transition)
        return self._adjacency
