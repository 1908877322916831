"""The bounded pool a server runs its CPU-bound calls on.

A server accepts many connections, but its CPU-bound work (searching, reading, indexing)
gains nothing from more threads than cores: more threads only time-slice the same cores,
contend for the GIL and make every request as slow as the crowd. So tool calls and indexing
requests run on ``serve.workers`` threads (the usable cores), in arrival order; up to
``serve.queue`` more wait their turn, so latency grows with the queue and no faster; a
request beyond that is refused at once with :class:`~sleuth.errors.Busy` (HTTP 503 and a
``Retry-After`` estimated from the queue and the recent time per call) instead of waiting
towards a client's timeout.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from sleuth.errors import Busy
from sleuth.threads import cores

T = TypeVar("T")

_SMOOTHING = 0.1  # weight of the newest call in the running mean of seconds per call


class WorkPool:
    """``workers`` threads and at most ``queue`` waiting calls; see the module docstring."""

    def __init__(self, workers: int | None = None, queue: int = 256) -> None:
        self.workers = workers or cores()
        self.queue = queue
        self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="sleuth-worker")
        self._lock = threading.Lock()
        self._admitted = 0  # running plus waiting
        self._seconds = 0.01  # running mean of seconds per call

    @property
    def waiting(self) -> int:
        return max(0, self._admitted - self.workers)

    def status(self) -> dict[str, Any]:
        return {"workers": self.workers, "queue": self.queue, "running":
                min(self._admitted, self.workers), "waiting": self.waiting}

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` on a worker thread, once one is free; :class:`Busy` at once when
        ``queue`` calls are already waiting."""
        self._admit()
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self._executor, self._timed, fn)
        finally:
            with self._lock:
                self._admitted -= 1

    def _admit(self) -> None:
        with self._lock:
            if self._admitted >= self.workers + self.queue:
                retry = max(1, math.ceil(self.waiting * self._seconds / self.workers))
                raise Busy(f"server busy: {self.workers} workers running and {self.waiting} "
                           f"requests waiting (serve.queue {self.queue}); retry in {retry} s",
                           retry)
            self._admitted += 1

    def _timed(self, fn: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return fn()
        finally:
            took = time.perf_counter() - started
            with self._lock:
                self._seconds += _SMOOTHING * (took - self._seconds)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
