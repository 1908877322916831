"""Parsing and drawing untrusted files in a child process, bounded in time and memory.

The HTML, PDF and ``.docx`` parsers are C code (lexbor, MuPDF, libxml2) whose cost a file
can choose, and so is drawing a PDF page (ten thousand stroked lines in 2 KB take MuPDF a
minute): a call into them cannot be interrupted from Python, holds the interpreter, and a
thread stuck in one keeps a server from stopping. So they run in a child process
(:func:`serve`) that reads one JSON request per line on stdin and answers one JSON line:
``{"op": "parse", "path", "doc_id", "kind", "limits"}`` with ``{"document": {...}}``, and
``{"op": "render", "path", "page", "zoom", "max_pixels", "limits"}`` with ``{"png":
base64}``; either may answer ``{"skip": reason}`` (``"limit": true`` when a limit was hit).
The parent waits at most ``parse_seconds`` for an answer; past it the child is killed (a new
one starts for the next request) and the file or page is refused, naming the limit
(:class:`OverLimit`). The child runs niced, under an address-space limit and a CPU-time
backstop. Answers are JSON, never pickle: a parser a file subverts can send back wrong text
or pixels, not code.

:func:`stop_all` kills every child of this process (a server stopping).
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import json
import re
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
from typing import Any, Literal

from sleuth.ingest.limits import NO_LIMITS, ReadLimits
from sleuth.ingest.reading import SkipSource
from sleuth.types import Document

READY = b'{"ready": true}\n'
_LIVE: weakref.WeakSet[Sandbox] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
Verb = Literal["parse", "render"]
_DOING: dict[Verb, str] = {"parse": "parsing", "render": "drawing"}
# The child's program: niced before it imports anything, and into the sleuth package without
# running its __init__ (the agent and the LLM clients: seconds of imports at every restart
# that a parser never uses)
_BOOT = """\
import contextlib, importlib.util, os, sys, types
with contextlib.suppress(OSError):
    os.nice(10)
found = importlib.util.find_spec("sleuth")
package = types.ModuleType("sleuth")
package.__path__ = list(found.submodule_search_locations)
sys.modules["sleuth"] = package
from sleuth.ingest.sandbox import serve
serve({preload!r})
"""


class OverLimit(SkipSource):
    """A file or page that took longer than ``parse_seconds`` or more memory than
    ``parse_memory_mb`` in the child (which was stopped)."""


class ChildFailed(SkipSource):
    """The child could not be started or sent the request: nothing was read, through no fault
    of the file's."""


