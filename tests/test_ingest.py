"""Tests for the ingestion layer: sentences, chunking and the file/record loaders."""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path

import pytest
from tests.conftest import twowiki_records

from sleuth.errors import IngestError
from sleuth.ingest import (
    IngestReport,
    JsonFields,
    Skipped,
    chunk_document,
    cut_sentence,
    has_sources,
    iter_documents,
    split_sentences,
)
from sleuth.text.tokens import count_tokens
from sleuth.types import Chunk, Document, Sentence


def texts(text: str) -> list[str]:
    sentences = split_sentences(text)
    for s in sentences:
        assert text[s.start : s.end] == s.text
        assert s.text == s.text.strip() and s.text
    return [s.text for s in sentences]


def load(
    paths: list[Path | str] | list[Path],
    *,
    include: tuple[str, ...] | list[str] = (),
    exclude: tuple[str, ...] | list[str] = (),
    fields: JsonFields = JsonFields(),  # noqa: B008 - frozen dataclass
) -> tuple[list[Document], IngestReport]:
    report = IngestReport()
    docs = list(
        iter_documents(paths, include=include, exclude=exclude, fields=fields, report=report)
    )
    return docs, report


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


# --- sentences ---------------------------------------------------------------------------


def test_abbreviations_decimals_initials() -> None:
    text = (
        "Dr. Smith moved to the U.S. in 1990. He paid 3.14 dollars, e.g. for coffee. "
        "J. R. R. Tolkien wrote it. Mr. Brown agreed."
    )
    assert texts(text) == [
        "Dr. Smith moved to the U.S. in 1990.",
        "He paid 3.14 dollars, e.g. for coffee.",
        "J. R. R. Tolkien wrote it.",
        "Mr. Brown agreed.",
    ]


def test_offsets_are_absolute_and_window_is_respected() -> None:
    text = "Skip this. Hello there.  Bye now. Not this."
    start = text.index("Hello")
    end = text.index(" Not")
    got = split_sentences(text, start, end)
    assert [s.text for s in got] == ["Hello there.", "Bye now."]
    assert all(text[s.start : s.end] == s.text for s in got)
    assert got[0].start == start


def test_empty_and_whitespace() -> None:
    assert split_sentences("") == []
    assert split_sentences("  \n\n \t ") == []


def test_blank_line_always_ends_a_sentence() -> None:
    assert texts("First part without a stop\n\nsecond part in lower case.") == [
        "First part without a stop",
        "second part in lower case.",
    ]


def test_headings_and_list_items_are_not_glued() -> None:
    text = (
        "# Getting started\nInstall the package. Then run it.\n"
        "## Options\nThere are three:\n- fast mode\n- slow mode\n1. first\n2. second\n"
        "Introduction\nThis paragraph follows a plain heading line."
    )
    assert texts(text) == [
        "# Getting started",
        "Install the package.",
        "Then run it.",
        "## Options",
        "There are three:",
        "- fast mode",
        "- slow mode",
        "1. first",
        "2. second",
        "Introduction",
        "This paragraph follows a plain heading line.",
    ]


def test_hard_wrapped_prose_is_not_split_at_newlines() -> None:
    text = (
        "CHAPTER I\n\n"
        "It was the best of times, it was the worst of times, it was the age of\n"
        "wisdom, it was the age of foolishness, it was the epoch of belief, it\n"
        "was the epoch of incredulity, it was the season of Light, it was the\n"
        "season of Darkness. There were a king with a large jaw and a queen with\n"
        "a plain face, on the throne of England; there were a king with a large\n"
        "jaw and a queen with a fair face, on the throne of France. In both\n"
        "Countries it was clearer than crystal to the lords of the State.\n"
    )
    got = texts(text)
    assert got[0] == "CHAPTER I"
    assert len(got) == 4
    assert got[1].startswith("It was the best") and got[1].endswith("season of Darkness.")
    assert got[3].startswith("In both\nCountries")


def test_split_is_fast_on_real_corpus() -> None:
    records = twowiki_records(300)
    text = "\n\n".join(f"{r['title']}\n{r['text']}" for r in records)
    sentences = split_sentences(text)
    assert len(sentences) > 300
    assert all(text[s.start : s.end] == s.text for s in sentences)


