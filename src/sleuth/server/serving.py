"""Running a server: uvicorn with the limits a server facing other programs needs, and a
stop that takes seconds whatever is running.

- **Headers and bodies in time.** A client must send a request's headers within
  ``serve.header_timeout`` seconds of connecting (or of the previous response), and its
  body within ``serve.body_timeout`` seconds of the headers; a connection that dribbles
  either is answered 408 and closed, so slow clients cannot hold connections open. A
  request answered before its body is in (a missing key: 401) has its connection closed.
- **Connections within bounds.** At most ``serve.connections_per_client`` open
  connections per client address (more: 429) and ``serve.max_connections`` in all (more:
  503), each refused connection answered at once and closed; the process's open-file
  limit is raised to its hard limit at start and the default total keeps a quarter of it
  for the index, uploads and parsers.
- **The event loop first.** The GIL is handed over every :data:`SWITCH_INTERVAL` seconds,
  so answering requests does not wait long behind tool calls running on the pools.
- **A quick stop.** On SIGTERM or Ctrl-C, connections get :data:`GRACE` seconds to finish;
  then ``on_stop`` runs (the service closes: parsing children killed, pools dropped) and, if
  threads are still busy (an agent waiting on its LLM, an index write), the process exits
  without waiting for them. Nothing committed is lost: the index is transactional, and an
  interrupted indexing request resumes when it is sent again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sleuth.errors import ConfigError, MissingDependency
from sleuth.server.guard import is_loopback
from sleuth.service.pool import running_calls
from sleuth.settings import ServeSettings
from sleuth.text.threads import SERVER_SWITCH_INTERVAL

try:
    import uvicorn
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError as exc:  # pragma: no cover - the serve extra is missing
    raise MissingDependency(exc.name or "uvicorn", "serve") from None

log = logging.getLogger("sleuth")

GRACE = 2  # seconds open connections get to finish after a stop is asked for
# Seconds a thread holds the GIL while another waits for it (Python's default: 0.005). The
# server's event loop waits for it behind busy tool calls once per read or write, and a tool
# call once per SQLite step; shorter, another tenant's answer waits less behind one tenant's
# flood (bench/hostile.py, part 3): the same as while a server runs in any process.
SWITCH_INTERVAL = SERVER_SWITCH_INTERVAL
# the open files a server keeps beyond its connections: a quarter of its limit, this at least
FILE_HEADROOM = 64


def _answer(status: str, detail: str, *headers: str) -> bytes:
    """A whole HTTP response that closes its connection, its body ``{"detail": ...}``."""
    body = json.dumps({"detail": detail}).encode()
    head = [f"HTTP/1.1 {status}", "content-type: application/json", "connection: close",
            f"content-length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


_TIMED_OUT = _answer("408 Request Timeout", "the request headers did not come in time")
_BODY_LATE = _answer("408 Request Timeout", "the request body did not come in time "
                     "(serve.body_timeout)")
_CLIENT_FULL = _answer("429 Too Many Requests", "too many open connections from this "
                       "address (serve.connections_per_client)", "retry-after: 1")
_SERVER_FULL = _answer("503 Service Unavailable", "too many open connections "
                       "(serve.max_connections)", "retry-after: 1")


def check_exposure(serve: ServeSettings, *, auth: bool, allow_remote: bool) -> None:
    """ConfigError when a server without keys would listen beyond this machine and the
    operator has not said so explicitly."""
    if not auth and not is_loopback(serve.host) and not allow_remote:
        raise ConfigError(f"--no-auth on {serve.host} would let anyone who reaches this "
                          "machine read and change the index; listen on 127.0.0.1, configure "
                          "serve.api_keys, or add --allow-remote-no-auth if that is intended")


@dataclass
class Connections:
    """The open connections of one server, by client address, and their bounds."""

    per_client: int | None = None
    total: int | None = None
    by_client: dict[str, int] = field(default_factory=dict)
    open: int = 0

    def admit(self, client: str) -> bytes | None:
        """Count a new connection from ``client``; else the answer that refuses it."""
        if self.total is not None and self.open >= self.total:
            return _SERVER_FULL
        held = self.by_client.get(client, 0)
        if self.per_client is not None and held >= self.per_client:
            return _CLIENT_FULL
        self.by_client[client] = held + 1
        self.open += 1
        return None

    def leave(self, client: str) -> None:
        self.open -= 1
        left = self.by_client.get(client, 1) - 1
        if left:
            self.by_client[client] = left
        else:
            self.by_client.pop(client, None)


class TimedHeaders(HttpToolsProtocol):
    """uvicorn's HTTP protocol, closing a connection whose request headers take longer than
    ``header_timeout`` seconds or whose body takes longer than ``body_timeout``, and
    refusing connections past its ``bounds`` (set by :func:`protocol`)."""

    header_timeout = 10.0
    body_timeout = 30.0
    bounds = Connections()  # (uvicorn's own `connections` is the server's set of them)
    _header_timer: Any = None
    _body_timer: Any = None
    _counted: str | None = None  # the client address this connection is counted under
    _keep_alive = True  # whether the request being read may keep its connection

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _too_slow(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.write(_TIMED_OUT)
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """A request that is not HTTP at all, answered in JSON like every other error."""
        body = json.dumps({"detail": msg}).encode()
        self.transport.write(b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
                             b"connection: close\r\ncontent-length: " + str(len(body)).encode()
                             + b"\r\n\r\n" + body)
        self.transport.close()

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        client = self.client[0] if self.client else ""
        refused = self.bounds.admit(client)
        if refused is not None:
            transport.write(refused)
            transport.close()
            return
        self._counted = client
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        before = self.cycle
        super().on_headers_complete()
        if self.cycle is before:  # an upgrade (no HTTP request to answer)
            return
        self._body_timer = self.loop.call_later(self.body_timeout, self._body_too_slow)
        # until the body is in, an answer (a missing key's 401) closes the connection: it
        # says so ("connection: close") and the rest of the body is never waited for
        self._keep_alive = self.cycle.keep_alive
        self.cycle.keep_alive = False

    def on_message_complete(self) -> None:
        self._body_in()
        if self.cycle is not None and not self.cycle.response_started:
            self.cycle.keep_alive = self._keep_alive
        super().on_message_complete()

    def _body_in(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _body_too_slow(self) -> None:
        """408 unless an answer has begun, and the connection closed: the app reading the
        body hears that the client went away."""
        self._body_timer = None
        if self.transport.is_closing():
            return
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_BODY_LATE)
        self.transport.close()

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)  # a next request already read: it runs now
        super().on_response_complete()
        if not pipelined and not self.transport.is_closing():
            self._arm()  # the next request's headers are due in time too

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._body_in()
        if self._counted is not None:
            self.bounds.leave(self._counted)
            self._counted = None
        super().connection_lost(exc)


def protocol(header_timeout: float, body_timeout: float = 30.0, *,
             per_client: int | None = None, total: int | None = None) -> type[TimedHeaders]:
    """:class:`TimedHeaders` with these timeouts and bounds on connections (None: none)."""
    return type("TimedHeaders", (TimedHeaders,), {
        "header_timeout": header_timeout, "body_timeout": body_timeout,
        "bounds": Connections(per_client, total)})


def raise_file_limit() -> int:
    """Raise this process's soft limit of open files to its hard limit (common practice for
    a server: the soft limit is often 1024); the limit now in force."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def config(app: Any, serve: ServeSettings, files: int | None = None) -> uvicorn.Config:
    """uvicorn's configuration for ``app`` with ``serve``'s timeouts and connection bounds;
    ``files``: the open-file limit the default ``serve.max_connections`` leaves a quarter
    of (default: this process's)."""
    files = files or raise_file_limit()
    total = serve.max_connections or max(1, files - max(FILE_HEADROOM, files // 4))
    http = protocol(serve.header_timeout, serve.body_timeout,
                    per_client=serve.connections_per_client, total=total)
    return uvicorn.Config(app, host=serve.host, port=serve.port, log_level="warning",
                          http=http, timeout_graceful_shutdown=GRACE)


class _Server(uvicorn.Server):
    """uvicorn's server, which after a stop by signal leaves the process to the caller
    (uvicorn raises the signal again once it has shut down, ending the process before
    anything after it runs: here, closing the service)."""

    stopped_by: list[int]

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            try:
                yield
            finally:
                self.stopped_by = list(self._captured_signals)
                self._captured_signals.clear()


def run(app: Any, serve: ServeSettings, *, on_stop: Callable[[], None]) -> None:
    """Serve ``app`` on ``serve.host``:``serve.port`` until SIGTERM or Ctrl-C; see the
    module docstring."""
    server = _Server(config(app, serve, raise_file_limit()))
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        server.run()
    finally:
        on_stop()
    if getattr(server, "stopped_by", None):
        log.warning("stopped")
    busy = len([t.name for t in threading.enumerate() if t is not threading.main_thread()
                and t.is_alive() and not t.daemon]) + running_calls()
    if busy:
        log.warning("stopped with %d task(s) cut short; an interrupted indexing request "
                    "resumes when it is sent again", busy)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
