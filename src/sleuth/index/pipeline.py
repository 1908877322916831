"""Run a producer in a worker thread, so that its work overlaps with the consumer's.

Ingestion reads, chunks and embeds the next batch of documents while the store writes the
previous one: embedding (numpy, the tokenizers' Rust code) and writing (SQLite, a database
server) both spend much of their time outside the GIL, so on two cores the build takes
about as long as the slower of the two instead of their sum.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

_POLL_S = 0.1  # how often a blocked producer checks whether the consumer has gone


class Stopped(Exception):
    """Raised inside a producer that checks ``stop`` (see :func:`pipelined`) once its
    consumer has gone: it ends the producer's work at once."""


def pipelined(items: Iterable[T], depth: int = 2,
              stop: threading.Event | None = None) -> Iterator[T]:
    """Yield ``items`` as a worker thread produces them, at most ``depth`` ahead of the
    consumer. An exception raised by the producer is raised here, at the item where it
    happened; when the consumer stops early (an exception, ``break``, Ctrl-C) ``stop`` is
    set and the producer stops at its next item, or sooner where it checks ``stop`` itself
    (raising :class:`Stopped` in a long step: an embedding batch is seconds of C++ work, and
    a thread still in it when the interpreter exits takes the process down with SIGABRT)."""
    buffer: queue.Queue[tuple[bool, T | None, BaseException | None]] = \
        queue.Queue(maxsize=max(1, depth))
    stop = stop if stop is not None else threading.Event()

    def put(item: tuple[bool, T | None, BaseException | None]) -> bool:
        while not stop.is_set():
            try:
                buffer.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((False, item, None)):
                    return
        except BaseException as error:  # noqa: BLE001 - handed to the consumer's thread
            put((False, None, error))
            return
        put((True, None, None))

    worker = threading.Thread(target=produce, name="sleuth-pipeline", daemon=True)
    worker.start()
    try:
        while True:
            done, item, error = buffer.get()
            if error is not None:
                raise error
            if done:
                return
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        worker.join(timeout=5)
