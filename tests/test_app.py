"""The app at ``/`` in a real browser: headless Chromium (Debian's, driven by Playwright)
against a real uvicorn server over the bundled sample, with the scripted LLM streaming its
replies at a real server's pace."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.browser  # Chromium through Playwright: the slow tier

pytest.importorskip("fastapi")
playwright = pytest.importorskip("playwright.sync_api")

from conftest import LiveServer  # noqa: E402
from sleuth import Settings  # noqa: E402
from sleuth.server.http import create_app  # noqa: E402
from sleuth.service.service import Service  # noqa: E402
from sleuth.testing.fake import FakeLLMServer, call, reply  # noqa: E402

PEPYS = "pepys-diary-1660.md#0"
KEYS = {"root": "k-root", "acme": {"key": "k-acme", "collection": "acme"},
        "globex": {"key": "k-globex", "collection": "globex"}}
UPLOAD_LIMIT = 200_000
# The first test's screenshot goes to its tmp_path, or where SLEUTH_APP_SCREENSHOT says
# (`SLEUTH_APP_SCREENSHOT=docs/app.png python -m pytest tests/test_app.py` refreshes the
# documentation's picture). Read at import: the autouse fixture clears SLEUTH_* variables.
SCREENSHOT_ENV = os.environ.get("SLEUTH_APP_SCREENSHOT", "")
SCREENSHOT = Path(SCREENSHOT_ENV).expanduser().resolve() if SCREENSHOT_ENV else None
PNG = b"\x89PNG\r\n\x1a\n"
ANSWER = ("Greatorex showed Pepys how levers work and what happens to them over time "
          f"[{PEPYS}].")


class App:
    """The sample index served with the app, the scripted LLM behind it, and its URL."""

    def __init__(self, index: Path, script: list[Any]) -> None:
        self.llm = FakeLLMServer(script)
        settings = Settings.load(llm={"base_url": self.llm.base_url, "model": "fake-model"},
                                 serve={"api_keys": KEYS, "max_body_bytes": UPLOAD_LIMIT})
        self.service = Service(index, settings)
        self.live = LiveServer(create_app(self.service))
        self.url = self.live.url

    def api(self, key: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {key}"},
                            timeout=30)

    def close(self) -> None:
        self.live.close()
        self.service.close()
        self.llm.close()


@pytest.fixture()
def index(sample_index: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "idx"
    shutil.copytree(sample_index, folder)
    return folder


@pytest.fixture(scope="module")
def browser(chromium_binary: str) -> Iterator[Any]:
    with playwright.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=chromium_binary,
                                          args=["--no-sandbox"])
        yield launched
        launched.close()


def wait_until(page: Any, expression: str, arg: Any = None, seconds: float = 20) -> None:
    """Poll ``expression`` (evaluated as ``page.evaluate`` does, with ``arg``) until it is
    true. Playwright's ``wait_for_function`` evaluates its predicate with ``eval``, which the
    app's Content-Security-Policy forbids, as it should."""
    deadline = time.monotonic() + seconds
    while not page.evaluate(expression, arg):
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        time.sleep(0.05)


class Page:
    """A browser tab on the app that records console errors and uncaught exceptions."""

    def __init__(self, browser: Any, url: str, key: str | None, **context: Any) -> None:
        self.context = browser.new_context(**context)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.failed: list[str] = []  # resources the browser logged as failed (4xx answers)
        self.page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        self.page.on("console", self._console)
        self.page.set_default_timeout(20_000)
        self.page.goto(url if "#" in url else url + "/")
        if key is not None:
            self.enter_key(key)
            wait_until(self.page, "document.querySelector('#who').textContent !== ''")

    def _console(self, message: Any) -> None:
        if message.type == "error":
            target = self.failed if "Failed to load resource" in message.text else self.errors
            target.append(message.text)

    def enter_key(self, key: str) -> None:
        page = self.page
        page.wait_for_selector("#key-dialog[open]")
        page.fill("#key-input", key)
        page.keyboard.press("Enter")

    def ask(self, question: str) -> Any:
        page = self.page
        page.fill("#question", question)
        page.press("#question", "Enter")
        turn = page.locator("article.turn").last
        turn.locator(".answer:not(.pending)").wait_for()
        return turn

    def close(self) -> None:
        self.context.close()


