"""The embedded store: incremental updates, resume, refusal of foreign indexes, exact vectors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import twowiki_records
from sleuth import Index, Settings, StoreError
from sleuth.index.write import IndexProgress
from sleuth.store.keyword import brute_force


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


DOCS = {
    "a.md": "# Alpha\n\nThe alpha document talks about glaciers. Glaciers move slowly.",
    "b.txt": "Beta notes\n\nBeta is about volcanoes. Volcanoes erupt with lava.",
    "sub/c.md": "# Gamma\n\nGamma covers deserts. Deserts are dry and hot.",
}


def test_incremental_add_update_delete(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _write(docs, DOCS)
    with Index.open(tmp_path / "idx", settings=Settings.load(), create=True) as index:
        first = index.add([docs])
        assert sorted(first.added) == ["a.md", "b.txt", "sub/c.md"]
        again = index.add([docs])
        assert again.added == [] and again.updated == [] and again.unchanged == 3
        (docs / "b.txt").write_text("Beta notes\n\nBeta is now about geysers.", "utf-8")
        (docs / "sub" / "c.md").unlink()
        _write(docs, {"d.md": "# Delta\n\nDelta discusses rivers."})
        third = index.add([docs])
        assert third.added == ["d.md"] and third.updated == ["b.txt"]
        assert third.deleted == ["sub/c.md"] and third.unchanged == 1
        assert index.keyword_search(["volcanoes"]) == []
        assert [h.doc_id for h in index.keyword_search(["geysers"])] == ["b.txt"]
        assert index.keyword_search(["deserts"]) == []
        assert index.semantic_search("rivers", top_k=1)[0].doc_id == "d.md"
        stats = index.stats()
        assert (stats.documents, stats.chunks) == (3, 3)


def test_interrupted_build_resumes(tmp_path: Path, wiki_corpus: Path) -> None:
    settings = Settings.load()

    class Stop(Exception):
        pass

    def interrupt(progress: IndexProgress) -> None:
        if progress.documents_indexed and not progress.done:
            raise Stop

    folder = tmp_path / "idx"
    with Index.open(folder, settings=settings, create=True) as index, pytest.raises(Stop):
        index.add([wiki_corpus], on_progress=interrupt, batch_sentences=200)
    with Index.open(folder, settings=settings) as index:
        partial = index.stats()
        assert 0 < partial.documents < 300
        build = index.stats().manifest["build"]
        assert build["state"] == "interrupted"  # its process let go of the index
        assert build["interrupted"][0]["command"] == \
            f"sleuth index {wiki_corpus} --index {folder}"
        report = index.add([wiki_corpus])
        assert report.resumed and report.unchanged == partial.documents
        assert index.stats().documents == 300
        corpus = [(c.chunk_id, c.text) for c in index.store.iter_chunks()]
        got = index.keyword_search(["born", "film"], top_k=20)
        assert [(h.chunk_id, h.score) for h in got] == brute_force(corpus, ["born", "film"], 20)
        assert index.stats().manifest["build"]["state"] == "complete"


def test_semantic_search_is_exact(wiki_index: Index) -> None:
    """Best-sentence ranking equals a brute-force pass over every stored vector."""
    store = wiki_index.store
    vectors = store._load_vectors()  # type: ignore[attr-defined]
    matrix = np.concatenate([np.asarray(m) for m in vectors.matrices])
    live = vectors.chunk_of >= 0
    query = "Who directed the film?"
    q = wiki_index.embedder.embed([query])[0]
    best: dict[int, float] = {}
    for row in np.flatnonzero(live):
        key = int(vectors.chunk_of[row])
        best[key] = max(best.get(key, -1.0), float(matrix[row] @ q))
    expected = sorted(best.values(), reverse=True)[:10]
    hits = wiki_index.semantic_search(query, top_k=10)
    assert [h.score for h in hits] == pytest.approx(expected, abs=1e-5)
    assert all(h.snippets for h in hits)


def test_refuses_unknown_format_version(tmp_path: Path, sample_index: Path) -> None:
    import shutil

    copy = tmp_path / "idx"
    shutil.copytree(sample_index, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["format_version"] = 99
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match="format 99"):
        Index.open(copy, settings=Settings.load())


def test_refuses_other_embedder(sample_index: Path) -> None:
    settings = Settings.load(embed={"model": "openai:text-embedding-3-small"})
    with pytest.raises(StoreError, match="built with embedder 'openai:hashed'"):
        Index.open(sample_index, settings=settings)


def test_missing_index_says_how_to_build(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="sleuth index"):
        Index.open(tmp_path / "nothing", settings=Settings.load())


@pytest.mark.own_embedder  # its own endpoint's embedder
def test_openai_compatible_embeddings_endpoint(tmp_path: Path) -> None:
    """The /embeddings option, against the scripted server's deterministic embeddings."""
    from sleuth.testing.fake import FakeLLMServer

    docs = tmp_path / "docs"
    _write(docs, DOCS)
    with FakeLLMServer([]) as server:
        settings = Settings.load(embed={"model": "openai:fake-embed", "base_url": server.base_url,
                                        "batch_size": 4})
        with Index.open(tmp_path / "idx", settings=settings, create=True) as index:
            index.add([docs])
            assert index.stats().manifest["embedder"]["name"] == "openai:fake-embed"
            hits = index.semantic_search("Glaciers move slowly.", top_k=1)
            assert hits[0].doc_id == "a.md"
        assert server.embedding_requests
        assert max(len(r["input"]) for r in server.embedding_requests) <= 4
        with Index.open(tmp_path / "idx", settings=Settings.load()) as index:
            assert index.settings.embed.model == "openai:fake-embed"


