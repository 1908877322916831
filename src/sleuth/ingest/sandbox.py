"""Parsing untrusted files in a child process, bounded in time and memory.

The HTML, PDF and ``.docx`` parsers are C code (lexbor, MuPDF, libxml2) whose cost a file
can choose: a call into them cannot be interrupted from Python, and a thread stuck in one
keeps a server from stopping. So they run in a child process (:func:`serve`) that reads one
JSON request per line on stdin (``{"path", "doc_id", "kind", "limits"}``) and answers one
JSON line, ``{"document": {...}}`` or ``{"skip":
reason}``. The parent waits at most ``parse_seconds`` for an answer; past it the child is
killed (a new one starts for the next file) and the file is skipped, naming the limit. The
child runs niced, under an address-space limit and a CPU-time backstop. Answers are JSON,
never pickle: a parser a file subverts can send back wrong text, not code.

:func:`stop_all` kills every child of this process (a server stopping).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import selectors
import signal
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sleuth.ingest.limits import NO_LIMITS, ReadLimits
from sleuth.ingest.reading import SkipSource
from sleuth.types import Document

READY = b'{"ready": true}\n'
_LIVE: weakref.WeakSet[Sandbox] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


class Sandbox:
    """One parsing child, started on first use (or by :meth:`start`) and restarted after a
    file killed it. Threads may share one: files are parsed one at a time."""

    def __init__(self, limits: ReadLimits = NO_LIMITS) -> None:
        self.limits = limits
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        with _LIVE_LOCK:
            _LIVE.add(self)

    def start(self) -> None:
        """Start the child now, so the first file does not wait for it."""
        with self._lock:
            self._child()

    def parse(self, path: Path, doc_id: str, kind: str) -> Document:
        """The document of file ``path`` read as ``kind`` (``html``, ``pdf``, ``docx``);
        :class:`SkipSource` when it is unusable or over a limit."""
        with self._lock:
            return self._parse(path, doc_id, kind)

    def _parse(self, path: Path, doc_id: str, kind: str) -> Document:
        process = self._child()
        request = {"path": str(path), "doc_id": doc_id, "kind": kind,
                   "limits": asdict(self.limits)}
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps(request).encode() + b"\n")
            process.stdin.flush()
        except OSError:
            self.close()
            raise SkipSource("the parsing process stopped; the file was not read") from None
        line = self._answer(process)
        answer = json.loads(line)
        if "skip" in answer:
            raise SkipSource(str(answer["skip"]))
        fields = answer["document"]
        return Document(fields["doc_id"], fields["title"], fields["text"], fields["type"],
                        fields["path"], fields["metadata"])

    def _answer(self, process: subprocess.Popen[bytes]) -> bytes:
        """The child's answer line, or SkipSource once ``parse_seconds`` pass first or the
        child dies (out of memory, its CPU backstop)."""
        assert process.stdout is not None
        deadline = time.monotonic() + self.limits.parse_seconds
        with selectors.DefaultSelector() as waiting:
            waiting.register(process.stdout, selectors.EVENT_READ)
            while not waiting.select(timeout=max(0.0, deadline - time.monotonic())):
                if time.monotonic() >= deadline:
                    self.close()
                    raise SkipSource(f"took longer than {self.limits.parse_seconds:g} s to "
                                     "parse (ingest.parse_seconds)")
        line = process.stdout.readline()
        if not line:
            code = process.wait()
            self._process = None
            raise SkipSource(_death(code, self.limits))
        return line

    def _child(self) -> subprocess.Popen[bytes]:
        """The running child, started when there is none; it says when it is ready (its
        imports done), so a file's time budget is the file's alone."""
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-c", "from sleuth.ingest.sandbox import serve; serve()"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True,
                start_new_session=True)  # a Ctrl-C is the parent's to handle
            assert self._process.stdout is not None
            if self._process.stdout.readline() != READY:
                self.close()
                raise SkipSource("the parsing process did not start (run `python -c 'from "
                                 "sleuth.ingest.sandbox import serve; serve()'` to see why)")
        return self._process

    def close(self) -> None:
        """Stop the child (at once: it holds nothing worth waiting for)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        if process is not None:
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stop_all() -> None:
    """Kill every parsing child of this process."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for sandbox in live:
        sandbox.close()


def _death(code: int, limits: ReadLimits) -> str:
    """Why a child that died mid-file did, in words."""
    if code in (-signal.SIGXCPU, -signal.SIGKILL):
        return (f"took more than {limits.parse_seconds:g} s of CPU to parse "
                "(ingest.parse_seconds)")
    return (f"the parser stopped on this file (exit {code}; a file needing more than "
            f"{limits.parse_memory_bytes >> 20} MB, ingest.parse_memory_mb, stops it)")


# -- the child ---------------------------------------------------------------------------

def serve() -> None:
    """Answer requests on stdin until it closes (see the module docstring)."""
    with contextlib.suppress(OSError):  # not allowed: run at the parent's priority
        os.nice(10)
    from sleuth.ingest.parsers import parse_file

    sys.stdout.buffer.write(READY)
    sys.stdout.buffer.flush()
    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        request = json.loads(raw)
        limits = ReadLimits(**request["limits"])
        _bound(limits)
        try:
            document = parse_file(Path(request["path"]), str(request["doc_id"]),
                                  str(request["kind"]), limits)
            answer: dict[str, Any] = {"document": asdict(document)}
        except SkipSource as err:
            answer = {"skip": str(err)}
        except MemoryError:
            answer = {"skip": f"needs more than {limits.parse_memory_bytes >> 20} MB to parse "
                              "(ingest.parse_memory_mb)"}
        except Exception as err:  # noqa: BLE001 - a parser's failure is this file's problem
            answer = {"skip": f"could not be parsed ({type(err).__name__}: "
                              f"{str(err).splitlines()[0][:120] if str(err) else ''})"}
        sys.stdout.buffer.write(json.dumps(answer).encode() + b"\n")
        sys.stdout.buffer.flush()


def _bound(limits: ReadLimits) -> None:
    """Memory and a CPU-time backstop for the next file (the parent's clock is the limit)."""
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    memory = limits.parse_memory_bytes if hard == resource.RLIM_INFINITY else \
        min(limits.parse_memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (memory, hard))
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = used.ru_utime + used.ru_stime
    budget = int(spent + 2 * limits.parse_seconds + 5)
    resource.setrlimit(resource.RLIMIT_CPU, (budget, resource.RLIM_INFINITY))


if __name__ == "__main__":
    serve()
