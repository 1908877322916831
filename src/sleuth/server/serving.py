"""Running a server: uvicorn with the limits a server facing other programs needs, and a
stop that takes seconds whatever is running.

- **Headers in time.** A client must send a request's headers within
  ``serve.header_timeout`` seconds of connecting (or of the previous response); a
  connection that dribbles them is answered 408 and closed, so slow clients cannot hold
  connections open.
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
from typing import Any

from sleuth.errors import ConfigError, MissingDependency
from sleuth.server.guard import is_loopback
from sleuth.settings import ServeSettings

try:
    import uvicorn
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError as exc:  # pragma: no cover - the serve extra is missing
    raise MissingDependency(exc.name or "uvicorn", "serve") from None

log = logging.getLogger("sleuth")

GRACE = 2  # seconds open connections get to finish after a stop is asked for
_LATE = b'{"detail": "the request headers did not come in time"}'
_TIMED_OUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
              b"connection: close\r\ncontent-length: " + str(len(_LATE)).encode() + b"\r\n\r\n"
              + _LATE)


def check_exposure(serve: ServeSettings, *, auth: bool, allow_remote: bool) -> None:
    """ConfigError when a server without keys would listen beyond this machine and the
    operator has not said so explicitly."""
    if not auth and not is_loopback(serve.host) and not allow_remote:
        raise ConfigError(f"--no-auth on {serve.host} would let anyone who reaches this "
                          "machine read and change the index; listen on 127.0.0.1, configure "
                          "serve.api_keys, or add --allow-remote-no-auth if that is intended")


class TimedHeaders(HttpToolsProtocol):
    """uvicorn's HTTP protocol, closing a connection whose request headers take longer than
    ``header_timeout`` seconds (set by :func:`protocol`)."""

    header_timeout = 10.0
    _header_timer: Any = None

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
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)  # a next request already read: it runs now
        super().on_response_complete()
        if not pipelined and not self.transport.is_closing():
            self._arm()  # the next request's headers are due in time too

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def protocol(header_timeout: float) -> type[TimedHeaders]:
    """:class:`TimedHeaders` with ``header_timeout``."""
    return type("TimedHeaders", (TimedHeaders,), {"header_timeout": header_timeout})


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
    config = uvicorn.Config(app, host=serve.host, port=serve.port, log_level="warning",
                            http=protocol(serve.header_timeout),
                            timeout_graceful_shutdown=GRACE)
    server = _Server(config)
    try:
        server.run()
    finally:
        on_stop()
    if getattr(server, "stopped_by", None):
        log.warning("stopped")
    busy = [t.name for t in threading.enumerate()
            if t is not threading.main_thread() and t.is_alive() and not t.daemon]
    if busy:
        log.warning("stopped with %d task(s) cut short; an interrupted indexing request "
                    "resumes when it is sent again", len(busy))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
