"""Estimated USD cost of LLM calls from token usage.

The table holds public *list* prices (USD per 1M input tokens, per 1M output tokens) as known
when this was written. They change, ignore cached-input and batch discounts, and are only an
estimate: override them with the ``prices`` argument (or your settings) for real accounting.
"""

from __future__ import annotations

from collections.abc import Mapping

from sleuth.llm.base import Usage

__all__ = ["DEFAULT_PRICES", "cost", "price_for"]

#: model name -> (USD per 1M input tokens, USD per 1M output tokens); list prices, override them.
DEFAULT_PRICES: Mapping[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
}


def price_for(
    model: str, prices: Mapping[str, tuple[float, float]] | None = None
) -> tuple[float, float] | None:
    """``(input, output)`` USD per 1M tokens for ``model``, or ``None`` when unknown.

    Lookup is by exact name, then by the longest table key that ``model`` starts with (so
    ``gpt-4o-mini-2024-07-18`` is priced as ``gpt-4o-mini``). A ``provider/`` prefix such as
    ``openai/gpt-4o`` is also tried without the provider. ``prices`` is merged over the defaults.
    """
    table = {**DEFAULT_PRICES, **(prices or {})}
    candidates = [model]
    if "/" in model:
        candidates.append(model.rsplit("/", 1)[1])
    for name in candidates:
        if name in table:
            return table[name]
    for name in candidates:
        matches = [key for key in table if key and name.startswith(key)]
        if matches:
            return table[max(matches, key=len)]
    return None


def cost(
    model: str, usage: Usage, prices: Mapping[str, tuple[float, float]] | None = None
) -> float:
    """Estimated USD cost of ``usage`` on ``model``; ``0.0`` for a model not in the table."""
    price = price_for(model, prices)
    if price is None:
        return 0.0
    per_input, per_output = price
    return (usage.prompt_tokens * per_input + usage.completion_tokens * per_output) / 1_000_000
