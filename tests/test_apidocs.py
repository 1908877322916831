"""The API's documentation pages, ``/docs`` (Swagger UI) and ``/redoc``, under the server's
Content-Security-Policy: every script and stylesheet they load is one the policy allows (the
server's own, no inline script) and one the server sends; in headless Chromium both pages
show the API, with no policy violation. (FastAPI's own pages load them from a CDN with an
inline script: under the policy they stayed blank.)"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("fastapi_offline")

from conftest import LiveServer  # noqa: E402
from sleuth import Settings  # noqa: E402
from sleuth.server.http import create_app  # noqa: E402
from sleuth.service.service import Service  # noqa: E402

KEY = "k-docs"
_SOURCE = re.compile(r'<(script|link)\b[^>]*?\b(?:src|href)="([^"]+)"')
_INLINE = re.compile(r"<script\b[^>]*>\s*[^<\s]|<style\b|\sstyle=")


@pytest.fixture(scope="module")
def server(sample_index: Path) -> Iterator[str]:
    service = Service(sample_index, Settings.load(serve={"api_keys": {"root": KEY}}))
    live = LiveServer(create_app(service))
    yield live.url
    live.close()
    service.close()


def _policy(header: str) -> dict[str, list[str]]:
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_a_documentation_page_loads_only_what_its_policy_allows(server: str,
                                                                page: str) -> None:
    got = httpx.get(server + page)  # no key: the pages hold no data, like the app's
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/html")
    policy = _policy(got.headers["content-security-policy"])
    assert policy["script-src"] == ["'self'"] and policy["connect-src"] == ["'self'"]
    assert not _INLINE.search(got.text), got.text  # no inline script, nor style
    loaded = _SOURCE.findall(got.text)
    assert {kind for kind, _ in loaded} >= {"script"}
    for kind, url in loaded:
        assert url.startswith("/") and not url.startswith("//"), url  # 'self': this server
        asset = httpx.get(server + url)
        assert asset.status_code == 200, url
        wanted = {"script": "text/javascript", "link": ("text/css", "image/png")}[kind]
        assert asset.headers["content-type"].startswith(wanted), url
    assert 'openapi.json' in got.text
    # The spec the page reads is this server's, at the address the page names
    assert httpx.get(server + "/openapi.json").json()["info"]["title"] == "Sleuth"


@pytest.mark.browser
def test_swagger_ui_and_redoc_show_the_api_in_chromium(server: str,
                                                       chromium_binary: str) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium_binary,
                                         args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.set_default_timeout(30_000)
            refused: list[str] = []
            # every violation but an image: ReDoc's "API docs by Redocly" logo is on its
            # CDN, and stays there (the policy keeps a page from calling another site)
            page.on("console", lambda m: refused.append(m.text) if "Content Security "
                    "Policy" in m.text and "img-src" not in m.text else None)
            page.goto(f"{server}/docs")
            page.wait_for_selector(".swagger-ui .info .title")
            assert "Sleuth" in page.inner_text(".swagger-ui .info .title")
            page.wait_for_selector("#operations-tools-tool_keyword_search")
            page.goto(f"{server}/redoc")
            page.wait_for_selector("h1")
            shown: Any = page.inner_text("h1")
            assert "Sleuth" in shown
            assert not refused, refused
        finally:
            browser.close()
