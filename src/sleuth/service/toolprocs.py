"""Tool calls in worker processes, so that one key's running call does not share a GIL with
another key's.

The fair pool (:mod:`sleuth.service.pool`) takes keys in turn, but a call that is running
cannot be paused: with tool calls on threads of the server's process, another key's search
shares the interpreter lock with it and runs at half speed, whatever the queue does (a
flooding key took a neighbour's keyword-search p95 to 2.0–2.9× quiet, BENCHMARKS §43). Here
each of the pool's worker threads hands its call to a process of its own (``serve.
tool_processes``, one per worker): the thread waits on a socket without the lock, the child
opens the index read-only (:meth:`~sleuth.index.read.ReadIndex.open`; it sees every write
of the server or any other process, as a second server would) and answers with the
result's text and data, so a key's running call costs its own worker and a core, not the
interpreter every other request needs.

Children start in the background, each a fresh ``python -m sleuth.service.toolprocs`` on a
socket pair (not forked: the server has threads; not ``multiprocessing``'s spawn, which runs
the parent's main script again in the child); until one is up, or after one dies, the call
runs on the thread as before, and the child is started again. A tool call in a session (an
MCP connection's, a saved session's reference ids) runs on the thread: the session lives in
the server. A child exits when its socket closes (the server ended, however it ended).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import pickle
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from sleuth.errors import SleuthError
from sleuth.text.access import Access

log = logging.getLogger(__name__)

Answer = dict[str, Any]  # a tool's result as the servers send it: text, data, tokens


class ToolProcesses:
    """``count`` child processes serving tool calls on the index at ``location`` (as
    :meth:`~sleuth.index.read.ReadIndex.open` takes it: None is ``settings.index``); see the
    module docstring. :meth:`call` returns None when no child is ready (run it here)."""

    def __init__(self, location: str | Path | None, settings: Any, count: int) -> None:
        self.location, self.settings, self.count = location, settings, count
        self._idle: list[_Child] = []
        self._children: list[_Child] = []  # every child up, idle or busy
        self._lock = threading.Lock()
        self._closed = False
        self.calls = 0  # calls answered by a child

    def status(self) -> dict[str, Any]:
        """For an admin's ``/v1/status``: the processes up (of ``count``), their process
        ids, and the calls they answered."""
        with self._lock:
            return {"processes": len(self._children), "of": self.count,
                    "pids": [c.process.pid for c in self._children], "calls": self.calls}

    def start(self) -> None:
        """Start the children (blocking until each has opened the index); a child that
        fails to start is logged and its calls run on the server's threads."""
        for _ in range(self.count):
            self._spawn()

    def _spawn(self) -> None:
        if self._closed:
            return
        try:
            child = _Child.start(self.location, self.settings)
        except Exception:  # noqa: BLE001 - the thread runs the calls instead
            log.warning("could not start a tool-call process; calls run in the server",
                        exc_info=True)
            return
        with self._lock:
            if self._closed:
                child.stop()
                return
            self._idle.append(child)
            self._children.append(child)

    def call(self, access: Access | None, name: str, arguments: dict[str, Any]
             ) -> Answer | None:
        """The answer of tool ``name`` for a caller of ``access``, run in a child; None when
        none is free, the tool is not one the children have (registered after they
        started), or the child died (it is replaced in the background). A tool's error is
        raised here as the tool raised it."""
        with self._lock:
            child = self._idle.pop() if self._idle else None
        if child is None:
            return None
        if name not in child.tools:
            with self._lock:
                self._idle.append(child)
            return None
        try:
            status, payload = child.ask((access, name, arguments))
        except (EOFError, OSError, pickle.PicklingError):
            child.stop()
            with self._lock:
                if child in self._children:
                    self._children.remove(child)
            log.warning("a tool-call process ended (exit code %s); starting another",
                        child.exitcode())
            threading.Thread(target=self._spawn, name="sleuth-toolproc", daemon=True).start()
            return None
        with self._lock:
            self.calls += 1
            if self._closed:
                child.stop()
            else:
                self._idle.append(child)
        if status == "error":
            raise _rebuilt(payload)
        return payload  # type: ignore[no-any-return]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            children, self._idle, self._children = self._children, [], []
        for child in children:  # a busy one's thread sees its pipe closed: run here
            child.stop()


