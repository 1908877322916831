"""What keeps other web pages and host names away from a server: an ASGI middleware in front
of both servers (HTTP API, MCP over HTTP).

A server on 127.0.0.1 is reachable by every web page its user opens. Three checks close that:

- **Host.** A DNS-rebinding page reaches the server under its own host name; a request is
  answered only when its ``Host`` names the bound address (on a loopback address, any
  loopback name), this machine (on a wildcard address) or ``serve.allowed_hosts``
  (421 otherwise; ``*`` there turns the check off).
- **Origin.** A browser names the page that sent a request; a request that changes
  something (any method but GET, HEAD, OPTIONS) from a page of another origin is refused
  (403), whatever its content type.
- **Content type.** A page may send a "simple" cross-site request without asking first
  (a form, or ``fetch`` with ``no-cors`` and ``text/plain``); a body is read only as what
  its ``Content-Type`` declares: JSON (``application/json``), or a multipart upload where
  one is taken (415 otherwise).

Every answer carries ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy:
no-referrer``; pages (HTML) also a Content-Security-Policy that allows only the server's own
scripts, styles and connections, and may not be framed (:data:`CSP`), unless the page sets
its own: ReDoc's adds inline styles and a ``blob:`` worker (:mod:`sleuth.server.apidocs`,
which serves the documentation pages' files itself, so that they load under it).
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Iterable
from typing import Any

from sleuth.settings import ServeSettings

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "localhost.localdomain"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
_ALWAYS = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]
_PAGE = [(b"content-security-policy", CSP.encode()), (b"x-frame-options", b"DENY")]


def allowed_hosts(serve: ServeSettings) -> frozenset[str] | None:
    """The host names requests may carry (lower case, no port), None for any."""
    extra = {h.strip().lower() for h in serve.allowed_hosts if h.strip()}
    if "*" in extra:
        return None
    bound = serve.host.strip("[]").lower()
    names = set(extra) | {bound}
    if _loopback(bound) or _wildcard(bound):
        names |= LOOPBACK_NAMES
    if _wildcard(bound):
        names |= _this_machine()
    return frozenset(names)


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` serves only this machine."""
    return _loopback(host.strip("[]").lower())


def _loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _wildcard(host: str) -> bool:
    return host in ("", "0.0.0.0", "::")


def _this_machine() -> set[str]:
    """This machine's names and addresses (for a server bound to every interface)."""
    names = {socket.gethostname().lower(), socket.getfqdn().lower()}
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None)
    except OSError:
        infos = []
    names |= {str(info[4][0]).lower() for info in infos}
    return names


def host_name(value: str) -> str:
    """The host of a ``Host`` header or an origin's authority, without port or brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """The middleware; see the module docstring. ``uploads`` are the paths that take a
    multipart body."""

    def __init__(self, app: Any, hosts: frozenset[str] | None,
                 uploads: Iterable[str] = ()) -> None:
        self.app, self.hosts, self.uploads = app, hosts, frozenset(uploads)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers") or []}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, detail = refusal
            await _answer(send, status, detail)
            return

        async def secured(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                sent = list(message.get("headers") or [])
                extra = list(_ALWAYS)
                if any(k.lower() == b"content-type" and v.startswith(b"text/html")
                       for k, v in sent):
                    extra += _PAGE
                present = {k.lower() for k, _ in sent}
                message = {**message, "headers": sent + [h for h in extra
                                                         if h[0] not in present]}
            await send(message)

        started = False

        async def tracked(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await secured(message)

        try:
            await self.app(scope, receive, tracked)
        except RecursionError:  # a body nested deeper than a parser recurses, anywhere
            if started:
                raise
            await _answer(send, 400, "the request body is nested too deeply to read")

    def _refusal(self, scope: dict[str, Any], headers: dict[str, str]
                 ) -> tuple[int, str] | None:
        host = host_name(headers.get("host", ""))
        if self.hosts is not None and host not in self.hosts:
            return 421, (f"this server does not answer to host {host or '(none)'!r}; add it to "
                         "serve.allowed_hosts if that is how clients reach it")
        method = scope.get("method", "GET")
        if method in SAFE_METHODS:
            return None
        origin = headers.get("origin")
        if origin is not None and not self._same_site(origin, headers.get("host", "")):
            return 403, (f"requests from another web page ({origin}) may not change "
                         "anything here")
        if _has_body(headers):
            kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            allowed = {"application/json"}
            if scope.get("path") in self.uploads:
                allowed.add("multipart/form-data")
            if kind not in allowed:
                return 415, (f"a body of type {kind or '(none)'!r} is not read here; send "
                             f"{' or '.join(sorted(allowed))}")
        return None

    @staticmethod
    def _same_site(origin: str, host: str) -> bool:
        """Whether ``origin`` is this server as the request reached it: the same host and
        port (another port of localhost is another site)."""
        if "://" not in origin:  # "null": a sandboxed frame, a file
            return False
        authority = origin.split("://", 1)[1].split("/", 1)[0].lower()
        return authority == host.strip().lower()


def _has_body(headers: dict[str, str]) -> bool:
    length = headers.get("content-length", "").strip()
    return (length.isdigit() and int(length) > 0) or "transfer-encoding" in headers


async def _answer(send: Any, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *_ALWAYS]})
    await send({"type": "http.response.body", "body": body})
