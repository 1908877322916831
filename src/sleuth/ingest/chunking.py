"""Sentence-aligned chunking of one document.

Consecutive sentences are packed greedily into chunks of at most ``max_tokens`` tokens. Each
sentence is counted once; a chunk is recounted once at the end (whitespace between sentences
can add a token or two, so a chunk that turns out over budget gives back its last sentences).
A sentence longer than ``max_tokens`` is cut on token boundaries into pieces that become
sentences of their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from itertools import accumulate

from sleuth.ingest.sentences import split_sentences
from sleuth.text.ids import chunk_id
from sleuth.text.tokens import count_tokens, encode, encoding
from sleuth.types import Chunk, Document, Sentence


def chunk_document(doc: Document, max_tokens: int = 1000) -> list[Chunk]:
    """Cut ``doc`` into sentence-aligned chunks of at most ``max_tokens`` tokens.

    Chunk ids are :func:`sleuth.text.ids.chunk_id` (``doc#position``, 0-based), so they are stable
    across rebuilds of an unchanged document. A document without sentences yields no chunks.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    sentences = document_sentences(doc)
    if sentences and _surely_fits(doc.text, sentences, max_tokens):
        return _link(doc, [(sentences, _span_tokens(doc.text, sentences))])
    counted = list(_fit_sentences(sentences, max_tokens))
    groups = _pack(doc.text, counted, max_tokens)
    return _link(doc, groups)


WINDOW_CHARS = 1_000_000  # longer documents are chunked a window at a time


def iter_chunks(doc: Document, max_tokens: int = 1000,
                window_chars: int = WINDOW_CHARS) -> Iterator[Chunk]:
    """The chunks of ``doc`` one at a time, holding one window of its sentences in memory.

    A document up to ``window_chars`` characters is one window: exactly
    :func:`chunk_document`. A longer one is cut into windows that end at a blank line (else
    a line break, else the window's end) and each is chunked on its own, positions, ids and
    neighbour links running on, so a very long document costs the memory of a window, not
    of the document. The windows depend only on the text: ids stay stable across runs.
    """
    if len(doc.text) <= window_chars:
        yield from chunk_document(doc, max_tokens)
        return
    position = 0
    held: Chunk | None = None  # the last chunk, until its successor is known
    for start, end in _windows(doc.text, window_chars):
        sentences = document_sentences(doc, start, end)
        groups = _pack(doc.text, list(_fit_sentences(sentences, max_tokens)), max_tokens)
        for chunk in _link(doc, groups, first=position):
            chunk = replace(chunk, next_id=None)
            if held is not None:
                yield replace(held, next_id=chunk.chunk_id)
                chunk = replace(chunk, prev_id=held.chunk_id)
            held = chunk
            position += 1
    if held is not None:
        yield held


def _windows(text: str, size: int) -> Iterator[tuple[int, int]]:
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            for mark in ("\n\n", "\n"):
                cut = text.rfind(mark, start + size // 2, end)
                if cut != -1:
                    end = cut + len(mark)
                    break
        yield start, end
        start = end


def document_sentences(doc: Document, start: int = 0, end: int | None = None
                       ) -> list[Sentence]:
    """Sentences of ``doc`` (of ``text[start:end]``); the title line is a sentence of its own.

    ``Document.text`` starts with the title on its first line. That line is split off unless
    the text plainly continues it (the next line starts in lower case), so a long title is
    never glued to the first sentence of the body.
    """
    text = doc.text
    nl = text.find("\n")
    title = doc.title.strip()
    if start > 0 or nl == -1 or not title or text[:nl].strip() != title:
        return split_sentences(text, start, end)
    after = nl + 1
    while after < len(text) and text[after].isspace():
        after += 1
    if text[after : after + 1].islower():
        return split_sentences(text, 0, end)
    return split_sentences(text, 0, nl) + split_sentences(text, nl + 1, end)


def _surely_fits(text: str, sentences: list[Sentence], max_tokens: int) -> bool:
    """Whether all ``sentences`` make one chunk without counting each: a token covers at
    least one UTF-8 byte, so sentence counts plus one per join stay within the span's bytes
    plus the number of sentences, and packing would put them all in one group."""
    span = text[sentences[0].start : sentences[-1].end]
    return len(span) + len(sentences) <= max_tokens and \
        len(span.encode("utf-8")) + len(sentences) <= max_tokens


def _fit_sentences(sentences: list[Sentence], max_tokens: int) -> Iterator[tuple[Sentence, int]]:
    """Yield each sentence with its token count, cutting over-long ones into pieces."""
    for sentence in sentences:
        n = count_tokens(sentence.text)
        if n <= max_tokens:
            yield sentence, n
        else:
            for piece in cut_sentence(sentence, max_tokens):
                yield piece, count_tokens(piece.text)


def cut_sentence(sentence: Sentence, max_tokens: int) -> list[Sentence]:
    """Cut ``sentence`` on token boundaries into pieces of at most ``max_tokens`` tokens.

    Cuts that would fall inside a multi-byte character move back to the character start, so
    every piece is an exact substring; pieces are stripped of surrounding whitespace. A piece
    that re-tokenizes to more than ``max_tokens`` gives back tokens until it fits (a single
    character that alone needs more tokens than that is kept whole).
    """
    tokens = encode(sentence.text)
    ends = list(accumulate(len(b) for b in encoding().decode_tokens_bytes(tokens)))
    raw = sentence.text.encode("utf-8")
    pieces: list[Sentence] = []
    byte_pos = char_pos = 0
    token_pos = 0
    while byte_pos < len(raw):
        while ends[token_pos] <= byte_pos:  # tokens already covered by a forward cut
            token_pos += 1
        token_end, cut = _fit_piece(raw, ends, token_pos, byte_pos, max_tokens)
        part = raw[byte_pos:cut].decode("utf-8")
        _append_piece(pieces, sentence, char_pos, char_pos + len(part))
        byte_pos, char_pos, token_pos = cut, char_pos + len(part), token_end
    return pieces


def _fit_piece(
    raw: bytes, ends: list[int], token_pos: int, byte_pos: int, max_tokens: int
) -> tuple[int, int]:
    """The end token index and end byte offset of the piece starting at ``byte_pos``."""
    token_end = min(token_pos + max_tokens, len(ends))
    while True:
        cut = _char_boundary(raw, ends[token_end - 1], byte_pos)
        fits = count_tokens(raw[byte_pos:cut].decode("utf-8").strip()) <= max_tokens
        if fits or token_end - 1 <= token_pos:
            return token_end, cut
        token_end -= 1


def _char_boundary(raw: bytes, cut: int, floor: int) -> int:
    """Move a byte offset back to a UTF-8 character start (but past ``floor`` if possible)."""
    cut = min(cut, len(raw))
    back = cut
    while floor < back < len(raw) and raw[back] & 0xC0 == 0x80:
        back -= 1
    if back > floor:
        return back
    while cut < len(raw) and raw[cut] & 0xC0 == 0x80:
        cut += 1
    return cut


def _append_piece(pieces: list[Sentence], sentence: Sentence, start: int, end: int) -> None:
    """Append ``sentence.text[start:end]`` (stripped) as an absolute-offset sentence."""
    text = sentence.text
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        pieces.append(Sentence(text[start:end], sentence.start + start, sentence.start + end))


def _pack(
    text: str, counted: list[tuple[Sentence, int]], max_tokens: int
) -> list[tuple[list[Sentence], int]]:
    """Greedily group consecutive sentences so each group fits ``max_tokens``."""
    groups: list[list[Sentence]] = []
    current: list[Sentence] = []
    total = 0
    for sentence, n in counted:
        gap = 1 if current else 0  # the whitespace joining it to the previous sentence
        if current and total + gap + n > max_tokens:
            groups.append(current)
            current, total, gap = [], 0, 0
        current.append(sentence)
        total += gap + n
    if current:
        groups.append(current)
    return _settle(text, groups, max_tokens)


def _settle(
    text: str, groups: list[list[Sentence]], max_tokens: int
) -> list[tuple[list[Sentence], int]]:
    """Recount each group once; move trailing sentences on while a group is over budget."""
    out: list[tuple[list[Sentence], int]] = []
    queue = list(reversed(groups))
    while queue:
        group = queue.pop()
        spill: list[Sentence] = []
        n = _span_tokens(text, group)
        while len(group) > 1 and n > max_tokens:
            spill.insert(0, group.pop())
            n = _span_tokens(text, group)
        out.append((group, n))
        if spill:
            if queue:
                queue[-1] = spill + queue[-1]
            else:
                queue.append(spill)
    return out


def _span_tokens(text: str, group: list[Sentence]) -> int:
    return count_tokens(text[group[0].start : group[-1].end])


def _link(doc: Document, groups: list[tuple[list[Sentence], int]],
          first: int = 0) -> list[Chunk]:
    """Turn counted sentence groups into chunks with stable ids and neighbour links
    (positions from ``first``)."""
    ids = [chunk_id(doc.doc_id, first + i) for i in range(len(groups))]
    chunks: list[Chunk] = []
    for i, (group, n_tokens) in enumerate(groups):
        start, end = group[0].start, group[-1].end
        body = doc.text[start:end]
        chunks.append(
            Chunk(
                chunk_id=ids[i],
                doc_id=doc.doc_id,
                position=first + i,
                text=body,
                start=start,
                end=end,
                n_tokens=n_tokens,
                sentences=tuple(group),
                prev_id=ids[i - 1] if i > 0 else None,
                next_id=ids[i + 1] if i + 1 < len(groups) else None,
            )
        )
    return chunks
