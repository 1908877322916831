"""What the browser app reads besides answers, over HTTP: the document list, passages with the
cited lines highlighted, PDF page images, session titles, where each citation came from, and
what became of each uploaded file. A real uvicorn server over a copy of the bundled sample,
with a tenant's Markdown file and a two-page PDF made here; the scripted LLM answers."""

from __future__ import annotations

import shutil
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi")
pymupdf = pytest.importorskip("pymupdf")

from conftest import LiveServer  # noqa: E402
from sleuth import Index, Settings  # noqa: E402
from sleuth.server.http import create_app  # noqa: E402
from sleuth.service.service import Service  # noqa: E402
from sleuth.testing.fake import call, reply  # noqa: E402
from sleuth.text.docview import DocumentView  # noqa: E402

PEPYS = "pepys-diary-1660.md"
PDF = "acme:quagga.pdf"
KEYS = {"root": "k-root", "acme": {"key": "k-acme", "collection": "acme"},
        "globex": {"key": "k-globex", "collection": "globex"}}
PAGES = ["The quagga grazed the Karoo plains.\nIts stripes faded toward the rump.",
         "The last quagga died in Amsterdam in 1883.\nZoos kept no breeding pair."]


def _settings() -> Settings:
    return Settings.load(serve={"api_keys": KEYS})


