"""Ids and citations: how they look, how they are written and read back, in one place.

- **Chunk ids** are ``{doc_id}#{position}`` (``notes.md#0``, 0-based), stable across rebuilds
  of an unchanged document; a document id may itself contain ``#``.
- **Reference ids** are ``turn{N}search{M}`` (``turn1search3``): handed out by the document
  tool ``search``, N the session's question number, M counting over the whole session.
- **Citations** are ids in square brackets right after a claim (``[doc-7#0]``, ``[a#0, b#1]``),
  and an answer may end with one ``Relevance: id=score, ...`` line.
- **Prompt examples**: the prompt files write ``{cite_chunk}``, ``{relevance_refs}`` ... where
  they show an id; :func:`fill_examples` puts in the examples built here.

This module imports nothing of Sleuth, so every layer can use it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_REF = r"turn\d+search\d+"
REF_ID = re.compile(rf"\b{_REF}\b")
"""A reference id anywhere in a text."""
CHUNK_ID = re.compile(r"(?<![\w#])([\w.\-/]+(?:#[\w.\-/]+)*#\d+)\b")
"""A chunk id anywhere in a text (a word of file-name characters ending in ``#n``)."""
CITATION = re.compile(rf"\s*\[[^\[\]\n]*(?:#\d+|{_REF})[^\[\]\n]*\]")
"""A bracketed citation of chunk or reference ids, with the space before it."""
MARKER = re.compile(r"\s*(?:\[[^\]]*\]|【[^】]*】)")
"""Any bracketed marker, ids or not, including the ``【...】`` markers some models write."""
_BRACKETS = re.compile(r"\[([^\[\]\n]{1,400})\]")
_RELEVANCE_LINE = re.compile(r"^\s*\**relevance\**\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
_PAIR = re.compile(r"([^\s,;=:()]+(?:\s*#\s*\d+)?)\s*[=:(]\s*([01](?:\.\d+)?|\.\d+)\)?")


def chunk_id(doc_id: str, position: int) -> str:
    """The id of the chunk at ``position`` (0-based) of document ``doc_id``."""
    return f"{doc_id}#{position}"


def ref_id(turn: int, number: int) -> str:
    """The reference id ``search`` hands out as the session's ``number``-th, in ``turn``."""
    return f"turn{turn}search{number}"


def is_ref(text: str) -> bool:
    return REF_ID.fullmatch(text) is not None


def ids_in(text: str) -> list[str]:
    """Chunk ids, then reference ids, that ``text`` names (each once, first seen first)."""
    found = dict.fromkeys(CHUNK_ID.findall(text))
    found.update(dict.fromkeys(REF_ID.findall(text)))
    return list(found)


def cite(source: str) -> str:
    """``source`` as a citation: ``[doc-7#0]``."""
    return f"[{source}]"


def relevance_line(scores: Mapping[str, float]) -> str:
    """The closing line of an answer: ``Relevance: doc-7#0=0.9, doc-3#1=0.4``."""
    return "Relevance: " + ", ".join(f"{source}={score:g}" for source, score in scores.items())


def cited_ids(text: str) -> list[str]:
    """Ids inside square brackets, in order of first appearance (``[a, b]`` gives both)."""
    out: list[str] = []
    for group in _BRACKETS.findall(text):
        for part in re.split(r"[,;]", group):
            cid = part.strip().strip("`'\" ")
            if cid and cid not in out:
                out.append(cid)
    return out


def split_answer(text: str) -> tuple[str, dict[str, float]]:
    """The answer without its ``Relevance:`` line, and the scores that line gave."""
    scores: dict[str, float] = {}
    for match in _RELEVANCE_LINE.finditer(text):
        for cid, value in _PAIR.findall(match.group(1)):
            scores[cid.strip("`[] ").replace(" ", "")] = min(1.0, max(0.0, float(value)))
    body = _RELEVANCE_LINE.sub("", text).strip()
    if not body and text.strip():  # the whole reply sat on the Relevance line: keep it
        body = re.sub(r"^\s*\**relevance\**\s*:\s*", "", text.strip(), flags=re.IGNORECASE)
    return body, scores


def is_relevance_line(line: str) -> bool:
    """Whether ``line`` is an answer's ``Relevance:`` line (which :func:`split_answer` takes
    out)."""
    return bool(_RELEVANCE_LINE.fullmatch(line.strip("\n")))


def strip_citations(text: str) -> str:
    """The answer without its ``[chunk id]`` citation brackets and ``Relevance:`` line, for
    scoring against gold answers (EM/F1 would otherwise count the ids as wrong tokens)."""
    return CITATION.sub("", split_answer(text)[0]).strip()


def strip_markers(text: str) -> str:
    """``text`` without any bracketed marker (:data:`MARKER`), for reading a short answer
    as a name: there even a bracket without an id is no part of it."""
    return MARKER.sub("", text)


def _examples() -> dict[str, str]:
    chunk, other = chunk_id("doc-7", 0), chunk_id("doc-3", 1)
    ref, later = ref_id(1, 3), ref_id(1, 7)
    return {
        "cite_chunk": cite(chunk),
        "cite_ref": cite(ref),
        "relevance_chunk": relevance_line({chunk: 0.9}),
        "relevance_chunks": relevance_line({chunk: 0.9, other: 0.4}),
        "relevance_refs": relevance_line({ref: 0.9, later: 0.3}),
        "relevance_mixed": relevance_line({chunk: 0.9, ref: 0.4}),
        # the IRCoT demonstration's two paragraphs
        "cite_demo_1": cite(chunk_id("ex-1", 0)),
        "cite_demo_2": cite(chunk_id("ex-2", 0)),
    }


PROMPT_EXAMPLES: dict[str, str] = _examples()
"""The examples prompts show, by the placeholder name they are written under."""


def fill_examples(template: str) -> str:
    """``template`` with each ``{name}`` of :data:`PROMPT_EXAMPLES` replaced (other braces,
    such as ``{tools}`` or ``{budget}``, are left for their owners)."""
    for name, example in PROMPT_EXAMPLES.items():
        template = template.replace("{" + name + "}", example)
    return template
