"""The LLM layer: the :class:`LLM` protocol, the OpenAI-compatible client, pricing, and a
scripted fake server for offline tests and demos.

The fake-server names are imported lazily, so ``python -m sleuth.llm.fake`` runs cleanly and
production code does not load ``http.server``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sleuth.llm.base import LLM, ChatResponse, ToolCall, Usage
from sleuth.llm.client import OpenAIClient, embed_texts
from sleuth.llm.jsontools import JsonToolCalls
from sleuth.llm.pricing import DEFAULT_PRICES, cost, price_for

if TYPE_CHECKING:
    from sleuth.llm.fake import FakeLLMServer, Turn, call, calls, error, raw_call, reply

__all__ = [
    "DEFAULT_PRICES",
    "LLM",
    "ChatResponse",
    "FakeLLMServer",
    "JsonToolCalls",
    "OpenAIClient",
    "ToolCall",
    "Turn",
    "Usage",
    "call",
    "calls",
    "cost",
    "embed_texts",
    "error",
    "price_for",
    "raw_call",
    "reply",
]

_FAKE_NAMES = frozenset({"FakeLLMServer", "Turn", "call", "calls", "error", "raw_call", "reply"})


def __getattr__(name: str) -> Any:
    """Import the fake-server helpers on first use."""
    if name in _FAKE_NAMES:
        return getattr(importlib.import_module("sleuth.llm.fake"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
