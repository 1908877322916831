"""Visible text of an HTML page, with block structure kept as line and paragraph breaks."""

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
_CELLS = frozenset({"td", "th"})
_PARA = "\x00P"  # placeholder for a paragraph break while collecting text
_SPACES = re.compile(r"[^\S\n]+")
_BREAKS = re.compile(r"\n{3,}")


@dataclass(frozen=True)
class HtmlPage:
    title: str | None
    text: str


def parse_html(source: str) -> HtmlPage:
    """Parse ``source`` and return its title and visible text.

    The title is the ``<title>`` text, else the first ``<h1>``. Block elements become
    paragraphs separated by blank lines, ``<br>`` a line break, table cells are separated by
    spaces; whitespace runs inside lines collapse to one space.
    """
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(source)
    title = _title(tree)
    for node in tree.css(_INVISIBLE):
        node.decompose()
    root = tree.body if tree.body is not None else tree.root
    parts: list[str] = []
    if root is not None:
        _collect(root, parts)
    return HtmlPage(title=title, text=_tidy("".join(parts)))


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