class _Child:
    def __init__(self, process: Any, conn: Connection) -> None:
        self.process, self.conn = process, conn
        self.tools: frozenset[str] = frozenset()  # the tools the child has registered

    @classmethod
    def start(cls, location: str | Path | None, settings: Any) -> _Child:
        ours, theirs = socket.socketpair()
        with theirs:
            process = subprocess.Popen(
                [sys.executable, "-m", "sleuth.service.toolprocs", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
        child = cls(process, Connection(ours.detach()))
        try:
            child.conn.send((location, settings))
            status, payload = child.conn.recv()  # "ready" and its tools, once it is open
        except (EOFError, OSError):
            child.stop()
            raise SleuthError(f"the tool process ended at start (exit code "
                              f"{process.poll()})") from None
        if status != "ready":
            child.stop()
            raise _rebuilt(payload)
        child.tools = frozenset(payload)
        return child

    def ask(self, message: tuple[Any, ...]) -> tuple[str, Any]:
        self.conn.send(message)
        return self.conn.recv()  # type: ignore[no-any-return]

    def exitcode(self) -> int | None:
        return self.process.poll()  # type: ignore[no-any-return]

    def stop(self) -> None:
        self.conn.close()
        if self.process.poll() is None:
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)


def _serve(conn: Connection) -> None:
    """A child's loop: read where the index is and the settings, open it, then answer
    (access, tool, arguments) messages until the socket closes."""
    from sleuth.index.read import ReadIndex
    from sleuth.service.calls import run_tool
    from sleuth.tools import TOOLS

    try:
        location, settings = conn.recv()
        index = ReadIndex.open(location, settings=settings)
        index.embedder  # noqa: B018 - the first semantic search needs it
    except BaseException as exc:  # noqa: BLE001 - told to the server, which runs calls itself
        conn.send(("failed", _portable(exc)))
        return
    conn.send(("ready", sorted(TOOLS)))
    views: dict[str, Any] = {}
    while True:
        try:
            access, name, arguments = conn.recv()
        except (EOFError, OSError):
            return
        try:
            view = index if access is None else \
                views.setdefault(access.key, index.scoped(access))
            result = run_tool(view, name, arguments, limits=settings.serve)
            reply: tuple[str, Any] = ("ok", {"text": result.text, "data": result.data,
                                             "retrieved_tokens": result.retrieved_tokens})
        except Exception as exc:  # noqa: BLE001 - raised again in the server
            reply = ("error", _portable(exc))
        try:
            conn.send(reply)
        except (pickle.PicklingError, TypeError) as exc:
            conn.send(("error", _portable(exc)))
        except (EOFError, OSError):
            return


def _portable(exc: BaseException) -> tuple[str, str, tuple[Any, ...], dict[str, Any]]:
    """``exc`` as plain data (its class's module and name, args and attributes): Sleuth's
    errors take their own arguments (a retry time, a status), so they are rebuilt without
    calling ``__init__`` (:func:`_rebuilt`) rather than pickled."""
    state = {k: v for k, v in vars(exc).items() if _picklable(v)}
    args = exc.args if _picklable(exc.args) else (str(exc),)
    return type(exc).__module__, type(exc).__qualname__, args, state


def _picklable(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:  # noqa: BLE001
        return False
    return True


def _rebuilt(payload: tuple[str, str, tuple[Any, ...], dict[str, Any]]) -> BaseException:
    """The error a tool process raised, as the server raises it: the same class (one of
    Sleuth's or a built-in exception), arguments and attributes; any other class is told as
    a SleuthError naming it."""
    module, name, args, state = payload
    found: Any = None
    if module == "builtins" or module.startswith("sleuth."):
        with contextlib.suppress(ImportError, AttributeError):
            found = importlib.import_module(module)
            for part in name.split("."):
                found = getattr(found, part)
    if not (isinstance(found, type) and issubclass(found, Exception)):
        return SleuthError(f"{name}: {args[0] if args else ''}")
    exc: BaseException = found.__new__(found)
    exc.args = args
    vars(exc).update(state)
    return exc


if __name__ == "__main__":  # a server's tool process: python -m sleuth.service.toolprocs FD
    _serve(Connection(int(sys.argv[1])))
