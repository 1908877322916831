"""Hostile input and hostile neighbours, tried as an attacker would: another tenant's key, a
page on another site, a host name that is not the server's, files built to stall a parser,
links out of a folder, a flood of questions. Every case is small and made by the test (the
full-size ones run in ``bench/hostile.py``).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
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
from sleuth.testing.fake import FakeLLMServer, reply  # noqa: E402

KEYS = {"root": "k-root", "acme-staff": {"key": "k-staff", "collection": "acme"},
        "acme-hr": {"key": "k-hr", "collection": "acme", "groups": ["hr"]},
        "acme-hr-legal": {"key": "k-hrl", "collection": "acme", "groups": ["hr", "legal"]}}
SALARIES = b"# Salaries\n\nMaria Okafor earns the most. The codeword is marmalade-falcon.\n"


def _settings(**serve: Any) -> Settings:
    return Settings.load(chunk={"tokens": 60}, serve={"api_keys": KEYS, **serve})


class Api:
    """A live server over ``folder`` with a client per key."""

    def __init__(self, folder: Path, settings: Settings | None = None) -> None:
        self.service = Service(folder, settings or _settings())
        self.live = LiveServer(create_app(self.service))

    def client(self, key: str | None = None, **headers: str) -> httpx.Client:
        sent = {"Authorization": f"Bearer {key}", **headers} if key else headers
        return httpx.Client(base_url=self.live.url, headers=sent, timeout=60)

    def close(self) -> None:
        self.live.close()
        self.service.close()


@pytest.fixture()
def tenants(tmp_path: Path) -> Iterator[Api]:
    """An index holding acme's open roadmap and its salaries for group hr only, and one
    document for hr and legal together."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "roadmap.md").write_text("# Roadmap\n\nAcme launches Zephyrine in May.\n")
    (docs / "salaries.md").write_bytes(SALARIES)
    (docs / "contract.md").write_text("# Contract\n\nThe contract renews in June.\n")
    with Index.open(tmp_path / "idx", settings=_settings(), create=True) as index:
        index.add([docs / "roadmap.md"], collection="acme")
        index.add([docs / "salaries.md"], collection="acme", groups=["hr"])
        index.add([docs / "contract.md"], collection="acme", groups=["hr", "legal"])
    api = Api(tmp_path / "idx")
    yield api
    api.close()


def _upload(client: httpx.Client, name: str, content: bytes, **form: str) -> httpx.Response:
    return client.post("/v1/documents", files={"files": (name, content)}, data=form)


# -- 1. a key writes only what it can read ----------------------------------------------------

def test_a_tenant_cannot_overwrite_or_detect_a_document_it_cannot_read(tenants: Api) -> None:
    with tenants.client("k-staff") as staff, tenants.client("k-hr") as hr:
        hidden = _upload(staff, "salaries.md", b"# Salaries\n\nEveryone earns the same.\n")
        fresh = _upload(staff, "bonuses.md", b"# Bonuses\n\nEveryone earns the same.\n")
        assert hidden.status_code == fresh.status_code == 200, hidden.text
        # the same answer as for a name nobody used: no "updated", no hint of a hidden one
        assert hidden.json()["added_ids"] == ["acme:salaries.md"]
        assert fresh.json()["added_ids"] == ["acme:bonuses.md"]
        assert hidden.json()["updated_ids"] == fresh.json()["updated_ids"] == []
        # hr's document is untouched: its text, its id, its groups
        text = hr.post("/v1/tools/open", json={"ref": "acme~hr:salaries.md"}).json()["text"]
        assert "marmalade-falcon" in text and "earns the same" not in text
        owners = tenants.service.index.store.document_access()
        assert owners["acme~hr:salaries.md"] == ("acme", ("hr",))
        assert owners["acme:salaries.md"] == ("acme", ())
        # a corpus.json naming another scope's id only writes into the caller's own scope
        records = json.dumps([{"id": "acme~hr:salaries.md", "title": "Salaries",
                               "text": "Everyone earns the same."}]).encode()
        forged = _upload(staff, "corpus.json", records)
        assert forged.status_code == 200, forged.text
        assert forged.json()["added_ids"] == ["acme:acme~hr:salaries.md"]
        text = hr.post("/v1/tools/open", json={"ref": "acme~hr:salaries.md"}).json()["text"]
        assert "marmalade-falcon" in text


