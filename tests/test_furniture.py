"""Documentation sites indexed without their page furniture (issue 40).

Each site is a folder of small pages written in the shape its generator emits (Sphinx,
MkDocs Material, Javadoc 8 and 17, DocBook as the PostgreSQL manual), indexed through the
public API; the chunks read back must hold the page's content (prose, code, tables,
footnotes, the title) and none of the navigation, headers, footers, search boxes and
permalink anchors around it, and the titles must have lost the site name they share.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sleuth import Index
from sleuth.text.titles import site_affixes, without_site


def sphinx_page(name: str, topic: str) -> str:
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8" />
<title>{name} — {topic} &#8212; Python 3.11.2 documentation</title></head><body>
<div class="related" role="navigation" aria-label="related navigation"><h3>Navigation</h3>
<ul><li class="right"><a href="genindex.html">index</a></li>
<li class="right"><a href="py-modindex.html">modules</a> |</li>
<li class="right"><a href="next.html">next</a> |</li>
<li class="right"><a href="prev.html">previous</a> |</li></ul></div>
<div class="document"><div class="documentwrapper"><div class="bodywrapper">
<div class="body" role="main"><section id="module-{name}">
<h1>{name} — {topic}<a class="headerlink" href="#module-{name}"
 title="Permalink to this heading">¶</a></h1>
<p>The {name} module handles {topic}.</p>
<div class="highlight"><pre>&gt;&gt;&gt; import {name}
&gt;&gt;&gt; {name}.dumps([1, 2])</pre></div>
<table class="docutils"><tr><th>Kind</th><th>Python type</th></tr>
<tr><td>object</td><td>dict</td></tr></table>
<aside class="footnote brackets" id="f1" role="note"><p>The {name} footnote.</p></aside>
</section></div></div></div>
<div class="sphinxsidebar" role="navigation" aria-label="main navigation">
<div class="sphinxsidebarwrapper"><h4>Previous topic</h4><p><a href="prev.html">prev</a></p>
<h4>Next topic</h4><p><a href="next.html">next</a></p>
<div role="note" aria-label="source link"><h3>This Page</h3><ul class="this-page-menu">
<li><a href="bugs.html">Report a Bug</a></li><li><a href="src.txt">Show Source</a></li></ul>
</div><div id="searchbox" role="search"><h3>Quick search</h3><form class="search">
<input type="text" name="q" /><input type="submit" value="Go" /></form></div></div></div>
<div class="clearer"></div></div>
<div class="footer">&copy; Copyright 2001-2023, Python Software Foundation.
Created using Sphinx 5.3.0.</div></body></html>"""


def mkdocs_page(name: str) -> str:
    return f"""<!doctype html><html lang="en" class="no-js"><head><meta charset="utf-8">
<title>{name} - Material for MkDocs</title></head><body dir="ltr">
<input class="md-toggle" data-md-toggle="drawer" type="checkbox" id="__drawer">
<a href="#setup" class="md-skip">Skip to content</a>
<header class="md-header" data-md-component="header"><nav class="md-header__inner"
 aria-label="Header"><div class="md-header__title"><span>Material for MkDocs</span></div>
<div class="md-search" data-md-component="search" role="dialog">
<input type="text" class="md-search__input" placeholder="Search"></div></nav></header>
<div class="md-container"><main class="md-main"><div class="md-main__inner md-grid">
<div class="md-sidebar md-sidebar--primary" data-md-type="navigation">
<nav class="md-nav md-nav--primary" aria-label="Navigation"><ul class="md-nav__list">
<li class="md-nav__item"><a href="index.html" class="md-nav__link">Home page</a></li></ul>
</nav></div><div class="md-content"><article class="md-content__inner md-typeset">
<h1 id="top">{name}<a class="headerlink" href="#top" title="Permanent link">&para;</a></h1>
<p>The {name} page explains the setup of the theme.</p>
<h2 id="setup">Setup<a class="headerlink" href="#setup" title="Permanent link">&para;</a></h2>
<div class="highlight"><pre><code>pip install mkdocs-material</code></pre></div>
</article></div></div></main>
<footer class="md-footer"><nav class="md-footer__inner" aria-label="Footer">
<a href="index.html" class="md-footer__link"><span class="md-footer__direction">Previous</span>
<div class="md-ellipsis">Home page</div></a></nav>
<div class="md-copyright">Made with Material for MkDocs</div></footer></div></body></html>"""