def test_damaged_vectors_get_a_clear_error(tmp_path: Path, sample_index: Path) -> None:
    import shutil

    copy = tmp_path / "idx"
    shutil.copytree(sample_index, copy)
    for path in (copy / "vectors").glob("seg-*.chunks.npy"):
        path.unlink()
    with Index.open(copy, settings=Settings.load()) as index:
        assert index.keyword_search(["Greatorex"])  # keyword search does not need vectors
        with pytest.raises(StoreError, match=r"seg-1\.chunks\.npy is missing; `sleuth index "
                           r"--repair"):
            index.semantic_search("levers")
    with Index.open(sample_index, settings=Settings.load()) as pristine:
        expected = pristine.semantic_search("levers")
    with Index.open(copy, settings=Settings.load()) as index:
        assert index.repair().sentences_embedded == index.stats().sentences
        assert index.check() == []
        got = index.semantic_search("levers")
    assert [h.chunk_id for h in got] == [h.chunk_id for h in expected]
    assert [h.score for h in got] == pytest.approx([h.score for h in expected], abs=1e-4)


def test_a_long_document_is_stored_in_parts_and_resumed_after_the_last_one(
        tmp_path: Path) -> None:
    """A document longer than a batch is committed in parts: interrupted after two, the
    index holds them (marked partial, the build interrupted), and the next run embeds only
    the rest; the result equals an uninterrupted build."""
    records = twowiki_records(60)
    text = "\n\n".join(r["text"] for r in records)
    source = tmp_path / "long.txt"
    source.write_text("A long report\n\n" + text)
    settings = Settings.load(chunk={"tokens": 200})

    class Stop(Exception):
        pass

    written: list[int] = []

    def interrupt(progress: IndexProgress) -> None:
        written.append(progress.sentences)
        if progress.chunks >= 4 and not progress.done:
            raise Stop

    folder = tmp_path / "idx"
    with Index.open(folder, settings=settings, create=True) as index, pytest.raises(Stop):
        index.add([source], on_progress=interrupt, batch_sentences=40)
    with Index.open(folder, settings=settings) as index:
        stored = index.store.document_hashes()["long.txt"]
        assert stored.startswith("partial:")
        kept = len(index.store.chunk_spans("long.txt"))
        assert kept >= 4 and index.stats().manifest["build"]["state"] == "interrupted"
        seen: list[int] = []
        report = index.add([source], batch_sentences=40,
                           on_progress=lambda p: seen.append(p.sentences))
        assert report.resumed and report.updated == ["long.txt"]
        chunks = [(c.chunk_id, c.text) for c in index.store.iter_chunks()]
        vectors = index.store.document_vectors("long.txt")
        assert not index.check()
    whole = tmp_path / "whole"
    with Index.open(whole, settings=settings, create=True) as index:
        index.add([source])
        assert index.store.document_hashes()["long.txt"] == stored.removeprefix("partial:")
        assert [(c.chunk_id, c.text) for c in index.store.iter_chunks()] == chunks
        total = index.stats().sentences
        assert np.allclose(index.store.document_vectors("long.txt"), vectors, atol=1e-5)
    assert max(seen) < total  # only the rest was embedded again


def test_common_words_are_counted_exactly_before_and_after_a_change(
        wiki_index: Index, tmp_path: Path) -> None:
    """A common word's postings are kept in memory per index generation: the counts stay
    those of a brute-force scan, and a write (here by another Index) is seen at once."""
    import shutil

    folder = tmp_path / "idx"
    shutil.copytree(wiki_index.location, folder)
    corpus = [(c.chunk_id, c.text) for c in wiki_index.store.iter_chunks()]
    with Index.open(folder) as reader:
        for keywords in (["the"], ["the", "of", "film"], ["of"]):  # twice "the": cached
            got = [(h.chunk_id, h.score) for h in reader.keyword_search(keywords, top_k=10)]
            assert got == brute_force(corpus, keywords, 10), keywords
        shout = tmp_path / "shout.json"
        shout.write_text(json.dumps([{"id": "shout", "title": "The",
                                      "text": " ".join(["the"] * 500) + "."}]))
        with Index.open(folder) as writer:
            writer.add([shout])
        top = reader.keyword_search(["the"], top_k=1)[0]
        assert top.doc_id == "shout" and top.score >= 500 * 3
