"""Documentation sites as a new user indexes them (issue 62): pages nested as the HTML parser
nests them, pages of links left out as navigation whatever made them, and a page saved under
two names indexed once.

Each site is a folder of pages written by the test in the shape real sites have (SQLite's
inline SVG syntax diagrams, its site map, keyword index and cross-reference pages, a Javadoc
class page, an options reference, a FAQ), read through the public API (``iter_documents``,
``Index``) and the command line.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from sleuth import Index
from sleuth.ingest import IngestReport, ReadLimits, iter_documents

MENU = "".join(f'<li><a href="{name}.html">{name.title()}</a></li>'
               for name in ("index", "about", "docs", "download", "license", "support",
                            "purchase", "news", "faq", "changes", "search", "forum", "src",
                            "cli"))


def page(title: str, body: str) -> str:
    """A page of a site with its menu of 14 links (not marked as navigation, as SQLite's
    is not) around ``body``."""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
            f"<link rel='stylesheet' href='site.css'></head><body>"
            f"<div class='menu'><img src='logo.gif' alt='Logo'><ul>{MENU}</ul></div>"
            f"<h1>{title}</h1>{body}</body></html>")


def diagram(name: str, paths: int) -> str:
    """An inline SVG syntax diagram as SQLite draws them: nested groups of self-closing
    ``<path .../>``, ``<circle/>`` and ``<polygon/>`` with text labels."""
    shapes = "".join(f'<path d="M{i},17L{i + 30},17" style="fill:none;stroke-width:2.16;'
                     f'stroke:rgb(0,0,0);" />'
                     f'<polygon points="{i},17 {i + 4},21 {i + 4},13" style="fill:rgb(0,0,0)"/>'
                     f'<circle cx="{i}" cy="9" r="3"/>' for i in range(paths))
    return (f'<div class="imgcontainer"><div style="max-width:963px">'
            f'<svg xmlns="http://www.w3.org/2000/svg" class="pikchr" viewBox="0 0 963 700">'
            f'<g><g transform="translate(0,0)">{shapes}<text x="68" y="17">{name}</text>'
            f'<g><path d="M1,1L2,2"/></g></g></g></svg></div></div>')


def read(folder: Path, limits: ReadLimits | None = None
         ) -> tuple[dict[str, str], dict[str, str]]:
    """The texts of the documents read from ``folder`` (within ``limits``, the defaults when
    None) and the reasons of those skipped, by file name."""
    report = IngestReport()
    docs = {doc.doc_id: doc.text for doc in iter_documents([folder], report=report,
                                                           limits=limits or ReadLimits())}
    return docs, {Path(s.path).name: s.reason for s in report.skipped}


def write(folder: Path, pages: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


# -- depth as the parser measures it ---------------------------------------------------


def test_pages_with_inline_svg_diagrams_are_indexed(tmp_path: Path) -> None:
    """SQLite's SQL reference draws its syntax in inline SVG: thousands of self-closing
    shapes in a page 9 elements deep were counted as levels never closed (1,739 deep)."""
    statements = {
        "lang_select.html": ("SELECT", "The SELECT statement is used to query the database."),
        "lang_createtable.html": ("CREATE TABLE", "The CREATE TABLE command creates a new "
                                  "table in an SQLite database."),
        "lang_with.html": ("WITH clause", "Common Table Expressions act like temporary "
                           "views that exist only for the duration of a single statement."),
    }
    site = write(tmp_path / "site", {
        name: page(title, diagram(title, 300) + f"<p>{prose}</p>" + diagram("expr", 250)
                   + "<math><mi>x</mi><mo>=</mo><mn/><mspace width='1em'/></math>"
                   + f"<p>{prose} It is described below.</p>")
        for name, (title, prose) in statements.items()})
    docs, skipped = read(site)
    assert skipped == {}
    assert sorted(docs) == sorted(statements)
    for name, (_, prose) in statements.items():
        assert prose in docs[name]


def test_end_tags_left_out_close_where_the_parser_closes_them(tmp_path: Path) -> None:
    """Thousands of <p>, <li>, <dt>/<dd>, rows, cells and options without end tags, void
    elements and ``<br/>`` are as shallow as the parser makes them."""
    paragraphs = "".join(f"<p>Paragraph {i} says the tide turns at {i % 12} o'clock."
                         for i in range(3000))
    items = "<ul>" + "".join(f"<li>Item {i} <br/><img src='x.png'>" for i in range(3000)) + "</ul>"
    terms = "<dl>" + "".join(f"<dt>term{i}<dd>Meaning {i}." for i in range(800)) + "</dl>"
    rows = "<table>" + "".join(f"<tr><td>row {i}<td>value {i}" for i in range(1500)) + "</table>"
    options = "<select>" + "".join(f"<option>choice {i}" for i in range(500)) + "</select>"
    form = "".join(f"<input name='f{i}'><hr><wbr>" for i in range(500))
    site = write(tmp_path / "site", {"manual.html": page(
        "Manual", paragraphs + items + terms + rows + options + form + "<p>The end.")})
    docs, skipped = read(site)
    assert skipped == {}
    text = docs["manual.html"]
    assert "Paragraph 2999 says the tide turns at 11 o'clock." in text
    assert "Item 2999" in text and "Meaning 799." in text and "row 1499 value 1499" in text


def nested(tag: str, depth: int, inside: str = "deep text") -> str:
    return f"<html><body>{f'<{tag}>' * depth}{inside}{f'</{tag}>' * depth}</body></html>"


def test_a_page_nested_past_the_limit_is_skipped_with_the_limits_name(tmp_path: Path) -> None:
    """The parser's tree is what ``ingest.max_depth`` bounds: a page deeper than it is
    skipped naming the limit, however its depth is written (an HTML ``<div/>`` does not
    close; inside an SVG's foreignObject HTML rules hold), and one far deeper is refused
    before the parser spends minutes on it."""
    limit = "nested more than 256 elements deep (ingest.max_depth)"
    site = write(tmp_path / "site", {
        "a-far-too-deep.html": nested("div", 20_000),
        "b-past-the-limit.html": nested("section", 300),
        "c-div-slash.html": "<html><body>" + "<div/>" * 300 + "text</body></html>",
        "d-foreign-object.html": "<html><body><svg><foreignObject>" + "<div/>" * 300
                                 + "text</foreignObject></svg></body></html>",
        "e-links-in-blocks.html": "<html><body>" + "<a href='x.html'><div>" * 300
                                  + "text</body></html>",
        "f-under-the-limit.html": nested("div", 250, "<p>Deep but within the limit.</p>"),
        "g-svg-shapes.html": "<html><body><svg>" + "<g><path d='M0'/>" * 200 + "<rect/>" * 5000
                             + "</svg><p>Two hundred groups deep.</p></body></html>",
    })
    started = time.monotonic()
    docs, skipped = read(site)
    assert time.monotonic() - started < 60
    assert sorted(docs) == ["f-under-the-limit.html", "g-svg-shapes.html"]
    assert set(skipped) == {"a-far-too-deep.html", "b-past-the-limit.html",
                            "c-div-slash.html", "d-foreign-object.html",
                            "e-links-in-blocks.html"}
    assert all(limit in reason for reason in skipped.values()), skipped


def test_a_lower_limit_counts_only_what_the_parser_nests(tmp_path: Path) -> None:
    """With ``max_depth`` 16, a page of 12 real levels and many flat or self-closed
    elements passes; 20 real levels do not."""
    flat = "".join(f"<p>Para {i}<li>item<br><img src=x>" for i in range(200))
    twelve = "<div>" * 10 + "<p>twelve levels" + "</div>" * 10
    site = write(tmp_path / "site", {
        "flat.html": f"<html><body>{twelve}{flat}<svg><g>{'<path/>' * 300}</g></svg></body></html>",
        "deep.html": nested("span", 20),
    })
    docs, skipped = read(site, ReadLimits(max_depth=16))
    assert sorted(docs) == ["flat.html"]
    assert "nested more than 16 elements deep" in skipped["deep.html"]


# -- pages of links are navigation ------------------------------------------------------


def sitemap(entries: int) -> str:
    """A site map: a list of the site's pages."""
    items = "".join(f'<li><a href="page{i}.html">Page number {i} of the manual</a>'
                    f'<ul><li><a href="page{i}.html#s1">Section one</a></li></ul></li>'
                    for i in range(entries))
    return page("Site Map", f"<p>This page lists all pages.</p><ul>{items}</ul>")


def keyword_index(entries: int) -> str:
    """A keyword index: each keyword with the pages that say it."""
    rows = "".join(f'<li>busy_timeout_{i} &rarr; <a href="pragma.html#k{i}">pragma.html#k{i}'
                   f'</a> <a href="c3ref/busy{i}.html">c3ref/busy{i}.html</a></li>'
                   for i in range(entries))
    return page("Keyword Index", f"<ul>{rows}</ul>")


def cross_reference(entries: int) -> str:
    """A cross-reference of targets and the names given to them (half the words links)."""
    rows = "".join(f'<li><a href="doc{i}.html#s{i}">doc{i}.html#s{i}</a> &rarr; {{topic {i} '
                   f'name}}</li>' for i in range(entries))
    return page("Target Cross Reference", f"<ul>{rows}</ul>")


def class_page() -> str:
    """A Javadoc class page whose subinterfaces are one long run of links in a paragraph."""
    run = ", ".join(f'<a href="../../java.desktop/javax/swing/L{i}.html">Listener{i}</a>'
                    for i in range(300))
    return page("EventListener", f"<dl><dt>All Known Subinterfaces:</dt><dd><code>{run}"
                "</code></dd></dl><p>A tagging interface that all event listener interfaces "
                "must extend.</p><dl><dt>Since:</dt><dd>1.1</dd></dl>")


def inheriting_class_page() -> str:
    """A Javadoc class page that inherits most of what it has: a heading with a link and a
    run of links for each class it inherits from (Swing's JButton.AccessibleJButton)."""
    blocks = "".join(
        f'<h3>Methods inherited from class&nbsp;<a href="Base{k}.html">Base{k}</a></h3>'
        f'<div class="inherited-list"><code>'
        + ", ".join(f'<a href="Base{k}.html#m{i}()">method{k}x{i}</a>' for i in range(15))
        + "</code></div>" for k in range(14))
    fields = "".join(f'<dt>Field {i}:</dt><dd><a href="Field{i}.html">field{i}</a></dd>'
                     for i in range(10))
    return page("JButton.AccessibleJButton", "<p>This class implements accessibility "
                "support for the JButton class. It provides an implementation of the Java "
                f"Accessibility API appropriate to button user-interface elements.</p>"
                f"<dl>{fields}</dl>{blocks}")


def options_page() -> str:
    """A reference page: a long table of options, each linking to where it is used."""
    rows = "".join(f'<tr><td><a href="#opt{i}">--option-{i}</a></td><td>Sets how many '
                   f'workers stage {i} uses; see <a href="tuning.html#s{i}">tuning</a>.</td>'
                   f'</tr>' for i in range(80))
    return page("Command Line Options",
                f"<p>The tool reads these options from its command line.</p><table>{rows}"
                "</table>")


def catalog_page() -> str:
    """An overview: a table of catalogs (links) and their purpose (no sentences)."""
    rows = "".join(f'<tr><td><a href="catalog-{i}.html">pg_catalog_{i}</a></td>'
                   f'<td>access method support functions of kind {i}</td></tr>'
                   for i in range(70))
    return page("System Catalogs", "<p>Table 53.1 lists the system catalogs. More detailed "
                "documentation of each catalog follows below.</p>"
                f"<table><tr><th>Catalog Name</th><th>Purpose</th></tr>{rows}</table>")


def faq_page() -> str:
    """A FAQ: each answer links to a page, in sentences."""
    entries = "".join(f'<dt>({i}) How do I set the busy timeout of connection {i}?</dt><dd>'
                      f'Call <a href="c3ref/busy_timeout.html">sqlite3_busy_timeout()</a> with '
                      f'the number of milliseconds to wait. See <a href="pragma.html">the '
                      f'pragma</a> too.</dd>' for i in range(60))
    return page("Frequently Asked Questions", f"<dl>{entries}</dl>")


def references_page() -> str:
    """A bibliography: many links, all to other sites."""
    items = "".join(f'<li><a href="https://example.org/paper{i}">Paper {i} on B-trees</a>'
                    '</li>' for i in range(80))
    return page("Bibliography", f"<ul>{items}</ul>")


def test_pages_of_links_are_navigation_whatever_made_them(tmp_path: Path) -> None:
    """A site map, a keyword index and a cross-reference are left out and reported as pages
    of links; pages of content with many links are read: class pages with long runs of
    links, an options table, a catalog overview, a FAQ, a bibliography, a short page with
    the site's menu."""
    site = write(tmp_path / "site", {
        "sitemap.html": sitemap(60),
        "keyword_index.html": keyword_index(80),
        "doc_target_crossref.html": cross_reference(80),
        "EventListener.html": class_page(),
        "AccessibleJButton.html": inheriting_class_page(),
        "options.html": options_page(),
        "catalogs.html": catalog_page(),
        "faq.html": faq_page(),
        "biblio.html": references_page(),
        "changegroup.html": page("Changegroup Handle", "<p>A changegroup is an object used "
                                 "to combine two or more changesets.</p><p>Methods: "
                                 + ", ".join(f'<a href="m{i}.html">m{i}()</a>'
                                             for i in range(12)) + "</p>"),
    })
    docs, skipped = read(site)
    assert sorted(skipped) == ["doc_target_crossref.html", "keyword_index.html",
                               "sitemap.html"]
    for reason in skipped.values():
        assert reason.startswith("HTML page of navigation only (a page of links"), reason
    assert sorted(docs) == ["AccessibleJButton.html", "EventListener.html", "biblio.html",
                            "catalogs.html", "changegroup.html", "faq.html", "options.html"]
    assert "A tagging interface that all event listener interfaces must extend." in \
        docs["EventListener.html"]


# -- a page saved twice is indexed once -------------------------------------------------


def test_a_page_saved_under_two_names_is_indexed_once(tmp_path: Path) -> None:
    """fileformat.html and fileformat2.html hold the same page: the first is indexed, the
    second reported as its duplicate, in this run, when the folder is indexed again, and when
    a copy comes later from another folder; a copy in another collection is that
    collection's own; corpus records keep their ids whatever their text."""
    text = page("Database File Format", "<p>The database file begins with a 100-byte "
                "header.</p><p>The page size is a power of two between 512 and 65536.</p>")
    site = write(tmp_path / "site", {"fileformat.html": text, "fileformat2.html": text,
                                     "other.html": page("Other", "<p>Another page.</p>")})
    later = write(tmp_path / "later", {"copy.html": text})
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"id": "r1", "title": "R", "text": "Same words."},
                                  {"id": "r2", "title": "R", "text": "Same words."}]))
    with Index.open(tmp_path / "idx", create=True) as index:
        first = index.add([site])
        assert sorted(first.added) == ["fileformat.html", "other.html"]
        [dup] = first.duplicates
        assert dup.path == str(site / "fileformat2.html")
        assert dup.reason == f"the same text as {site / 'fileformat.html'} (a page is indexed once)"
        again = index.add([site])
        assert (again.added, again.updated, again.deleted, again.unchanged) == ([], [], [], 2)
        assert [d.path for d in again.duplicates] == [str(site / "fileformat2.html")]
        copied = index.add([later])
        assert copied.added == [] and [d.path for d in copied.duplicates] == [
            str(later / "copy.html")]
        assert str(site / "fileformat.html") in copied.duplicates[0].reason
        tenant = index.add([later], collection="acme")
        assert tenant.added == ["acme:copy.html"] and tenant.duplicates == []
        records = index.add([corpus])
        assert sorted(records.added) == ["r1", "r2"] and records.duplicates == []
        assert sorted(index.document_titles()) == ["acme:copy.html", "fileformat.html",
                                                   "other.html", "r1", "r2"]