# --- chunking ----------------------------------------------------------------------------


def make_doc(doc_id: str, title: str, body: str) -> Document:
    return Document(doc_id=doc_id, title=title, text=f"{title}\n{body}", type="text")


def check_chunk_invariants(doc: Document, chunks: list[Chunk]) -> None:
    for chunk in chunks:
        assert chunk.doc_id == doc.doc_id
        assert doc.text[chunk.start : chunk.end] == chunk.text
        assert chunk.sentences[0].start == chunk.start
        assert chunk.sentences[-1].end == chunk.end
        for s in chunk.sentences:
            assert doc.text[s.start : s.end] == s.text
        assert chunk.n_tokens == count_tokens(chunk.text)


def test_chunks_respect_budget_and_link_neighbours() -> None:
    body = " ".join(f"Sentence number {i} talks about topic {i % 7} at length." for i in range(200))
    title = "Notes on a great many topics that are all discussed below in turn"
    doc = make_doc("notes.txt", title, body)
    chunks = chunk_document(doc, max_tokens=60)
    check_chunk_invariants(doc, chunks)
    assert len(chunks) > 5
    assert all(c.n_tokens <= 60 for c in chunks)
    assert [c.chunk_id for c in chunks] == [f"notes.txt#{i}" for i in range(len(chunks))]
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert chunks[0].prev_id is None and chunks[-1].next_id is None
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert a.next_id == b.chunk_id and b.prev_id == a.chunk_id
        assert a.end <= b.start
    # the (long) title line is its own sentence although Punkt alone would glue it to the
    # first sentence, and every sentence lands in exactly one chunk
    assert chunks[0].sentences[0].text == title
    assert sum(len(c.sentences) for c in chunks) == len(split_sentences(doc.text)) + 1


def test_chunk_ids_are_stable_and_documents_are_never_mixed() -> None:
    docs = [make_doc(f"d{i}", f"Doc {i}", "Alpha beta gamma. " * 40) for i in range(3)]
    first = [chunk_document(d, 50) for d in docs]
    second = [chunk_document(d, 50) for d in docs]
    assert first == second
    for doc, chunks in zip(docs, first, strict=True):
        check_chunk_invariants(doc, chunks)
        assert {c.doc_id for c in chunks} == {doc.doc_id}


def test_document_without_sentences_has_no_chunks() -> None:
    doc = Document(doc_id="e", title="", text="   \n  ", type="text")
    assert chunk_document(doc) == []


def test_over_long_sentence_is_cut_with_exact_offsets() -> None:
    body = "Żółć naïve café 日本語のテキスト 🎉🎉 " * 60 + "end."
    doc = make_doc("long", "Długi tytuł", body)
    chunks = chunk_document(doc, max_tokens=25)
    check_chunk_invariants(doc, chunks)
    assert len(chunks) > 10
    pieces = [s for c in chunks for s in c.sentences]
    # pieces together hold every non-space character of the text, in order
    joined = "".join(s.text for s in pieces)
    assert re.sub(r"\s", "", joined) == re.sub(r"\s", "", doc.text)
    assert all(count_tokens(s.text) <= 25 for s in pieces)


def test_cut_sentence_handles_multibyte_at_every_budget() -> None:
    text = "ab🎉cd ü日本 " * 5
    sentence = Sentence(text, 10, 10 + len(text))
    source = " " * 10 + text
    for budget in (1, 2, 3, 5):
        pieces = cut_sentence(sentence, budget)
        assert pieces
        for p in pieces:
            assert source[p.start : p.end] == p.text
        assert re.sub(r"\s", "", "".join(p.text for p in pieces)) == re.sub(r"\s", "", text)


# --- loaders: formats --------------------------------------------------------------------


