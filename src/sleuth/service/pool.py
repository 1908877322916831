"""The bounded, fair pools a server runs its work on, and each API key's share of them.

A server accepts many connections, but its CPU-bound work (searching, reading, indexing)
gains nothing from more threads than cores: more threads only time-slice the same cores,
contend for the GIL and make every request as slow as the crowd. So tool calls and library
reads run on ``serve.workers`` threads (the usable cores); up to ``serve.queue`` more wait
their turn, and a request beyond that is refused at once with :class:`~sleuth.errors.Busy`
(HTTP 503 and a ``Retry-After`` estimated from the queue and the recent time per call)
instead of waiting towards a client's timeout.

**Fair, not first come first served.** Waiting calls queue per API key, and a free worker
takes the next call of the key with the fewest calls running, keys taking turns; one key's
calls run on all workers but one, which is left for other keys: a key with 36 calls waiting
does not delay another key's one call by its 36, nor by the calls it has running. Each key
may have ``serve.calls_per_key`` calls running or waiting (its own ``calls`` in the key
file); more get :class:`~sleuth.errors.TooMany` (HTTP 429 with ``Retry-After``).

Agent runs and indexing requests get pools of their own (see
:class:`~sleuth.service.service.Service`), so that neither waits behind the other nor behind
tool calls, and a :class:`Quota` holds each key to a few of them at once. The indexing pool
runs at most one request per key while another key waits, and index writes take turns
between keys (:class:`FairLock`): a request's documents are chunked and embedded outside
the lock, and each batch's write takes it in its key's turn, so another tenant's small
upload is stored between two batches of a large document, not after it. A
:class:`RateLimit` holds each key to ``serve.rate_per_key`` requests a second on every route.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sleuth.errors import Busy, TooMany
from sleuth.service.callers import LOCAL, Caller, Share
from sleuth.text.threads import cores

T = TypeVar("T")

_SMOOTHING = 0.1  # weight of the newest call in the running mean of seconds per call
_POOLS: weakref.WeakSet[WorkPool] = weakref.WeakSet()


@dataclass(eq=False)
class _Job:
    key: str
    fn: Callable[[], Any]
    future: Future[Any] = field(default_factory=Future)


class WorkPool:
    """``workers`` threads and at most ``queue`` waiting calls, served fairly across keys;
    see the module docstring. ``per_key``: calls one key may have running or waiting
    (None: no cap; a caller's :class:`Share` may set its own); ``spare``: workers one key's
    calls leave to other keys (a key runs at least one call at a time), so that another
    key's call starts at once rather than after a running one."""

    def __init__(self, workers: int | None = None, queue: int = 256, *,
                 name: str = "worker", nice: int = 0, per_key: int | None = None,
                 spare: int = 0, share: str = "calls",
                 setting: str = "serve.calls_per_key") -> None:
        self.workers = workers or cores()
        self.queue = queue
        self.per_key, self.setting = per_key, setting
        self.running_per_key = max(1, self.workers - spare)
        self.name, self.nice, self.share = name, nice, share
        self._cond = threading.Condition()
        self._waiting: OrderedDict[str, deque[_Job]] = OrderedDict()  # keys in turn order
        self._running: dict[str, int] = {}
        self._held: dict[str, int] = {}  # per key: running plus waiting
        self._admitted = 0  # running plus waiting, every key
        self._queued = 0  # waiting, every key
        self._threads = 0
        self._idle = 0
        self._closed = False
        self._seconds = 0.01  # running mean of seconds per call
        _POOLS.add(self)

    @property
    def waiting(self) -> int:
        return self._queued

    @property
    def running(self) -> int:
        return sum(self._running.values())

    def status(self) -> dict[str, Any]:
        return {"workers": self.workers, "queue": self.queue, "running": self.running,
                "waiting": self.waiting}

    @property
    def seconds(self) -> float:
        """The running mean of seconds per call."""
        return self._seconds

    async def run(self, fn: Callable[[], T], caller: Caller | None = None) -> T:
        """``fn()`` on a worker thread, in ``caller``'s turn; :class:`Busy` at once when
        ``queue`` calls are already waiting, :class:`TooMany` when the caller has its
        share going."""
        return await asyncio.wrap_future(self.start(fn, caller))

    def start(self, fn: Callable[[], T], caller: Caller | None = None) -> Future[T]:
        """``fn()`` queued for a worker thread in ``caller``'s turn (its future; cancelling
        it while it waits drops it); refused as :meth:`run` says."""
        who = caller or LOCAL
        job = _Job(who.name, fn)
        with self._cond:
            if self._closed:
                raise Busy("server stopping: send it again to another server", 5)
            self._admit(who)
            self._waiting.setdefault(job.key, deque()).append(job)
            self._queued += 1
            if self._queued > self._idle and self._threads < self.workers:
                self._threads += 1
                threading.Thread(target=self._work, name=f"sleuth-{self.name}",
                                 daemon=True).start()
            self._cond.notify()
        job.future.add_done_callback(lambda _: self._dropped(job))
        return job.future

    def _admit(self, caller: Caller) -> None:
        """Count one more call of ``caller`` (the condition held), or refuse it."""
        if self._admitted >= self.workers + self.queue:
            retry = max(1, math.ceil(self.waiting * self._seconds / self.workers))
            raise Busy(f"server busy: {self.workers} workers running and {self.waiting} "
                       f"requests waiting (serve.queue {self.queue}); retry in {retry} s",
                       retry)
        limit = self.per_key and (getattr(caller.share, self.share, None) or self.per_key)
        held = self._held.get(caller.name, 0)
        if limit is not None and held >= limit:
            retry = max(1, math.ceil(held * self._seconds / self.workers))
            raise TooMany(f"this key already has {held} calls running or waiting "
                          f"({self.setting} {limit}); retry in {retry} s", retry)
        self._held[caller.name] = held + 1
        self._admitted += 1

    def _next(self) -> _Job | None:
        """The next call to run (the condition held): of the waiting key with the fewest
        calls running, the first such key in turn order, which then goes last."""
        best = None
        for key in self._waiting:
            running = self._running.get(key, 0)
            if running >= self.running_per_key:
                continue
            if best is None or running < self._running.get(best, 0):
                best = key
        if best is None:
            return None
        jobs = self._waiting.pop(best)
        job = jobs.popleft()
        self._queued -= 1
        if jobs:
            self._waiting[best] = jobs  # back in line, after every other waiting key
        self._running[best] = self._running.get(best, 0) + 1
        return job

    def _work(self) -> None:
        _lower_priority(self.nice)
        while True:
            with self._cond:
                job = self._next()
                while job is None and not self._closed:
                    self._idle += 1
                    self._cond.wait()
                    self._idle -= 1
                    job = self._next()
                if job is None:
                    self._threads -= 1
                    return
            if job.future.set_running_or_notify_cancel():
                self._call(job)
            self._done(job)

    def _call(self, job: _Job) -> None:
        started = time.perf_counter()
        try:
            result = job.fn()
        except BaseException as exc:  # noqa: BLE001 - handed to whoever awaits the call
            job.future.set_exception(exc)
        else:
            job.future.set_result(result)
        took = time.perf_counter() - started
        with self._cond:
            self._seconds += _SMOOTHING * (took - self._seconds)

    def _done(self, job: _Job) -> None:
        with self._cond:
            self._running[job.key] -= 1
            if not self._running[job.key]:
                del self._running[job.key]
            self._leave(job.key)
            self._cond.notify()  # a key held back by running_per_key may go now

    def _leave(self, key: str) -> None:
        self._admitted -= 1
        left = self._held.get(key, 1) - 1
        if left:
            self._held[key] = left
        else:
            self._held.pop(key, None)

    def _dropped(self, job: _Job) -> None:
        """A call cancelled while it waited (its client went away): out of the queue."""
        if not job.future.cancelled():
            return
        with self._cond:
            jobs = self._waiting.get(job.key)
            if jobs is None or job not in jobs:
                return  # a worker took it: it counts it done
            jobs.remove(job)
            self._queued -= 1
            if not jobs:
                del self._waiting[job.key]
            self._leave(job.key)

    def close(self) -> None:
        """Refuse new calls, cancel the waiting ones and let the threads end (a running
        call is not waited for)."""
        with self._cond:
            self._closed = True
            waiting = [job for jobs in self._waiting.values() for job in jobs]
            self._cond.notify_all()
        for job in waiting:
            job.future.cancel()


def running_calls() -> int:
    """Calls running now on every pool of this process (a server stopping says so)."""
    return sum(pool.running for pool in list(_POOLS))


def _lower_priority(nice: int) -> None:
    """Give the calling thread ``nice`` more niceness (Linux schedules threads on their own,
    so a pool of long jobs yields the cores to the pools that answer quickly)."""
    if nice and hasattr(os, "setpriority"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(),
                           os.getpriority(os.PRIO_PROCESS, 0) + nice)


class Quota:
    """At most ``limit`` requests of one kind per API key at once (a key's :class:`Share`
    field ``share`` may set its own); see the module docstring. ``seconds`` estimates how
    long one takes (for ``Retry-After``)."""

    def __init__(self, limit: int, what: str, setting: str,
                 seconds: Callable[[], float], *, share: str = "") -> None:
        self.limit, self.what, self.setting, self.seconds = limit, what, setting, seconds
        self.share = share
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}

    def take(self, caller: Caller | str) -> Callable[[], None]:
        """Count one more request of ``caller`` (:class:`TooMany` when it has its limit);
        returns the function that gives it back, to be called once."""
        key = caller if isinstance(caller, str) else caller.name
        own = None if isinstance(caller, str) or not self.share else \
            getattr(caller.share, self.share)
        limit = own or self.limit
        with self._lock:
            held = self._held.get(key, 0)
            if held >= limit:
                retry = max(1, math.ceil(self.seconds()))
                raise TooMany(f"this key already has {held} {self.what} going "
                              f"({self.setting} {limit}); retry in {retry} s", retry)
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