def test_deleting_needs_every_group_of_the_document(tenants: Api) -> None:
    with tenants.client("k-staff") as staff, tenants.client("k-hr") as hr, \
            tenants.client("k-hrl") as both:
        assert staff.delete("/v1/documents/acme~hr:salaries.md").status_code == 404
        assert staff.delete("/v1/documents/acme~hr:nothing.md").status_code == 404
        refused = hr.delete("/v1/documents/acme~hr~legal:contract.md")  # reads it, holds hr only
        assert refused.status_code == 403 and "groups" in refused.json()["detail"]
        assert both.delete("/v1/documents/acme~hr~legal:contract.md").status_code == 200
        assert hr.delete("/v1/documents/acme~hr:salaries.md").status_code == 200


def test_a_tenant_of_the_default_collection_cannot_name_another_scope(tmp_path: Path) -> None:
    settings = Settings.load(serve={"api_keys": {
        "root": "k-root", "house": {"key": "k-house", "collection": "default"}}})
    with Index.open(tmp_path / "idx", settings=settings, create=True) as index:
        (tmp_path / "plans.md").write_text("# Plans\n\nSecret plans.\n")
        index.add([tmp_path / "plans.md"], collection="acme")
    api = Api(tmp_path / "idx", settings)
    try:
        with api.client("k-house") as house:
            records = json.dumps([{"id": "acme:plans.md", "title": "Plans",
                                   "text": "Overwritten."}]).encode()
            answer = _upload(house, "corpus.json", records).json()
        assert answer["added_ids"] == [] and answer["updated_ids"] == []
        assert "name a collection's documents" in answer["skipped"][0]["reason"]
        assert "Secret plans" in (api.service.index.document("acme:plans.md") or
                                  pytest.fail("gone")).text
    finally:
        api.close()


# -- 2. other web pages and host names --------------------------------------------------------

def test_other_sites_and_host_names_are_refused(sample_copy: Path, tmp_path: Path) -> None:
    folder = tmp_path / "some-folder"
    folder.mkdir()
    (folder / "x.md").write_text("# X\n\nx\n")
    api = Api(sample_copy, Settings.load(serve={"api_keys": KEYS}))
    try:
        base = api.live.url
        # a page's no-cors "simple" request: a JSON body declared as text/plain
        simple = httpx.post(f"{base}/v1/documents", content=json.dumps({"paths": [str(folder)]}),
                            headers={"Content-Type": "text/plain",
                                     "Authorization": "Bearer k-root"})
        assert simple.status_code == 415, simple.text
        form = httpx.post(f"{base}/v1/tools/keyword_search", data={"keywords": "x"},
                          headers={"Authorization": "Bearer k-root"})
        assert form.status_code == 415
        cross = httpx.post(f"{base}/v1/tools/keyword_search", json={"keywords": ["Pepys"]},
                           headers={"Authorization": "Bearer k-root",
                                    "Origin": "https://evil.example"})
        assert cross.status_code == 403 and "another web page" in cross.json()["detail"]
        same = httpx.post(f"{base}/v1/tools/keyword_search", json={"keywords": ["Pepys"]},
                          headers={"Authorization": "Bearer k-root", "Origin": base})
        assert same.status_code == 200
        rebound = httpx.get(f"{base}/v1/status", headers={"Host": "evil.example:8765",
                                                          "Authorization": "Bearer k-root"})
        assert rebound.status_code == 421 and "serve.allowed_hosts" in rebound.json()["detail"]
        assert httpx.get(f"{base}/", headers={"Host": "evil.example"}).status_code == 421
        assert httpx.get(base.replace("127.0.0.1", "localhost") + "/").status_code == 200
        assert api.service.index.stats().documents == 3  # nothing was indexed
    finally:
        api.close()


def test_no_auth_beyond_this_machine_needs_saying_so(sleuth: Any, sample_copy: Path) -> None:
    refused = sleuth("serve", "http", "--index", str(sample_copy), "--no-auth", "--host",
                     "0.0.0.0")
    assert refused.code != 0 and "--allow-remote-no-auth" in refused.err
    refused = sleuth("serve", "mcp", "--transport", "http", "--index", str(sample_copy),
                     "--no-auth", "--host", "0.0.0.0")
    assert refused.code != 0 and "--allow-remote-no-auth" in refused.err


