"""Parse the chunk ids an answer cites, and the relevance the model gave each."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from sleuth.types import Chunk, Citation

_BRACKETS = re.compile(r"\[([^\[\]\n]{1,400})\]")
_RELEVANCE_LINE = re.compile(r"^\s*\**relevance\**\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
_PAIR = re.compile(r"([^\s,;=:()]+(?:\s*#\s*\d+)?)\s*[=:(]\s*([01](?:\.\d+)?|\.\d+)\)?")


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


_CITATION = re.compile(r"\s*\[[^\[\]\n]*#\d+[^\[\]\n]*\]")


def strip_citations(text: str) -> str:
    """The answer without its ``[chunk id]`` citation brackets and ``Relevance:`` line, for
    scoring against gold answers (EM/F1 would otherwise count the ids as wrong tokens)."""
    return _CITATION.sub("", split_answer(text)[0]).strip()


def cited_ids(text: str) -> list[str]:
    """Ids inside square brackets, in order of first appearance (``[a, b]`` gives both)."""
    out: list[str] = []
    for group in _BRACKETS.findall(text):
        for part in re.split(r"[,;]", group):
            cid = part.strip().strip("`'\" ")
            if cid and cid not in out:
                out.append(cid)
    return out


def parse_citations(
    text: str, lookup: Callable[[Iterable[str]], dict[str, Chunk]], titles: dict[str, str]
) -> tuple[str, list[Citation]]:
    """(answer text, citations of existing chunks). Relevance defaults to 1.0 when the
    model gave none for a cited chunk; chunks scored only in the Relevance line count too."""
    body, scores = split_answer(text)
    candidates = cited_ids(body)
    candidates += [cid for cid in scores if cid not in candidates]
    chunks = lookup(candidates)
    citations = [
        Citation(cid, chunks[cid].doc_id, titles.get(chunks[cid].doc_id, ""),
                 scores.get(cid, 1.0))
        for cid in candidates if cid in chunks
    ]
    return body, citations