class RateLimit:
    """A token bucket per API key: ``rate`` requests a second on average and ``burst`` at
    once (a caller's :class:`Share` may set its own; rate 0: no limit)."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, burst
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)

    def take(self, caller: Caller) -> None:
        """Spend one of ``caller``'s tokens; :class:`TooMany` with the seconds until the
        next one when none is left."""
        share: Share = caller.share
        rate = self.rate if share.rate is None else share.rate
        burst = share.burst or self.burst
        if rate <= 0:
            return
        now = time.monotonic()
        with self._lock:
            tokens, at = self._buckets.get(caller.name, (float(burst), now))
            tokens = min(float(burst), tokens + (now - at) * rate)
            if tokens < 1:
                self._buckets[caller.name] = (tokens, now)
                retry = max(1, math.ceil((1 - tokens) / rate))
                raise TooMany(f"this key sent more than {rate:g} requests a second "
                              f"(serve.rate_per_key, burst {burst}); retry in {retry} s",
                              retry)
            self._buckets[caller.name] = (tokens - 1, now)


class FairLock:
    """A lock whose waiters are served by key in turn: when it is let go, the next holder is
    the oldest waiter of the key that has waited longest since its last turn, so one key's
    many writes cannot keep another key's one waiting. ``with lock:`` holds it under the
    key ""."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._holder: object | None = None
        self._waiting: OrderedDict[str, deque[object]] = OrderedDict()

    @contextlib.contextmanager
    def hold(self, key: str) -> Iterator[None]:
        """Held for ``key`` inside the ``with`` block."""
        self.acquire(key)
        try:
            yield
        finally:
            self.release()

    def acquire(self, key: str = "") -> None:
        ticket = object()
        with self._cond:
            if self._holder is None and not self._waiting:
                self._holder = ticket
                return
            self._waiting.setdefault(key, deque()).append(ticket)
            while self._holder is not ticket:
                self._cond.wait()

    def release(self) -> None:
        with self._cond:
            self._holder = None
            if self._waiting:
                key, tickets = next(iter(self._waiting.items()))
                self._holder = tickets.popleft()
                del self._waiting[key]
                if tickets:
                    self._waiting[key] = tickets  # its next turn after the other keys'
                self._cond.notify_all()

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

