"""The CLI surface: JSON output, tools by hand, and bad input that never corrupts an index."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

import sleuth
from sleuth.store.keyword import brute_force


def test_search_keyword_json_matches_brute_force(sleuth, wiki_index, wiki_corpus: Path):
    result = sleuth("search", "keyword", "American", "film director", "--top-k", "7",
                    "--json", "--index", wiki_index.location)
    assert result.code == 0, result.err
    hits = result.json()["hits"]
    corpus = [(c.chunk_id, c.text) for c in wiki_index.store.iter_chunks()]
    expected = brute_force(corpus, ["American", "film director"], 7)
    assert [(h["chunk_id"], h["score"]) for h in hits] == expected
    assert set(hits[0]) >= {"chunk_id", "doc_id", "title", "score", "snippets"}
    assert hits[0]["doc_id"].startswith("2wiki-")


def test_search_semantic_and_read(sleuth, sample_index: Path):
    result = sleuth("search", "semantic", "Greatorex showed me the strength of levers",
                    "--top-k", "3", "--json",
                    "--index", str(sample_index))
    hits = result.json()["hits"]
    assert hits[0]["chunk_id"] == "pepys-diary-1660.md#0"
    assert any("levers" in s for s in hits[0]["snippets"])
    read = sleuth("read", hits[0]["chunk_id"], "--adjacent", "1", "--json", "--index",
                  str(sample_index)).json()
    ids = [c["chunk_id"] for c in read["chunks"]]
    assert ids == ["pepys-diary-1660.md#0", "pepys-diary-1660.md#1"]
    text = sleuth("read", "pepys-diary-1660.md#0", "nope", "--index", str(sample_index)).out
    assert "Greatorex" in text and "Unknown chunk ids: nope" in text


def test_help_explains_commands(sleuth):
    out = sleuth("--help").out
    for command in ("index", "search", "read", "ask", "quickstart"):
        assert command in out
    assert "--top-k" in sleuth("search", "keyword", "--help").out


def _counts(sleuth, index: Path) -> tuple[int, int]:
    info = sleuth("status", "--json", "--index", str(index)).json()
    return info["documents"], info["chunks"]


def test_bad_files_are_reported_and_skipped(sleuth, tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nA readable note about herons.", "utf-8")
    (docs / "empty.txt").write_bytes(b"")
    (docs / "binary.txt").write_bytes(b"\x00\x01\x02 binary")
    (docs / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (docs / "dups.json").write_text(json.dumps(
        [{"id": "x", "title": "X", "text": "one"}, {"id": "x", "title": "X2", "text": "two"}]))
    index = tmp_path / "idx"
    result = sleuth("index", str(docs), "--index", str(index), "--json")
    assert result.code == 0, result.err
    report = result.json()
    reasons = {Path(s["path"]).name: s["reason"] for s in report["skipped"]}
    assert set(reasons) == {"empty.txt", "binary.txt", "latin1.txt"}
    assert "UTF-8" in reasons["latin1.txt"] and "binary" in reasons["binary.txt"]
    assert "duplicate doc_id 'x'" in report["duplicates"][0]["reason"]
    assert _counts(sleuth, index) == (2, 2)
    assert sleuth("search", "keyword", "herons", "--index", str(index), "--json").json()["hits"]


@pytest.mark.parametrize("case", ["missing", "not-a-list", "empty-folder"])
def test_bad_input_keeps_the_index_intact(sleuth, tmp_path: Path, case: str):
    index = tmp_path / "idx"
    good = tmp_path / "good.md"
    good.write_text("# Good\n\nA note about herons.", "utf-8")
    assert sleuth("index", str(good), "--index", str(index)).code == 0
    if case == "missing":
        target = tmp_path / "nowhere"
    elif case == "not-a-list":
        target = tmp_path / "corpus.json"
        target.write_text(json.dumps({"id": "1", "text": "not a list"}))
    else:
        target = tmp_path / "empty"
        target.mkdir()
    result = sleuth("index", str(target), "--index", str(index))
    assert result.code == 1
    message = result.err.strip().splitlines()[-1]
    assert message.startswith("error: ") and str(target.name) in message
    assert "Traceback" not in result.err
    if case == "empty-folder":
        assert message.startswith("error: no documents found in ")
    assert _counts(sleuth, index) == (1, 1)
    hits = sleuth("search", "keyword", "herons", "--index", str(index), "--json").json()["hits"]
    assert [h["doc_id"] for h in hits] == ["good.md"]


DEEP_JSON = "[" * 100_000 + "]" * 100_000


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and UNIX sockets")
@pytest.mark.timeout(300)  # reading the FIFO would hang the run forever
def test_index_skips_special_files_deep_json_and_counts_unsupported(
        sleuth, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nA note about herons.", "utf-8")
    os.mkfifo(docs / "pipe.txt")
    (docs / "deep.json").write_text(DEEP_JSON)
    for name in ("a.bin", "b.bin", "c.xyz", ".hidden.bin"):
        (docs / name).write_bytes(b"\x01")
    monkeypatch.chdir(docs)  # a short relative name: socket paths are limited to ~100 bytes
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("sock.md")
        index = tmp_path / "idx"
        result = sleuth("index", str(docs), "--index", str(index))
        assert result.code == 0, result.err
        assert "Traceback" not in result.err and "added 1," in result.out
        reasons = dict(line.removeprefix("skipped ").split(": ", 1)
                       for line in result.err.splitlines() if line.startswith("skipped /"))
        assert {Path(path).name: reason for path, reason in reasons.items()} == {
            "pipe.txt": "not a regular file (FIFO)",
            "sock.md": "not a regular file (socket)",
            "deep.json": "JSON nested too deeply to parse (more than about 1000 levels)",
        }
        assert "skipped 3 unsupported files (.bin ×2, .xyz ×1)" in result.err.splitlines()
        report = sleuth("index", str(docs), "--index", str(index), "--json").json()
    assert report["unchanged"] == 1 and report["unsupported"] == {".bin": 2, ".xyz": 1}
    assert len(report["skipped"]) == 3


def test_many_files_skipped_for_one_reason_are_one_line(sleuth, tmp_path: Path):
    """Up to three files skipped for a reason are listed one by one; more are one line
    that names the first three (a Javadoc build skips hundreds); --json lists every one."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nA note about herons.", "utf-8")
    for n in range(6):
        (docs / f"empty{n}.html").write_bytes(b"")
    (docs / "deep.json").write_text(DEEP_JSON)
    result = sleuth("index", str(docs), "--index", str(tmp_path / "idx"))
    assert result.code == 0, result.err
    lines = [line for line in result.err.splitlines() if line.startswith("skipped ")]
    assert len(lines) == 2, lines
    many = next(line for line in lines if line.startswith("skipped 6 files: empty file"))
    assert many.endswith("and 3 more; --json lists them all)")
    assert sum(f"empty{n}.html" in many for n in range(6)) == 3
    assert any(line.startswith(f"skipped {docs / 'deep.json'}: JSON nested") for line in lines)
    report = sleuth("index", str(docs), "--index", str(tmp_path / "idx"), "--json").json()
    assert len(report["skipped"]) == 7