@pytest.fixture(scope="module")
def index_folder(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample (collection default), acme's roadmap and a two-page PDF, globex's plans."""
    folder = tmp_path_factory.mktemp("library") / "idx"
    shutil.copytree(sample_index, folder)
    sources = tmp_path_factory.mktemp("library-sources")
    pdf = pymupdf.open()
    for text in PAGES:
        pdf.new_page().insert_text((72, 72), text)
    pdf.save(sources / "quagga.pdf")
    (sources / "roadmap.md").write_text("# Acme Roadmap\n\nThe zephyr launch is in spring.\n")
    (sources / "plans.md").write_text("# Globex Plans\n\nGlobex copies the zephyr.\n")
    with Index.open(folder, settings=_settings()) as index:
        index.add([sources / "quagga.pdf", sources / "roadmap.md"], collection="acme")
        index.add([sources / "plans.md"], collection="globex")
    return folder


class Clients:
    """The API on 127.0.0.1 with one client per key."""

    def __init__(self, folder: Path) -> None:
        self.service = Service(folder, _settings())
        self.live = LiveServer(create_app(self.service))
        self.root, self.acme, self.globex = (
            httpx.Client(base_url=self.live.url, timeout=60,
                         headers={"Authorization": f"Bearer {key}"})
            for key in ("k-root", "k-acme", "k-globex"))

    def close(self) -> None:
        for client in (self.root, self.acme, self.globex):
            client.close()
        self.live.close()
        self.service.close()


@pytest.fixture()
def api(index_folder: Path) -> Iterator[Clients]:
    clients = Clients(index_folder)
    yield clients
    clients.close()


def view_of(api: Clients, doc_id: str) -> DocumentView:
    document = api.service.index.document(doc_id)
    assert document is not None
    return DocumentView(document)


def test_the_document_list_shows_each_key_its_own(api: Clients) -> None:
    everything = api.root.get("/v1/documents").json()
    assert everything["total"] == 6
    by_id = {d["doc_id"]: d for d in everything["documents"]}
    titles = [d["title"] for d in everything["documents"]]
    assert titles == sorted(titles, key=str.casefold)
    assert by_id[PEPYS]["type"] == "md" and by_id[PEPYS]["pages"] is None
    assert by_id[PEPYS]["chunks"] == len(api.service.index.chunk_spans(PEPYS)) > 1
    assert by_id[PEPYS]["collection"] == "default" and by_id[PEPYS]["groups"] == []
    assert by_id[PEPYS]["updated"].endswith("+00:00")  # the bundled file's last change
    assert {by_id["cornwall-journey.html"]["type"], by_id["childs-health-primer.txt"]["type"]} \
        == {"html", "txt"}
    assert by_id[PDF] == {"doc_id": PDF, "title": "quagga", "collection": "acme", "type": "pdf",
                          "pages": 2, "chunks": len(api.service.index.chunk_spans(PDF)),
                          "groups": [], "updated": by_id[PDF]["updated"]}
    acme = api.acme.get("/v1/documents").json()
    assert [d["doc_id"] for d in acme["documents"]] == ["acme:roadmap.md", PDF]
    assert acme["total"] == 2
    assert api.globex.get("/v1/documents", params={"collection": "acme"}).json() == {
        "documents": [], "total": 0}
    only = api.root.get("/v1/documents", params={"collection": "acme", "q": "QUAG"}).json()
    assert [d["doc_id"] for d in only["documents"]] == [PDF]
    page = api.root.get("/v1/documents", params={"limit": 2, "offset": 1}).json()
    assert page["total"] == 6 and page["documents"] == everything["documents"][1:3]
    assert api.root.get("/v1/documents", params={"limit": 1001}).status_code == 422
    assert api.root.get("/v1/documents", headers={"Authorization": ""}).status_code == 401


def test_a_passage_by_chunk_highlights_the_chunk(api: Clients) -> None:
    view = view_of(api, PEPYS)
    chunk_id, start, end = api.service.index.chunk_spans(PEPYS)[2]
    first, last = view.line_of(start), view.line_of(end - 1)
    got = api.root.get("/v1/passage", params={"chunk": chunk_id})
    assert got.status_code == 200, got.text
    shown = got.json()
    assert shown["highlight"] == [first, last] and shown["chunk_id"] == chunk_id
    assert (shown["doc_id"], shown["collection"], shown["type"]) == (PEPYS, "default", "md")
    assert shown["start_line"] == max(0, first - 15)
    assert shown["end_line"] == min(view.line_count - 1, last + 15)
    assert [line["number"] for line in shown["lines"]] == list(
        range(shown["start_line"], shown["end_line"] + 1))
    assert [line["text"] for line in shown["lines"]] == [
        view.line_text(n) for n in range(shown["start_line"], shown["end_line"] + 1)]
    assert shown["pages"] is shown["page"] is shown["image"] is None
    same = api.root.get("/v1/passage", params={"doc": PEPYS, "chunk": chunk_id}).json()
    assert same == shown
    wrong = api.root.get("/v1/passage", params={"doc": "cornwall-journey.html",
                                                "chunk": chunk_id})
    assert wrong.status_code == 404 and chunk_id in wrong.json()["detail"]


def test_a_cited_passage_marks_the_sentence_that_supports_the_claim(api: Clients) -> None:
    view = view_of(api, PEPYS)
    text = view.document.text
    at = text.index("he showed me how it comes to pass the strength that levers have")
    chunk_id, start, end = next(s for s in api.service.index.chunk_spans(PEPYS)
                                if s[1] <= at < s[2])
    chunk_lines = [view.line_of(start), view.line_of(end - 1)]
    line = view.line_of(at)
    claim = ("Greatorex showed Pepys how levers work and what happens to them over time "
             f"[{chunk_id}].")
    got = api.root.get("/v1/passage", params={"chunk": chunk_id, "support": claim})
    assert got.status_code == 200, got.text
    shown = got.json()
    assert shown["highlight"] == chunk_lines and chunk_lines[0] < chunk_lines[1]
    support = shown["support"]
    assert support["lines"] == [line, line]  # one line of the chunk's, not all of them
    sentence, = support["sentences"]
    assert "Greatorex" in sentence and "levers" in sentence and "rained" not in sentence
    mark, = support["marks"]
    shown_line = next(s["text"] for s in shown["lines"] if s["number"] == line)
    assert mark["line"] == line and shown_line[mark["start"]:mark["end"]] == sentence
    assert {"greatorex", "levers", "time"} <= set(support["terms"])

    # no sentence shares a word: the whole chunk stands; a claim over the limit is refused
    none = api.root.get("/v1/passage", params={"chunk": chunk_id, "support": "Zebras swim."})
    assert none.json()["support"] is None and none.json()["highlight"] == chunk_lines
    plain = api.root.get("/v1/passage", params={"chunk": chunk_id}).json()
    assert plain["support"] is None and plain["highlight"] == chunk_lines
    long = api.root.get("/v1/passage", params={"chunk": chunk_id, "support": "x" * 2001})
    assert long.status_code == 422
    declared = api.root.get("/openapi.json").json()["paths"]["/v1/passage"]["get"]
    query, = declared["parameters"]
    assert query["schema"]["properties"]["support"] == {
        "type": "string", "maxLength": 2000, "description": query["schema"]["properties"][
            "support"]["description"]}


def test_a_passage_by_lines_and_from_the_start(api: Clients) -> None:
    view = view_of(api, PEPYS)
    assert view.line_count == 39
    shown = api.root.get("/v1/passage", params={"doc": PEPYS, "lines": "20-22"}).json()
    assert shown["highlight"] == [20, 22] and shown["chunk_id"] is None
    assert (shown["start_line"], shown["end_line"]) == (5, 37)
    clamped = api.root.get("/v1/passage", params={"doc": PEPYS, "lines": "30-99"}).json()
    assert clamped["highlight"] == [30, 38] and clamped["end_line"] == 38
    one = api.root.get("/v1/passage", params={"doc": PEPYS, "lines": "3"}).json()
    assert one["highlight"] == [3, 3] and one["start_line"] == 0
    start = api.root.get("/v1/passage", params={"doc": PEPYS}).json()
    assert start["highlight"] is None and start["start_line"] == 0
    assert start["end_line"] == 38 and len(start["lines"]) == 39
    assert start["lines"][0]["text"] == view.line_text(0) == "# " + view.document.title
    # lines or a page the document does not have are not found; what the schema allows
    # is read (a range given backwards is the same range)
    past = api.root.get("/v1/passage", params={"doc": PEPYS, "lines": "9999-10000"})
    assert past.status_code == 404 and "past the end" in past.json()["detail"]
    backwards = api.root.get("/v1/passage", params={"doc": PEPYS, "lines": "9-3"}).json()
    assert backwards["highlight"] == [3, 9]
    nothing = api.root.get("/v1/passage")
    assert nothing.status_code == 400 and "doc" in nothing.json()["detail"]
    unpaged = api.root.get("/v1/passage", params={"doc": PEPYS, "page": 1})
    assert unpaged.status_code == 404 and "no pages" in unpaged.json()["detail"]


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_a_pdf_page_with_its_image(api: Clients) -> None:
    view = view_of(api, PDF)
    shown = api.acme.get("/v1/passage", params={"doc": PDF, "page": 2}).json()
    assert (shown["pages"], shown["page"], shown["type"]) == (2, 2, "pdf")
    assert [line["number"] for line in shown["lines"]] == list(
        range(view.page_lines(2)[0], view.page_lines(2)[1] + 1))
    assert {line["page"] for line in shown["lines"]} == {2}
    assert "Amsterdam in 1883" in " ".join(line["text"] for line in shown["lines"])
    assert shown["image"] == "/v1/page-image?doc=acme%3Aquagga.pdf&page=2"
    image = api.acme.get(shown["image"])
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    width, height = png_size(image.content)
    page = pymupdf.open(view.document.path)[1].rect
    assert abs(width - page.width * 1.5) <= 1 and abs(height - page.height * 1.5) <= 1
    # the lines of a chunk on page 1, shown with that page
    chunk_id, start, end = api.service.index.chunk_spans(PDF)[0]
    first = api.acme.get("/v1/passage", params={"chunk": chunk_id}).json()
    assert first["page"] == 1 and first["image"].endswith("page=1")
    assert first["highlight"] == [view.line_of(start), view.line_of(end - 1)]
    missing = api.acme.get("/v1/passage", params={"doc": PDF, "page": 3})
    assert missing.status_code == 404 and "no page 3" in missing.json()["detail"]
    assert api.acme.get("/v1/page-image", params={"doc": PDF, "page": 3}).status_code == 404
    text = api.root.get("/v1/page-image", params={"doc": PEPYS, "page": 1})
    assert text.status_code == 404 and "not a PDF" in text.json()["detail"]


def test_another_tenants_document_does_not_exist(api: Clients) -> None:
    chunk_id = api.service.index.chunk_spans(PDF)[0][0]
    for params in ({"doc": PDF}, {"chunk": chunk_id}, {"doc": PDF, "page": 1}):
        hidden = api.globex.get("/v1/passage", params=params)
        absent = api.globex.get("/v1/passage", params={k: v.replace("quagga", "nosuch")
                                                       if isinstance(v, str) else v
                                                       for k, v in params.items()})
        assert hidden.status_code == absent.status_code == 404, params
        assert hidden.json()["detail"] == absent.json()["detail"].replace("nosuch", "quagga")
    image = api.globex.get("/v1/page-image", params={"doc": PDF, "page": 1})
    assert image.status_code == 404 and image.json()["detail"] == \
        f"no document {PDF!r} in the index"
    assert api.acme.get("/v1/passage", params={"doc": PEPYS}).status_code == 404
    assert api.root.get("/v1/passage", params={"doc": PDF}).status_code == 200


@pytest.fixture()
def asking(endpoint: Any, index_folder: Path) -> Iterator[Any]:
    """``asking(script)``: the API with the scripted LLM answering (started first, so the
    service's settings point at it)."""
    opened: list[Any] = []

    def start(script: list[dict[str, Any]]) -> Clients:
        opened.append(endpoint(script).__enter__())
        opened.append(Clients(index_folder))
        return opened[-1]

    yield start
    for thing in reversed(opened):
        if isinstance(thing, Clients):
            thing.close()
        else:
            thing.__exit__(None, None, None)


def test_sessions_have_titles_and_are_renamed(asking: Any) -> None:
    question = "Which instrument did Greatorex show Samuel Pepys in the spring of 1660 " \
               "and what did it do?"
    api = asking([reply("A dial."), reply("Plans.")])
    asked = api.root.post("/v1/ask", json={"question": question, "agent": "agenticrag",
                                            "session": "s1"})
    assert asked.status_code == 200, asked.text
    assert api.acme.post("/v1/ask", json={"question": "Zephyr?", "agent": "agenticrag",
                                          "session": "s1"}).status_code == 200
    [listed] = [s for s in api.root.get("/v1/sessions").json() if s["id"] == "s1"]
    assert listed["first_question"] == question and listed["turns"] == 1
    assert listed["title"] == "Which instrument did Greatorex show Samuel Pepys in the spring " \
                              "of 1660 and…"
    renamed = api.root.patch("/v1/sessions/s1", json={"title": "  Greatorex's dial "})
    assert renamed.status_code == 200 and renamed.json() == {"id": "s1",
                                                             "title": "Greatorex's dial"}
    [listed] = [s for s in api.root.get("/v1/sessions").json() if s["id"] == "s1"]
    assert listed["title"] == "Greatorex's dial" and listed["first_question"] == question
    one = api.root.get("/v1/sessions/s1").json()
    assert one["title"] == "Greatorex's dial" and len(one["turns"]) == 1
    # acme's session s1 is its own: untouched, and titled by its question
    assert api.acme.get("/v1/sessions/s1").json()["title"] == "Zephyr?"
    for bad in ("", "   ", "x" * 201, "two\nlines"):
        refused = api.root.patch("/v1/sessions/s1", json={"title": bad})
        assert refused.status_code == 400 and "1 to 200" in refused.json()["detail"]
    assert api.root.patch("/v1/sessions/s1", json={"name": "x"}).status_code == 422
    unknown = api.globex.patch("/v1/sessions/s1", json={"title": "Mine"})
    assert unknown.status_code == 404 and "no session 's1'" in unknown.json()["detail"]
    assert api.root.delete("/v1/sessions/s1").status_code == 200
    assert api.root.patch("/v1/sessions/s1", json={"title": "Gone"}).status_code == 404


def test_citations_say_which_tool_found_them_and_where(asking: Any) -> None:
    chunk_id, pdf_chunk = f"{PEPYS}#0", f"{PDF}#0"
    api = asking([call("keyword_search", keywords=["Greatorex"]),
                  reply(f"Levers [{chunk_id}]."),
                  call("keyword_search", keywords=["quagga"]),
                  call("chunk_read", chunk_ids=[pdf_chunk]),
                  reply(f"In Amsterdam [{pdf_chunk}]."),
                  call("search", queries=["quagga Amsterdam"]),
                  reply("In 1883 [turn1search1].")])
    record = api.root.post("/v1/ask", json={"question": "levers?", "agent": "full"}).json()
    pdf = api.acme.post("/v1/ask", json={"question": "quagga?", "agent": "full"}).json()
    docs = api.acme.post("/v1/ask", json={"question": "when?", "agent": "agenticrag"}).json()
    [cited] = record["citations"]
    view = view_of(api, PEPYS)
    first, last = cited["lines"]
    assert cited["tool"] == "keyword_search" and "page" not in cited
    assert cited["where"] == f"lines {first}–{last}" and first == 0
    assert last == view.line_of(api.service.index.chunk_spans(PEPYS)[0][2] - 1)
    [cited] = pdf["citations"]  # the PDF's one chunk holds both its pages
    assert cited["tool"] == "keyword_search" and cited["page"] == 1
    assert cited["where"] == f"pages 1–2, lines {cited['lines'][0]}–{cited['lines'][1]}"
    [cited] = docs["citations"]
    assert (cited["tool"], cited["ref"], cited["doc_id"]) == ("search", "turn1search1", PDF)
    assert cited["page"] in (1, 2) and len(cited["lines"]) == 2


def test_each_upload_says_what_became_of_it(api: Clients, index_folder: Path) -> None:
    files = [("files", ("wombat.md", b"# Wombat\n\nThe wombat digs burrows.\n")),
             ("files", ("notes.xyz", b"not a document")),
             ("files", ("empty.txt", b"")),
             ("files", ("utf16.md", "# Wide\n".encode("utf-16")))]
    got = api.acme.post("/v1/documents", files=files)
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["added_ids"] == ["acme:wombat.md"] and body["collection"] == "acme"
    wombat, notes, empty, wide = body["files"]
    assert wombat == {"name": "wombat.md", "status": "indexed", "doc_id": "acme:wombat.md",
                      "chunks": len(api.service.index.chunk_spans("acme:wombat.md")),
                      "documents": 1}
    assert notes["status"] == "error" and "unsupported file type '.xyz'" in notes["error"]
    assert not (index_folder / "uploads" / "acme" / "notes.xyz").exists()
    assert (empty["status"], empty["error"]) == ("error", "empty file (0 bytes)")
    assert wide["status"] == "error" and "UTF-16" in wide["error"]
    again = api.acme.post("/v1/documents", files=files[:2]).json()
    assert [f["status"] for f in again["files"]] == ["unchanged", "error"]
    assert again["files"][0]["doc_id"] == "acme:wombat.md"
    only_bad = api.acme.post("/v1/documents", files=[files[1]])
    assert only_bad.status_code == 200 and only_bad.json()["added"] == 0
    assert only_bad.json()["files"] == [notes]
    listed = api.acme.get("/v1/documents", params={"q": "wombat"}).json()
    assert [d["doc_id"] for d in listed["documents"]] == ["acme:wombat.md"]
    assert api.acme.delete("/v1/documents/acme:wombat.md").status_code == 200


def test_an_upload_over_the_body_limit_is_413(index_folder: Path) -> None:
    service = Service(index_folder, Settings.load(serve={"api_keys": KEYS,
                                                         "max_body_bytes": 4096}))
    live = LiveServer(create_app(service))
    try:
        with httpx.Client(base_url=live.url, headers={"Authorization": "Bearer k-acme"}) as api:
            big = api.post("/v1/documents", files=[("files", ("big.md", b"# Big\n" * 1000))])
            assert big.status_code == 413
            assert big.json()["detail"].endswith("is over the limit of 4096")
            assert api.get("/v1/documents", params={"q": "big"}).json()["total"] == 0
    finally:
        live.close()
        service.close()
