"""How deep an HTML page nests, measured as the HTML parser builds it.

Depth is the number of elements on the longest path from ``<html>`` down (a paragraph in
the body is 3 deep). :func:`tree_depth` measures it on the tree the parser built; it is
what ``ingest.max_depth`` bounds. :func:`source_depth` estimates it from the page's tags
before any parser runs, in one linear pass: the parser's cost grows with the square of the
depth for some elements (a 1 MB page of 199,000 nested ``<div>`` takes it 20 minutes),
so a page far deeper than the limit is refused before it is handed over. The estimate
follows the parser's rules (the HTML standard's tree construction) where they set the
depth of real pages:

* elements that hold nothing (``<br>``, ``<img>``, ``<input>``, ``<meta>`` ... :data:`VOID`)
  and, inside SVG and MathML, every ``<x ... />`` close at once (an HTML ``<div/>`` does not);
* end tags left out close where the parser closes them: ``<p>`` before the next block,
  ``<li>`` before the next item, ``<dt>``/``<dd>``, ``<option>``, table rows, cells and
  sections, headings before a heading, a link before the next link;
* an end tag closes the elements opened inside its element, and is ignored where the
  parser ignores it (past a table cell, a button, an object; ``</span>`` past a ``<div>``);
* comments, scripts, styles and the text of titles and text areas hold no elements.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any


def _tags(names: str) -> frozenset[str]:
    return frozenset(names.split())


VOID = _tags("""
area base basefont bgsound br col embed frame hr image img input keygen link meta param source
track wbr""")
# <html>, <head>, <body> and <frameset> are the page's frame: the parser makes one of each
# (and a second start tag adds nothing)
_FRAME = frozenset({"html", "head", "body", "frameset"})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# Start tags that close an open <p> first
_CLOSES_P = _tags("""
address article aside blockquote center dd details dialog dir div dl dt fieldset figcaption
figure footer form header hgroup hr li listing main menu nav ol p pre search section summary
table ul xmp""") | _HEADINGS
# Elements the parser's end-tag handling does not walk past ("special" in the standard)
_SPECIAL = _tags("""
address applet area article aside base basefont bgsound blockquote body br button caption
center col colgroup dd details dir div dl dt embed fieldset figcaption figure footer form frame
frameset head header hgroup hr html iframe img input keygen li link listing main marquee menu
meta nav noembed noframes noscript object ol p param plaintext pre script search section select
source style summary table tbody td template textarea tfoot th thead title tr track ul wbr xmp
mi mo mn ms mtext annotation-xml foreignobject desc""") | _HEADINGS
# An element "in scope" is found before one of these
_SCOPE = _tags("""applet caption html table td th marquee object template mi mo mn ms mtext
annotation-xml foreignobject desc""")
_BUTTON_SCOPE = _SCOPE | {"button"}
_LIST_SCOPE = _SCOPE | {"ol", "ul"}
_TABLE_SCOPE = frozenset({"html", "table", "template"})
# End tags closing the element of their name when it is in scope (special ones, mostly)
_SCOPED_END = _SPECIAL - {"br", "p", "li", "dd", "dt", "body", "html"} | _HEADINGS
# Foreign content: SVG and MathML, where ``<x/>`` closes; these HTML tags end it
_FOREIGN = frozenset({"svg", "math"})
_BREAKOUT = _tags("""
b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i img li
listing menu meta nobr ol p pre ruby s small span strong strike sub sup table tt u ul
var""")
_INTEGRATION = frozenset({"foreignobject", "desc", "title", "mi", "mo", "mn", "ms", "mtext",
                          "annotation-xml"})
# Elements an open one of the same group closes: (start tag, the open ones it closes, the
# elements the search stops at)
_IMPLIED: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "li": (frozenset({"li"}), _SPECIAL - {"address", "div", "p"}),
    "dd": (frozenset({"dd", "dt"}), _SPECIAL - {"address", "div", "p"}),
    "dt": (frozenset({"dd", "dt"}), _SPECIAL - {"address", "div", "p"}),
    "tr": (frozenset({"tr"}), _TABLE_SCOPE | {"tbody", "thead", "tfoot"}),
    "td": (frozenset({"td", "th"}), _TABLE_SCOPE | {"tr"}),
    "th": (frozenset({"td", "th"}), _TABLE_SCOPE | {"tr"}),
    "tbody": (frozenset({"tbody", "thead", "tfoot"}), _TABLE_SCOPE),
    "thead": (frozenset({"tbody", "thead", "tfoot"}), _TABLE_SCOPE),
    "tfoot": (frozenset({"tbody", "thead", "tfoot"}), _TABLE_SCOPE),
    "caption": (frozenset({"caption"}), _TABLE_SCOPE),
    "colgroup": (frozenset({"colgroup"}), _TABLE_SCOPE),
    "a": (frozenset({"a"}), _SPECIAL),
    "nobr": (frozenset({"nobr"}), _SPECIAL),
    "button": (frozenset({"button"}), _SCOPE),
    "rb": (frozenset({"rb", "rt", "rp", "rtc"}), frozenset({"ruby"}) | _SCOPE),
    "rtc": (frozenset({"rb", "rt", "rp", "rtc"}), frozenset({"ruby"}) | _SCOPE),
    "rt": (frozenset({"rb", "rt", "rp"}), frozenset({"ruby", "rtc"}) | _SCOPE),
    "rp": (frozenset({"rb", "rt", "rp"}), frozenset({"ruby", "rtc"}) | _SCOPE),
}
# Elements a start tag closes only when one is the element last opened
_IF_LAST: dict[str, frozenset[str]] = {"option": frozenset({"option"}),
                                       "optgroup": frozenset({"option", "optgroup"}),
                                       **dict.fromkeys(_HEADINGS, _HEADINGS)}

_TABLE_PARTS = frozenset({"table", "tbody", "thead", "tfoot", "tr", "td", "th", "caption"})
_SECTIONS = frozenset({"tbody", "thead", "tfoot"})
_TABLE_ONLY = _TABLE_PARTS - {"table"} | {"colgroup", "col"}
_CELLS = frozenset({"td", "th"})
_ROWS = _CELLS | {"tr"}

# How far down the open elements a closing tag is looked for (real pages nest 20 deep; the
# bound keeps the pass linear, and an element it leaves open only counts more)
REACH = 16
# One pass over the page: what holds no elements (comments, ``<!-->`` and ``<!--->`` being
# whole ones; raw text such as scripts and styles, escapable text such as titles and text
# areas, each up to its end or the page's), then tags
_TOKEN = re.compile(
    r"<!--(?:-?>|.*?(?:--!?>|\Z))"
    r"|<(?:script|style|textarea|title|xmp|iframe|noembed|noframes)(?=[\s/>])(?:.*?</(?:script"
    r"|style|textarea|title|xmp|iframe|noembed|noframes)[\s/>]|.*\Z)"
    r"|<(/?)([A-Za-z][^\s/<>]*)([^<>]*)>",
    re.IGNORECASE | re.DOTALL)
# Start tags (outside SVG and MathML) the parser only opens: no other element is closed
_PLAIN = _tags("""
abbr acronym b bdi bdo big cite code data del dfn em font i ins kbd label map mark noscript q s
samp small span strike strong sub sup time tt u var""")
# Start tags that close an element of their name left open on top: the depth is unchanged
_SUCCEED = _tags("p li dd dt option tr td th a nobr button rb rt rp rtc") | _HEADINGS
_UNQUOTED_END = re.compile(r"=\s*[^\s\"'=<>`]+$")  # ``<x a=b/>``: "b/" is the value


def source_depth(source: str, stop: int) -> int:
    """The depth the parser will give ``source`` (see the module), estimated from its tags
    in one linear pass; it stops counting once past ``stop``."""
    stack: list[tuple[str, bool]] = [("html", False), ("body", False)]  # (tag, foreign)
    deepest = len(stack)
    for match in _TOKEN.finditer(source):
        end, name, attributes = match.groups()
        if name is None:  # a comment, or an element of text only
            continue
        name = name.lower()
        top, foreign = stack[-1]
        if end:
            if name == top and len(stack) > 2:  # the element last opened: most end tags
                stack.pop()
            else:
                _end(stack, name)
            continue
        if not foreign and name in _PLAIN:  # most start tags: opened, nothing else
            stack.append((name, False))
        elif not foreign and name == top and name in _SUCCEED:
            continue
        elif name == "plaintext":  # the rest of the page is its text
            break
        elif _start(stack, name, _self_closing(attributes)):
            deepest = max(deepest, len(stack) + 1)  # it holds nothing, but is an element
            continue
        if len(stack) > deepest:
            deepest = len(stack)
            if deepest > stop:
                break
    return deepest


def _self_closing(attributes: str) -> bool:
    """Whether a start tag with ``attributes`` (what follows its name) ends in ``/>``."""
    return attributes.endswith("/") and not _UNQUOTED_END.search(attributes[:-1])


def _start(stack: list[tuple[str, bool]], name: str, closed: bool) -> bool:
    """Open element ``name`` as the parser would; True when it closes at once (a void one,
    a foreign ``<x/>``) or is not opened (a second ``<body>``)."""
    top, foreign = stack[-1]
    if foreign and top not in _INTEGRATION:
        if name not in _BREAKOUT:
            if not closed:
                stack.append((name, True))
            return closed
        while len(stack) > 2 and stack[-1][1] and stack[-1][0] not in _INTEGRATION:
            stack.pop()  # an HTML tag ends the SVG or MathML it appears in
    if name in _FRAME or (name in _TABLE_ONLY and not _in_table(stack)):
        return False
    if name in VOID:
        return True
    _close_implied(stack, name)
    if name in _FOREIGN:
        if not closed:
            stack.append((name, True))
        return closed
    stack.append((name, False))
    return False


def _close_implied(stack: list[tuple[str, bool]], name: str) -> None:
    """Close what a start tag of ``name`` closes (an open <p>, the item before an item, the
    cell before a cell...), and open the table section or row it implies."""
    if name in _CLOSES_P:
        _close(stack, ("p",), _BUTTON_SCOPE)
    implied = _IMPLIED.get(name)
    if implied is not None:
        _close(stack, *implied)
    if stack[-1][0] in _IF_LAST.get(name, ()) and len(stack) > 2:
        stack.pop()
    if name in _ROWS and stack[-1][0] == "table":  # a row outside a table section
        stack.append(("tbody", False))
    if name in _CELLS and stack[-1][0] in _SECTIONS:  # a cell outside a row
        stack.append(("tr", False))


def _end(stack: list[tuple[str, bool]], name: str) -> None:
    """Close element ``name`` and those opened inside it, where the parser would."""
    if name in _HEADINGS:
        _close(stack, _HEADINGS, _SCOPE)
    elif name in _SCOPED_END:
        _close(stack, (name,), _TABLE_SCOPE if name in _TABLE_PARTS else _SCOPE)
    elif name == "p":
        _close(stack, ("p",), _BUTTON_SCOPE)
    elif name == "li":
        _close(stack, ("li",), _LIST_SCOPE)
    elif name in ("dd", "dt"):
        _close(stack, (name,), _SCOPE)
    elif name not in _FRAME:
        _close(stack, (name,), _SPECIAL)


def _close(stack: list[tuple[str, bool]], names: Collection[str],
           stops: frozenset[str]) -> None:
    """Pop the stack down to the nearest open element of ``names`` (inclusive), unless one
    of ``stops`` (or the body) comes first or it is more than :data:`REACH` down."""
    window = stack[max(2, len(stack) - REACH):]
    if not any((name, False) in window or (name, True) in window for name in names):
        return  # none open (looked for in C: the common case, and a hostile page's)
    for back, (tag, _) in enumerate(reversed(window)):
        if tag in names:
            del stack[len(stack) - 1 - back:]
            return
        if tag in stops:
            return


def _in_table(stack: list[tuple[str, bool]]) -> bool:
    """Whether a table is open (within :data:`REACH`): a row or cell elsewhere is ignored."""
    for tag, _ in reversed(stack[max(2, len(stack) - REACH):]):
        if tag in ("table", "template"):
            return tag == "table"
    return False


def tree_depth(root: Any, stop: int) -> int:
    """The depth of the element tree under ``root`` (a parsed node; ``root`` is 1 deep),
    measured without recursion; once past ``stop`` it answers at once (before a deep
    element's children are listed)."""
    deepest = 0
    pending = [(root, 1)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        for child in node.iter(include_text=False):
            if depth >= stop:
                return depth + 1
            pending.append((child, depth + 1))
    return deepest
