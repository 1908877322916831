"""Visible text of an HTML page, with block structure kept as line and paragraph breaks,
and without the page furniture a documentation site repeats on every page.

Furniture is what surrounds a page's content: navigation (``<nav>``, ``role=navigation``),
search boxes (``role=search``), the site's header, footer and side bars (``<header>``,
``<footer>``, ``<aside>``, ``role=banner/contentinfo``, left alone inside the page's
``<article>`` or ``<main>``, where they hold its title, a byline, footnotes), permalink
anchors (Sphinx and MkDocs ``¶``), and the class names the common generators give theirs
(:data:`FURNITURE_CLASSES`: Sphinx, MkDocs Material, Javadoc, DocBook), their lists of
contents and index tables among them. A page left with nothing but its title without its
furniture (a book's index, a contents page) is marked ``navigation_only``; so is a page its
generator marks as a listing of what the other pages say (:data:`LISTING_PAGES`: Javadoc's
index, "Uses of" and tree pages, its help on reading javadoc, its lists of every class and
package, and its copies of the source code), however long, and a page that only forwards
its reader to another (``<meta http-equiv="refresh" content="0;index.html">``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from sleuth.ingest.limits import NO_LIMITS, ReadLimits
from sleuth.ingest.nesting import tree_depth

# Elements whose content is never visible text
_INVISIBLE = (
    "script, style, noscript, template, svg, math, iframe, object, canvas, head, "
    "[hidden], [aria-hidden='true' i], [style*='display:none' i], [style*='display: none' i]"
)
# Elements that start and end a paragraph of their own
_BLOCK_TAGS = """
address article aside blockquote body caption center dd details dialog dir div dl dt fieldset
figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr html legend li main menu nav ol p
pre section summary table tbody tfoot thead tr ul
"""
_BLOCKS = frozenset(_BLOCK_TAGS.split())
# Furniture wherever it is
_NAVIGATION = "nav, [role='navigation' i], [role='search' i], .headerlink"
# Furniture unless inside the page's content (an article or main element)
_PAGE_LEVEL = "header, footer, aside, [role='banner' i], [role='contentinfo' i], .footer"
_CONTENT = frozenset({"article", "main"})  # tags, or the role ``main``
FURNITURE_CLASSES = {
    "Sphinx": "related sphinxsidebar rst-footer-buttons wy-nav-side wy-breadcrumbs "
              "toctree-wrapper indextable genindex-jumpbox modindex-jumpbox",
    "MkDocs": "md-header md-tabs md-sidebar md-footer md-search md-skip md-top md-source",
    "Javadoc": "topNav subNav bottomNav fixedNav skipNav legalCopy top-nav sub-nav "
               "bottom-nav skip-nav legal-copy",
    "DocBook": "navheader navfooter indexdiv indexdiv-quicklinks",
    "common": "breadcrumb breadcrumbs skip-link skip-to-content toc",
}
# The ``class`` of the ``<body>`` of pages that list what a site's other pages say, by
# generator (Javadoc 16 and later; its pages of classes, packages, constants, deprecations and
# serialized forms are content)
LISTING_PAGES = {
    "Javadoc": "index-page class-use-page package-use-page tree-page package-tree-page "
               "help-page all-classes-index-page all-packages-index-page source-page",
}
_LISTINGS = frozenset(" ".join(LISTING_PAGES.values()).split())
_PERMALINKS = frozenset("¶§#🔗")  # the text of an anchor that links a heading to itself
_CELLS = frozenset({"td", "th"})
# What an entry of a list is: an item, a term or its description, a row or a cell, a paragraph
_ENTRIES = frozenset({"li", "dt", "dd", "tr", "td", "th", "p"})
_PARA = "\x00P"  # placeholder for a paragraph break while collecting text
_SPACES = re.compile(r"[^\S\n]+")
_BREAKS = re.compile(r"\n{3,}")


# Why a page is all navigation: its furniture out, nothing but a line or two is left (a
# book's index, a table of contents, Sphinx's genindex); its generator marks it as a listing
# (:data:`LISTING_PAGES`); it forwards to another page; it is a page of links
Navigation = Literal["contents", "listing", "redirect", "links"]
NAVIGATION: dict[Navigation, str] = {
    "contents": "a site's index or table of contents",
    "listing": "a listing its generator marks as one",
    "redirect": "a redirect to another page",
    "links": "a page of links: a site map, keyword index, cross-reference or list of pages, "
             "most of its words links to the site's other pages, with almost no sentences",
}


@dataclass(frozen=True)
class HtmlPage:
    title: str | None
    text: str  # "" when the page is a listing or a redirect: left unread
    navigation: Navigation | None = None  # why the page is all navigation (None: it is not)

    @property
    def navigation_only(self) -> bool:
        return self.navigation is not None


# Words (of 3 letters or more) a page holds beyond those of its title, at most, when it is
# all navigation once its furniture is out ("Index pages by letter:", Sphinx's genindex.html)
NAVIGATION_WORDS = 4
_WORD = re.compile(r"[^\W\d_]{3,}")


def parse_html(source: str, limits: ReadLimits = NO_LIMITS) -> HtmlPage:
    """Parse ``source`` and return its title and visible text.

    The title is the ``<title>`` text, else the first ``<h1>``. Block elements become
    paragraphs separated by blank lines, ``<br>`` a line break, table cells are separated by
    spaces; whitespace runs inside lines collapse to one space. Raises
    :class:`~sleuth.ingest.reading.SkipSource` for a page nested deeper than
    ``limits.max_depth``.
    """
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(source)
    title = _title(tree)
    if _is_listing(tree):  # not worth reading: it will be left out
        return HtmlPage(title=title, text="", navigation="listing")
    if _redirects(tree):
        return HtmlPage(title=title, text="", navigation="redirect")
    if tree.root is not None:
        limits.check_depth(tree_depth(tree.root, limits.max_depth), "HTML page")
    for node in tree.css(_INVISIBLE):
        node.decompose()
    furniture = _furniture(tree)
    _drop(furniture)
    root = tree.body if tree.body is not None else tree.root
    parts: list[str] = []
    if root is not None:
        _collect(root, parts)
    text = _tidy("".join(parts))
    return HtmlPage(title=title, text=text, navigation=_navigation(root, text, title or "",
                                                                   bool(furniture)))


def _navigation(root: Any, text: str, title: str, furnished: bool) -> Navigation | None:
    """Why the page of ``text`` (its furniture out: ``furnished`` when it had some) is all
    navigation, or None."""
    if furnished and _few_words(text, title):
        return "contents"
    if root is not None and _page_of_links(root, text):
        return "links"
    return None


def _is_listing(tree: Any) -> bool:
    """Whether the page's ``<body>`` carries a class of :data:`LISTING_PAGES`."""
    body = tree.body
    classes = str(body.attributes.get("class") or "") if body is not None else ""
    return not _LISTINGS.isdisjoint(classes.split())


