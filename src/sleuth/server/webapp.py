"""The app people ask from (``/``): a page, its script and its stylesheet, served as files.

The page holds no data: every document, session and answer comes from the API, with the
caller's key, so the three files are served without one (a browser must load the page before
anyone can type a key into it). They are plain, unminified files checked in under ``app/``:
no build step, nothing fetched from a CDN, so the app works offline.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse

APP = Path(__file__).parent / "app"
ASSETS = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}
# The page is tiny and changes with the package: browsers revalidate it (ETag) on each load.
NO_STALE = {"Cache-Control": "no-cache"}


def app_router() -> APIRouter:
    """``GET /`` (the page) and ``GET /app/app.js``, ``/app/app.css``; not in the OpenAPI
    document, which describes the API."""
    router = APIRouter(include_in_schema=False)

    @router.get("/")
    def page() -> FileResponse:
        return FileResponse(APP / "index.html", media_type="text/html; charset=utf-8",
                            headers=NO_STALE)

    @router.get("/app/{name}")
    def asset(name: str) -> FileResponse:
        if name not in ASSETS:
            raise HTTPException(404, f"no app file {name!r}")
        return FileResponse(APP / name, media_type=ASSETS[name], headers=NO_STALE)

    return router