def test_markdown_title_and_folder_ids(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "guides" / "intro.md", "# Intro Guide\n\nWelcome. Read on.\n")
    write(tmp_path / "docs" / "plain.md", "```python\n# not a title\n```\nSome text here.\n")
    docs, report = load([tmp_path / "docs"])
    assert [d.doc_id for d in docs] == ["plain.md", "guides/intro.md"]
    plain, intro = docs
    assert intro.title == "Intro Guide" and intro.type == "markdown"
    assert intro.text.startswith("# Intro Guide\n")
    assert plain.title == "plain" and plain.text.startswith("plain\n```python")
    assert intro.path == str(tmp_path / "docs" / "guides" / "intro.md")
    assert report.skipped == [] and report.duplicates == []


def test_plain_text_title(tmp_path: Path) -> None:
    short = write(tmp_path / "short.txt", "\nA Short Title\n\nBody text. More body.\n")
    long_line = "x" * 130
    long = write(tmp_path / "long.txt", f"{long_line}\nrest\n")
    docs, _ = load([short, long])
    assert docs[0].doc_id == "short.txt" and docs[0].type == "text"
    assert docs[0].title == "A Short Title"
    assert docs[0].text.startswith("A Short Title\n\nBody text.")
    assert docs[1].title == "long" and docs[1].text.startswith(f"long\n{long_line}")


def test_html_visible_text_only(tmp_path: Path) -> None:
    page = write(
        tmp_path / "page.html",
        """<!doctype html><html><head><title>My  Page</title>
        <style>body { color: red }</style><script>var secret = 1;</script></head>
        <body><h1>Heading One</h1><p>First   paragraph
        text.</p><p>Second<br>line &amp; more</p>
        <div hidden>hidden text</div><span aria-hidden="true">aria text</span>
        <noscript>noscript text</noscript><template><p>template text</p></template>
        <svg><text>svg text</text></svg><!-- a comment -->
        <ul><li>one</li><li>two</li></ul><script>alert("x")</script></body></html>""",
    )
    (doc,) = load([page])[0]
    assert doc.type == "html" and doc.title == "My Page"
    assert doc.text.split("\n")[0] == "My Page"
    for gone in ("secret", "color", "hidden text", "aria text", "noscript", "template", "svg"):
        assert gone not in doc.text
    assert "comment" not in doc.text and "alert" not in doc.text
    assert "First paragraph text." in doc.text
    assert "Second\nline & more" in doc.text
    assert "one\n\ntwo" in doc.text
    assert "Heading One\n\nFirst paragraph" in doc.text


def test_html_title_falls_back_to_h1_then_stem(tmp_path: Path) -> None:
    h1 = write(tmp_path / "a.htm", "<body><h1>Big Title</h1><p>Words here.</p></body>")
    bare = write(tmp_path / "b.html", "<p>Only words.</p>")
    docs, _ = load([h1, bare])
    assert docs[0].title == "Big Title" and docs[0].text.startswith("Big Title\n")
    assert docs[1].title == "b" and docs[1].text == "b\nOnly words."


def test_json_corpus_records(tmp_path: Path) -> None:
    records = [
        {"id": "p1", "title": "Alpha", "text": "Alpha is first.", "source": "wiki"},
        {"id": 7, "title": "Seven", "text": "Number seven."},
        {"title": "No id", "text": "Gets a generated id."},
        {"id": "empty", "title": "Empty", "text": "   "},
    ]
    path = write(tmp_path / "corpus.json", json.dumps(records))
    docs, report = load([path])
    assert [d.doc_id for d in docs] == ["p1", "7", "corpus:2"]
    assert all(d.type == "corpus" for d in docs)
    assert docs[0].title == "Alpha" and docs[0].text == "Alpha\nAlpha is first."
    assert docs[0].metadata == {"source": "wiki", "index": 0}
    assert len(report.skipped) == 1
    assert report.skipped[0].path == f"{path}[3]" and "empty" in report.skipped[0].reason


def test_real_2wiki_records(tmp_path: Path) -> None:
    records = twowiki_records(20)
    path = write(tmp_path / "corpus.json", json.dumps(records))
    docs, report = load([path])
    assert len(docs) == 20 and not report.skipped
    for doc, record in zip(docs, records, strict=True):
        assert doc.doc_id == record["id"] and doc.title == record["title"]
        assert doc.text == f"{record['title']}\n{record['text']}"
        chunks = chunk_document(doc)
        check_chunk_invariants(doc, chunks)
        assert chunks[0].sentences[0].text == record["title"]


