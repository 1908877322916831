"""The API's documentation pages, ``/docs`` (Swagger UI) and ``/redoc``, served from this
server: their scripts and stylesheets come from the ``fastapi-offline`` package (part of the
``serve`` extra), not from a CDN, so they work offline and under the server's
Content-Security-Policy (:mod:`sleuth.server.guard`), which allows only the server's own
files. FastAPI's own pages load them from a CDN and start them with an inline script, which
that policy blocks: the page stayed blank.

Swagger UI is started by a script of its own (``/docs/start.js``), reading the address of
the OpenAPI document from the page; no inline script is needed. ReDoc writes its styles as
inline ``<style>`` elements and searches in a worker made from a ``blob:`` URL, so its page
alone allows those (:data:`REDOC_CSP`).
"""

from __future__ import annotations

import html
import importlib.util
from pathlib import Path

from sleuth.errors import MissingDependency
from sleuth.server.guard import CSP

try:
    from fastapi import APIRouter, HTTPException
    from fastapi.responses import FileResponse, HTMLResponse, Response
except ImportError as exc:  # pragma: no cover - the serve extra is missing
    raise MissingDependency(exc.name or "fastapi", "serve") from None

ASSETS = {"swagger-ui-bundle.js": "text/javascript; charset=utf-8",
          "swagger-ui.css": "text/css; charset=utf-8",
          "redoc.standalone.js": "text/javascript; charset=utf-8",
          "favicon.png": "image/png"}
# What starts Swagger UI on the page (FastAPI's defaults; no validator badge fetched from
# another site)
START = """\
window.ui = SwaggerUIBundle({
  url: document.body.dataset.openapi,
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
"""
REDOC_CSP = CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'") + \
    "; worker-src 'self' blob:"
_HEAD = ('<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
         '<meta name="viewport" content="width=device-width, initial-scale=1">'
         '<title>{title}</title><link rel="icon" href="/docs/favicon.png">')
CACHED = {"Cache-Control": "public, max-age=86400"}  # the files change with the package


def docs_router(title: str, openapi_url: str) -> APIRouter:
    """``GET /docs`` and ``GET /redoc`` for the OpenAPI document at ``openapi_url``, and
    their files under ``/docs/``; not in the OpenAPI document itself."""
    router = APIRouter(include_in_schema=False)
    spec = html.escape(openapi_url, quote=True)

    @router.get("/docs")
    def swagger() -> HTMLResponse:
        _static()  # 404 with the remedy, rather than a page that stays blank
        return HTMLResponse(
            _HEAD.format(title=html.escape(f"{title} - Swagger UI"))
            + '<link rel="stylesheet" href="/docs/swagger-ui.css"></head>'
            + f'<body data-openapi="{spec}"><div id="swagger-ui"></div>'
            + '<script src="/docs/swagger-ui-bundle.js"></script>'
            + '<script src="/docs/start.js"></script></body></html>')

    @router.get("/redoc")
    def redoc() -> HTMLResponse:
        _static()
        return HTMLResponse(
            _HEAD.format(title=html.escape(f"{title} - ReDoc")) + "</head><body>"
            + f'<redoc spec-url="{spec}"></redoc>'
            + '<script src="/docs/redoc.standalone.js"></script></body></html>',
            headers={"Content-Security-Policy": REDOC_CSP})

    @router.get("/docs/start.js")
    def start() -> Response:
        return Response(START, media_type="text/javascript; charset=utf-8", headers=CACHED)

    @router.get("/docs/{name}")
    def asset(name: str) -> FileResponse:
        if name not in ASSETS:
            raise HTTPException(404, f"no documentation file {name!r}")
        return FileResponse(_static() / name, media_type=ASSETS[name], headers=CACHED)

    return router


def _static() -> Path:
    """The folder of Swagger UI's and ReDoc's files; 404 saying what to install when the
    package that holds them is missing."""
    found = importlib.util.find_spec("fastapi_offline")
    if found is None or not found.submodule_search_locations:
        raise HTTPException(404, "the documentation pages need fastapi-offline: pip install "
                                 "'sleuth-rag[serve]'")
    return Path(list(found.submodule_search_locations)[0]) / "static"
