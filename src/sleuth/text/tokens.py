"""Offline token counting (tiktoken-compatible ``o200k_base`` from ``bpe-openai``).

``tiktoken`` downloads its encodings on first use and fails offline; ``bpe-openai`` ships them.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

ENCODING = "o200k_base"
# bpe-openai refuses to encode more than 200,000 tokens at once; a character is at most four
# tokens (one per UTF-8 byte), so text is encoded in windows of this many characters
WINDOW = 40_000


@lru_cache(maxsize=1)
def encoding() -> Any:
    import bpe_openai

    return bpe_openai.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """Number of tokens in ``text`` (0 for the empty string)."""
    if not text:
        return 0
    if len(text) <= WINDOW:
        return len(encoding().encode_ordinary(text))
    return len(encode(text))


def encode(text: str) -> list[int]:
    """The tokens of ``text``; a text over :data:`WINDOW` characters is encoded a window at a
    time, each cut after a space where there is one (tokens rarely span a space's end), so
    any length can be encoded and the tokens' bytes still spell ``text`` exactly."""
    if len(text) <= WINDOW:
        return list(encoding().encode_ordinary(text))
    tokens: list[int] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + WINDOW)
        if end < len(text):
            space = text.rfind(" ", start + WINDOW // 2, end)
            end = space + 1 if space != -1 else end
        tokens += encoding().encode_ordinary(text[start:end])
        start = end
    return tokens


def decode(tokens: list[int]) -> str:
    return str(encoding().decode(tokens))
