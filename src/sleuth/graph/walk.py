"""Walks over the graph's relations as a sparse matrix: shortest paths and degree-normalised
Personalized PageRank (the algorithms behind :meth:`sleuth.graph.Graph.path` and
:meth:`sleuth.graph.Graph.ppr`)."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Adjacency:
    """The relations as a symmetric sparse matrix, one row per entity they connect."""

    ids: np.ndarray  # entity id per row
    row_of: dict[int, int]
    matrix: Any  # scipy.sparse CSR, symmetric edge counts
    degree: np.ndarray
    transition: Any  # row-stochastic: matrix rows divided by degree

    @classmethod
    def build(cls, subjects: np.ndarray, objects: np.ndarray) -> Adjacency:
        """The relations ``subjects[i]`` — ``objects[i]`` as a symmetric sparse matrix over
        the entities they connect."""
        from scipy import sparse

        ids = np.unique(np.concatenate([subjects, objects]))
        row_of = {e: i for i, e in enumerate(ids.tolist())}
        left, right = np.searchsorted(ids, subjects), np.searchsorted(ids, objects)
        rows, cols = np.concatenate([left, right]), np.concatenate([right, left])
        data = np.ones(len(rows))
        matrix = sparse.csr_matrix((data, (rows, cols)), shape=(len(ids), len(ids)))
        degree = np.asarray(matrix.sum(axis=1)).ravel()
        inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
        transition = matrix.multiply(inverse[:, None]).tocsr()
        return cls(ids, row_of, matrix, degree, transition)


def shortest_path(adjacency: Adjacency, source: int, target: int,
                  max_hops: int) -> list[int] | None:
    """The entity ids of a shortest path from entity ``source`` to ``target`` (or None),
    breadth-first."""
    if source not in adjacency.row_of or target not in adjacency.row_of:
        return None
    start, goal = adjacency.row_of[source], adjacency.row_of[target]
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


def pagerank(adjacency: Adjacency, seeds: Sequence[int], damping: float,
             iterations: int) -> dict[int, float]:
    """Degree-normalised Personalized PageRank from the entities ``seeds``: entity id →
    score for entities with a positive score (see :meth:`sleuth.graph.Graph.ppr`)."""
    rows = [adjacency.row_of[s] for s in seeds if s in adjacency.row_of]
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