def test_chunks_json_strings(tmp_path: Path) -> None:
    entries = ["0:Paris\nParis is the capital: of France.", "12: Berlin is big.", "no colon", "9:",
               ": no id"]
    path = write(tmp_path / "chunks.json", json.dumps(entries))
    docs, report = load([path])
    assert [d.doc_id for d in docs] == ["0", "12"]  # no invented id for "no colon"
    assert all(d.type == "chunks" for d in docs)
    assert docs[0].text == "Paris\nParis is the capital: of France." and docs[0].title == "Paris"
    assert docs[1].text == "Berlin is big." and docs[1].title == "Berlin is big."
    skipped = {s.path: s.reason for s in report.skipped}
    assert list(skipped) == [f"{path}[2]", f"{path}[3]", f"{path}[4]"]
    assert "no 'id:' prefix" in skipped[f"{path}[2]"] and "'no colon'" in skipped[f"{path}[2]"]
    assert "no 'id:' prefix" in skipped[f"{path}[4]"] and "no text" in skipped[f"{path}[3]"]


def test_chunks_json_objects(tmp_path: Path) -> None:
    long_first_line = "word " * 40
    entries = [{"id": "c1", "text": f"{long_first_line}\nmore"}, {"id": "c2", "text": "Short."}]
    path = write(tmp_path / "chunks.json", json.dumps(entries))
    docs, _ = load([path])
    assert [d.type for d in docs] == ["chunks", "chunks"]
    assert len(docs[0].title) <= 100 and docs[0].text.startswith(docs[0].title)
    assert docs[1].title == "Short." and docs[1].text == "Short."


def test_json_wrapped_list(tmp_path: Path) -> None:
    data = {"documents": [{"id": "a", "title": "A", "text": "Body."}]}
    docs, _ = load([write(tmp_path / "wrapped.json", json.dumps(data))])
    assert [d.doc_id for d in docs] == ["a"]


def test_jsonl_with_bad_line_and_custom_fields(tmp_path: Path) -> None:
    lines = [
        json.dumps({"key": "r1", "name": "First", "body": "One body."}),
        "{not json",
        "",
        json.dumps(["a", "list"]),
        json.dumps({"key": "r2", "body": "Untitled record."}),
    ]
    path = write(tmp_path / "data.jsonl", "\n".join(lines) + "\n")
    fields = JsonFields(id="key", title="name", text="body")
    docs, report = load([path], fields=fields)
    assert [d.doc_id for d in docs] == ["r1", "r2"]
    assert docs[0].title == "First" and docs[0].text == "First\nOne body."
    assert docs[1].title == "Untitled record." and docs[1].type == "jsonl"
    assert [s.path for s in report.skipped] == [f"{path}:2", f"{path}:4"]
    assert "invalid JSON" in report.skipped[0].reason
    assert "expected a JSON object" in report.skipped[1].reason


# --- loaders: bad input ------------------------------------------------------------------


def test_missing_path_raises_before_anything_is_read(tmp_path: Path) -> None:
    good = write(tmp_path / "good.md", "# Good\n\nText.")
    with pytest.raises(IngestError, match="no such file or folder: .*missing"):
        iter_documents([good, tmp_path / "missing"])


