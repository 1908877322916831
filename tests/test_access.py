"""Tenants and access groups, tried from outside: real servers, real keys, escape attempts.

The strongest check: whatever a tenant's key gets from the server over the full index
(three collections, a group-restricted document) is byte-for-byte what the same key gets
from an index that only ever held the documents it may see, for every tool, every count
and every error. Anything hidden that changed a title, a score, a count, a snippet or an
error message would break that equality.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi")

from conftest import LiveServer  # noqa: E402
from sleuth import Index, Settings  # noqa: E402
from sleuth.server.http import create_app  # noqa: E402
from sleuth.service.service import Service  # noqa: E402
from sleuth.text.access import Access  # noqa: E402

DOCS = {
    "handbook.md": "# Company Handbook\n\nThe cafeteria opens at eight. Zephyrine badges are "
                   "issued at the front desk. Visitors sign in with security.\n",
    "roadmap.md": "# Acme Roadmap\n\nProject Zephyrine launches in the spring of 2027. "
                  "Maria Okafor leads Project Zephyrine from the Lisbon office.\n\n"
                  "The second phase of Zephyrine adds a mobile client. Testing begins in "
                  "March with forty pilot customers.\n\nBudget reviews happen every quarter. "
                  "The steering committee meets in Porto.\n",
    "salaries.md": "# Acme Salaries\n\nThe Zephyrine team bonus is paid in quokka-gold "
                   "vouchers. The secret codeword is marmalade-falcon.\n\nMaria Okafor earns "
                   "more than the steering committee expected. Payroll closes on the 25th.\n",
    "plans.md": "# Globex Plans\n\nGlobex will copy Zephyrine before its launch. Hank Scorpio "
                "approved the Zephyrine counterplan in Cypress Creek.\n\nThe codeword "
                "marmalade-falcon leaked to Globex. Zephyrine Zephyrine Zephyrine.\n",
}
KEYS = {
    "root": "k-root",
    "acme-hr": {"key": "k-hr", "collection": "acme", "groups": ["hr"]},
    "acme-staff": {"key": "k-staff", "collection": "acme"},
    "globex": {"key": "k-globex", "collection": "globex"},
}
# what each tenant key may see: (file, collection, groups)
LAYOUT = [("handbook.md", "default", ()), ("roadmap.md", "acme", ()),
          ("salaries.md", "acme", ("hr",)), ("plans.md", "globex", ())]
VISIBLE = {"k-staff": ["roadmap.md"], "k-hr": ["roadmap.md", "salaries.md"],
           "k-globex": ["plans.md"]}


def _settings(**serve: Any) -> Settings:
    return Settings.load(chunk={"tokens": 40}, serve={"api_keys": KEYS, **serve})


def _build(folder: Path, corpus: Path, files: list[str]) -> Path:
    return _build_layout(folder, corpus, [entry for entry in LAYOUT if entry[0] in files])


def _build_layout(folder: Path, corpus: Path,
                  layout: list[tuple[str, str, tuple[str, ...]]]) -> Path:
    """An index of ``layout``'s files (name, collection, groups), graphed."""
    with Index.open(folder, settings=_settings(), create=True) as index:
        for name, collection, groups in layout:
            index.add([corpus / name], collection=collection, groups=groups)
        try:
            from sleuth.graph import Graph
        except ImportError:  # pragma: no cover - the graph extra is missing
            return folder
        with Graph.open(index) as graph:
            graph.build()
    return folder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tenants")
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def full(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("spacy")
    return _build(tmp_path_factory.mktemp("full") / "idx", corpus, list(DOCS))


class Api:
    """A running server over one index and a client per key."""

    def __init__(self, folder: Path, **serve: Any) -> None:
        self.service = Service(folder, _settings(**serve))
        self.service.warm.wait(120)  # its status says so: compared servers are alike in it
        self.live = LiveServer(create_app(self.service))

    def client(self, key: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.live.url, headers=headers, timeout=60)

    def close(self) -> None:
        self.live.close()
        self.service.close()


@pytest.fixture(scope="module")
def api(full: Path) -> Iterator[Api]:
    running = Api(full)
    yield running
    running.close()


def _calls() -> list[tuple[str, dict[str, Any]]]:
    """Tool calls a curious tenant would try: its own words, other tenants' secrets, hidden
    chunk ids and document ids, adjacent reads, graph hops."""
    hidden = ["globex:plans.md#0", "acme~hr:salaries.md#0", "acme~hr:salaries.md#1",
              "handbook.md#0"]
    return [
        ("keyword_search", {"keywords": ["zephyrine"], "top_k": 10}),
        ("keyword_search", {"keywords": ["marmalade-falcon", "quokka"], "top_k": 10}),
        ("keyword_search", {"keywords": ["globex"]}),
        ("keyword_search", {"keywords": ["zephyr"], "mode": "substring", "top_k": 10}),
        ("semantic_search", {"query": "What is the secret codeword?", "top_k": 10}),
        ("naive_embedding_search", {"query": "Who leads Project Zephyrine?", "top_k": 10}),
        ("search", {"queries": ["Zephyrine launch", "codeword", "Hank Scorpio"], "top_k": 10}),
        ("chunk_read", {"chunk_ids": ["acme:roadmap.md#1"], "adjacent": 3}),
        ("chunk_read", {"chunk_ids": hidden}),
        ("chunk_read", {"chunk_ids": ["acme:roadmap.md#0", *hidden], "adjacent": 2}),
        ("find", {"ref": "acme:roadmap.md", "patterns": ["Zephyrine"]}),
        ("find", {"ref": "globex:plans.md", "patterns": ["Zephyrine"]}),
        ("find", {"ref": "acme~hr:salaries.md", "patterns": ["codeword"]}),
        ("open", {"ref": "acme~hr:salaries.md"}),
        ("open", {"ref": "handbook.md", "line": 0}),
        ("graph_entity", {"name": "Hank Scorpio"}),
        ("graph_entity", {"name": "Maria Okafor"}),
        ("graph_entity", {"name": "Globex"}),
        ("graph_neighbors", {"entity": "Zephyrine"}),
        ("graph_neighbors", {"entity": "Maria Okafor"}),
        ("graph_path", {"source": "Maria Okafor", "target": "Hank Scorpio"}),
        ("graph_ppr", {"entities": ["Zephyrine", "Maria Okafor"], "top_k": 10}),
        ("compare_dates", {"entities": ["Maria Okafor", "Hank Scorpio", "Zephyrine"],
                           "event": "born"}),
        ("person_fact", {"entity": "Zephyrine", "fact": "birth_date", "relation": "founder"}),
    ]


def _answers(client: httpx.Client) -> list[Any]:
    out: list[Any] = [client.get("/v1/status").json()]
    for name, arguments in _calls():
        response = client.post(f"/v1/tools/{name}", json=arguments)
        out.append((name, arguments, response.status_code, _without_ids(response.json())))
    return out


def _same_answers(api: Api, reference: Path, key: str) -> list[Any]:
    """What ``key`` gets from ``api``, checked equal to what it gets from a server over the
    ``reference`` index."""
    other = Api(reference)
    try:
        with api.client(key) as mine, other.client(key) as theirs:
            got, expected = _answers(mine), _answers(theirs)
    finally:
        other.close()
    for a, b in zip(got, expected, strict=True):
        assert _alike(a, b), (a, b)
    return got


_NUMBER = re.compile(r"-?\d+\.\d+")


def _alike(a: Any, b: Any) -> bool:
    """Equal, but for scores a last digit apart: two indexes embed their chunks in other
    batches, and float sums in another order differ by about 1e-6."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_alike(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_alike(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-5
    if isinstance(a, str) and isinstance(b, str):
        numbers = [_NUMBER.findall(t) for t in (a, b)]
        return _NUMBER.split(a) == _NUMBER.split(b) and all(
            abs(float(x) - float(y)) <= 1e-5 for x, y in zip(*numbers, strict=True))
    return bool(a == b)


def _without_ids(value: Any) -> Any:
    """Graph entity ids are row numbers of each graph's own table: two graphs number the
    same entities differently, so they are left out of the comparison."""
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if k not in ("id", "entity_id")}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


@pytest.mark.parametrize("key", sorted(VISIBLE))
def test_a_tenant_sees_exactly_an_index_of_its_documents(
        key: str, api: Api, corpus: Path, tmp_path: Path) -> None:
    got = _same_answers(api, _build(tmp_path / "only-visible", corpus, VISIBLE[key]), key)
    text = json.dumps(got)
    for name, _, _ in LAYOUT:  # and nothing of the hidden files at all
        if name not in VISIBLE[key]:
            hidden = DOCS[name].split("\n")[0].lstrip("# ")
            assert hidden not in text, f"{key} saw the title of {name}"


def test_an_admin_key_sees_every_collection(api: Api) -> None:
    with api.client("k-root") as client:
        status = client.get("/v1/status").json()
        hits = client.post("/v1/tools/keyword_search",
                           json={"keywords": ["zephyrine"], "top_k": 10}).json()["data"]
    assert status["documents"] == 4 and status["caller"]["admin"] is True
    assert {h["doc_id"] for h in hits["hits"]} == {
        "handbook.md", "acme:roadmap.md", "acme~hr:salaries.md", "globex:plans.md"}


def test_hidden_ids_read_exactly_like_ids_that_never_existed(api: Api) -> None:
    with api.client("k-staff") as client:
        def read(chunk_id: str) -> str:
            body = client.post("/v1/tools/chunk_read", json={"chunk_ids": [chunk_id]}).json()
            return json.dumps(body).replace(chunk_id, "ID")

        assert read("acme~hr:salaries.md#0") == read("acme:nothing.md#0")
        assert read("globex:plans.md#1") == read("acme:nothing.md#0")
        gone = client.delete("/v1/documents/globex:plans.md")
        never = client.delete("/v1/documents/globex:never.md")
    assert gone.status_code == never.status_code == 404
    assert gone.json()["detail"].replace("plans", "never") == never.json()["detail"]


def test_sessions_belong_to_their_key(api: Api) -> None:
    with api.client("k-staff") as staff, api.client("k-globex") as globex:
        found = staff.post("/v1/tools/search?session=shared-id",
                           json={"queries": ["Zephyrine launch"]}).json()
        ref = found["data"]["results"][0]["ref"]
        assert staff.post("/v1/tools/open?session=shared-id", json={"ref": ref}).status_code \
            == 200
        assert globex.get("/v1/sessions/shared-id").status_code == 404
        assert globex.get("/v1/sessions").json() == []
        assert globex.delete("/v1/sessions/shared-id").status_code == 404
        # the same id under another key is another session: the reference id means nothing
        reuse = globex.post("/v1/tools/open?session=shared-id", json={"ref": ref})
        assert reuse.status_code == 404 and "unknown reference id" in reuse.json()["detail"]
        assert [s["id"] for s in staff.get("/v1/sessions").json()] == ["shared-id"]
        with api.client("k-hr") as hr:  # same collection, another key: not shared either
            assert hr.get("/v1/sessions/shared-id").status_code == 404


def test_writes_stay_in_the_callers_collection_and_groups(
        full: Path, corpus: Path, tmp_path: Path) -> None:
    folder = tmp_path / "idx"
    shutil.copytree(full, folder)
    outside = tmp_path / "outside"
    outside.mkdir()
    running = Api(folder, document_roots=[str(corpus)], api_keys={  # staff's roots: its own
        **KEYS, "acme-staff": {"key": "k-staff", "collection": "acme",
                               "document_roots": [str(corpus)]}})
    try:
        with running.client("k-globex") as globex, running.client("k-staff") as staff, \
                running.client("k-root") as root:
            upload = globex.post("/v1/documents", files={"files": (
                "roadmap.md", b"# Globex Roadmap\n\nGlobex launches Project Quasar.\n")})
            assert upload.status_code == 200, upload.text
            assert upload.json()["added_ids"] == ["globex:roadmap.md"]
            mine = staff.post("/v1/tools/open", json={"ref": "acme:roadmap.md"}).json()
            assert "Acme Roadmap" in mine["text"]  # acme's file of the same name is intact
            theirs = staff.post("/v1/tools/keyword_search", json={"keywords": ["quasar"]})
            assert theirs.json()["data"]["hits"] == []
            denied = [
                globex.post("/v1/documents", data={"collection": "acme"},
                            files={"files": ("x.md", b"# X\n\nx\n")}),
                staff.post("/v1/documents", data={"groups": "hr"},
                           files={"files": ("x.md", b"# X\n\nx\n")}),
                staff.post("/v1/documents", json={"paths": [str(corpus / "plans.md")],
                                                  "collection": "globex"}),
                root.post("/v1/documents", json={"paths": [str(outside)]}),
            ]
            assert [r.status_code for r in denied] == [403, 403, 403, 403]
            assert "document_roots" in denied[3].json()["detail"]
            twice = globex.post("/v1/documents", files=[
                ("files", ("a.md", b"# A\n\na\n")), ("files", ("a.md", b"# B\n\nb\n"))])
            assert twice.status_code == 200, twice.text
            second = twice.json()["files"][1]
            assert second["status"] == "error" and "also named 'a.md'" in second["error"]
            shared = staff.post("/v1/documents", json={"paths": [str(corpus / "handbook.md")]})
            assert shared.status_code == 200, shared.text
            assert shared.json()["added_ids"] == ["acme:handbook.md"]
            assert globex.get("/v1/runs").status_code == 403
    finally:
        running.close()


def test_mcp_over_http_needs_a_key_and_scopes_by_it(api: Api) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    from sleuth.server.mcp import http_app

    live = LiveServer(http_app(api.service))
    try:
        assert httpx.post(f"{live.url}/mcp", json={}).status_code == 401
        assert httpx.post(f"{live.url}/mcp", json={},
                          headers={"X-API-Key": "wrong"}).status_code == 401

        async def main() -> dict[str, Any]:
            http = create_mcp_http_client(headers={"Authorization": "Bearer k-globex"})
            async with Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) \
                    as client:
                result = await client.call_tool("keyword_search",
                                                {"keywords": ["zephyrine"], "top_k": 10})
                data: dict[str, Any] = result.structured_content or {}
                return data

        data = anyio.run(main)
    finally:
        live.close()
    assert {h["doc_id"] for h in data["hits"]} == {"globex:plans.md"}


def test_bm25_statistics_ignore_hidden_documents(full: Path, corpus: Path,
                                                 tmp_path: Path) -> None:
    reference = _build(tmp_path / "ref", corpus, VISIBLE["k-globex"])
    access = Access.of("globex", [])
    with Index.open(full, settings=_settings()) as index, \
            Index.open(reference, settings=_settings()) as only:
        mine = index.scoped(access).bm25_search("zephyrine codeword launch", top_k=10)
        theirs = only.scoped(access).bm25_search("zephyrine codeword launch", top_k=10)
        everyone = index.bm25_search("zephyrine codeword launch", top_k=10)
    assert mine == theirs and mine
    assert len(everyone) > len(mine)


def test_cli_indexes_into_a_collection_with_groups(sleuth: Any, corpus: Path,
                                                   tmp_path: Path) -> None:
    out = sleuth("index", str(corpus / "salaries.md"), "--index", str(tmp_path / "idx"),
                 "--collection", "acme", "--groups", "hr,finance", "--json")
    assert out.code == 0, out.err
    with Index.open(tmp_path / "idx") as index:
        assert index.store.document_access() == {
            "acme~finance~hr:salaries.md": ("acme", ("finance", "hr"))}
        assert index.scoped(Access.of("acme", ["sales"])).keyword_search("codeword") == []
        assert index.scoped(Access.of("acme", ["hr"])).keyword_search("codeword")
    bad = sleuth("index", str(corpus / "plans.md"), "--index", str(tmp_path / "idx"),
                 "--collection", "no way")
    assert bad.code != 0 and "invalid collection name" in bad.err


def test_a_format_1_index_is_migrated_on_open(sample_index: Path, tmp_path: Path) -> None:
    folder = tmp_path / "old"
    shutil.copytree(sample_index, folder)
    with sqlite3.connect(folder / "sleuth.db") as db:  # what format 1 looked like
        for table, column in (("documents", "collection"), ("documents", "groups"),
                              ("chunks", "n_words")):
            db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["format_version"] = 1
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with Index.open(folder) as index, Index.open(sample_index) as current:
        assert index.store.manifest["format_version"] == 3
        assert index.store.manifest["migrated"]["from"] == 1
        assert set(index.store.document_access().values()) == {("default", ())}
        open_all = Access.of("default", [])
        query = "tobacco heart smoking"
        assert index.scoped(open_all).bm25_search(query) == \
            current.scoped(open_all).bm25_search(query)
        assert index.keyword_search("tobacco") == current.keyword_search("tobacco")


def _mcp_answers(url: str, key: str) -> list[Any]:
    """Every call of :func:`_calls` through the official MCP client, as ``(tool, error,
    structured content or text)``."""
    import anyio
    from mcp import Client
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    async def main() -> list[Any]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
        out: list[Any] = []
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            for name, arguments in _calls():
                result = await client.call_tool(name, arguments)
                text = [getattr(c, "text", "") for c in result.content]
                out.append((name, result.is_error, result.structured_content or text))
        return out

    return anyio.run(main)


@pytest.mark.slow  # another process, and a wait for its change
def test_an_access_change_by_another_process_applies_to_the_next_request(
        full: Path, corpus: Path, tmp_path: Path) -> None:
    """A running server (HTTP and MCP) keeps nothing stale: after the CLI, in other
    processes, moves the roadmap into group ``hr`` and opens the salaries to the whole
    collection, the very next requests of every key answer exactly as a server over an
    index built with the new layout does, and no call fails."""
    pytest.importorskip("mcp")
    import subprocess
    import sys

    from sleuth.server.mcp import http_app

    folder = tmp_path / "idx"
    shutil.copytree(full, folder)
    api = Api(folder)
    mcp = LiveServer(http_app(api.service))
    try:
        for key in VISIBLE:  # caches warm: every tool, every key, both servers
            with api.client(key) as client:
                before = _answers(client)
            assert all(status < 500 for _, _, status, _ in before[1:])
            _mcp_answers(mcp.url, key)
        with api.client("k-staff") as client:
            hits = client.post("/v1/tools/keyword_search",
                               json={"keywords": ["zephyrine"]}).json()["data"]["hits"]
        assert {h["doc_id"] for h in hits} == {"acme:roadmap.md"}
        for name, groups in (("roadmap.md", ["--groups", "hr"]), ("salaries.md", [])):
            done = subprocess.run(
                [sys.executable, "-m", "sleuth", "index", str(corpus / name), "--index",
                 str(folder), "--collection", "acme", *groups, "--chunk-tokens", "40"],
                capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr
            # a document's groups are part of its id: it moves to the new one, whose
            # entities the graph learns as it does any new document's
            assert "added 1" in done.stdout and "removed 1" in done.stdout
        graphed = subprocess.run([sys.executable, "-m", "sleuth", "graph", "build", "--index",
                                  str(folder)], capture_output=True, text=True, timeout=300)
        assert graphed.returncode == 0, graphed.stderr
        now = {"roadmap.md": ("acme", ("hr",)), "salaries.md": ("acme", ())}
        now_visible = {"k-staff": ["salaries.md"], "k-hr": ["roadmap.md", "salaries.md"],
                       "k-globex": ["plans.md"]}
        for key, files in now_visible.items():
            layout = [(name, *now.get(name, (c, g))) for name, c, g in LAYOUT if name in files]
            got = _same_answers(api, _build_layout(tmp_path / f"ref-{key}", corpus, layout),
                                key)
            assert all(status < 500 for _, _, status, _ in got[1:])
            over_mcp = _mcp_answers(mcp.url, key)
            text = json.dumps(over_mcp)
            if key == "k-staff":
                for secret in ("Lisbon", "pilot customers", "Acme Roadmap", "mobile client"):
                    assert secret not in text  # (its id, echoed back as unknown, is no leak)
            if key == "k-hr":
                found = next(r for name, _, r in over_mcp if name == "keyword_search")
                assert {h["doc_id"] for h in found["hits"]} == \
                    {"acme~hr:roadmap.md", "acme:salaries.md"}
    finally:
        mcp.close()
        api.close()
