"""How long the model takes to read a request here, so a person waiting is told.

Before each model call a watched run (:class:`~sleuth.agent.run.Listener` with ``progress``)
says what the model is about to read: "reading 5 passages (about 40 s here)". The seconds
are this machine's measured pace with this model, seconds per 1,000 prompt tokens, kept as
a running mean (each new call weighs :data:`WEIGHT`) in ``~/.cache/sleuth/llm-pace.json``
by model name, times the request's tokens (counted with the same tokenizer both times, so
the ratio holds whatever the model's own). The pace is of the whole call, reading and
writing, which is what a person waits for. Where no call was measured yet, the line says
the request's size and no time: never a guess.

Only watched runs are measured (an evaluation's cached replies would make any model look
instant).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sleuth.settings import cache_dir
from sleuth.text.ids import ids_in
from sleuth.text.tokens import count_tokens

PACE_FILE = "llm-pace.json"
WEIGHT = 0.3  # of the newest call in the running mean
MIN_TOKENS = 50  # a call shorter than this is not measured: its time is the round trip's
_LOCK = threading.Lock()
# ids a passage's header points to without showing them (its neighbours, the rest of it)
_POINTERS = re.compile(r"\b(?:prev|next): \S+?(?=[,;)\s])|chunk_read \S+?(?=\])")


@dataclass(frozen=True)
class Reading:
    """What one request gives the model to read, and how long that takes here."""

    # distinct chunk and reference ids the request's user and tool text shows (not those
    # a passage only points to: its neighbours, the rest of it)
    passages: int
    tokens: int
    seconds: float | None  # None: no call of this model measured here yet

    @property
    def text(self) -> str:
        """``reading 5 passages (about 40 s here)``; ``reading the request (2,100
        tokens)`` before anything was measured."""
        what = (f"reading {self.passages} passage{'s' * (self.passages != 1)}"
                if self.passages else "reading the request")
        if self.seconds is None:
            return f"{what} ({self.tokens:,} tokens)"
        return f"{what} (about {_said(self.seconds)} here)"

    def to_dict(self) -> dict[str, Any]:
        return {"passages": self.passages, "tokens": self.tokens,
                "seconds": None if self.seconds is None else round(self.seconds, 1),
                "text": self.text}


def reading(messages: Sequence[Mapping[str, Any]], model: str) -> Reading:
    """What ``messages`` give ``model`` to read and how long that takes here."""
    tokens = request_tokens(messages)
    passages: dict[str, None] = {}
    for message in messages:
        if message.get("role") in ("user", "tool"):
            text = _POINTERS.sub("", _text(message.get("content")))
            passages.update(dict.fromkeys(ids_in(text)))
    pace = _paces().get(model)
    seconds = None if pace is None else pace * tokens / 1000
    return Reading(len(passages), tokens, seconds)


def request_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """The tokens of every message's text."""
    return sum(count_tokens(_text(m.get("content"))) for m in messages)


def measured(model: str, tokens: int, seconds: float) -> None:
    """Add a call of ``model`` over ``tokens`` prompt tokens that took ``seconds`` to the
    running mean (a call under :data:`MIN_TOKENS` tokens is not counted)."""
    if tokens < MIN_TOKENS or seconds <= 0:
        return
    pace = seconds * 1000 / tokens
    with _LOCK:
        paces = _paces()
        old = paces.get(model)
        paces[model] = pace if old is None else (1 - WEIGHT) * old + WEIGHT * pace
        path = pace_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(f"{path.name}.{os.getpid()}.part")
            part.write_text(json.dumps(paces, indent=1), "utf-8")
            part.replace(path)
        except OSError:  # a read-only cache: the next call is not told a time, that is all
            return


def pace_path() -> Path:
    return cache_dir() / PACE_FILE


def _paces() -> dict[str, float]:
    try:
        data = json.loads(pace_path().read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()
            if isinstance(v, int | float) and v > 0} if isinstance(data, dict) else {}


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _said(seconds: float) -> str:
    """``40 s``, ``3 min``: as a person reads a wait."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    return f"{round(seconds / 60)} min"