def test_a_moved_page_is_indexed_in_its_new_place(tmp_path: Path) -> None:
    """The indexed copy of a page whose file is gone is no original: the page renamed is
    indexed under its new name (and the old one removed)."""
    text = page("Atomic Commit", "<p>SQLite commits a transaction atomically.</p>")
    site = write(tmp_path / "site", {"atomiccommit.html": text})
    with Index.open(tmp_path / "idx", create=True) as index:
        index.add([site])
        shutil.move(site / "atomiccommit.html", site / "transactions.html")
        moved = index.add([site])
        assert moved.added == ["transactions.html"] and moved.duplicates == []
        assert moved.deleted == ["atomiccommit.html"]
        assert list(index.document_titles()) == ["transactions.html"]


def test_the_command_line_reports_pages_of_links_and_copies(sleuth, tmp_path: Path) -> None:
    text = page("Pragma statements", "<p>PRAGMA busy_timeout sets the busy handler.</p>"
                + diagram("PRAGMA", 400))
    site = write(tmp_path / "site", {"pragma.html": text, "pragma2.html": text,
                                     "sitemap.html": sitemap(60)})
    out = sleuth("index", str(site), "--index", str(tmp_path / "idx"), "--json")
    assert out.code == 0, out.err
    report = json.loads(out.out)
    assert report["added"] == 1
    assert [(Path(s["path"]).name, s["reason"].split(":")[0]) for s in report["skipped"]] == [
        ("sitemap.html", "HTML page of navigation only (a page of links")]
    assert [Path(s["path"]).name for s in report["duplicates"]] == ["pragma2.html"]
    human = sleuth("index", str(site), "--index", str(tmp_path / "idx2"))
    assert human.code == 0, human.err
    assert f"skipped {site / 'sitemap.html'}: HTML page of navigation only (a page of " \
           "links" in human.err
    assert f"skipped {site / 'pragma2.html'}: the same text as {site / 'pragma.html'}" in human.err