def test_a_stray_nul_in_a_text_is_dropped_not_taken_for_binary(tmp_path: Path) -> None:
    """Javadoc writes the NUL character it documents into the page (Commons Lang's
    CharUtils.html: two in 55 KB): the page is text and is read without them; a file whose
    first 8 KB are more than 1 % NUL bytes, or NULs in what is not UTF-8, is binary."""
    folder = tmp_path / "in"
    page = ("<html><head><title>CharUtils</title></head><body><p>"
            + "Operations on char primitives and Character objects. " * 100
            + "</p><p><code>\x00</code> null control character ('\\0'), abbreviated NUL.</p>"
            + "</body></html>")
    write(folder / "CharUtils.html", page.encode("utf-8"))
    write(folder / "notes.txt", ("Stray \x00 NUL in a note. " + "Herons wade. " * 50).encode())
    write(folder / "table.dat.txt", b"id\x00\x00\x00\x01name\x00\x00\x00" * 200)
    write(folder / "image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"text " * 400)
    docs, report = load([folder])
    assert sorted(d.doc_id for d in docs) == ["CharUtils.html", "notes.txt"]
    texts = {d.doc_id: d.text for d in docs}
    assert "null control character ('\\0'), abbreviated NUL." in texts["CharUtils.html"]
    assert "Stray  NUL in a note." in texts["notes.txt"]
    assert not any("\x00" in text for text in texts.values())
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert reasons == {"table.dat.txt": "binary file (NUL byte at offset 2)",
                       "image.txt": "binary file (NUL byte at offset 8)"}


def test_bad_files_in_folder_are_reported_and_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    write(folder / "good.txt", "Fine text.\n")
    write(folder / "binary.txt", b"abc\x00\x01\x02def")
    write(folder / "latin1.txt", "caf\u00e9 au lait".encode("latin-1"))
    write(folder / "empty.md", b"")
    write(folder / "blank.md", "  \n\t\n")
    write(folder / "bad.json", json.dumps({"not": "a list"}))
    write(folder / "none.json", "[]")
    write(folder / "picture.png", b"\x89PNG")
    write(folder / ".hidden.md", "# Hidden\n")
    write(folder / ".git" / "notes.md", "# Hidden too\n")
    docs, report = load([folder])
    assert [d.doc_id for d in docs] == ["good.txt"]
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert set(reasons) == {
        "binary.txt",
        "latin1.txt",
        "empty.md",
        "blank.md",
        "bad.json",
        "none.json",
    }
    assert reasons["binary.txt"] == "binary file (NUL byte at offset 3)"
    assert reasons["latin1.txt"] == "not UTF-8 text (byte 0xe9 at offset 3)"
    assert reasons["empty.md"] == "empty file (0 bytes)"
    assert reasons["blank.md"] == "file contains only whitespace"
    assert "expected a JSON list" in reasons["bad.json"]
    assert reasons["none.json"] == "JSON list is empty: no records"


def test_bad_explicit_files_are_reported_not_raised(tmp_path: Path) -> None:
    empty = write(tmp_path / "empty.txt", b"")
    odd = write(tmp_path / "notes.xyz", "text")
    bom = write(tmp_path / "bom.txt", b"\xef\xbb\xbfWith BOM.\r\nSecond line.")
    docs, report = load([empty, odd, bom])
    assert [d.doc_id for d in docs] == ["bom.txt"]
    assert docs[0].title == "With BOM." and docs[0].text == "With BOM.\nSecond line."
    assert [Path(s.path).name for s in report.skipped] == ["empty.txt", "notes.xyz"]
    assert "unsupported file type '.xyz'" in report.skipped[1].reason


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"id": "x"}, "got an object"),
        ("just a string", "got a string"),
        ([1, 2], "element 0 is a number"),
        ([{"id": "a", "text": "t"}, "b:c"], "element 1 is a string"),
        (None, "got null"),
    ],
)
def test_explicit_json_of_wrong_shape_raises(
    tmp_path: Path, content: object, expected: str
) -> None:
    path = write(tmp_path / "corpus.json", json.dumps(content))
    with pytest.raises(IngestError, match=re.escape(expected)) as info:
        list(iter_documents([path]))
    assert str(path) in str(info.value)


def test_explicit_invalid_json_raises(tmp_path: Path) -> None:
    path = write(tmp_path / "broken.json", '[{"id": "a", ')
    with pytest.raises(IngestError, match=r"broken\.json: invalid JSON \(line 1"):
        list(iter_documents([path]))


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root can read anything")
def test_unreadable_file_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path / "locked.md", "# Locked\n")
    path.chmod(0)
    try:
        docs, report = load([tmp_path])
    finally:
        path.chmod(0o644)
    assert docs == []
    assert report.skipped[0].reason == "cannot read file: permission denied"