# a ``<meta http-equiv="refresh">`` that sends the reader to another page ("0;index.html",
# "0; url=intro.html"), not one that reloads this page ("30")
_REDIRECT = re.compile(r"^\s*\d+(?:\.\d*)?\s*[;,]\s*(?:url\s*=\s*)?['\"]?\S", re.IGNORECASE)


def _redirects(tree: Any) -> bool:
    """Whether the page forwards its reader to another (Javadoc's ``overview-summary.html``,
    a moved page's stub): what it has to say is on that page."""
    return any(str(meta.attributes.get("http-equiv") or "").strip().lower() == "refresh"
               and _REDIRECT.match(str(meta.attributes.get("content") or ""))
               for meta in tree.css("meta[http-equiv]"))


# A page of links (a site map, keyword index, cross-reference, list of pages) lists them: at
# least LINK_PAGE_ITEMS entries (list items, terms, rows or cells, paragraphs) hold a link
# to the site's own pages (more than a site's menus hold; a run of links in one paragraph or
# block, such as Javadoc's "Methods inherited from class", is one entry or none), the
# links' text is at least LINK_PAGE_SHARE of the page's words, and less than LINK_PAGE_PROSE
# of its words are in sentences. Measured on seven documentation sets (SQLite, PostgreSQL,
# the JDK's and Commons Lang's Javadoc, Node.js, Valgrind, libxslt; issue 62), the pages
# it leaves out have 42 entries or more, 43-100 % of their words in links and at most 12 %
# in sentences; no page of content meets all three (the nearest meet two: an API object's
# page with 39 % in sentences, a release history with 35 % in links).
LINK_PAGE_ITEMS = 40
LINK_PAGE_SHARE = 0.4
LINK_PAGE_PROSE = 0.2
# Words: a run of letters or digits, or one ideograph or kana (Chinese and Japanese put no
# space between words)
_IDEOGRAPHS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORDS = re.compile(f"[{_IDEOGRAPHS}]|[^\\W{_IDEOGRAPHS}]+")
# The end of a sentence: its mark, closing quotes or brackets, then a space or the line's end
# (none needed after an ideographic full stop)
_SENTENCE_END = re.compile(r"[.!?][\"'\u2019\u201d)\]]*(?=\s|$)|[\u3002\uff01\uff1f]")
SENTENCE_WORDS = 4  # words of a sentence, at least ("Choose any three." is a slogan)
# An address to another site, a place on the same page, or no page ("javascript:", "mailto:")
_ELSEWHERE = re.compile(r"\s*(?:[A-Za-z][A-Za-z0-9+.-]*:|//|#|$)")