def javadoc8_page(name: str) -> str:
    return f"""<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN"><html lang="en">
<head><title>{name} (Java Platform SE 8 )</title></head><body>
<div class="topNav"><a name="navbar.top"></a><div class="skipNav"><a href="#skip.navbar.top"
 title="Skip navigation links">Skip navigation links</a></div>
<ul class="navList" title="Navigation"><li><a href="overview-summary.html">Overview</a></li>
<li><a href="package-summary.html">Package</a></li><li class="navBarCell1Rev">Class</li>
<li><a href="package-tree.html">Tree</a></li><li><a href="deprecated-list.html">Deprecated</a>
</li><li><a href="index-1.html">Index</a></li><li><a href="help-doc.html">Help</a></li></ul>
</div><div class="subNav"><ul class="navList"><li><a href="Prev.html">Prev&nbsp;Class</a></li>
</ul></div>
<div class="header"><div class="subTitle">java.util</div>
<h2 title="Class {name}" class="title">Class {name}&lt;E&gt;</h2></div>
<div class="contentContainer"><div class="description"><div class="block">Resizable-array
implementation of the <code>List</code> interface, named {name}.</div></div>
<table class="memberSummary"><tr><th>Modifier and Type</th><th>Method</th></tr>
<tr><td><code>boolean</code></td><td><code>add(E e)</code> Appends the element.</td></tr>
</table></div>
<div class="bottomNav"><a name="navbar.bottom"></a><ul class="navList">
<li><a href="overview-summary.html">Overview</a></li><li>Tree</li><li>Help</li></ul></div>
<p class="legalCopy"><small>Copyright &#169; 1993, 2023, Oracle and/or its affiliates.
All rights reserved.</small></p></body></html>"""


def javadoc17_page(name: str) -> str:
    return f"""<!DOCTYPE HTML><html lang="en"><head><title>{name} (Java SE 17 &amp; JDK 17)</title>
</head><body class="class-declaration-page"><div class="flex-box">
<header role="banner" class="flex-header"><nav role="navigation">
<div class="top-nav" id="navbar-top"><div class="skip-nav"><a href="#skip-navbar-top"
 title="Skip navigation links">Skip navigation links</a></div>
<ul class="nav-list" title="Navigation"><li>Overview</li><li>Module</li><li>Package</li>
<li class="nav-bar-cell1-rev">Class</li><li>Use</li><li>Tree</li><li>Deprecated</li>
<li>Index</li><li>Help</li></ul></div><div class="sub-nav">SEARCH:
<input type="text" id="search-input" value="search"></div></nav></header>
<div class="flex-content"><main role="main"><div class="header">
<h1 title="Class {name}" class="title">Class {name}</h1></div>
<section class="class-description"><div class="block">The {name} class represents character
strings.</div></section></main>
<footer role="contentinfo"><hr><p class="legal-copy"><small>Copyright &copy; 1993, 2021,
Oracle and/or its affiliates.</small></p></footer></div></div></body></html>"""


def docbook_page(title: str, chapter: str, body: str) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "x.dtd">
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{title}</title></head>
<body id="docContent" class="container-fluid col-10"><div class="navheader">
<table width="100%" summary="Navigation header"><tr><th colspan="5" align="center">{title}</th>
</tr><tr><td width="10%" align="left"><a accesskey="p" href="prev.html">Prev</a> </td>
<td width="10%" align="left"><a accesskey="u" href="up.html">Up</a></td>
<th width="60%" align="center">{chapter}</th><td width="10%" align="right">
<a accesskey="h" href="index.html">Home</a></td><td width="10%" align="right">
 <a accesskey="n" href="next.html">Next</a></td></tr></table><hr /></div>
