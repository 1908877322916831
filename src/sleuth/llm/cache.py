"""LLM replies cached by request, so a re-run of an unchanged configuration costs nothing.

:class:`ReplyCache` wraps a chat client and keeps every reply in a SQLite file, keyed by a
hash of the whole request as it goes to the server: endpoint, model, sampling options,
messages, tools, tool choice and response format. A request seen before is answered from
the file with the reply and the usage the server reported then; any change (another
prompt, another model, other retrieved text) is a new key and goes to the server. Several
threads and processes may share one file (SQLite in WAL mode, one connection per thread).

With sampling (temperature above 0) a cached run replays the first draw instead of drawing
again: that is what makes a re-run reproducible, and why ``--no-llm-cache`` exists.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sleuth.llm.base import ChatResponse, ToolCall, Usage
from sleuth.settings import cache_dir

# where the inner client keeps the options that shape a reply (OpenAIClient's attributes)
_OPTIONS = ("base_url", "temperature", "max_tokens", "reasoning_effort", "extra_body")


class ReplyCache:
    """A chat client whose replies are kept in ``path`` (see the module docstring).

    ``hits`` and ``misses`` count the requests answered from the file and sent on."""

    def __init__(self, inner: Any, path: str | Path) -> None:
        self.inner = inner
        self.model = inner.model
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0
        self._local = threading.local()
        self._count = threading.Lock()
        with self._db() as db:
            db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, "
                       "reply TEXT NOT NULL)")

    def __getattr__(self, name: str) -> Any:  # context_window, close, ... of the inner client
        return getattr(self.inner, name)

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            self._local.db = db
        return db

    def key(self, request: Mapping[str, Any]) -> str:
        """The hash of ``request`` together with the inner client's options."""
        options = {name: getattr(self.inner, name, None) for name in _OPTIONS}
        options["base_url"] = _endpoint(options["base_url"])
        text = json.dumps({"model": self.model, "options": options, "request": request},
                          sort_keys=True, default=str, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def chat(self, messages: Sequence[Mapping[str, Any]],
             tools: Sequence[Mapping[str, Any]] | None = None, *,
             tool_choice: str | None = None, parallel_tool_calls: bool | None = None,
             response_format: Mapping[str, Any] | None = None) -> ChatResponse:
        request = {"messages": list(messages), "tools": list(tools or ()),
                   "tool_choice": tool_choice, "parallel_tool_calls": parallel_tool_calls,
                   "response_format": response_format}
        key = self.key(request)
        row = self._db().execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        if row is not None:
            with self._count:
                self.hits += 1
            return _loads(row[0])
        extra = {"response_format": response_format} if response_format is not None else {}
        response: ChatResponse = self.inner.chat(
            messages, tools, tool_choice=tool_choice, parallel_tool_calls=parallel_tool_calls,
            **extra)
        self._db().execute("INSERT OR REPLACE INTO replies VALUES (?, ?)",
                           (key, _dumps(response)))
        with self._count:
            self.misses += 1
        return response


def _endpoint(base_url: Any) -> Any:
    """The endpoint as the key sees it: a server on this machine without its port, which a
    local model server picks anew each start (the model's name tells the servers apart)."""
    if not isinstance(base_url, str):
        return base_url
    parts = urlsplit(base_url)
    if parts.hostname in ("127.0.0.1", "localhost", "::1"):
        return urlunsplit((parts.scheme, parts.hostname, parts.path, "", ""))
    return base_url


def _dumps(response: ChatResponse) -> str:
    return json.dumps({"content": response.content,
                       "tool_calls": [asdict(c) for c in response.tool_calls],
                       "usage": asdict(response.usage), "model": response.model,
                       "finish_reason": response.finish_reason,
                       "reasoning": response.reasoning}, ensure_ascii=False)


def _loads(text: str) -> ChatResponse:
    data = json.loads(text)
    return ChatResponse(data["content"], tuple(ToolCall(**c) for c in data["tool_calls"]),
                        Usage(**data["usage"]), data["model"], data["finish_reason"],
                        data.get("reasoning"))


def default_llm_cache() -> Path:
    """``$XDG_CACHE_HOME/sleuth/llm-replies.sqlite`` (``~/.cache/sleuth/...``)."""
    return cache_dir() / "llm-replies.sqlite"


def with_reply_cache(llm: Any, path: str | Path) -> Any:
    """``llm`` with its server replies cached in ``path``. A client that speaks a protocol
    over an inner client (the JSON tool calls of small models) gets the cache on the inner
    one, where the request is exactly what the server sees."""
    inner = getattr(llm, "inner", None)
    if inner is not None and hasattr(inner, "chat") and not isinstance(inner, ReplyCache):
        llm.inner = ReplyCache(inner, path)
        return llm
    return llm if isinstance(llm, ReplyCache) else ReplyCache(llm, path)


def cache_of(llm: Any) -> ReplyCache | None:
    """The reply cache inside ``llm``, if any (for its hit and miss counts)."""
    for candidate in (llm, getattr(llm, "inner", None)):
        if isinstance(candidate, ReplyCache):
            return candidate
    return None