def _page_of_links(root: Any, text: str) -> bool:
    """Whether the page under ``root`` with visible ``text`` is a page of links (see
    :data:`LINK_PAGE_ITEMS`)."""
    links = [node for node in root.css("a[href]")
             if not _ELSEWHERE.match(str(node.attributes.get("href") or ""))]
    if len(links) < LINK_PAGE_ITEMS:
        return False
    words = len(_WORDS.findall(text))
    linked = sum(len(_WORDS.findall(node.text(separator=" "))) for node in links)
    if linked < LINK_PAGE_SHARE * words or _prose_words(text) >= LINK_PAGE_PROSE * words:
        return False
    return len({_entry(node) for node in links} - {0}) >= LINK_PAGE_ITEMS


def _entry(node: Any) -> int:
    """The entry ``node`` is in (see :data:`_ENTRIES`), by its id; 0 when it is in none."""
    parent = node.parent
    while parent is not None and parent.tag not in _ENTRIES:
        parent = parent.parent
    return int(parent.mem_id) if parent is not None else 0


def _prose_words(text: str) -> int:
    """The words of ``text`` in sentences (of :data:`SENTENCE_WORDS` words or more, each
    ending with its mark on the line it starts)."""
    prose = 0
    for line in text.split("\n"):
        start = 0
        for end in _SENTENCE_END.finditer(line):
            words = len(_WORDS.findall(line, start, end.start()))
            prose += words if words >= SENTENCE_WORDS else 0
            start = end.end()
    return prose


def _few_words(text: str, title: str) -> bool:
    """Whether ``text`` holds at most :data:`NAVIGATION_WORDS` words beyond its title's
    (counted only where it is short: a page of content is not read twice)."""
    if len(text) > len(title) + 50 * (NAVIGATION_WORDS + 1):
        return False
    return len(_WORD.findall(text)) - len(_WORD.findall(title)) <= NAVIGATION_WORDS


def _furniture(tree: Any) -> list[Any]:
    """The furniture nodes of a parsed page (see the module)."""
    classes = " ".join(FURNITURE_CLASSES.values()).split()
    nodes: list[Any] = tree.css(", ".join([_NAVIGATION] + [f".{name}" for name in classes]))
    nodes += [node for node in tree.css(_PAGE_LEVEL) if not _in_content(node)]
    nodes += [node for node in tree.css("a[href^='#']")
              if node.text(strip=True) in _PERMALINKS]
    return nodes


def _in_content(node: Any) -> bool:
    """Whether ``node`` is inside the page's content: an article or main element."""
    return any(parent.tag in _CONTENT or
               str(parent.attributes.get("role") or "").lower() == "main"
               for parent in _ancestors(node))


def _ancestors(node: Any) -> list[Any]:
    """The elements ``node`` is inside, up to ``<html>``, nearest first."""
    out = []
    parent = node.parent
    while parent is not None and parent.tag not in ("html", "-document"):
        out.append(parent)
        parent = parent.parent
    return out


def _drop(nodes: list[Any]) -> None:
    """Remove ``nodes`` from their tree, each once; one inside another goes with it (all
    found before anything is removed: a removed node's descendants are freed)."""
    unique = {node.mem_id: node for node in nodes}  # a node several selectors match
    outermost = [node for node in unique.values()
                 if not any(parent.mem_id in unique for parent in _ancestors(node))]
    for node in outermost:
        node.decompose()


def _title(tree: Any) -> str | None:
    for selector in ("title", "h1"):
        node = tree.css_first(selector)
        if node is not None:
            text = " ".join(node.text(separator=" ").split())
            if text:
                return text
    return None


def _collect(root: Any, parts: list[str]) -> None:
    """Append the text of ``root``'s subtree to ``parts`` (iteratively: no recursion limit)."""
    stack: list[tuple[Any, bool]] = [(root, False)]
    pre_depth = 0
    while stack:
        node, leaving = stack.pop()
        tag = node.tag
        if leaving:
            pre_depth -= tag == "pre"
            parts.append(_closing(tag))
            continue
        if node.is_text_node:
            parts.append(_text(node, pre_depth > 0))
            continue
        if node.is_comment_node or tag is None:
            continue
        parts.append(_opening(tag))
        pre_depth += tag == "pre"
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(list(_children(node))))


def _children(node: Any) -> list[Any]:
    out = []
    child = node.first_child
    while child is not None:
        out.append(child)
        child = child.next
    return out


def _text(node: Any, in_pre: bool) -> str:
    text = str(node.text(deep=False) or "")
    if in_pre:
        return text.replace("\n", "\x00N")  # keep preformatted line breaks
    return text.replace("\n", " ")


def _opening(tag: str) -> str:
    if tag in _BLOCKS:
        return _PARA
    if tag == "br":
        return "\n"
    return ""


def _closing(tag: str) -> str:
    if tag in _BLOCKS:
        return _PARA
    if tag in _CELLS:
        return " "
    return ""


def _tidy(raw: str) -> str:
    """Resolve placeholders, collapse spaces within lines and runs of blank lines."""
    text = raw.replace("\x00N", "\n").replace(_PARA, "\n\n")
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return _BREAKS.sub("\n\n", "\n".join(lines)).strip()
