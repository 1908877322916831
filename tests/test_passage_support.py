"""A cited passage marks the sentences that support the claim (issue 40, "evidence a user can
check"): of the cited chunk, the sentence sharing the most content words with the answer's
sentence (numbers and quoted strings count), the next one too where it shares as many; the
whole chunk stands where no sentence shares a word. Through the Python API, on a small real
index."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.conftest import records_index

from sleuth import Index
from sleuth.errors import RequestError
from sleuth.service.library import SUPPORT_MAX, passage
from sleuth.text.docview import DocumentView

# One sentence a line, then a paragraph of three sentences on one line.
QUAGGA = ("The quagga was a subspecies of the plains zebra.\n"
          "It lived in the Karoo of South Africa.\n"
          "Hunting reduced the herds through the nineteenth century.\n"
          "The last quagga died in Amsterdam in 1883.\n"
          "Zoos kept no breeding pair.\n"
          "Naturalists called its bark \"kwa-ha\". Its stripes faded toward the rump. "
          "The rump itself was brown.\n")
RECORDS = [{"id": "quagga", "title": "Quagga", "text": QUAGGA}]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    with Index.open(records_index(tmp_path_factory, "quagga", RECORDS)) as opened:
        yield opened


def _chunk(index: Index) -> tuple[str, DocumentView, tuple[int, int]]:
    (chunk_id, start, end), = index.chunk_spans("quagga")
    document = index.document("quagga")
    assert document is not None
    view = DocumentView(document)
    return chunk_id, view, (view.line_of(start), view.line_of(end - 1))


def _line_of(view: DocumentView, text: str) -> int:
    return next(n for n in range(view.line_count) if text in view.line_text(n))


def test_the_supporting_sentence_is_marked_not_the_whole_chunk(index: Index) -> None:
    chunk_id, view, chunk_lines = _chunk(index)
    died = _line_of(view, "died in Amsterdam")
    assert chunk_lines[1] - chunk_lines[0] >= 5  # the chunk is the whole record

    shown = passage(index, chunk=chunk_id,
                    support="The last quagga died in 1883, in Amsterdam [quagga#0].")
    assert shown["highlight"] == list(chunk_lines)  # the cited chunk, as before
    support = shown["support"]
    assert support["lines"] == [died, died]
    assert support["sentences"] == ["The last quagga died in Amsterdam in 1883."]
    assert support["marks"] == [{"line": died, "start": 0,
                                 "end": len("The last quagga died in Amsterdam in 1883.")}]
    assert {"1883", "amsterdam", "died", "quagga"} <= set(support["terms"])
    assert "0" not in support["terms"]  # the citation marker is no part of the claim
    assert shown["start_line"] <= died <= shown["end_line"]

    # the same with the lines a citation carries, and through the app's numbers alone
    with_lines = passage(index, chunk=chunk_id, lines=f"{chunk_lines[0]}-{chunk_lines[1]}",
                         support="They died out in 1883.")
    assert with_lines["support"]["lines"] == [died, died]
    assert with_lines["highlight"] == list(chunk_lines)


def test_a_sentence_within_a_long_line_is_marked_by_its_characters(index: Index) -> None:
    chunk_id, view, _ = _chunk(index)
    paragraph = _line_of(view, "Its stripes faded")
    text = view.line_text(paragraph)
    stripes = "Its stripes faded toward the rump."
    shown = passage(index, chunk=chunk_id, support="Its stripes faded, Pepys saw.")
    assert shown["support"]["lines"] == [paragraph, paragraph]
    assert shown["support"]["marks"] == [{"line": paragraph, "start": text.index(stripes),
                                          "end": text.index(stripes) + len(stripes)}]

    # a quoted string counts beyond its words; and an adjacent sentence scoring as well is
    # marked with the best, in one mark
    quoted = passage(index, chunk=chunk_id, support='The quagga of the Karoo: "kwa-ha".')
    assert quoted["support"]["sentences"] == ['Naturalists called its bark "kwa-ha".']
    both = passage(index, chunk=chunk_id, support="Its rump was brown, without stripes.")
    assert both["support"]["sentences"] == [stripes, "The rump itself was brown."]
    assert both["support"]["marks"] == [{"line": paragraph, "start": text.index(stripes),
                                         "end": len(text)}]


def test_no_shared_word_leaves_the_whole_chunk(index: Index) -> None:
    chunk_id, _, chunk_lines = _chunk(index)
    for claim in ("Penguins swim.", "It was there [quagga#0].", "   "):
        shown = passage(index, chunk=chunk_id, support=claim)
        assert shown["support"] is None and shown["highlight"] == list(chunk_lines)
    plain = passage(index, chunk=chunk_id)
    assert plain["support"] is None and plain["highlight"] == list(chunk_lines)
    # support is about a cited chunk: lines alone keep their highlight
    by_lines = passage(index, doc="quagga", lines="1-2", support="Karoo")
    assert by_lines["support"] is None and by_lines["highlight"] == [1, 2]
    with pytest.raises(RequestError, match="at most 2000"):
        passage(index, chunk=chunk_id, support="x" * (SUPPORT_MAX + 1))
