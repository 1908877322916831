"""One thread policy for a Sleuth process: query-time work on one thread, batch work on
the cores, and never more busy threads than cores.

Multithreaded kernels (torch's OpenMP intra-op pool, OpenBLAS, faiss's OpenMP, llama.cpp)
split each step across threads and wait at a barrier for the slowest. On an idle machine
that is fast; when another process takes a core, every step waits for a thread the kernel
has descheduled, and latency collapses (semantic search 48x slower with two busy processes,
the local model 150x slower with one). So:

- **query work** (embedding a query, exact scoring, the approximate index, re-ranking) runs
  on ``threads.query`` threads (1): a single query is too small to gain from a second
  thread, and one thread never waits at a barrier;
- **batch work** (index-time embedding, graph-name embedding, building the approximate
  index), marked by a :func:`batch_work` block, runs on ``threads.batch`` threads (the usable
  cores), where the work per step is large enough that a descheduled thread costs its
  share, not more;
- OpenBLAS, which numpy and faiss share and which can only be limited for the whole process,
  stays at ``threads.query``: its products here are small;
- the local model's server gets ``threads.llm`` generation threads (half the cores, at least
  one: generation is a barrier per layer per token) and ``threads.llm_batch`` prompt threads;
- the servers run CPU-bound calls on ``serve.workers`` threads (the cores), each a query
  worker, so batch work there (an upload) runs on one thread too.

Every call into torch or faiss is wrapped in :func:`kernel_threads`, which sets their thread counts
for the calling thread only (both keep them per thread) and restores them after, so a
program that uses torch itself keeps its own settings outside Sleuth's calls.
``sleuth status --json`` reports the policy in force.
"""

from __future__ import annotations

import math
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any


def cores() -> int:
    """CPUs this process may run on: its affinity mask, capped by a cgroup CPU quota."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        usable = os.cpu_count() or 1
    quota = _cgroup_quota()
    return max(1, min(usable, quota) if quota else usable)


def _cgroup_quota() -> int | None:
    """``cpu.max`` of cgroup v2 as whole CPUs (rounded up), or None when unlimited."""
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    return max(1, math.ceil(int(quota) / int(period)))


@dataclass(frozen=True)
class Policy:
    """Thread counts in force (see the module docstring)."""

    cores: int
    query: int
    batch: int
    llm: int
    llm_batch: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def policy_from(settings: Any | None = None, *, serving: bool = False) -> Policy:
    """The policy of ``ThreadSettings`` (None fields: chosen for this machine). In a server
    (``serving``) batch work defaults to one thread: it runs beside the query workers."""
    n = cores()

    def get(name: str) -> int | None:
        value = getattr(settings, name, None) if settings is not None else None
        return int(value) if value else None

    return Policy(cores=n, query=min(get("query") or 1, n),
                  batch=min(get("batch") or (1 if serving else n), n),
                  llm=min(get("llm") or max(1, n // 2), n),
                  llm_batch=min(get("llm_batch") or n, n))


_settings: Any | None = None
_servers = 0  # servers running in this process (see server_running())
_policy: Policy | None = None
_guard = threading.Lock()


def thread_policy() -> Policy:
    """The policy set by :func:`configure_threads`, else the machine's defaults."""
    return _policy or policy_from(None)


def configure_threads(settings: Any | None = None) -> Policy:
    """Make ``settings`` (a ``ThreadSettings``; None: keep the last ones) the process's
    policy and limit OpenBLAS to its query threads. Called when an index opens."""
    global _settings, _policy
    with _guard:
        _settings = settings if settings is not None else _settings
        _policy = policy_from(_settings, serving=_servers > 0)
    _limit_blas(_policy.query)
    return _policy


# How often a thread holding the GIL hands it on while a server runs (Python's default is
# 5 ms: a request waits that long behind an upload's chunking or embedding loop). A request
# takes the GIL back after every SQLite step and socket read, each time waiting up to this
# long behind another key's running call: at 0.1 ms a keyword search beside a neighbour's
# search took 2.4-2.9 ms (p50; 2.0 alone), at 0.5 ms 3.6-6.0 ms (in one process, paired)
SERVER_SWITCH_INTERVAL = 0.0001


def server_running(started: bool) -> None:
    """A server in this process started (or stopped): while one runs, batch work defaults
    to one thread, beside its query workers, and the GIL changes hands every
    :data:`SERVER_SWITCH_INTERVAL` seconds, so a quick request never waits long behind
    long work in another thread."""
    global _servers, _switch
    with _guard:
        _servers = max(0, _servers + (1 if started else -1))
        if _servers and _switch is None:
            _switch = sys.getswitchinterval()
            sys.setswitchinterval(SERVER_SWITCH_INTERVAL)
        elif not _servers and _switch is not None:
            sys.setswitchinterval(_switch)
            _switch = None
    configure_threads()


_switch: float | None = None  # the interval before a server started
_local = threading.local()


@contextmanager
def batch_work() -> Iterator[None]:
    """Mark the block as batch work: :func:`kernel_threads` inside it uses the batch threads."""
    depth = getattr(_local, "batch", 0)
    _local.batch = depth + 1
    try:
        yield
    finally:
        _local.batch = depth


def in_batch_work() -> bool:
    return bool(getattr(_local, "batch", 0))


@contextmanager
def kernel_threads() -> Iterator[None]:
    """Run the block's torch and faiss work on this thread's share: the batch threads inside
    :func:`batch_work`, the query threads elsewhere. Wraps every call into those libraries."""
    policy = thread_policy()
    with _threads(policy.batch if in_batch_work() else policy.query):
        yield


@contextmanager
def _threads(n: int) -> Iterator[None]:
    torch = sys.modules.get("torch")
    faiss = sys.modules.get("faiss")
    # get_num_threads first: it settles this thread's own count before it is changed
    before_torch = torch.get_num_threads() if torch is not None else None
    before_faiss = faiss.omp_get_max_threads() if faiss is not None else None
    if torch is not None and before_torch != n:
        torch.set_num_threads(n)
    if faiss is not None and before_faiss != n:
        faiss.omp_set_num_threads(n)
    try:
        yield
    finally:
        if torch is not None and before_torch is not None and before_torch != n:
            torch.set_num_threads(before_torch)
        if faiss is not None and before_faiss is not None and before_faiss != n:
            faiss.omp_set_num_threads(before_faiss)


@cache
def _limit_blas(n: int) -> None:
    """At most ``n`` OpenBLAS threads in this process (numpy's and faiss's; threadpoolctl);
    once per value."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - a dependency; the default stays
        return
    ThreadpoolController().select(internal_api="openblas").limit(limits=n)
