"""The share of a graph that a caller who may read only some documents sees (access
control, :meth:`sleuth.graph.Graph.scoped`): the whole graph's provenance as arrays, and the
cut of it one view shows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sleuth.store.graphs import GraphBackend


@dataclass(frozen=True)
class Scope:
    """The part of the whole graph a view shows (see :meth:`Graph.scoped`)."""

    entities: frozenset[int]
    subjects: np.ndarray  # the visible relations' ends
    objects: np.ndarray
    labels: dict[str, int]  # visible relation label → how many carry it
    counts: dict[str, int]


@dataclass
class Tables:
    """The whole graph's provenance as arrays, chunks coded by first appearance, from
    which :meth:`Graph.scoped` cuts its views."""

    docs: list[str]  # document id per chunk code
    mention_entity: np.ndarray
    mention_chunk: np.ndarray
    subjects: np.ndarray  # per relation
    objects: np.ndarray
    relation_chunk: np.ndarray
    relation_label: np.ndarray  # position in ``labels``
    labels: list[str]
    extracted: np.ndarray  # codes of the chunks processed by an extractor

    @classmethod
    def load(cls, store: GraphBackend) -> Tables:
        codes: dict[str, int] = {}
        labels: dict[str, int] = {}
        mentions = store.mention_rows()
        relations = store.relation_rows()
        extracted = store.extracted_chunks()

        def coded(values: Sequence[str], table: dict[str, int]) -> np.ndarray:
            return np.fromiter((table.setdefault(v, len(table)) for v in values),
                               dtype=np.int64, count=len(values))

        mention_chunk = coded([c for _, c in mentions], codes)
        relation_chunk = coded([r[3] for r in relations], codes)
        extracted_chunk = coded(extracted, codes)
        relation_label = coded([r[2] for r in relations], labels)
        return cls([c.rsplit("#", 1)[0] for c in codes],
                   np.fromiter((e for e, _ in mentions), np.int64, len(mentions)),
                   mention_chunk,
                   np.fromiter((r[0] for r in relations), np.int64, len(relations)),
                   np.fromiter((r[1] for r in relations), np.int64, len(relations)),
                   relation_chunk, relation_label, list(labels), extracted_chunk)

    def cut(self, docs: frozenset[str]) -> Scope:
        """What a caller who may read only ``docs`` sees."""
        shown = np.fromiter((d in docs for d in self.docs), dtype=bool, count=len(self.docs))
        relations = shown[self.relation_chunk]
        mentions = shown[self.mention_chunk]
        subjects, objects = self.subjects[relations], self.objects[relations]
        entities = np.unique(np.concatenate([self.mention_entity[mentions], subjects,
                                             objects]))
        per_label = np.bincount(self.relation_label[relations], minlength=len(self.labels))
        return Scope(
            frozenset(entities.tolist()), subjects, objects,
            {self.labels[i]: int(per_label[i]) for i in np.flatnonzero(per_label)},
            {"entities": len(entities), "relations": int(relations.sum()),
             "mentions": int(mentions.sum()),
             "extracted": int(shown[self.extracted].sum())})