def test_ask_watch_cite_follow_up_and_sessions(index: Path, browser: Any,
                                               tmp_path: Path) -> None:
    # the default agent's answer from its first passages says they do not say (held back,
    # not shown as the answer), so the model searches on
    script = [reply("The passages do not say who showed Pepys."),
              call("keyword_search", keywords=["Greatorex"]),
              {**reply(ANSWER), "pace": 0.05},
              {**reply(f"In 1660, the year of the diary [{PEPYS}]."), "pace": 0.05}]
    app = App(index, script)
    tab = Page(browser, app.url, "k-root", viewport={"width": 1280, "height": 860})
    page = tab.page
    try:
        page.select_option("#agent", "hybrid")
        page.fill("#question", "Who showed Pepys how levers work?")
        page.press("#question", "Enter")
        # the steps stream in while the agent works: the made first search, then the model's
        page.locator(".step .tool", has_text="keyword_search").wait_for()
        assert page.locator(".step .tool").first.inner_text() == "hybrid_search"
        turn = page.locator("article.turn").last
        turn.locator(".answer:not(.pending)").wait_for()
        assert turn.locator(".answer").inner_text() == ANSWER
        timings = page.evaluate("window.sleuthTimings")
        assert timings["firstToken"] < timings["answer"], timings  # tokens came before the end
        lag_ms = timings["firstTokenEpoch"] - 1000 * app.llm.first_content_at[-1]
        print(f"first answer token shown {lag_ms:.0f} ms after the LLM sent it")
        assert turn.locator(".sources li").count() == 1
        assert "found by" in turn.locator(".sources li").inner_text()

        # a citation opens its passage and says which tool found it; the sentence that
        # supports the answer's claim is marked on its line, the rest of the chunk shaded
        turn.locator("a.cite").first.click()
        page.locator("#passage li.hl").first.wait_for()
        highlighted = " ".join(page.locator("#passage li.hl .t").all_inner_texts())
        assert "Greatorex" in highlighted
        assert page.locator("#passage li.hl").count() == 1
        assert page.locator("#passage li.hl-chunk").count() >= 1
        marked = page.locator("#passage li.hl mark").inner_text()
        assert "Greatorex" in marked and "levers" in marked and "rained" not in marked
        assert "found by" in page.locator("#passage .facts").first.inner_text()
        assert "greatorex" in page.locator("#passage .support-note").inner_text()
        assert page.locator("#notice").is_hidden()  # no error shown
        turn.locator(".steps > summary").click()  # what the agent did, for the screenshot
        turn.locator(".steps .step").first.wait_for()
        screenshot = SCREENSHOT or tmp_path / "app.png"
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(screenshot))
        assert screenshot.read_bytes().startswith(PNG)
        page.keyboard.press("Escape")
        assert page.locator("#passage").is_hidden()

        # a follow-up in the same session: the agent sees the earlier turn
        follow = tab.ask("When was that?")
        assert "1660" in follow.locator(".answer").inner_text()
        sent = json.dumps(app.llm.requests[-1]["messages"])
        assert "Who showed Pepys how levers work?" in sent and "Greatorex showed" in sent
        session_id = page.evaluate("location.hash").removeprefix("#/session/")

        # the session is listed; rename it; it reopens with both turns
        item = page.locator(f'#sessions li[data-id="{session_id}"]')
        item.wait_for()
        assert "2 turns" in item.inner_text()
        item.get_by_role("button", name="Rename").click()
        page.keyboard.press("Control+A")
        page.keyboard.type("Levers")
        page.keyboard.press("Enter")
        page.locator("#sessions li a", has_text="Levers").wait_for()
        with app.api("k-root") as api:
            titles = {s["id"]: s.get("title") for s in api.get("/v1/sessions").json()}
        assert titles[session_id] == "Levers"
        page.click("#new-session")
        wait_until(page, "!document.querySelector('article.turn')")
        page.locator("#sessions li a", has_text="Levers").click()
        page.locator("article.turn").nth(1).wait_for()
        assert page.locator("article.turn .question").first.inner_text() == \
            "Who showed Pepys how levers work?"
        assert not tab.errors, tab.errors
    finally:
        tab.close()
        app.close()