<div class="sect1"><div class="titlepage"><h2 class="title">{title}</h2></div>
<p>{body}</p><pre class="programlisting">host all all 192.168.0.0/16 ident map=omicron</pre>
</div><div class="navfooter"><hr /><table width="100%" summary="Navigation footer"><tr>
<td width="40%" align="left"><a accesskey="p" href="prev.html">Prev</a> </td>
<td width="20%" align="center"><a accesskey="u" href="up.html">Up</a></td>
<td width="40%" align="right"> <a accesskey="n" href="next.html">Next</a></td></tr><tr>
<td width="40%" align="left" valign="top">{chapter} </td><td width="20%" align="center">
<a accesskey="h" href="index.html">Home</a></td><td width="40%" align="right" valign="top">
 21.2. User Name Maps</td></tr></table></div></body></html>"""


def indexed(folder: Path, pages: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Index a folder of ``pages`` (file name → HTML); doc id → (title, the text of its
    chunks), read back from the index."""
    site = folder / "site"
    for name, page in pages.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(page, encoding="utf-8")
    with Index.open(folder / "idx", create=True) as index:
        index.add([site])
        out = {}
        for doc_id, title in index.document_titles().items():
            chunk_ids = [chunk_id for chunk_id, _, _ in index.chunk_spans(doc_id)]
            text = "\n".join(c.text for c in index.read(chunk_ids).chunks)
            out[doc_id] = (title, text)
    return out


def check(text: str, kept: list[str], gone: list[str]) -> None:
    for phrase in kept:
        assert phrase in text, f"content lost: {phrase!r}"
    for phrase in gone:
        assert phrase not in text, f"furniture indexed: {phrase!r}"


def test_sphinx_pages_lose_sidebar_related_bar_footer_and_site_name(tmp_path: Path) -> None:
    topics = {"json": "JSON encoder and decoder", "csv": "CSV File Reading and Writing",
              "zlib": "Compression compatible with gzip"}
    docs = indexed(tmp_path, {f"{n}.html": sphinx_page(n, t) for n, t in topics.items()})
    for name, topic in topics.items():
        title, text = docs[f"{name}.html"]
        assert title == f"{name} — {topic}"  # the site's suffix is not the page's title
        assert text.startswith(f"{name} — {topic}\n")
        check(text, kept=[f"The {name} module handles {topic}.", f">>> {name}.dumps([1, 2])",
                          "Kind Python type", "object dict", f"The {name} footnote."],
              gone=["Python 3.11.2 documentation", "Previous topic", "Next topic",
                    "This Page", "Report a Bug", "Show Source", "Navigation", "modules",
                    "Quick search", "¶", "Copyright", "Created using Sphinx"])


def test_a_sphinx_build_is_read_once_without_its_sources_copies(tmp_path: Path) -> None:
    pages = {"json.html": sphinx_page("json", "JSON encoder and decoder"),
             "_sources/json.rst.txt": "json --- JSON encoder and decoder\n\nThe json module.",
             "searchindex.js": "Search.setIndex({})"}
    assert sorted(indexed(tmp_path, pages)) == ["json.html"]
    # without the build's marker a folder named _sources is an ordinary folder
    plain = tmp_path / "plain"
    plain.mkdir()
    assert "_sources/notes.txt" in indexed(plain, {"_sources/notes.txt": "Plain notes."})


def test_mkdocs_material_pages_keep_the_article_only(tmp_path: Path) -> None:
    names = ["Getting started", "Customization", "Publishing your site"]
    docs = indexed(tmp_path, {f"page{i}.html": mkdocs_page(n) for i, n in enumerate(names)})
    for i, name in enumerate(names):
        title, text = docs[f"page{i}.html"]
        assert title == name
        check(text, kept=[f"The {name} page explains the setup of the theme.", "Setup",
                          "pip install mkdocs-material"],
              gone=["Skip to content", "Material for MkDocs", "Search", "Home page",
                    "Previous", "¶"])


