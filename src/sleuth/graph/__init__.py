"""The knowledge graph over an index (A2RAG): build it, look entities up, walk it.

``Graph.open(index)`` opens ``graph.db`` in the index folder, or for a PostgreSQL index
the ``graph_*`` tables of its schema (:mod:`sleuth.store.postgres.graph`). ``build()``
extracts entities and relations from every chunk not yet processed (incremental with the index;
interrupted
builds keep finished batches) and then merges entity name variants
(:mod:`sleuth.graph.aliases`). The queries: ``lookup`` (lexical match of a name against
entity names and aliases), ``neighbors`` (relations of an entity with their source
chunks), ``path`` (shortest connection between two entities, breadth-first) and ``ppr``
(degree-normalised Personalized PageRank from seed entities, mapped back to the chunks
that mention the top entities). A2RAG's retriever adds ``seed_matches`` (question entities
aligned to nodes by a hybrid lexical-embedding score), ``relation_seeds`` (the question's
relational intent aligned to relation labels) and ``progressive``.

``scoped(visible_docs)`` is the graph as a caller who may read only some documents sees it
(access control, :mod:`sleuth.text.access`): every query of the view answers as a graph built
from the visible documents' chunks alone would. A mention is visible when its chunk is; a
relation when the chunk it was read from is; an entity when it has a visible mention or is
an end of a visible relation (so both ends of a visible relation are visible). Entities,
relations, labels and counts outside the view never come back, nor do the PageRank scores
they would have shaped. One limit: a visible entity keeps its stored name, type and aliases,
which name merging may have taken from a hidden document (a variant spelling of a name the
caller sees, never a hidden entity).
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sleuth.errors import StoreError
from sleuth.graph.aliases import MergeReport, merge_aliases
from sleuth.graph.base import SEED_CUTOFF, GraphIndex
from sleuth.graph.extract import Extractor, OfflineExtractor, iter_batches
from sleuth.graph.matching import NameIndex, same_marks
from sleuth.graph.review import reapply
from sleuth.graph.views import Scope, Tables
from sleuth.graph.walk import Adjacency, pagerank, shortest_path
from sleuth.store.graphs import Entity, GraphBackend, norm
from sleuth.text.lexicon import GENERIC, STOPWORDS, stem, words
from sleuth.text.querytext import content_words, covers, question_keywords, relation_group

BATCH_CHUNKS = 64
DAMPING = 0.5  # probability of following an edge; 1 - DAMPING teleports back to the seeds
SEED_CANDIDATES = 8  # lexically closest names scored by the hybrid seed matcher
SEED_MIN_RATIO = 0.6  # below this string similarity the hybrid score cannot reach 0.8
LEXICAL_WEIGHT = 0.5  # hybrid seed score: this share string similarity, the rest cosine
MAP_BACK_NODES = 30  # top PPR entities whose chunks are ranked
BRIDGE_HOPS = 2  # bridge entities lie within this many hops of two seeds
LOCAL_RELATIONS = 30  # one-hop relations per seed gathered at the local stage
LOCAL_NEIGHBORS = 5  # one-hop neighbours whose own page joins the local evidence


@dataclass
class BuildReport:
    processed: int = 0
    unchanged: int = 0
    removed: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    aliases: MergeReport | None = None  # alias merging (None when switched off)
    restored: int = 0  # approved review triples put back after their chunk was re-extracted


@dataclass(frozen=True)
class SeedMatch:
    """A question entity aligned to a graph node, with its hybrid score (1.0: exact name
    or alias)."""

    mention: str
    entity: Entity
    score: float


class Graph:
    """The knowledge graph of one index, or a view of it (:meth:`scoped`)."""

    def __init__(self, index: GraphIndex, store: GraphBackend) -> None:
        self.index = index
        self.store = store
        self._root = self  # the whole graph, which a view shares the store with
        self._docs: frozenset[str] | None = None  # a view's visible documents
        self._scope: Scope | None = None  # a view's share, cut from ``_tables``
        self._tables: Tables | None = None  # the whole graph's, for cutting views
        self._views: weakref.WeakSet[Graph] = weakref.WeakSet()
        self._adjacency: Adjacency | None = None
        self._names: list[tuple[int, str, str, str]] | None = None
        self._index: NameIndex | None = None  # live names and aliases
        self._vectors: dict[str, np.ndarray] | None = None  # name → unit vector
        self._labels: dict[str, set[str]] | None = None  # label word stem → labels
        self._label_counts: dict[str, int] = {}
        self._removed: frozenset[int] = frozenset()
        self._version: int | None = None  # the store's version the caches were built at
        self.last_trace: dict[str, Any] = {}  # what the last ``progressive`` call did

    @property
    def removed(self) -> frozenset[int]:
        """Entity ids hidden from every query (the extraction-loss simulation)."""
        return self._removed

    @removed.setter
    def removed(self, ids: frozenset[int]) -> None:
        self._removed = frozenset(ids)
        self._adjacency = None
        self._index = None

    def forget_caches(self) -> None:
        """Drop what was derived from the store (after writing to it directly), by the
        whole graph and by every view of it."""
        root = self._root
        root._tables = None
        for graph in (root, *root._views):
            graph._adjacency = None
            graph._names = None
            graph._index = None
            graph._labels = None
            graph._scope = None

    def refresh(self) -> None:
        """Drop the caches when another process changed the stored graph (a build)."""
        version = self.store.version()
        if self._version is not None and version != self._version:
            self.forget_caches()
        self._version = version

    def scoped(self, visible_docs: frozenset[str] | None) -> Graph:
        """This graph as a caller who may read only the documents ``visible_docs`` sees it
        (None: everything, ``self``); see the module docstring for what is visible. The
        view shares the store, the index and the cached name vectors, keeps its own caches
        (built on first use) and starts with this graph's :attr:`removed` entities;
        closing it leaves the store open. A view of a view sees what both allow."""
        if visible_docs is None:
            return self
        view = Graph(self.index, self.store)
        view._root = self._root
        view._docs = frozenset(visible_docs) if self._docs is None else \
            self._docs & visible_docs
        view._removed = self._removed
        self._root._views.add(view)
        return view

    def _visible(self) -> Scope | None:
        """A view's share of the whole graph (None for the whole graph)."""
        if self._docs is None:
            return None
        if self._scope is None:
            root = self._root
            if root._tables is None:
                root._tables = Tables.load(self.store)
            self._scope = root._tables.cut(self._docs)
        return self._scope

    def _shows(self, entity_id: int) -> bool:
        """Whether queries may return the entity: not removed and, in a view, visible."""
        scope = self._visible()
        return entity_id not in self._removed and (scope is None or
                                                   entity_id in scope.entities)

    def _shows_chunk(self, chunk_id: str) -> bool:
        return self._docs is None or chunk_id.rsplit("#", 1)[0] in self._docs

    def simulate_loss(self, fraction: float, seed: int = 0) -> int:
        """Hide a random ``fraction`` of the entities (with their edges and mentions), as
        extraction loss would; 0 restores the whole graph. Returns how many are hidden."""
        ids = np.array(sorted(e[0] for e in self.entity_names()), dtype=np.int64)
        count = int(round(fraction * len(ids)))
        chosen = np.random.default_rng(seed).choice(ids, size=count, replace=False)
        self.removed = frozenset(int(i) for i in chosen)
        return count

    def entity_names(self) -> list[tuple[int, str, str, str]]:
        """(id, normalised name, name, type) of the entities (in a view, the visible ones)."""
        if self._names is None:
            scope = self._visible()
            self._names = [row for row in self.store.entities()
                           if scope is None or row[0] in scope.entities]
        return self._names

    def counts(self) -> dict[str, int]:
        """How many entities, relations, mentions and extracted chunks the graph holds (in
        a view, those it shows)."""
        scope = self._visible()
        return self.store.counts() if scope is None else dict(scope.counts)

    @classmethod
    def open(cls, index: GraphIndex) -> Graph:
        """The graph of ``index``, where its store keeps it (``graph.db`` in an index folder,
        the ``graph_*`` tables of a PostgreSQL index), created when missing."""
        return cls(index, index.store.graph_tables().open())

    @classmethod
    def exists(cls, index: GraphIndex) -> bool:
        """Whether ``index`` has a stored graph (possibly empty), without creating one."""
        return index.store.graph_tables().exists()

    @classmethod
    def drop(cls, index: GraphIndex) -> None:
        """Delete the stored graph of ``index``, reviewed proposals included (for one that
        cannot be opened, e.g. of an older format)."""
        index.store.graph_tables().drop()

    def close(self) -> None:
        """Close the store (a view leaves it to the whole graph)."""
        if self._root is self:
            self.store.close()

    def __enter__(self) -> Graph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- building ----------------------------------------------------------------------

    def build(self, *, on_progress: Callable[[int, int], None] | None = None,
              extractor: Extractor | None = None) -> BuildReport:
        """Extract from new or changed chunks; forget chunks that left the index; merge the
        name variants among new entities (``graph.merge_aliases``). Only the whole graph
        builds, never a view."""
        if self._docs is not None:
            raise StoreError("a scoped view cannot build the knowledge graph; build the "
                             "whole graph")
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
        settings = self.index.settings.graph
        if settings.merge_aliases:
            report.aliases = merge_aliases(self.store, lambda: self.index.embedder,
                                           settings.alias_similarity)
        self.forget_caches()
        report.restored = reapply(self)
        report.counts = self.counts()
        return report

    # -- queries -----------------------------------------------------------------------

    def lookup(self, name: str, limit: int = 5, cutoff: float = 0.75) -> list[Entity]:
        """Entities whose normalised name (or alias) matches ``name``: exact first, then by
        string similarity above ``cutoff``."""
        key = norm(name)
        exact = self.store.by_key(key)
        out = [exact] if exact and self._shows(exact.id) else []
        names = self.names()
        for _, position in names.close(key, limit + 1, cutoff):
            entity = names.entities[position]
            if not any(e.id == entity.id for e in out):
                out.append(entity)
        return out[:limit]

    def names(self) -> NameIndex:
        """The live entities' names and aliases, indexed for near matches."""
        if self._index is None:
            live = {i: Entity(i, display, t) for i, _, display, t in self.entity_names()
                    if i not in self.removed}
            rows = [(key, live[i]) for i, key, _, _ in self.entity_names() if i in live]
            rows += [(alias, live[i]) for alias, i in self.store.aliases().items()
                     if i in live]
            self._index = NameIndex.build(rows)
        return self._index

    def neighbors(self, entity: Entity, relation: str | None = None,
                  limit: int = 50) -> list[dict[str, Any]]:
        """Relations of ``entity`` (optionally only those whose label contains
        ``relation``), each with the other entity, the direction and the source chunk."""
        rows = self.relations_of(entity.id)
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

    def relations_of(self, entity_id: int) -> list[dict[str, Any]]:
        """The entity's relations as :meth:`GraphStore.relations_of` rows (in a view, those
        read from a visible chunk)."""
        rows = self.store.relations_of(entity_id)
        return rows if self._docs is None else [
            r for r in rows if self._shows_chunk(r["chunk_id"])]

    def path(self, source: Entity, target: Entity, max_hops: int = 4) -> list[int] | None:
        """The entity ids of a shortest path from ``source`` to ``target`` (or None)."""
        return shortest_path(self.adjacency(), source.id, target.id, max_hops)

    def relation_between(self, a: int, b: int) -> dict[str, Any] | None:
        for r in self.relations_of(a):
            if {r["subject_id"], r["object_id"]} == {a, b}:
                return r
        return None

    def ppr(self, seeds: Sequence[Entity], *, damping: float = DAMPING,
            iterations: int = 40) -> dict[int, float]:
        """Degree-normalised Personalized PageRank: the teleport distribution puts weight
        1/degree on each seed (hubs count less), walks follow edges in proportion to their
        counts. Returns entity id → score for entities with a positive score."""
        return pagerank(self.adjacency(), [s.id for s in seeds], damping, iterations)

    def map_back(self, scores: dict[int, float], top_nodes: int = 20,
                 top_k: int = 10) -> list[tuple[str, float]]:
        """Chunks mentioning the top-scored entities, scored by the sum of their entities'
        scores (each spread over the chunks that mention it)."""
        best = sorted((e for e in scores if self._shows(e)),
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
        """The question's entities aligned to graph nodes (see :meth:`seed_matches`)."""
        return [m.entity for m in self.seed_matches(question)]

    def seed_matches(self, question: str) -> list[SeedMatch]:
        """A2RAG's seed alignment: each entity mention of the question (quoted spans, runs
        of capitalised words) goes to its best node. An exact name or alias scores 1.0; a
        name at least ``SEED_CUTOFF`` similar as a string is taken on lexical evidence (a
        misspelling moves a small encoder's vector far: "Neptun Men" / "Neptune Men" have
        cosine 0.55); otherwise the lexically closest names score ``0.5 * string
        similarity + 0.5 * cosine`` of the names embedded by the index's embedder ("Lothair
        2" → "Lothair II"). Matches below ``graph.seed_similarity`` are dropped, as are
        names whose numbers differ; one node per mention, each node once."""
        threshold = self.index.settings.graph.seed_similarity
        cutoff = max(SEED_MIN_RATIO, (threshold - (1 - LEXICAL_WEIGHT)) / LEXICAL_WEIGHT)
        names = self.names()
        best: dict[str, SeedMatch] = {}
        shortlists: dict[str, list[tuple[float, int]]] = {}
        for mention in question_keywords(question):
            key = norm(mention)
            exact = self.store.by_key(key) if key else None
            if exact is not None and self._shows(exact.id):
                best[key] = SeedMatch(mention, exact, 1.0)
                continue
            shortlist = [(ratio, p) for ratio, p in names.close(key, SEED_CANDIDATES, cutoff)
                         if same_marks(key, names.keys[p])] if key else []
            if shortlist and shortlist[0][0] >= max(SEED_CUTOFF, threshold):
                best[key] = SeedMatch(mention, names.entities[shortlist[0][1]],
                                      round(shortlist[0][0], 4))
            elif shortlist:
                shortlists[mention] = shortlist
        if shortlists:
            vectors = self._name_vectors({norm(m) for m in shortlists} | {
                names.keys[p] for found in shortlists.values() for _, p in found})
            for mention, shortlist in shortlists.items():
                key = norm(mention)
                score, position = max(
                    (LEXICAL_WEIGHT * ratio + (1 - LEXICAL_WEIGHT) * float(
                        vectors[key] @ vectors[names.keys[p]]), p) for ratio, p in shortlist)
                if score >= threshold:
                    best[key] = SeedMatch(mention, names.entities[position], round(score, 4))
        out: dict[int, SeedMatch] = {}
        for match in best.values():
            if match.entity.id not in out or out[match.entity.id].score < match.score:
                out[match.entity.id] = match
        return list(out.values())

    def _name_vectors(self, texts: set[str]) -> dict[str, np.ndarray]:
        """Unit vectors of names: those cached in the store by alias merging are loaded
        on first use, the rest embedded (and kept in memory, shared with the views)."""
        root = self._root
        if root._vectors is None:
            root._vectors = self.store.all_name_vectors(self.index.embedder.name)
        missing = sorted(t for t in texts if t not in root._vectors)
        if missing:
            root._vectors.update(zip(missing, self.index.embedder.embed(missing), strict=True))
        return {t: root._vectors[t] for t in texts}

    def relation_seeds(self, question: str) -> list[str]:
        """A2RAG's relation seeds: the graph's relation labels that match the question's
        relational intent. The intent is the question's content words outside its entity
        names; a word of a relation (:data:`~sleuth.text.lexicon.RELATIONS`) brings the whole
        relation ("father" → son, daughter, child ...). A label matches when one of its words
        (not a stop word) shares a crude stem with the intent. Most frequent labels first."""
        named = {w for k in question_keywords(question) if k[:1].isupper() for w in words(k)}
        generic = {stem(w) for w in GENERIC}
        stems = {stem(w) for w in content_words(question)
                 if w not in named and len(w) > 2 and not w.isdigit()} - generic
        stems = set().union(stems, *(relation_group(s) for s in stems))
        if self._labels is None:
            self._labels = {}
            scope = self._visible()
            self._label_counts = self.store.relation_labels() if scope is None else \
                scope.labels
            for label in self._label_counts:
                for word in words(label.replace("_", " ")):  # place_of_birth: 3 words
                    if word not in STOPWORDS:
                        self._labels.setdefault(stem(word), set()).add(label)
        found = {label for stem in stems for label in self._labels.get(stem, ())}
        return sorted(found, key=lambda label: (-self._label_counts.get(label, 0), label))

    def rank(self, question: str, top_k: int = 20) -> list[str]:
        """Chunk ids for a question: PPR from its seed entities, mapped back to chunks."""
        seeds = self.seeds(question)
        if not seeds:
            return []
        return [c for c, _ in self.map_back(self.ppr(seeds), top_nodes=MAP_BACK_NODES,
                                              top_k=top_k)]

    def progressive(self, question: str, top_k: int = 10, max_hops: int = BRIDGE_HOPS,
                    sufficient: Callable[[str, list[str]], bool] | None = None, *,
                    relation_filter: bool = True, neighbor_pages: int = LOCAL_NEIGHBORS
                    ) -> tuple[list[str], str]:
        """A2RAG's progressive retrieval: (chunk ids, stage reached).

        Stage ``local``: the seeds' own chunks, those of their one-hop relations (with
        ``relation_filter``, only relations whose label is among the question's
        :meth:`relation_seeds`, unless that leaves none) and the own pages of the first
        ``neighbor_pages`` entities those relations reach. Stage ``bridge``: entities within
        ``max_hops`` of at least two seeds and the relations on the short paths to them.
        Stage ``ppr``: degree-normalised PPR mapped back to chunks. After each stage
        ``sufficient(question, chunk_ids)`` decides whether to stop (the offline coverage
        test by default); ``failed`` means no stage satisfied it (the evidence gathered is
        still returned). ``none`` means no seed was found. ``last_trace`` records the seeds,
        relation seeds and the evidence gathered per stage.
        """
        check = sufficient or self.covers
        matches = self.seed_matches(question)
        seeds = [m.entity for m in matches]
        trace: dict[str, Any] = {"seeds": [(m.mention, m.entity.name, m.score)
                                           for m in matches], "evidence": {}}
        self.last_trace = trace
        if not seeds:
            trace["stage"] = "none"
            return [], "none"
        labels = set(self.relation_seeds(question)) if relation_filter else set()
        trace["relation_seeds"] = sorted(labels)
        evidence = self._local_evidence(seeds, labels, trace, neighbor_pages)
        trace["evidence"]["local"] = len(evidence)
        if check(question, list(evidence)[:top_k]):
            return self._stop(trace, list(evidence)[:top_k], "local")
        if len(seeds) >= 2:
            for chunk_id in self._bridge_chunks(seeds, max_hops):
                evidence.setdefault(chunk_id)
            trace["evidence"]["bridge"] = len(evidence)
            ranked = list(evidence)
            if check(question, ranked[:top_k]):
                return self._stop(trace, ranked[:top_k], "bridge")
        mapped = [c for c, _ in self.map_back(self.ppr(seeds), top_nodes=MAP_BACK_NODES,
                                               top_k=top_k)]
        merged = list(dict.fromkeys([*mapped, *evidence]))[:top_k]
        trace["evidence"]["ppr"] = len(mapped)
        return self._stop(trace, merged, "ppr" if check(question, merged) else "failed")

    def _local_evidence(self, seeds: Sequence[Entity], labels: set[str],
                        trace: dict[str, Any], neighbor_pages: int = 0) -> dict[str, None]:
        """Stage 1: the seeds' own chunks, the chunks of their incident relations (those
        labelled with a relation seed when any is), then the neighbours' own pages."""
        evidence: dict[str, None] = {}
        incident = {s.id: self.neighbors(s, limit=10 ** 6) for s in seeds}
        kept = {i: [r for r in rows if r["relation"] in labels] for i, rows in incident.items()}
        if not any(kept.values()):
            kept = incident
        trace["local_relations"] = {"kept": sum(len(r) for r in kept.values()),
                                    "incident": sum(len(r) for r in incident.values())}
        for seed in seeds:
            evidence.update(dict.fromkeys(self._mentions([seed.id]).get(seed.id, [])[:3]))
            for relation in kept[seed.id][:LOCAL_RELATIONS]:
                evidence.setdefault(relation["chunk_id"])
        if neighbor_pages:
            others = list(dict.fromkeys(r["entity_id"] for rows in kept.values()
                                        for r in rows[:LOCAL_RELATIONS]))[:neighbor_pages]
            homes = self._homes(others)
            trace["local_relations"]["neighbors"] = len(homes)
            for other in others:
                if other in homes:
                    evidence.setdefault(homes[other])
        return evidence

    def _homes(self, entity_ids: Sequence[int]) -> dict[int, str]:
        """Each entity's home chunk: the one that mentions it most (its own page)."""
        out: dict[int, tuple[int, str]] = {}
        for entity, chunk_id, count in self.store.mention_tallies(entity_ids):
            if self._shows_chunk(chunk_id) and (entity not in out or count > out[entity][0]):
                out[entity] = (count, chunk_id)
        return {e: chunk for e, (_, chunk) in out.items()}

    def _stop(self, trace: dict[str, Any], chunk_ids: list[str],
              stage: str) -> tuple[list[str], str]:
        trace["stage"] = stage
        return chunk_ids, stage

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
        """The offline sufficiency test (:func:`sleuth.text.querytext.covers`) on the chunks'
        text."""
        if not chunk_ids:
            return False
        return covers(question, " ".join(c.text for c in self.index.read(chunk_ids).chunks))

    def _mentions(self, entity_ids: Sequence[int]) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for entity, chunk_id in self.store.mentions_of(entity_ids):
            if self._shows_chunk(chunk_id):
                out.setdefault(entity, []).append(chunk_id)
        return out

    def adjacency(self) -> Adjacency:
        """The relations as a symmetric sparse matrix over the entities they connect (in a
        view, the visible relations), without the removed entities."""
        if self._adjacency is None:
            scope = self._visible()
            if scope is None:
                edges = np.array(self.store.edges(), dtype=np.int64).reshape(-1, 2)
                subjects, objects = edges[:, 0], edges[:, 1]
            else:
                subjects, objects = scope.subjects, scope.objects
            if self._removed:
                hidden = np.fromiter(self._removed, dtype=np.int64, count=len(self._removed))
                kept = ~(np.isin(subjects, hidden) | np.isin(objects, hidden))
                subjects, objects = subjects[kept], objects[kept]
            self._adjacency = Adjacency.build(subjects, objects)
        return self._adjacency