def test_index_deep_json_named_directly_is_one_clear_error(sleuth, tmp_path: Path):
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP_JSON)
    result = sleuth("index", str(deep), "--index", str(tmp_path / "idx"))
    assert result.code == 1
    assert result.err.strip().splitlines()[-1] == (
        f"error: {deep}: JSON nested too deeply to parse (more than about 1000 levels)")
    assert "Traceback" not in result.err and "RecursionError" not in result.err


def test_index_writes_nothing_when_there_is_nothing_to_index(sleuth, tmp_path: Path):
    index = tmp_path / "idx"
    good = tmp_path / "good.md"
    good.write_text("# Good\n\nA note about herons.", "utf-8")
    missing = sleuth("index", str(good), str(tmp_path / "nowhere"), "--index", str(index))
    assert missing.code == 1
    assert missing.err.strip().splitlines() == [
        f"error: no such file or folder: {tmp_path / 'nowhere'}"]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / ".notes.md").write_text("# Hidden\n")
    result = sleuth("index", str(empty), "--index", str(index), "--json")
    assert result.code == 1 and result.out == ""
    assert result.err.strip().splitlines() == [
        f"error: no documents found in {empty}: no files to read there (supported: "
        ".docx .htm .html .json .jsonl .markdown .md .ndjson .pdf .rst .text .txt)"]
    odd = tmp_path / "odd"
    odd.mkdir()
    for name in ("a.bin", "b.bin", "c.xyz"):
        (odd / name).write_bytes(b"\x01")
    result = sleuth("index", str(odd), "--index", str(index))
    assert result.code == 1
    assert result.err.strip().splitlines()[-1].startswith(
        f"error: no documents found in {odd}: skipped 3 unsupported files (.bin ×2, .xyz ×1) "
        "(supported: ")
    assert not index.exists()


