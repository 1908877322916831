"""PDF and .docx ingestion: page spans checked against generated filings (the text drawn on
each page, tests/data/filings.json), bad files skipped."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests.conftest import ACME, filing_page_texts, filing_specs

from sleuth import Index, Settings
from sleuth.ingest import IngestReport, iter_documents
from sleuth.text.docview import DocumentView
from sleuth.types import Document

pymupdf = pytest.importorskip("pymupdf")
docx = pytest.importorskip("docx")


def load(paths: list[Path]) -> tuple[list[Document], IngestReport]:
    report = IngestReport()
    return list(iter_documents(paths, report=report)), report


def squash(text: str) -> str:
    return " ".join(text.split())


def drawn_pages() -> dict[str, str]:
    """Each filing page's drawn text, by ``<stem>#p<page>`` (0-based) as in FinanceBench."""
    return {f"{Path(spec['file']).stem}#p{number}": text for spec in filing_specs()
            for number, text in enumerate(filing_page_texts(spec))}


def make_pdf(path: Path, pages: list[str], *, title: str = "", **save: object) -> Path:
    pdf = pymupdf.open()
    for text in pages:
        page = pdf.new_page()
        if text:
            page.insert_text((72, 72), text)
    if title:
        pdf.set_metadata({"title": title})
    pdf.save(path, **save)
    return path


def zero_page_pdf(path: Path) -> Path:
    """A valid PDF whose page tree is empty (PyMuPDF refuses to save one)."""
    objects = [b"<</Type/Catalog/Pages 2 0 R>>", b"<</Type/Pages/Kids[]/Count 0>>"]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def image_only_pdf(path: Path) -> Path:
    pdf = pymupdf.open()
    page = pdf.new_page()
    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 16, 16), False)
    pixmap.clear_with(128)
    page.insert_image(pymupdf.Rect(72, 72, 272, 272), pixmap=pixmap)
    pdf.save(path)
    return path


# --- filings (several pages, tables read as one line per cell) ---------------------------


def test_filing_pages_match_the_drawn_text_and_map_to_lines(
        filing_pdfs: dict[str, Path]) -> None:
    docs, report = load(list(filing_pdfs.values()))
    assert len(docs) == len(filing_pdfs) == 3 and not report.skipped
    expected = drawn_pages()
    for doc in docs:
        stem = Path(doc.path or "").stem
        assert doc.type == "pdf" and doc.doc_id == f"{stem}.pdf"
        assert doc.text.split("\n", 1)[0] == doc.title
        ids = [key for key in expected if key.startswith(f"{stem}#p")]
        assert doc.metadata["page_count"] == len(doc.metadata["pages"]) == len(ids) > 0
        view = DocumentView(doc)
        assert view.page_count == len(ids)
        for number, (start, end) in enumerate(doc.metadata["pages"], 1):
            assert doc.text[start - 1] == "\n" and doc.text[end - 1] == "\n"
            assert squash(doc.text[start:end]) == squash(expected[f"{stem}#p{number - 1}"])
            first, last = view.page_lines(number)
            assert view.page_of(start) == view.page_of(end - 1) == number
            assert [line.page for line in view.lines(first, last)] == [number] * (last - first + 1)
            assert f"--- page {number} ---\n{first}: " in view.render(first, last)


def test_indexed_filing_keeps_its_pages(filing_pdfs: dict[str, Path], tmp_path: Path) -> None:
    filing = filing_pdfs[ACME]
    with Index.open(tmp_path / "idx", settings=Settings.load(), create=True) as index:
        report = index.add([filing])
        assert report.added == [filing.name] and not report.skipped
        stored = index.document(filing.name)
        assert stored is not None and stored.type == "pdf"
        fresh = next(iter_documents([filing]))
        assert stored.text == fresh.text
        assert [list(span) for span in stored.metadata["pages"]] == fresh.metadata["pages"]
        view = DocumentView(stored)
        last_page = view.page_count
        start, end = stored.metadata["pages"][-1]
        assert view.where(start, end).startswith(f"page {last_page}, lines ")


# --- generated PDFs ----------------------------------------------------------------------


def test_blank_pages_keep_page_numbers_true(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "report.pdf", ["First page words.", "", "Third page words."])
    (doc,) = load([path])[0]
    pages = doc.metadata["pages"]
    assert doc.metadata["page_count"] == 3 and doc.title == "report"
    assert doc.text == "report\nFirst page words.\n\nThird page words.\n"
    assert [doc.text[s:e] for s, e in pages] == ["First page words.\n", "\n", "Third page words.\n"]
    view = DocumentView(doc)
    assert [view.page_lines(n) for n in (1, 2, 3)] == [(1, 1), (2, 2), (3, 3)]
    assert view.page_of(doc.text.index("Third")) == 3


@pytest.mark.parametrize(
    ("metadata_title", "title"),
    [
        ("Quarterly Results 2023", "Quarterly Results 2023"),
        ("", "filing"),
        ("Untitled", "filing"),
        ("Microsoft Word - draft.doc", "filing"),
        ("0001018724-18-000005", "filing"),
    ],
)
def test_metadata_title_only_when_meaningful(
    tmp_path: Path, metadata_title: str, title: str
) -> None:
    path = make_pdf(tmp_path / "filing.pdf", ["Revenue grew."], title=metadata_title)
    (doc,) = load([path])[0]
    assert doc.title == title and doc.text.startswith(f"{title}\nRevenue grew.")


