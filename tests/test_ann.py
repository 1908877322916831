"""The optional approximate index of the embedded store (a faiss inverted file): with every
list probed, the same results as exact search; with few, fewer of the best chunks but never
a wrong score; never a deleted or hidden chunk; exact search whenever the index is damaged,
of an earlier kind or faiss is missing.

The corpus is a real 2Wiki slice; the embedder hashes words and word pairs into 128
dimensions (real text, no model to load), which keeps each build to a second or two.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import sqlite3
import sys
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("faiss")
pytestmark = pytest.mark.own_embedder  # HashEmbedder below, no configured one

from conftest import twowiki_records  # noqa: E402
from sleuth import Index, Settings  # noqa: E402
from sleuth.embed import BatchCallback, normalise  # noqa: E402
from sleuth.index.indexing import IndexProgress  # noqa: E402
from sleuth.store.local import ann  # noqa: E402
from sleuth.text.access import Access  # noqa: E402
from sleuth.types import Hit  # noqa: E402


class HashEmbedder:
    """Words and word pairs hashed into 128 dimensions, unit length."""

    name, dim = "test-hash", 128

    def embed(self, texts: Sequence[str], *, on_batch: BatchCallback | None = None
              ) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            words = re.findall(r"\w+", text.lower())
            for term in words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]:
                out[i, zlib.crc32(term.encode()) % self.dim] += 1.0
        if on_batch:
            on_batch(len(texts))
        return normalise(out)


EMBEDDER = HashEmbedder()
ON = {"ann": "on", "ann_min_sentences": 0, "nprobe": 10_000}  # every list scanned


def _open(folder: Path, create: bool = False, **vectors: object) -> Index:
    settings = Settings.load(chunk={"tokens": 60}, vectors=vectors or ON)
    return Index.open(folder, settings=settings, create=create, embedder=EMBEDDER)


def _corpus(folder: Path, name: str, records: list[dict[str, str]]) -> Path:
    path = folder / name
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def records() -> list[dict[str, str]]:
    return twowiki_records(300)


@pytest.fixture(scope="module")
def built(records: list[dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Passages 0–199 in collection ``a``, 200–279 in ``b`` (240–279 of them in group
    ``hr``): an index with its approximate file; tests copy it before writing."""
    folder = tmp_path_factory.mktemp("ann")
    with _open(folder / "idx", create=True) as index:
        index.add([_corpus(folder, "a.json", records[:200])], collection="a")
        index.add([_corpus(folder, "b.json", records[200:240])], collection="b")
        index.add([_corpus(folder, "hr.json", records[240:280])], collection="b",
                  groups=["hr"])
    return folder / "idx"


@pytest.fixture()
def copy(built: Path, tmp_path: Path) -> Path:
    shutil.copytree(built, tmp_path / "idx")
    return tmp_path / "idx"


def _queries(records: list[dict[str, str]], count: int = 60) -> list[str]:
    """Sentences of the corpus with a word dropped and another added, and short phrases."""
    rng = np.random.default_rng(7)
    out = []
    for record in rng.choice(np.array(records, dtype=object), count, replace=False):
        words = record["text"].split()[:18]
        if len(words) > 3:
            words.pop(int(rng.integers(len(words))))
        out.append(" ".join(words + [str(rng.choice(["film", "born", "river", "album"]))]))
    return out


def _ids(hits: list[Hit]) -> list[str]:
    return [h.chunk_id for h in hits]


def _same(got: list[Hit], exact: Index, query: str, top_k: int = 5,
          doc_ids: list[str] | None = None) -> None:
    """``got`` is the exact result: the same scores, and the same chunks wherever the score
    is not tied (tied chunks are exact in either order; one more hit shows a tie at the
    end) with the same best sentence (the others come from the top sentences overall,
    which the candidates approximate)."""
    want = exact.semantic_search(query, top_k, doc_ids)
    scores = [h.score for h in exact.semantic_search(query, top_k + 1, doc_ids)]
    assert [h.score for h in got] == pytest.approx(scores[:top_k], abs=1e-5), query
    for mine, theirs in zip(got, want, strict=True):
        if sum(abs(s - theirs.score) < 1e-5 for s in scores) == 1:
            assert mine.chunk_id == theirs.chunk_id, query
            assert mine.snippets[0] in theirs.snippets, query  # sentences may tie too
            assert theirs.snippets[0] in mine.snippets, query