def test_an_emptied_folder_removes_its_documents_with_a_warning(sleuth, tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    note = docs / "note.md"
    note.write_text("# Note\n\nA note about herons.", "utf-8")
    index = tmp_path / "idx"
    assert sleuth("index", str(docs), "--index", str(index)).code == 0
    note.unlink()
    (docs / "empty.txt").write_bytes(b"")
    result = sleuth("index", str(docs), "--index", str(index))
    assert result.code == 0, result.err
    assert "removed 1," in result.out
    assert f"warning: no documents found in {docs}: skipped " in result.err
    assert "removed the 1 document indexed from there" in result.err
    again = sleuth("index", str(docs), "--index", str(index))
    assert again.code == 1 and "error: no documents found in" in again.err
    assert _counts(sleuth, index) == (0, 0)


def test_corpus_json_and_chunks_json_keep_source_ids(sleuth, tmp_path: Path):
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"id": "p1", "title": "Heron", "text": "Herons wade."}]))
    chunks = tmp_path / "chunks.json"
    chunks.write_text(json.dumps(["c7:Egrets are white herons.", "c8:Storks fly far."]))
    index = tmp_path / "idx"
    assert sleuth("index", str(corpus), str(chunks), "--index", str(index)).code == 0
    hits = sleuth("search", "keyword", "herons", "--index", str(index), "--json").json()["hits"]
    assert {h["doc_id"] for h in hits} == {"p1", "c7"}
    assert {h["title"] for h in hits} == {"Heron", "Egrets are white herons."}


def test_public_api_is_declared():
    for name in sleuth.__all__:
        assert hasattr(sleuth, name), name
    public = {n for n in dir(sleuth) if not n.startswith("_") and n[0].isupper()}
    assert public <= set(sleuth.__all__)


def test_quickstart_indexes_sample_and_explains_llm_setup(sleuth, tmp_path: Path):
    result = sleuth("quickstart", "--no-install")
    assert result.code == 0, result.err
    assert "indexed 3 documents" in result.out
    assert "keyword_search" in result.out and "semantic_search" in result.out
    assert "chunk_read" in result.out and "Greatorex" in result.out
    assert "$ search" in result.out and "[turn1search1] " in result.out  # document tools too
    assert "$ find" in result.out and "Viewing lines [0–" in result.out
    assert "SLEUTH_BASE_URL" in result.err  # says exactly how to configure an endpoint
    assert "sleuth llm install-local" in result.err  # or how to get the offline model
    import os

    cache_index = Path(os.environ["XDG_CACHE_HOME"]) / "sleuth" / "quickstart-index"
    assert (cache_index / "manifest.json").is_file()


def test_quickstart_asks_the_configured_endpoint(sleuth, tmp_path: Path, monkeypatch):
    from sleuth.testing.fake import FakeLLMServer, call, reply

    script = [call("keyword_search", keywords=["Greatorex"]),
              reply("He showed how levers work [pepys-diary-1660.md#0].")]
    with FakeLLMServer(script) as server:
        monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
        monkeypatch.setenv("SLEUTH_MODEL", "fake-model")
        result = sleuth("quickstart", "--index", str(tmp_path / "qs"))
    assert result.code == 0, result.err
    assert "He showed how levers work" in result.out
    assert "[pepys-diary-1660.md#0] The Diary of Samuel Pepys" in result.out


def test_read_adjacent_in_document_order(tmp_path: Path):
    doc = tmp_path / "long.md"
    doc.write_text("# Long\n\n" + " ".join(f"Sentence number {i} is here." for i in range(400)),
                   "utf-8")
    settings = sleuth.Settings.load(chunk={"tokens": 200})
    with sleuth.Index.open(tmp_path / "idx", settings=settings, create=True) as index:
        index.add([doc])
        ids = [c.chunk_id for c in index.read(["long.md#3"], adjacent=2).chunks]
        assert ids == [f"long.md#{i}" for i in (1, 2, 3, 4, 5)]
        first = index.read(["long.md#0"], adjacent=1).chunks
        assert [c.chunk_id for c in first] == ["long.md#0", "long.md#1"]
        assert first[0].prev_id is None and first[0].next_id == "long.md#1"
        assert index.read(["long.md#0", "nope"]).unknown == ["nope"]
