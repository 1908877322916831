"""Tool calls in worker processes (issue 61): a server's tool calls run in processes of their
own, each with the index open read-only, and answer exactly as on the server's threads: each
tenant sees only its documents, a write is seen by the next call, a process that dies is
replaced without a call failing, and none outlives its server."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from tests.test_hostile_neighbours import KEYS, Live, _index  # noqa: E402

from sleuth import Settings  # noqa: E402
from sleuth.service.service import Service  # noqa: E402

SEARCH = {"keywords": ["zephyrine"], "top_k": 20}


@pytest.fixture()
def live(tmp_path: Path) -> Iterator[tuple[Live, Service]]:
    service = Service(_index(tmp_path), Settings.load(
        chunk={"tokens": 60}, serve={"api_keys": KEYS, "tool_processes": True, "workers": 2}))
    assert service.warm.wait(120), "the server's tool processes did not start"
    server = Live(service)
    yield server, service
    server.close()
    service.close()


def _status(server: Live) -> dict[str, Any]:
    with server.client("k-root") as client:
        processes: dict[str, Any] = client.get("/v1/status").json()["tool_processes"]
    return processes


def _docs(server: Live, key: str, arguments: dict[str, Any] = SEARCH) -> set[str]:
    with server.client(key) as client:
        got = client.post("/v1/tools/keyword_search", json=arguments)
    assert got.status_code == 200, got.text
    return {hit["doc_id"] for hit in got.json()["data"]["hits"]}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (killed, not yet reaped) is no process
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return False


def test_tool_calls_run_in_processes_and_each_tenant_sees_its_own(
        live: tuple[Live, Service]) -> None:
    server, service = live
    before = _status(server)
    assert before["processes"] == before["of"] == 2
    assert os.getpid() not in before["pids"] and all(_alive(p) for p in before["pids"])
    acme, globex = _docs(server, "k-acme"), _docs(server, "k-globex")
    assert acme and globex and not acme & globex
    assert all(d.startswith("acme") for d in acme), acme
    assert all(d.startswith("globex") for d in globex), globex
    assert _status(server)["calls"] == before["calls"] + 2  # both answered by a process
    # the same answer as the server's own thread gives
    in_thread = service.call_tool("keyword_search", SEARCH, service_caller(service, "k-globex"))
    assert {h["doc_id"] for h in in_thread.data["hits"]} == globex
    # a tool's error comes back as the tool raised it (400, its message), from the process
    with server.client("k-globex") as client:
        calls = _status(server)["calls"]
        bad = client.post("/v1/tools/calculate", json={"expression": "1/0"})
        assert (bad.status_code, bad.json()["detail"]) == (400, "division by zero")
        assert _status(server)["calls"] == calls + 1
        # another tenant's chunk reads as one that does not exist
        foreign = client.post("/v1/tools/chunk_read", json={"chunk_ids": ["acme:page-0.md#0"]})
        assert foreign.status_code == 200 and "Unknown chunk ids" in foreign.text
        assert "zephyrine" not in foreign.text


def service_caller(service: Service, key: str) -> Any:
    from sleuth.service.callers import caller_for_key, load_api_keys

    return caller_for_key(load_api_keys(service.settings.serve), key)


def test_a_process_sees_the_next_write_and_one_that_dies_is_replaced(
        live: tuple[Live, Service]) -> None:
    server, _ = live
    with server.client("k-globex") as client:
        sent = client.post("/v1/documents", files={"files": (
            "quill.md", b"# Quill\n\nThe harbour stores quillwort seeds in the loft.\n")})
        assert sent.status_code == 200, sent.text
    word = {"keywords": ["quillwort"], "top_k": 5}
    assert _docs(server, "k-globex", word) and not _docs(server, "k-acme", word)

    pids = _status(server)["pids"]
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    for _ in range(6):  # each answered: by a thread while its process is replaced
        assert _docs(server, "k-globex", word)
    deadline = time.monotonic() + 60
    while (now := _status(server))["processes"] < 2:
        assert time.monotonic() < deadline, now
        time.sleep(0.2)
    assert not set(now["pids"]) & set(pids)
    calls = now["calls"]
    assert _docs(server, "k-globex", word) and _status(server)["calls"] == calls + 1


def test_no_process_outlives_its_server(tmp_path: Path) -> None:
    service = Service(_index(tmp_path), Settings.load(
        chunk={"tokens": 60}, serve={"api_keys": KEYS, "tool_processes": True}))
    assert service.warm.wait(120)
    pids = service.tool_processes.status()["pids"] if service.tool_processes else []
    assert pids and all(_alive(p) for p in pids)
    service.close()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids):
        assert time.monotonic() < deadline, [p for p in pids if _alive(p)]
        time.sleep(0.1)