def test_permission_error_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = write(tmp_path / "locked.md", "# Locked\n")
    write(tmp_path / "open.md", "# Open\n")
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "locked.md":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    docs, report = load([tmp_path])
    assert [d.doc_id for d in docs] == ["open.md"]
    assert report.skipped == [Skipped(str(locked), "cannot read file: permission denied")]


def _unix_socket(folder: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> socket.socket:
    """A listening-capable UNIX socket file ``folder/name`` (bound by a short relative path:
    socket paths are limited to about 100 bytes)."""
    monkeypatch.chdir(folder)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(name)
    return sock


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and UNIX sockets")
@pytest.mark.timeout(30)  # opening the FIFO would block forever
def test_fifos_sockets_and_devices_are_never_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "in"
    good = write(folder / "good.md", "# Good\n\nHerons.")
    os.mkfifo(folder / "pipe.txt")
    (folder / "link.md").symlink_to(good)
    (folder / "pipe-link.md").symlink_to(folder / "pipe.txt")
    with _unix_socket(folder, "sock.md", monkeypatch):
        docs, report = load([folder])
        assert [d.doc_id for d in docs] == ["good.md", "link.md"]
        assert {Path(s.path).name: s.reason for s in report.skipped} == {
            "pipe.txt": "not a regular file (FIFO)",
            "pipe-link.md": "not a regular file (FIFO)",
            "sock.md": "not a regular file (socket)",
        }
        named = [folder / "pipe.txt", folder / "sock.md", Path(os.devnull)]
        docs, report = load(named)
        assert docs == []
        assert [s.reason for s in report.skipped] == [
            "not a regular file (FIFO)",
            "not a regular file (socket)",
            "not a regular file (character device)",
        ]


def test_json_nested_too_deeply_is_skipped_or_one_clear_error(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    folder = tmp_path / "in"
    write(folder / "deep.json", deep)
    write(folder / "lines.jsonl", '{"id": "a", "text": "Fine."}\n' + deep + "\n")
    nested_meta = json.loads("[" * 150 + "]" * 150)
    write(folder / "meta.json", json.dumps([{"id": "m", "text": "Deep extra.", "x": nested_meta},
                                            {"id": "n", "text": "Flat.", "x": [[1]]}]))
    docs, report = load([folder])
    assert [d.doc_id for d in docs] == ["a", "n"]
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons[str(folder / "deep.json")].startswith("JSON nested too deeply to parse")
    assert reasons[f"{folder / 'lines.jsonl'}:2"].startswith("JSON nested too deeply")
    assert "nested more than 100 levels" in reasons[f"{folder / 'meta.json'}[0]"]
    with pytest.raises(IngestError, match=r"deep\.json: JSON nested too deeply") as info:
        list(iter_documents([folder / "deep.json"]))
    assert "\n" not in str(info.value)


def test_unsupported_files_in_folders_are_counted(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    write(folder / "a.bin", b"\x01")
    write(folder / "sub" / "b.BIN", b"\x01")
    write(folder / "c.xyz", "text")
    write(folder / "Makefile", "all:")
    write(folder / ".hidden.bin", b"\x01")
    write(folder / "drafts" / "d.bin", b"\x01")
    docs, report = load([folder], exclude=["drafts"])
    assert docs == [] and report.skipped == []
    assert report.unsupported == {".bin": 2, ".xyz": 1, "(none)": 1}
    found = IngestReport()
    assert not has_sources([folder], exclude=["drafts"], report=found)
    assert found.unsupported == report.unsupported
    write(folder / "z.md", "# Z\n")
    assert has_sources([folder])
    with pytest.raises(IngestError, match="no such file or folder"):
        has_sources([folder, tmp_path / "missing"])


def test_bom_offsets_and_utf16(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.txt", b"\xef\xbb\xbfab\xff")
    wide = write(tmp_path / "wide.txt", "hello".encode("utf-16"))
    _, report = load([bad, wide])
    assert [s.reason for s in report.skipped] == [
        "not UTF-8 text (byte 0xff at offset 5)",
        "UTF-16 text is not supported (convert the file to UTF-8)",
    ]


def test_duplicate_ids_keep_the_first(tmp_path: Path) -> None:
    first = write(
        tmp_path / "a.json",
        json.dumps([{"id": "x", "title": "X", "text": "First."}]),
    )
    second = write(tmp_path / "b.jsonl", json.dumps({"id": "x", "title": "X", "text": "Later."}))
    docs, report = load([first, second])
    assert [d.text for d in docs] == ["X\nFirst."]
    (dup,) = report.duplicates
    assert dup.path == f"{second}:1"
    assert dup.reason == f"duplicate doc_id 'x' (first seen in {first}[0])"


# --- loaders: globs ----------------------------------------------------------------------


def make_tree(root: Path) -> None:
    for rel in ("a.md", "b.txt", "docs/c.md", "docs/deep/d.md", "drafts/e.md", "site/f.html"):
        write(root / rel, f"Title {rel}\n\nSome text.\n")


def ids(
    root: Path, include: list[str] | None = None, exclude: list[str] | None = None
) -> list[str]:
    return [d.doc_id for d in load([root], include=include or (), exclude=exclude or ())[0]]


def test_walk_order_is_sorted_and_deterministic(tmp_path: Path) -> None:
    make_tree(tmp_path)
    expected = ["a.md", "b.txt", "docs/c.md", "docs/deep/d.md", "drafts/e.md", "site/f.html"]
    assert ids(tmp_path) == expected
    assert ids(tmp_path) == expected


def test_include_and_exclude_globs(tmp_path: Path) -> None:
    make_tree(tmp_path)
    assert ids(tmp_path, include=["*.md"]) == [
        "a.md",
        "docs/c.md",
        "docs/deep/d.md",
        "drafts/e.md",
    ]
    assert ids(tmp_path, include=["docs/**/*.md"]) == ["docs/c.md", "docs/deep/d.md"]
    assert ids(tmp_path, include=["docs/*.md"]) == ["docs/c.md", "docs/deep/d.md"]
    assert ids(tmp_path, exclude=["drafts"]) == [
        "a.md",
        "b.txt",
        "docs/c.md",
        "docs/deep/d.md",
        "site/f.html",
    ]
    assert ids(tmp_path, include=["*.md"], exclude=["docs/deep/**", "a.md"]) == [
        "docs/c.md",
        "drafts/e.md",
    ]
    assert ids(tmp_path, exclude=["*.md", "*.txt"]) == ["site/f.html"]


def test_iter_documents_streams(tmp_path: Path) -> None:
    for i in range(3):
        write(tmp_path / f"{i}.txt", f"Doc {i}\n\nBody {i}.")
    stream = iter_documents([tmp_path])
    assert next(stream).doc_id == "0.txt"


def test_a_very_long_document_is_chunked_a_window_at_a_time() -> None:
    """Windows end at blank lines; chunks run on across them (positions, ids, links), each
    one exact text of the document; a document within one window chunks as a whole."""
    from sleuth.ingest import chunk_document, iter_chunks
    from sleuth.types import Document

    body = "\n\n".join(f"Paragraph {i}. The river Ems rises near Hövelhof. It flows north "
                       f"through Rheine and Lingen, {i} km on." for i in range(400))
    doc = Document("long.md", "A long report", "A long report\n\n" + body, "markdown", None, {})
    whole = chunk_document(doc, 60)
    assert list(iter_chunks(doc, 60)) == whole
    windowed = list(iter_chunks(doc, 60, window_chars=4000))
    assert [c.position for c in windowed] == list(range(len(windowed)))
    assert len({c.chunk_id for c in windowed}) == len(windowed)
    for before, after in zip(windowed, windowed[1:], strict=False):
        assert before.next_id == after.chunk_id and after.prev_id == before.chunk_id
        assert before.end <= after.start
    assert windowed[0].prev_id is None and windowed[-1].next_id is None
    for chunk in windowed:
        assert chunk.text == doc.text[chunk.start : chunk.end] and chunk.n_tokens <= 60
        assert all(doc.text[s.start : s.end] == s.text for s in chunk.sentences)
    assert sum(len(c.sentences) for c in windowed) == sum(len(c.sentences) for c in whole)