@pytest.fixture()
def exact(built: Path) -> Iterator[Index]:
    with _open(built, ann="off") as index:
        yield index


def _record(folder: Path) -> dict[str, Any]:
    """The approximate index's record (kind, size, count, checksum) in ``sleuth.db``."""
    with sqlite3.connect(folder / "sleuth.db") as db:
        row = db.execute("SELECT value FROM meta WHERE name='ann'").fetchone()
    record: dict[str, Any] = json.loads(row[0])
    return record


def _set_record(folder: Path, record: dict[str, Any]) -> None:
    with sqlite3.connect(folder / "sleuth.db") as db:
        db.execute("UPDATE meta SET value=? WHERE name='ann'", (json.dumps(record),))
        db.execute("UPDATE counters SET next = next + 1 WHERE name='generation'")


def test_ann_results_equal_exact(built: Path, exact: Index,
                                  records: list[dict[str, str]]) -> None:
    record = _record(built)
    assert (built / "vectors" / ann.FILE).is_file()
    with _open(built) as index:
        assert record["sentences"] == index.stats().sentences
        assert record["kind"] == "ivf-sq8" and 8 <= record["nlist"] <= 100
        assert index.stats().manifest["ann"] == record
        assert index.store._load_vectors().ann is not None  # type: ignore[attr-defined]
        a_docs = sorted(d for d in index.document_titles() if d.startswith("a:"))
        for query in _queries(records):
            _same(index.semantic_search(query, top_k=5), exact, query)
            for docs in (a_docs[:3], a_docs):  # a few documents: exact; most: filtered
                _same(index.semantic_search(query, 5, doc_ids=docs), exact, query, 5, docs)


@pytest.mark.parametrize(("access", "filtered"), [
    (Access.of("a"), True),  # most rows visible: a selector, then checked again
    (Access.of("b", groups=["hr"]), True),
    (Access.of("b", groups=[]), False),  # under a fifth of the rows: exact over them
])
def test_hidden_chunks_never_show(built: Path, exact: Index, records: list[dict[str, str]],
                                  access: Access, filtered: bool) -> None:
    with _open(built) as index:
        visible = index.store.visible_documents(access)
        assert visible is not None
        view, exact_view = index.scoped(access), exact.scoped(access)
        for query in _queries(records, 30):
            hits = view.semantic_search(query, top_k=10)
            assert hits and all(h.doc_id in visible for h in hits)
            _same(hits, exact_view, query, 10)
        vectors = index.store._load_vectors()  # type: ignore[attr-defined]
        assert (vectors.filters[access.key][1] is not None) == filtered


def test_deleted_documents_never_return(copy: Path, records: list[dict[str, str]]) -> None:
    with _open(copy) as index:
        gone = [f"a:{r['id']}" for r in records[:20]]
        index.delete(gone)
        assert _record(copy)["sentences"] > index.stats().sentences  # dead labels kept
        for record in records[:20]:  # their own text: the best match were they still there
            hits = index.semantic_search(record["text"][:200], top_k=10)
            assert hits and not {h.doc_id for h in hits} & set(gone)


def test_new_rows_are_searched_before_and_after_the_build(
        copy: Path, records: list[dict[str, str]], tmp_path: Path) -> None:
    extra = _corpus(tmp_path, "c.json", records[280:300])

    class Stop(Exception):
        pass

    def interrupt(progress: IndexProgress) -> None:
        if progress.documents_indexed and not progress.done:
            raise Stop

    with _open(copy) as index:
        before = _record(copy)["sentences"]
        with pytest.raises(Stop):  # written but not built: the file lacks these rows
            index.add([extra], collection="c", on_progress=interrupt, batch_sentences=8)
        assert len(index.store._load_vectors().tail)  # type: ignore[attr-defined]
        written = min(d for d in index.document_titles() if d.startswith("c:"))
        query = next(r["text"] for r in records if f"c:{r['id']}" == written)[:200]
        hit = index.semantic_search(query, top_k=1)[0]
        assert hit.doc_id.startswith("c:") and hit.score == pytest.approx(1.0, abs=0.05)
        index.add([extra], collection="c")
        after = _record(copy)["sentences"]
        assert after == index.stats().sentences > before
        assert not len(index.store._load_vectors().tail)  # type: ignore[attr-defined]
        assert index.semantic_search(query, top_k=1)[0].chunk_id == hit.chunk_id