def test_chat_links_come_from_the_server_not_the_request(sample_copy: Path) -> None:
    answer = "Greatorex showed him. [pepys-diary-1660.md#0]"
    with FakeLLMServer([reply(answer)] * 4) as llm, pytest.MonkeyPatch.context() as env:
        env.setenv("SLEUTH_BASE_URL", llm.base_url)
        env.setenv("SLEUTH_MODEL", "fake-model")
        api = Api(sample_copy, Settings.load(
            serve={"api_keys": KEYS, "allowed_hosts": ["*"]},
            agent={"settled_answers": "model"}))
        try:
            with api.client("k-root", Host="evil.example") as client:
                got = client.post("/v1/chat/completions", json={
                    "model": "sleuth-naive-rag",
                    "messages": [{"role": "user", "content": "Who showed Pepys levers?"}]})
            content = got.json()["choices"][0]["message"]["content"]
        finally:
            api.close()
    assert "evil.example" not in content
    assert f"]({api.live.url}/#/passage?doc=pepys-diary-1660.md" in content


# -- 3 and 4. bounded parsing, one bad file never stops the rest ------------------------------

def _deep_html(depth: int) -> str:
    return "<html><body>" + "<div>" * depth + "deep text" + "</div>" * depth + "</body></html>"


def _docx_bomb() -> bytes:
    docx = pytest.importorskip("docx")
    word = docx.Document()
    for _ in range(3000):
        word.add_paragraph("a" * 1000)
    out = io.BytesIO()
    word.save(out)
    return out.getvalue()