def test_javadoc_pages_lose_navigation_bars_and_legal_copy(tmp_path: Path) -> None:
    docs = indexed(tmp_path / "8", {f"{n}.html": javadoc8_page(n)
                                    for n in ("ArrayList", "HashMap", "TreeSet")})
    for name in ("ArrayList", "HashMap", "TreeSet"):
        title, text = docs[f"{name}.html"]
        assert title == name
        check(text, kept=[f"Class {name}<E>", f"interface, named {name}.",
                          "Modifier and Type Method", "add(E e) Appends the element."],
              gone=["Skip navigation links", "Overview", "Deprecated", "Help", "Prev Class",
                    "Copyright", "Java Platform SE 8"])
    docs = indexed(tmp_path / "17", {f"lang/{n}.html": javadoc17_page(n)
                                     for n in ("String", "Integer", "Thread")})
    for name in ("String", "Integer", "Thread"):
        title, text = docs[f"lang/{name}.html"]
        assert title == name
        check(text, kept=[f"Class {name}", f"The {name} class represents character strings."],
              gone=["Skip navigation links", "Overview", "SEARCH", "Copyright", "Help"])


def test_docbook_pages_lose_navheader_and_navfooter(tmp_path: Path) -> None:
    chapter = "Chapter 21. Client Authentication"
    pages = {
        "auth-pg-hba-conf.html": docbook_page(
            "21.1. The pg_hba.conf File", chapter,
            "Client authentication is controlled by a configuration file."),
        "auth-methods.html": docbook_page(
            "21.3. Authentication Methods", chapter, "PostgreSQL provides various methods."),
    }
    docs = indexed(tmp_path, pages)
    title, text = docs["auth-pg-hba-conf.html"]
    assert title == "21.1. The pg_hba.conf File"  # no shared site name: left as it is
    assert text.startswith("21.1. The pg_hba.conf File\n")
    check(text, kept=["Client authentication is controlled by a configuration file.",
                      "host all all 192.168.0.0/16 ident map=omicron"],
          gone=["Prev", "Up", "Home", "Next", chapter, "21.2. User Name Maps"])
    assert docs["auth-methods.html"][0] == "21.3. Authentication Methods"


def docbook_chapter(title: str, intro: str, sections: list[str]) -> str:
    """A part or chapter page of the PostgreSQL manual: a line of introduction (or none)
    and the table of contents of its sections."""
    toc = "".join(f'<dt><span class="sect1"><a href="s{i}.html">{name}</a></span></dt>'
                  for i, name in enumerate(sections))
    page = docbook_page(title, title, intro)
    start, end = page.index("<pre class"), page.index("</pre>") + len("</pre>")
    return (page[:start] + '<div class="toc"><p><strong>Table of Contents</strong></p>'
            f'<dl class="toc">{toc}</dl></div>' + page[end:])


def docbook_index(entries: dict[str, str]) -> str:
    """The manual's index (``bookindex.html``): each term and the sections it is in."""
    rows = "".join(f'<dt>{term}, <a class="indexterm" href="x.html">{where}</a></dt>'
                   for term, where in entries.items())
    return ('<html><head><title>Index</title></head><body><div class="navheader"><a '
            'href="biblio.html">Prev</a></div><div class="index" id="BOOKINDEX">'
            '<div class="titlepage"><h1 class="title">Index</h1></div><div class="index">'
            '<p class="indexdiv-quicklinks"><a href="#A">A</a> | <a href="#B">B</a></p>'
            f'<div class="indexdiv"><h3>A</h3><dl>{rows}</dl></div></div></div></body></html>')


def sphinx_genindex(letter: str, entries: list[str]) -> str:
    """One letter of a Sphinx build's general index (``genindex-A.html``)."""
    cells = "".join(f'<li><a href="library/x.html#{e}">{e}</a></li>' for e in entries)
    return sphinx_page("json", "JSON encoder and decoder").replace(
        '<section id="module-json">', f'<section><h1 id="index">Index &#8211; {letter}</h1>'
        f'<table class="indextable" style="width: 100%"><tr><td><ul>{cells}</ul></td></tr>'
        '</table><div hidden>', 1).replace("</section>", "</div></section>", 1)