class Sandbox:
    """One child, started on first use (or by :meth:`start`) and restarted after a file
    killed it. Threads may share one: requests are answered one at a time. ``preload`` names
    modules the child imports before it says it is ready (so that a request's time is its
    own)."""

    def __init__(self, limits: ReadLimits = NO_LIMITS, *, preload: tuple[str, ...] = ()) -> None:
        if not all(_MODULE.fullmatch(name) for name in preload):
            raise ValueError(f"not module names: {preload!r}")
        self.limits = limits
        self.preload = preload
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
        answer = self._ask({"op": "parse", "path": str(path), "doc_id": doc_id,
                            "kind": kind}, "parse")
        fields = answer["document"]
        return Document(fields["doc_id"], fields["title"], fields["text"], fields["type"],
                        fields["path"], fields["metadata"])

    def render(self, path: Path, page: int, zoom: float, max_pixels: int) -> bytes:
        """PDF page ``page`` (1-based) of file ``path`` as a PNG, drawn at ``zoom`` or less
        so that its longest side is at most ``max_pixels``; :class:`OverLimit` past a limit,
        :class:`SkipSource` when it cannot be drawn."""
        answer = self._ask({"op": "render", "path": str(path), "page": page, "zoom": zoom,
                            "max_pixels": max_pixels}, "render")
        return base64.b64decode(answer["png"])

    def _ask(self, request: dict[str, Any], verb: Verb) -> dict[str, Any]:
        """The child's answer to ``request`` (with this sandbox's limits); SkipSource (or
        OverLimit) when it has none."""
        with self._lock:
            process = self._child()
            assert process.stdin is not None
            sent = json.dumps({**request, "limits": asdict(self.limits)}).encode() + b"\n"
            try:
                process.stdin.write(sent)
                process.stdin.flush()
            except OSError:
                self.close()
                raise ChildFailed(f"the {_DOING[verb]} process stopped; the file was not "
                                 "read") from None
            answer: dict[str, Any] = json.loads(self._answer(process, verb))
        if "skip" in answer:
            refusal = OverLimit if answer.get("limit") else SkipSource
            raise refusal(str(answer["skip"]))
        return answer

    def _answer(self, process: subprocess.Popen[bytes], verb: Verb) -> bytes:
        """The child's answer line, or OverLimit once ``parse_seconds`` pass first or the
        child dies (out of memory, its CPU backstop)."""
        assert process.stdout is not None
        deadline = time.monotonic() + self.limits.parse_seconds
        with selectors.DefaultSelector() as waiting:
            waiting.register(process.stdout, selectors.EVENT_READ)
            while not waiting.select(timeout=max(0.0, deadline - time.monotonic())):
                if time.monotonic() >= deadline:
                    self.close()
                    raise OverLimit(f"took longer than {self.limits.parse_seconds:g} s to "
                                    f"{verb} (ingest.parse_seconds)")
        line = process.stdout.readline()
        if not line:
            code = process.wait()
            self._process = None
            raise OverLimit(_death(code, self.limits, verb))
        return line

    def _child(self) -> subprocess.Popen[bytes]:
        """The running child, started when there is none; it says when it is ready (its
        imports done), so a file's time budget is the file's alone."""
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _BOOT.format(preload=list(self.preload))],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True,
                start_new_session=True)  # a Ctrl-C is the parent's to handle
            assert self._process.stdout is not None
            if self._process.stdout.readline() != READY:
                self.close()
                raise ChildFailed("the parsing process did not start (run `python -c 'from "
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


def _death(code: int, limits: ReadLimits, verb: Verb) -> str:
    """Why a child that died mid-file did, in words."""
    if code in (-signal.SIGXCPU, -signal.SIGKILL):
        return (f"took more than {limits.parse_seconds:g} s of CPU to {verb} "
                "(ingest.parse_seconds)")
    return (f"the {_DOING[verb]} process stopped on this file (exit {code}; a file needing more "
            f"than {limits.parse_memory_bytes >> 20} MB, ingest.parse_memory_mb, stops it)")


# -- the child ---------------------------------------------------------------------------

def serve(preload: list[str] | None = None) -> None:
    """Answer requests on stdin until it closes (see the module docstring), once the
    modules of ``preload`` that are installed are imported. :class:`Sandbox` runs it niced
    (:data:`_BOOT`)."""
    import sleuth.ingest.parsers  # noqa: F401 - imported before the first file's clock runs

    for name in preload or ():
        with contextlib.suppress(ImportError):  # the request says what is missing
            importlib.import_module(name)
    sys.stdout.buffer.write(READY)
    sys.stdout.buffer.flush()
    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        request = json.loads(raw)
        limits = ReadLimits(**request["limits"])
        _bound(limits)
        answer = _handle(request, limits)
        sys.stdout.buffer.write(json.dumps(answer).encode() + b"\n")
        sys.stdout.buffer.flush()


def _handle(request: dict[str, Any], limits: ReadLimits) -> dict[str, Any]:
    """The answer to one request, a refusal when it fails."""
    from sleuth.ingest.parsers import parse_file

    verb = "render" if request.get("op") == "render" else "parse"
    try:
        if verb == "render":
            png = render_page(Path(request["path"]), int(request["page"]),
                              float(request["zoom"]), int(request["max_pixels"]))
            return {"png": base64.b64encode(png).decode("ascii")}
        document = parse_file(Path(request["path"]), str(request["doc_id"]),
                              str(request["kind"]), limits)
        return {"document": asdict(document)}
    except SkipSource as err:
        return {"skip": str(err)}
    except MemoryError:
        return {"skip": f"needs more than {limits.parse_memory_bytes >> 20} MB to {verb} "
                        "(ingest.parse_memory_mb)", "limit": True}
    except Exception as err:  # noqa: BLE001 - a parser's failure is this file's problem
        if verb == "render":  # the type alone: MuPDF's messages may name the server's paths
            return {"skip": f"could not be drawn ({type(err).__name__})"}
        return {"skip": f"could not be parsed ({type(err).__name__}: "
                        f"{str(err).splitlines()[0][:120] if str(err) else ''})"}


def render_page(path: Path, page: int, zoom: float, max_pixels: int) -> bytes:
    """PDF page ``page`` (1-based) of ``path`` as a PNG at ``zoom``, less where its longest
    side would pass ``max_pixels``. Run it in a child (:meth:`Sandbox.render`): drawing
    costs what the page's content chooses."""
    try:
        import pymupdf
    except ImportError:
        raise SkipSource("page images need PyMuPDF: pip install 'sleuth-rag[pdf]'") from None
    return _draw(pymupdf, path, page, zoom, max_pixels)


def _draw(pymupdf: Any, path: Path, page: int, zoom: float, max_pixels: int) -> bytes:
    pymupdf.TOOLS.mupdf_display_errors(False)  # the child's stderr is nobody's
    with pymupdf.open(path) as pdf:
        if not 1 <= page <= pdf.page_count:
            raise SkipSource(f"the file has no page {page} now (it has {pdf.page_count})")
        shown = pdf.load_page(page - 1)
        longest = max(shown.rect.width, shown.rect.height) or 1.0
        scale = min(zoom, max_pixels / longest)
        return bytes(shown.get_pixmap(matrix=pymupdf.Matrix(scale, scale)).tobytes("png"))


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
