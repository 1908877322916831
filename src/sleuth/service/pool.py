"""The bounded pool a server runs its CPU-bound calls on.

A server accepts many connections, but its CPU-bound work (searching, reading, indexing)
gains nothing from more threads than cores: more threads only time-slice the same cores,
contend for the GIL and make every request as slow as the crowd. So tool calls and indexing
requests run on ``serve.workers`` threads (the usable cores), in arrival order; up to
``serve.queue`` more wait their turn, so latency grows with the queue and no faster; a
request beyond that is refused at once with :class:`~sleuth.errors.Busy` (HTTP 503 and a
``Retry-After`` estimated from the queue and the recent time per call) instead of waiting
towards a client's timeout.

Agent runs and indexing requests get pools of their own (see
:class:`~sleuth.service.service.Service`), so that neither waits behind the other nor behind tool
calls, and a :class:`Quota` holds each
API key to a few of them at once (:class:`~sleuth.errors.TooMany`, HTTP 429 with
``Retry-After``): one tenant's flood of questions or uploads does not take every thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from sleuth.errors import Busy, TooMany
from sleuth.text.threads import cores

T = TypeVar("T")

_SMOOTHING = 0.1  # weight of the newest call in the running mean of seconds per call


class WorkPool:
    """``workers`` threads and at most ``queue`` waiting calls; see the module docstring."""

    def __init__(self, workers: int | None = None, queue: int = 256, *,
                 name: str = "worker", nice: int = 0) -> None:
        self.workers = workers or cores()
        self.queue = queue
        self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix=f"sleuth-{name}",
                                            initializer=_lower_priority, initargs=(nice,))
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
        return await asyncio.wrap_future(self.start(fn))

    def start(self, fn: Callable[[], T]) -> Future[T]:
        """``fn()`` submitted to a worker thread (its future); :class:`Busy` at once when
        ``queue`` calls are already waiting."""
        self._admit()
        try:
            future = self._executor.submit(self._timed, fn)
        except RuntimeError:  # the pool is shut down: the server is stopping
            self._leave()
            raise Busy("server stopping: send it again to another server", 5) from None
        future.add_done_callback(lambda _: self._leave())
        return future

    def _leave(self) -> None:
        with self._lock:
            self._admitted -= 1

    @property
    def seconds(self) -> float:
        """The running mean of seconds per call."""
        return self._seconds

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


def _lower_priority(nice: int) -> None:
    """Give the calling thread ``nice`` more niceness (Linux schedules threads on their own,
    so a pool of long jobs yields the cores to the pools that answer quickly)."""
    if nice and hasattr(os, "setpriority"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(),
                           os.getpriority(os.PRIO_PROCESS, 0) + nice)


class Quota:
    """At most ``limit`` requests of one kind per API key at once; see the module docstring.
    ``seconds`` estimates how long one takes (for ``Retry-After``)."""

    def __init__(self, limit: int, what: str, setting: str,
                 seconds: Callable[[], float]) -> None:
        self.limit, self.what, self.setting, self.seconds = limit, what, setting, seconds
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}

    def take(self, key: str) -> Callable[[], None]:
        """Count one more request of ``key`` (:class:`TooMany` when it has ``limit``);
        returns the function that gives it back, to be called once."""
        with self._lock:
            held = self._held.get(key, 0)
            if held >= self.limit:
                retry = max(1, math.ceil(self.seconds()))
                raise TooMany(f"this key already has {held} {self.what} going "
                              f"({self.setting} {self.limit}); retry in {retry} s", retry)
            self._held[key] = held + 1
        given = threading.Event()

        def give_back() -> None:
            if given.is_set():
                return
            given.set()
            with self._lock:
                left = self._held.get(key, 1) - 1
                if left:
                    self._held[key] = left
                else:
                    self._held.pop(key, None)

        return give_back
