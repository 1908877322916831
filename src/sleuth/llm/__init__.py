"""The LLM layer: the :class:`LLM` protocol, the OpenAI-compatible client, the JSON tool
protocol for small models, pricing, the reply cache and the offline local model. The scripted
server for tests is :mod:`sleuth.testing.fake`."""

from __future__ import annotations

from sleuth.llm.base import LLM, ChatResponse, ToolCall, Usage
from sleuth.llm.client import OpenAIClient, embed_texts
from sleuth.llm.jsontools import JsonToolCalls
from sleuth.llm.pricing import DEFAULT_PRICES, cost, price_for

__all__ = [
    "DEFAULT_PRICES",
    "LLM",
    "ChatResponse",
    "JsonToolCalls",
    "OpenAIClient",
    "ToolCall",
    "Usage",
    "cost",
    "embed_texts",
    "price_for",
]