def test_indexes_and_tables_of_contents_are_navigation_not_content(tmp_path: Path) -> None:
    """A book's index and a page of contents only are left out (reported); the contents
    listed on a page with text of its own go, its text stays (BENCHMARKS §37)."""
    sections = ["20.1. Setting Parameters", "20.2. File Locations", "20.3. Connections"]
    chapter = "Chapter 20. Server Configuration"
    toctree = ('<div class="toctree-wrapper compound"><ul><li class="toctree-l1">'
               '<a href="email.message.html">email.message: Representing an email message'
               '</a></li></ul></div>')
    pages = {
        "runtime-config.html": docbook_chapter(
            chapter, "There are many configuration parameters that affect the server.",
            sections),
        "gin.html": docbook_chapter("Chapter 70. GIN Indexes", "", sections),
        "bookindex.html": docbook_index({"autovacuum": "25.1.6. The Autovacuum Daemon",
                                         "work_mem": "20.4.1. Memory",
                                         "vacuum_cost_delay": "20.4.4. Cost-based Delay"}),
        "genindex-A.html": sphinx_genindex("A", ["abs() (built-in function)", "aifc",
                                                 "all() (built-in function)", "array"]),
        "email.html": sphinx_page("email", "An email and MIME handling package").replace(
            "<table class", f"{toctree}<table class", 1),
    }
    site = tmp_path / "site"
    site.mkdir()
    for name, page in pages.items():
        (site / name).write_text(page, encoding="utf-8")
    with Index.open(tmp_path / "idx", create=True) as index:
        report = index.add([site])
        titles = index.document_titles()
        texts = {doc_id: "\n".join(c.text for c in index.read(
            [chunk for chunk, _, _ in index.chunk_spans(doc_id)]).chunks) for doc_id in titles}
    assert sorted(titles) == ["email.html", "runtime-config.html"]
    left_out = {Path(s.path).name: s.reason for s in report.skipped}
    assert sorted(left_out) == ["bookindex.html", "genindex-A.html", "gin.html"]
    assert all("navigation only" in reason for reason in left_out.values())
    check(texts["runtime-config.html"],
          kept=[chapter, "There are many configuration parameters that affect the server."],
          gone=["Table of Contents", *sections])
    check(texts["email.html"], kept=["The email module handles An email and MIME handling "
                                     "package.", "Kind Python type"],
          gone=["email.message: Representing an email message"])


def javadoc17_listing(kind: str, title: str, body: str) -> str:
    """A Javadoc 17 page its generator marks as ``kind`` (the ``<body>`` class)."""
    page = javadoc17_page("String")
    page = page.replace('class="class-declaration-page"', f'class="{kind}"')
    page = page.replace("String (Java SE 17 &amp; JDK 17)</title>", f"{title}</title>")
    start = page.index('<div class="header">')
    end = page.index("</main>")
    return page[:start] + body + page[end:]