def _long_pdf(chars: int) -> bytes:
    pymupdf = pytest.importorskip("pymupdf")
    pdf = pymupdf.open()
    page = pdf.new_page()
    line = "tide " * 20
    page.insert_textbox(pymupdf.Rect(10, 10, 590, 830), (line + "\n") * (chars // len(line)),
                        fontsize=3)
    data: bytes = pdf.tobytes()
    return data


def test_a_folder_of_hostile_files_is_indexed_around_them(sleuth: Any, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a-good.md").write_text("# Good\n\nThe tide turns at six.\n")
    (folder / "b-deep.html").write_text(_deep_html(20_000))
    (folder / "c-bomb.docx").write_bytes(_docx_bomb())
    (folder / "d-long.pdf").write_bytes(_long_pdf(8000))
    (folder / "e-one-line.txt").write_text("x" * 1_200_000)  # one 1.2 MB "sentence"
    (folder / "f-good.html").write_text("<title>Fine</title><p>The moon pulls the tide.</p>")
    monkeypatch.setenv("SLEUTH_INGEST__MAX_CHARS", "1500000")
    started = time.monotonic()
    out = sleuth("index", str(folder), "--index", str(tmp_path / "idx"), "--json")
    took = time.monotonic() - started
    assert out.code == 0, out.err
    report = json.loads(out.out)
    reasons = {Path(s["path"]).name: s["reason"] for s in report["skipped"]}
    assert "nested more than 256 elements deep (ingest.max_depth)" in reasons["b-deep.html"]
    assert "unzips to" in reasons["c-bomb.docx"]
    assert set(reasons) == {"b-deep.html", "c-bomb.docx"}, reasons
    assert report["added"] == 4  # the good files, the PDF and the one-line text
    assert took < 120, took
    monkeypatch.setenv("SLEUTH_INGEST__MAX_CHARS", "2000")
    small = sleuth("index", str(folder / "d-long.pdf"), str(folder / "a-good.md"),
                   "--index", str(tmp_path / "idx2"), "--json")
    assert small.code == 0, small.err
    [skipped] = json.loads(small.out)["skipped"]
    assert skipped["path"].endswith("d-long.pdf") and "ingest.max_chars" in skipped["reason"]


def test_a_parser_over_its_time_is_stopped_and_the_next_file_read(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.html").write_text("<title>A</title><p>First page.</p>")
    (folder / "b.html").write_text(_deep_html(30_000))  # ~1-4 s in the HTML parser
    (folder / "c.html").write_text("<title>C</title><p>Last page.</p>")
    settings = Settings.load(ingest={"max_depth": 100_000, "parse_seconds": 0.25})
    with Index.open(tmp_path / "idx", settings=settings, create=True) as index:
        started = time.monotonic()
        report = index.add([folder])
        took = time.monotonic() - started
    assert sorted(report.added) == ["a.html", "c.html"]
    [skipped] = report.skipped
    assert skipped.path.endswith("b.html") and "ingest.parse_seconds" in skipped.reason
    assert took < 30


def test_hostile_uploads_are_refused_and_leave_nothing(tenants: Api) -> None:
    uploads = tenants.service.index.folder / "uploads"
    with tenants.client("k-staff") as staff:
        deep = _upload(staff, "deep.html", _deep_html(5000).encode())
        assert deep.status_code == 200, deep.text
        [status] = deep.json()["files"]
        assert status["status"] == "error" and "ingest.max_depth" in status["error"]
        manifest = _upload(staff, "manifest.json", json.dumps({"format_version": 3}).encode())
        assert manifest.status_code == 400
        detail = manifest.json()["detail"]
        assert str(tenants.service.index.folder) not in detail and "/tmp" not in detail
        assert "manifest.json" in detail
    left = sorted(p.name for p in uploads.rglob("*") if p.is_file())
    assert left == [], left


def test_deeply_nested_json_is_a_400_on_every_route(tenants: Api) -> None:
    deep = "[" * 200_000 + "]" * 200_000
    deep_object = '{"question": ' + "[" * 200_000 + "]" * 200_000 + "}"
    with tenants.client("k-root") as root:
        for path, body in (("/v1/tools/keyword_search", deep), ("/v1/tools/nope", deep),
                           ("/v1/ask", deep_object), ("/v1/chat/completions", deep),
                           ("/v1/documents", deep)):
            got = root.post(path, content=body, headers={"Content-Type": "application/json"})
            assert got.status_code in (400, 413), (path, got.status_code, got.text[:200])
            assert got.headers["content-type"].startswith("application/json"), path
        got = root.patch("/v1/sessions/s1", content=deep,
                         headers={"Content-Type": "application/json"})
        assert got.status_code == 400 and got.json()


# -- 5. fair serving --------------------------------------------------------------------------

def test_a_key_has_few_questions_going_and_the_app_never_waits(sample_copy: Path) -> None:
    slow = {**reply("Slowly. [pepys-diary-1660.md#0]"), "delay": 3.0}
    with FakeLLMServer([slow] * 20) as llm, pytest.MonkeyPatch.context() as env:
        env.setenv("SLEUTH_BASE_URL", llm.base_url)
        env.setenv("SLEUTH_MODEL", "fake-model")
        api = Api(sample_copy, Settings.load(serve={"api_keys": KEYS, "asks_per_key": 2},
                                             agent={"settled_answers": "model"}))
        try:
            answers: list[httpx.Response] = []

            def ask() -> None:
                with api.client("k-root") as client:
                    answers.append(client.post("/v1/ask", json={
                        "question": "Who?", "agent": "naive-rag"}))

            runs = [threading.Thread(target=ask) for _ in range(3)]
            for run in runs:
                run.start()
                time.sleep(0.2)
            with api.client("k-staff") as other:
                started = time.monotonic()
                page = other.get("/")
                sessions = other.get("/v1/sessions")
                status = other.get("/v1/status")
                quick = time.monotonic() - started
            for run in runs:
                run.join(30)
        finally:
            api.close()
    codes = sorted(a.status_code for a in answers)
    assert codes == [200, 200, 429], [a.text[:200] for a in answers]
    refused = next(a for a in answers if a.status_code == 429)
    assert int(refused.headers["Retry-After"]) >= 1 and "asks_per_key" in refused.json()["detail"]
    assert page.status_code == sessions.status_code == status.status_code == 200
    assert quick < 2.0, quick


# -- 6. links out of a folder -----------------------------------------------------------------

def test_links_out_of_the_folder_are_skipped(sleuth: Any, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("The vault code is 4417.\n")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "inside.md").write_text("# Inside\n\nA plain page.\n")
    (folder / "innocent.txt").symlink_to(outside / "secret.txt")
    (folder / "alias.md").symlink_to(folder / "inside.md")  # a link inside: fine
    out = sleuth("index", str(folder), "--index", str(tmp_path / "idx"), "--json")
    assert out.code == 0, out.err
    report = json.loads(out.out)
    assert report["added"] == 1  # the link inside is the same page: indexed once
    [duplicate] = report["duplicates"]
    assert {Path(duplicate["path"]).name, Path(duplicate["reason"].split()[4]).name} == \
        {"inside.md", "alias.md"}
    [skipped] = report["skipped"]
    assert skipped["path"].endswith("innocent.txt") and "outside" in skipped["reason"]
    with Index.open(tmp_path / "idx") as index:
        assert index.keyword_search(["4417"]) == []


def test_a_server_never_reads_past_its_document_roots(sample_copy: Path,
                                                      tmp_path: Path) -> None:
    root = tmp_path / "allowed"
    (root / "team").mkdir(parents=True)
    (root / "team" / "notes.md").write_text("# Notes\n\nTeam notes.\n")
    (tmp_path / "secret.md").write_text("# Secret\n\nThe vault code is 4417.\n")
    (root / "team" / "innocent.md").symlink_to(tmp_path / "secret.md")
    folder = tmp_path / "idx"
    shutil.copytree(sample_copy, folder)
    api = Api(folder, Settings.load(chunk={"tokens": 60}, serve={"api_keys": {
        **KEYS, "acme-staff": {"key": "k-staff", "collection": "acme",
                               "document_roots": [str(root)]}}}))
    try:
        with api.client("k-staff") as staff:
            got = staff.post("/v1/documents", json={"paths": [str(root / "team")]})
            assert got.status_code == 200, got.text
            assert got.json()["added_ids"] == ["acme:notes.md"]
            assert "outside" in got.json()["skipped"][0]["reason"]
            direct = staff.post("/v1/documents", json={"paths": [str(root / "team" /
                                                                     "innocent.md")]})
            assert direct.status_code == 403
    finally:
        api.close()


# -- 7. what pages and connections get --------------------------------------------------------

def test_pages_carry_a_content_security_policy(tenants: Api) -> None:
    for path in ("/", "/viewer"):
        got = httpx.get(tenants.live.url + path)
        assert got.status_code == 200
        assert "default-src 'self'" in got.headers["content-security-policy"]
        assert "script-src 'self'" in got.headers["content-security-policy"]
        assert got.headers["referrer-policy"] == "no-referrer"
    api_answer = httpx.get(tenants.live.url + "/v1/status",
                           headers={"Authorization": "Bearer k-root"})
    assert api_answer.headers["x-content-type-options"] == "nosniff"


def test_slow_headers_are_cut_off(sample_copy: Path) -> None:
    import uvicorn

    from sleuth.server.serving import protocol

    service = Service(sample_copy, Settings.load(serve={"api_keys": KEYS}))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(service), host="127.0.0.1", port=port,
                                           log_level="warning", http=protocol(0.5)))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            started = time.monotonic()
            conn.sendall(b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            answer = conn.recv(200)
            took = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert took < 3, took
        assert httpx.get(f"http://127.0.0.1:{port}/").status_code == 200  # others are served
    finally:
        server.should_exit = True
        thread.join(10)
        service.close()


@pytest.mark.slow  # timing: a busy server process
def test_sigterm_stops_a_busy_server_within_seconds(sample_copy: Path, tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    stuck = {**reply("never"), "delay": 600.0}
    with FakeLLMServer([stuck] * 4) as llm:
        env = {**os.environ, "SLEUTH_BASE_URL": llm.base_url, "SLEUTH_MODEL": "fake-model",
               "SLEUTH_AGENT__SETTLED_ANSWERS": "model"}
        server = subprocess.Popen([sys.executable, "-m", "sleuth", "serve", "http", "--index",
                                   str(sample_copy), "--no-auth", "--port", str(port)],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(base + "/v1/status", timeout=2)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline and server.poll() is None
                    time.sleep(0.2)
            asking = threading.Thread(target=lambda: httpx.post(
                base + "/v1/ask", json={"question": "Who?", "agent": "naive-rag"},
                timeout=120), daemon=True)
            asking.start()
            time.sleep(1.5)  # the question is waiting on the stuck LLM
            started = time.monotonic()
            server.send_signal(signal.SIGTERM)
            code = server.wait(timeout=30)
            took = time.monotonic() - started
        finally:
            if server.poll() is None:
                server.kill()
    assert took <= 5, took
    assert code == 0
