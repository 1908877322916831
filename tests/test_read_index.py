"""The read-only index and the indexer (:mod:`sleuth.index.read`): what each may do."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np

from sleuth.index.read import ReadIndex
from sleuth.index.write import Index

PEPYS = "According to Pepys's diary, what did Greatorex show him about levers?"


def test_the_indexer_offers_every_read_and_the_read_index_no_write(sample_index: Path) -> None:
    writes = {"add", "delete", "check", "repair"}
    assert writes <= set(dir(Index)) and not writes & set(dir(ReadIndex))
    with ReadIndex.open(sample_index) as index:
        assert type(index) is ReadIndex
        hits = index.keyword_search(["Greatorex"], top_k=3)
        assert hits and index.read([hits[0].chunk_id]).chunks[0].doc_id == hits[0].doc_id


def test_missing_summaries_are_kept_in_memory_when_read_and_stored_when_indexing(
        sample_index: Path, tmp_path: Path) -> None:
    folder = tmp_path / "idx"
    shutil.copytree(sample_index, folder)
    with closing(sqlite3.connect(folder / "sleuth.db")) as db, db:
        db.execute("DELETE FROM summaries")  # as an index built before summaries existed
    with ReadIndex.open(folder) as reader:
        doc_ids, matrix = reader.summaries()
        assert len(doc_ids) == reader.stats().documents == 3 and doc_ids == sorted(doc_ids)
        assert reader.scope(PEPYS)[1] == "pepys-diary-1660.md"
        assert reader.store.summaries()[0] == []  # nothing written
    with Index.open(folder) as index:
        stored_ids, stored = index.summaries()
        assert index.store.summaries()[0] == doc_ids == stored_ids  # the migration stored them
        np.testing.assert_allclose(stored, matrix, atol=1e-6)