def test_upload_then_search_then_delete(index: Path, browser: Any, tmp_path: Path) -> None:
    app = App(index, [])
    tab = Page(browser, app.url, "k-root")
    page = tab.page
    notes = tmp_path / "quokka.md"
    notes.write_text("# Rottnest notes\n\nA quokka named Zebulon lives near the lighthouse.\n",
                     encoding="utf-8")
    odd = tmp_path / "notes.xyz"
    odd.write_bytes(b"\x00\x01 binary")
    big = tmp_path / "big.txt"
    big.write_text("word " * (UPLOAD_LIMIT // 4), encoding="utf-8")
    try:
        page.click("#nav-documents")
        page.locator("#documents tbody tr").first.wait_for()
        assert page.locator("#documents tbody tr").count() == 3
        page.set_input_files("#files", [str(notes), str(odd), str(big)])
        for name, expected in (("quokka.md", "indexed"), ("notes.xyz", ""),
                               ("big.txt", "upload limit")):
            state = page.locator(f'#uploads li[data-name="{name}"] .state')
            wait_until(page, "el => !el.textContent.includes('uploading')",
                       state.element_handle())
            text = state.inner_text()
            assert expected in text, (name, text)
        assert "error" in page.locator('#uploads li[data-name="notes.xyz"] .state'
                                       ).get_attribute("class")
        page.locator("#documents tbody tr", has_text="quokka").wait_for()
        with app.api("k-root") as api:
            found = api.post("/v1/tools/keyword_search", json={"keywords": ["Zebulon"]}).json()
        assert found["data"]["hits"], found

        # dropped on the drop zone, a file is uploaded the same way
        dropped = page.evaluate_handle("""() => {
            const data = new DataTransfer();
            data.items.add(new File(["# Dropped\\n\\nThe wombat Tobias digs."], "wombat.md",
                                    {type: "text/markdown"}));
            return data; }""")
        page.dispatch_event("#drop", "drop", {"dataTransfer": dropped})
        page.locator("#documents tbody tr", has_text="wombat").wait_for()
        assert "indexed" in page.inner_text('#uploads li[data-name="wombat.md"] .state')

        row = page.locator("#documents tbody tr", has_text="quokka")
        row.get_by_role("button").click()
        row.get_by_role("button", name="Really delete").click()
        row.wait_for(state="detached")
        with app.api("k-root") as api:
            gone = api.post("/v1/tools/keyword_search", json={"keywords": ["Zebulon"]}).json()
        assert not gone["data"]["hits"]
        assert not tab.errors, tab.errors
    finally:
        tab.close()
        app.close()


def test_a_tenant_sees_only_its_documents(index: Path, browser: Any, tmp_path: Path) -> None:
    app = App(index, [])
    secret = tmp_path / "acme-plan.md"
    secret.write_text("# Acme plan\n\nProject Marmalade ships in May.\n", encoding="utf-8")
    acme = Page(browser, app.url, "k-acme")
    globex = Page(browser, app.url, "k-globex")
    try:
        acme.page.click("#nav-documents")
        acme.page.set_input_files("#files", str(secret))
        acme.page.locator("#documents tbody tr", has_text="acme-plan").wait_for()
        doc_id = acme.page.locator("#documents tbody tr").first.get_attribute("data-id")
        assert acme.page.locator("#documents tbody tr").count() == 1  # only its collection

        globex.page.click("#nav-documents")
        globex.page.wait_for_selector("#doc-count:has-text('0 documents')")
        assert "acme-plan" not in globex.page.locator("#documents").inner_text()
        # the passage view of the other tenant's document: one clear message, nothing shown
        globex.page.goto(f"{app.url}/#/passage?doc={doc_id}")
        message = globex.page.locator("#passage-full .error")
        message.wait_for()
        assert "Marmalade" not in globex.page.content()
        assert message.inner_text().strip()
        assert not acme.errors and not globex.errors, (acme.errors, globex.errors)
    finally:
        acme.close()
        globex.close()
        app.close()


def test_bad_input_gets_one_clear_message(index: Path, browser: Any) -> None:
    app = App(index, [])
    tab = Page(browser, app.url, None, viewport={"width": 390, "height": 800})  # a phone
    page = tab.page
    try:
        page.wait_for_selector("#key-dialog[open]")
        assert "needs an API key" in page.inner_text("#key-reason")
        tab.enter_key("wrong-key")
        page.wait_for_selector("#key-reason:has-text('refused')")
        tab.enter_key("k-root")
        wait_until(page, "document.querySelector('#who').textContent.includes('3')")
        page.click("#ask-button")
        assert page.inner_text("#notice-text") == "Type a question first."
        assert page.locator("article.turn").count() == 0
        # nothing overflows sideways on a narrow screen
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, width
        assert not tab.errors, tab.errors
    finally:
        tab.close()
        app.close()


def test_the_page_loads_fast_and_small(index: Path, browser: Any) -> None:
    app = App(index, [])
    started = time.perf_counter()
    tab = Page(browser, app.url, "k-root")
    try:
        wait_until(tab.page, "document.querySelector('#who').textContent.length > 0")
        loaded = time.perf_counter() - started
        sizes = sum(len(httpx.get(f"{app.url}{path}").content)
                    for path in ("/", "/app/app.js", "/app/app.css"))
        print(f"app assets {sizes} bytes; page ready {loaded * 1000:.0f} ms after the "
              "request on a cold server")
        assert sizes < 300_000
        assert not tab.errors, tab.errors
    finally:
        tab.close()
        app.close()


def test_a_chat_answer_links_to_its_passage_in_the_app(index: Path, browser: Any) -> None:
    app = App(index, [call("keyword_search", keywords=["Greatorex"]), reply(ANSWER)])
    try:
        with app.api("k-root") as api:
            answer = api.post("/v1/chat/completions", json={
                "model": "sleuth-full", "messages": [
                    {"role": "user", "content": "Who showed Pepys how levers work?"}]}).json()
        content = answer["choices"][0]["message"]["content"]
        link = content[content.index(f"]({app.url}/#/passage?") + 2:].split(")")[0]
        tab = Page(browser, link, "k-root")  # a new tab: the key is asked for, then shown
        try:
            tab.page.locator("#passage-full li.hl").first.wait_for()
            highlighted = " ".join(tab.page.locator("#passage-full li.hl .t").all_inner_texts())
            assert "Greatorex" in highlighted
            assert not tab.errors, tab.errors
        finally:
            tab.close()
    finally:
        app.close()


def test_a_pdf_opens_page_by_page_with_its_image(index: Path, browser: Any,
                                                tmp_path: Path) -> None:
    pymupdf = pytest.importorskip("pymupdf")
    pdf = tmp_path / "tides.pdf"
    with pymupdf.open() as made:
        for text in ("Tide tables for Falmouth.\nHigh water at six.",
                     "Page two: the neap tides of March.\nLow water at noon."):
            made.new_page().insert_text((72, 72), text)
        made.save(pdf)
    app = App(index, [])
    tab = Page(browser, app.url, "k-root")
    page = tab.page
    try:
        page.click("#nav-documents")
        page.set_input_files("#files", str(pdf))
        row = page.locator("#documents tbody tr", has_text="tides")
        row.wait_for()
        assert row.locator("td.num").first.inner_text() == "2"  # pages
        row.locator("a").first.click()
        view = page.locator("#passage-full")
        view.get_by_text("High water at six.").wait_for()
        view.locator("details.page-image summary").click()
        wait_until(page, "(() => { const i = document.querySelector('#passage-full "
                   "img.page'); return i && i.complete && i.naturalWidth > 0; })()")
        view.get_by_role("button", name="Next page").click()
        view.get_by_text("Low water at noon.").wait_for()
        assert "page 2 of 2" in view.locator(".facts").inner_text()
        assert not tab.errors, tab.errors
    finally:
        tab.close()
        app.close()
