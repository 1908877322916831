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
from typing import Any

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
_PARA = "\x00P"  # placeholder for a paragraph break while collecting text
_SPACES = re.compile(r"[^\S\n]+")
_BREAKS = re.compile(r"\n{3,}")


@dataclass(frozen=True)
class HtmlPage:
    title: str | None
    text: str
    # whether the page is all navigation: furniture was left out and nothing but a line or
    # two is left (a book's index, a table of contents, Sphinx's genindex), or its
    # generator marks it as a listing (:data:`LISTING_PAGES`) or it forwards to another page
    # (then its text is left unread: "")
    navigation_only: bool = False


# Words (of 3 letters or more) a page holds beyond those of its title, at most, when it is
# all navigation once its furniture is out ("Index pages by letter:", Sphinx's genindex.html)
NAVIGATION_WORDS = 4
_WORD = re.compile(r"[^\W\d_]{3,}")


def parse_html(source: str) -> HtmlPage:
    """Parse ``source`` and return its title and visible text.

    The title is the ``<title>`` text, else the first ``<h1>``. Block elements become
    paragraphs separated by blank lines, ``<br>`` a line break, table cells are separated by
    spaces; whitespace runs inside lines collapse to one space.
    """
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(source)
    title = _title(tree)
    if _is_listing(tree) or _redirects(tree):  # not worth reading: it will be left out
        return HtmlPage(title=title, text="", navigation_only=True)
    for node in tree.css(_INVISIBLE):
        node.decompose()
    furniture = _furniture(tree)
    _drop(furniture)
    root = tree.body if tree.body is not None else tree.root
    parts: list[str] = []
    if root is not None:
        _collect(root, parts)
    text = _tidy("".join(parts))
    return HtmlPage(title=title, text=text,
                    navigation_only=bool(furniture) and _few_words(text, title or ""))


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