def test_javadoc_indexes_uses_trees_and_source_copies_are_listings(tmp_path: Path) -> None:
    """Javadoc's index, "Uses of", tree, help and source pages repeat what its class pages
    say: left out (reported), however long; the class and constants pages stay."""
    entries = "".join(f"<dt><a href=\"lang/String.html#m{i}\">strip{i}()</a> - Method in "
                      f"class String</dt><dd><div class=\"block\">Returns a string whose "
                      f"value is this string, with white space {i} removed.</div></dd>"
                      for i in range(300))
    pages = {
        "lang/String.html": javadoc17_page("String"),
        "constant-values.html": javadoc17_listing(
            "constants-summary-page", "Constant Field Values",
            "<h1>Constant Field Values</h1><table><tr><td>public static final int</td>"
            "<td>MAX_RADIX</td><td>36</td></tr></table>"),
        "index-all.html": javadoc17_listing("index-page", "Index",
                                            f"<h1>Index</h1><dl class=\"index\">{entries}</dl>"),
        "lang/class-use/String.html": javadoc17_listing(
            "class-use-page", "Uses of Class java.lang.String",
            "<h1>Uses of Class<br>java.lang.String</h1><p>Methods in java.lang that return "
            "String: strip() Returns a string whose value is this string.</p>"),
        "overview-tree.html": javadoc17_listing(
            "tree-page", "Class Hierarchy",
            "<h1>Hierarchy For All Packages</h1><ul><li>java.lang.Object<ul><li>"
            "java.lang.String (implements java.lang.CharSequence)</li></ul></li></ul>"),
        "help-doc.html": javadoc17_listing(
            "help-page", "API Help", "<h1>JavaDoc Help</h1><p>Starting from the Overview "
            "page, you can browse the documentation using the links in each page.</p>"),
        "src-html/lang/String.html": javadoc17_listing(
            "source-page", "Source code", "<pre>001 /**\n002  * The String class represents "
            "character strings.\n003  */\n004 public final class String {}</pre>"),
        # a page that forwards to another (javadoc's overview-summary.html, whatever its
        # body's class)
        "overview-summary.html": "<!DOCTYPE HTML><html><head><title>Java SE API</title>"
                                 "<noscript><meta http-equiv=\"Refresh\" content=\"0;index.html\">"
                                 "</noscript></head><body><main><p><a href=\"index.html\">"
                                 "index.html</a></p></main></body></html>",
        # a page that reloads itself is no redirect
        "status.html": "<html><head><title>Build status</title><meta http-equiv=\"refresh\" "
                       "content=\"30\"></head><body><p>The nightly build of the String "
                       "class passed all of its tests.</p></body></html>",
    }
    site = tmp_path / "site"
    for name, page in pages.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(page, encoding="utf-8")
    with Index.open(tmp_path / "idx", create=True) as index:
        report = index.add([site])
        titles = index.document_titles()
    assert sorted(titles) == ["constant-values.html", "lang/String.html", "status.html"]
    left_out = {s.path.split("site/")[-1]: s.reason for s in report.skipped}
    assert sorted(left_out) == ["help-doc.html", "index-all.html", "lang/class-use/String.html",
                                "overview-summary.html", "overview-tree.html",
                                "src-html/lang/String.html"]
    assert all("navigation only" in reason for reason in left_out.values())


def test_header_footer_and_aside_of_an_article_are_content(tmp_path: Path) -> None:
    page = """<!doctype html><html><head><title>Tuning the planner</title></head><body>
<header><a href="/">Example Docs</a><form role="search"><input name="q"></form></header>
<aside class="toc"><a href="#a">Contents on this page</a></aside>
<main><article><header><h1>Tuning the planner</h1><p>Written by Ann Lee.</p></header>
<p>Raise the statistics target for skewed columns.</p>
<aside><p>Statistics are sampled, not counted.</p></aside>
<footer><p>Applies to version 15.</p></footer></article></main>
<footer role="contentinfo">&copy; 2024 Example Docs. All rights reserved.</footer>
<div role="banner">Example Docs banner</div></body></html>"""
    ((title, text),) = indexed(tmp_path, {"planner.html": page}).values()
    assert title == "Tuning the planner"
    check(text, kept=["Tuning the planner", "Written by Ann Lee.",
                      "Raise the statistics target for skewed columns.",
                      "Statistics are sampled, not counted.", "Applies to version 15."],
          gone=["Example Docs", "Contents on this page", "All rights reserved"])


@pytest.mark.parametrize(("titles", "affixes"), [
    (["a — Site 1.0 documentation", "b — Site 1.0 documentation",
      "c — d — Site 1.0 documentation", "Index"], ("", "— Site 1.0 documentation")),
    (["PostgreSQL: Documentation: 15: SELECT", "PostgreSQL: Documentation: 15: psql",
      "PostgreSQL: Documentation: 15: 20.3. Connections and Authentication"],
     ("PostgreSQL: Documentation: 15:", "")),
    (["String (Java SE 17 & JDK 17)", "Thread (Java SE 17 & JDK 17)",
      "Integer (Java SE 17 & JDK 17)"], ("", "(Java SE 17 & JDK 17)")),
    # shared by half only, or by two titles, or with no separator: not a site's name
    (["a | Site", "b | Site", "c", "d"], ("", "")),
    (["a | Site", "b | Site"], ("", "")),
    (["Blood Street", "Blood Simple", "Blood Diamond"], ("", "")),
])
def test_site_affixes(titles: list[str], affixes: tuple[str, str]) -> None:
    assert site_affixes(titles) == affixes
    for title in titles:  # a title is never emptied
        assert without_site(title, affixes).strip()
