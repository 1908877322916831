"""Offline token counting (tiktoken-compatible ``o200k_base`` from ``bpe-openai``).

``tiktoken`` downloads its encodings on first use and fails offline; ``bpe-openai`` ships them.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

ENCODING = "o200k_base"


@lru_cache(maxsize=1)
def encoding() -> Any:
    import bpe_openai

    return bpe_openai.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """Number of tokens in ``text`` (0 for the empty string)."""
    if not text:
        return 0
    return len(encoding().encode_ordinary(text))


def encode(text: str) -> list[int]:
    return list(encoding().encode_ordinary(text))


def decode(tokens: list[int]) -> str:
    return str(encoding().decode(tokens))