def test_damaged_file_means_exact_then_rebuilt(copy: Path, exact: Index,
                                               records: list[dict[str, str]],
                                               caplog: pytest.LogCaptureFixture) -> None:
    path = copy / "vectors" / ann.FILE
    path.write_bytes(b"\x00garbage" * (path.stat().st_size // 8) + b"\x00" *
                     (path.stat().st_size % 8))  # same size: the checksum tells
    with caplog.at_level(logging.WARNING), _open(copy) as index:
        for query in _queries(records, 10):
            _same(index.semantic_search(query, 5), exact, query)
        assert index.store._load_vectors().ann is None  # type: ignore[attr-defined]
        assert "damaged approximate index" in caplog.text
        index.store.finish_build()
        assert index.store._load_vectors().ann is not None  # type: ignore[attr-defined]
    record = _record(copy)
    record["bytes"] += 1  # a file its record does not describe is not used
    _set_record(copy, record)
    with _open(copy) as index:
        assert index.store._load_vectors().ann is None  # type: ignore[attr-defined]


def test_few_probes_approximate_but_never_misscore(built: Path, exact: Index,
                                                  records: list[dict[str, str]]) -> None:
    """One list probed: some of the best chunks are missed (it is approximate), but every
    hit carries its exact score and best sentence."""
    found = missed = 0
    with _open(built, ann="on", ann_min_sentences=0, nprobe=1) as index:
        for query in _queries(records, 30):
            hits = index.semantic_search(query, top_k=5)
            want = {h.chunk_id for h in exact.semantic_search(query, top_k=5)}
            found += len(want & set(_ids(hits)))
            missed += len(want - set(_ids(hits)))
            for hit in hits:
                truth = exact.semantic_search(query, 1, doc_ids=[hit.doc_id])
                chunk = [h for h in exact.semantic_search(query, 50, doc_ids=[hit.doc_id])
                         if h.chunk_id == hit.chunk_id]
                assert truth and chunk and chunk[0].score == pytest.approx(hit.score, abs=1e-5)
    assert found and missed  # approximate: probing 1 of its lists misses some


def test_earlier_hnsw_file_is_ignored_then_replaced(copy: Path, exact: Index,
                                                    records: list[dict[str, str]]) -> None:
    """An index built by an earlier version (HNSW file and its record) searches exactly
    until the next build replaces the file with an inverted file."""
    (copy / "vectors" / ann.FILE).rename(copy / "vectors" / "hnsw.faiss")
    size = (copy / "vectors" / "hnsw.faiss").stat().st_size
    _set_record(copy, {"file": "vectors/hnsw.faiss", "sentences": _record(copy)["sentences"],
                       "m": 32, "bytes": size})
    with _open(copy) as index:
        assert index.store._load_vectors().ann is None  # type: ignore[attr-defined]
        for query in _queries(records, 5):
            _same(index.semantic_search(query, 5), exact, query)
        index.store.finish_build()
        assert index.store._load_vectors().ann is not None  # type: ignore[attr-defined]
    assert not (copy / "vectors" / "hnsw.faiss").exists()
    assert _record(copy)["kind"] == "ivf-sq8"


def test_auto_below_threshold_and_off_remove_the_file(copy: Path) -> None:
    with _open(copy, ann="auto") as index:  # 200k sentences by default: exact
        index.store.finish_build()
    assert not (copy / "vectors" / ann.FILE).exists()
    with sqlite3.connect(copy / "sleuth.db") as db:
        assert db.execute("SELECT count(*) FROM meta WHERE name='ann'").fetchone() == (0,)


def test_without_faiss_search_is_exact(built: Path, exact: Index, records: list[dict[str, str]],
                                       monkeypatch: pytest.MonkeyPatch,
                                       caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "faiss", None)  # `import faiss` raises ImportError
    monkeypatch.setattr(ann, "_warned", False)
    with caplog.at_level(logging.WARNING), _open(built) as index:
        for query in _queries(records, 10):
            _same(index.semantic_search(query, 5), exact, query)
        index.store.finish_build()  # nothing to build with: no failure
    assert caplog.text.count("faiss is not installed") == 1