def test_bad_pdfs_in_a_folder_are_skipped_with_reasons(sleuth, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.txt").write_text("Herons wade in shallow water.\n", "utf-8")
    make_pdf(
        folder / "locked.pdf",
        ["Secret."],
        encryption=pymupdf.PDF_ENCRYPT_AES_256,
        user_pw="x",
        owner_pw="y",
    )
    whole = make_pdf(tmp_path / "whole.pdf", ["Some text. " * 200] * 3, use_objstms=1)
    data = whole.read_bytes()
    (folder / "truncated.pdf").write_bytes(data[: len(data) // 2])
    (folder / "garbage.pdf").write_bytes(b"this is not a PDF at all\n" * 20)
    (folder / "empty.pdf").write_bytes(b"")
    zero_page_pdf(folder / "nopages.pdf")
    image_only_pdf(folder / "scan.pdf")
    (folder / "broken.docx").write_bytes(b"PK\x03\x04 not really a zip")
    result = sleuth("index", str(folder), "--index", str(tmp_path / "idx"), "--json")
    assert result.code == 0, result.err
    assert "Traceback" not in result.err
    reasons = {Path(s["path"]).name: s["reason"] for s in result.json()["skipped"]}
    assert reasons == {
        "locked.pdf": "encrypted PDF (needs a password; decrypt it first)",
        "truncated.pdf": "not a readable PDF (damaged or truncated; no pages recovered)",
        "garbage.pdf": reasons["garbage.pdf"],
        "empty.pdf": "empty file (0 bytes)",
        "nopages.pdf": "PDF has no pages",
        "scan.pdf": "PDF has no extractable text (scanned images? run OCR first)",
        "broken.docx": reasons["broken.docx"],
    }
    assert reasons["garbage.pdf"].startswith("not a readable PDF (")
    assert reasons["broken.docx"].startswith("not a readable .docx (")
    status = sleuth("status", "--json", "--index", str(tmp_path / "idx")).json()
    assert status["documents"] == 1


def test_repairable_damage_is_read(tmp_path: Path) -> None:
    data = make_pdf(tmp_path / "whole.pdf", ["Page one.", "Page two."]).read_bytes()
    cut = data[: data.rindex(b"xref")]  # no xref table or trailer: MuPDF rebuilds them
    (doc,) = load([write_bytes(tmp_path / "cut.pdf", cut)])[0]
    assert doc.metadata["page_count"] == 2 and "Page two." in doc.text


def test_bad_pdf_named_directly_is_skipped_not_raised(tmp_path: Path) -> None:
    locked = make_pdf(
        tmp_path / "locked.pdf",
        ["Secret."],
        encryption=pymupdf.PDF_ENCRYPT_AES_256,
        user_pw="x",
        owner_pw="y",
    )
    good = make_pdf(tmp_path / "good.pdf", ["Open words."])
    docs, report = load([locked, good])
    assert [d.doc_id for d in docs] == ["good.pdf"]
    assert [(s.path, s.reason) for s in report.skipped] == [
        (str(locked), "encrypted PDF (needs a password; decrypt it first)")
    ]


def test_missing_libraries_skip_with_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pdf = make_pdf(tmp_path / "a.pdf", ["Words."])
    word = tmp_path / "b.docx"
    docx.Document().save(str(word))
    monkeypatch.setitem(sys.modules, "pymupdf", None)
    monkeypatch.setitem(sys.modules, "docx", None)
    docs, report = load([pdf, word])
    assert docs == []
    assert [s.reason for s in report.skipped] == [
        "'pymupdf' is not installed; install it with: pip install 'sleuth-rag[pdf]'",
        "'python-docx' is not installed; install it with: pip install 'sleuth-rag[pdf]'",
    ]


# --- .docx -------------------------------------------------------------------------------


def test_docx_heading_paragraphs_and_table_are_indexed(tmp_path: Path) -> None:
    path = tmp_path / "memo.docx"
    word = docx.Document()
    word.add_heading("Heron Survey 2024", level=1)
    word.add_paragraph("Grey herons nested along the river.")
    table = word.add_table(rows=2, cols=3)
    for cell, text in zip(table.rows[0].cells, ["Site", "Nests", "Chicks"], strict=True):
        cell.text = text
    for cell, text in zip(table.rows[1].cells, ["North bank", "12", "31"], strict=True):
        cell.text = text
    word.add_paragraph("Counts were made in May.")
    word.save(str(path))
    with Index.open(tmp_path / "idx", settings=Settings.load(), create=True) as index:
        assert index.add([path]).added == ["memo.docx"]
        doc = index.document("memo.docx")
        hits = index.keyword_search("Chicks")
    assert doc is not None and doc.type == "docx" and doc.title == "Heron Survey 2024"
    assert "pages" not in doc.metadata
    assert doc.text == (
        "Heron Survey 2024\n\nGrey herons nested along the river.\n\n"
        "Site | Nests | Chicks\nNorth bank | 12 | 31\n\nCounts were made in May."
    )
    assert hits and hits[0].doc_id == "memo.docx"


def test_docx_title_prefers_core_properties_then_stem(tmp_path: Path) -> None:
    titled = tmp_path / "titled.docx"
    word = docx.Document()
    word.core_properties.title = "Field Notes"
    word.add_paragraph("Plain words only.")
    word.save(str(titled))
    plain = tmp_path / "plain.docx"
    word = docx.Document()
    word.add_paragraph("Plain words only.")
    word.save(str(plain))
    empty = tmp_path / "empty.docx"
    docx.Document().save(str(empty))
    docs, report = load([titled, plain, empty])
    assert [(d.title, d.text) for d in docs] == [
        ("Field Notes", "Field Notes\nPlain words only."),
        ("plain", "plain\nPlain words only."),
    ]
    assert [s.reason for s in report.skipped] == [".docx has no text"]
