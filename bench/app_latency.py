"""The app's latency in a real browser (issue 23): how soon an answer token shows in the page
after the LLM sent it, how soon the page is ready on a cold server, and the assets' size.

Headless Chromium (Debian's ``chromium``, driven by Playwright) opens ``sleuth serve http``'s
app over the bundled sample; the scripted OpenAI-compatible server streams each answer a word
every ``--pace`` seconds, as a real server generates it, and notes when its first content
piece went out. The lag is the page's ``Date.now()`` at the first ``token`` event minus that
moment (one machine, one clock). Each question runs the ``naive-rag`` agent (one retrieval,
one streamed answer) so that the LLM's first token is the answer's.

    python bench/app_latency.py                      # 20 questions, 5 cold starts
    python bench/app_latency.py --busy 1             # beside one busy process
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from sleuth import Index, Settings  # noqa: E402
from sleuth.cli.quickstart import sample_path  # noqa: E402
from sleuth.server.http import create_app  # noqa: E402
from sleuth.service.service import Service  # noqa: E402
from sleuth.testing.fake import FakeLLMServer, reply  # noqa: E402

KEY = "bench-key"
ANSWER = "Greatorex showed Pepys how levers work and what happens to them over time " \
         "[pepys-diary-1660.md#0]."


def _spin(stop: Any) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _serve(index: Path, llm: FakeLLMServer) -> tuple[Any, Service]:
    from conftest import LiveServer  # the tests' uvicorn-in-a-thread server

    settings = Settings.load(llm={"base_url": llm.base_url, "model": "fake-model"},
                             serve={"api_keys": {"bench": KEY}})
    service = Service(index, settings)
    return LiveServer(create_app(service)), service


def _open(index: Path, llm: FakeLLMServer, browser: Any) -> tuple[Any, Service, Any, Any]:
    """The server, its service, a browser context holding the key, and the app ready in it
    (the index's status shown)."""
    live, service = _serve(index, llm)
    context = browser.new_context()
    context.add_init_script(f"sessionStorage.setItem('sleuth.apiKey', '{KEY}')")
    page = context.new_page()
    page.goto(live.url + "/")
    page.wait_for_function("document.querySelector('#who').textContent !== ''")
    return live, service, context, page


def measure(index: Path, browser: Any, questions: int, pace: float) -> list[float]:
    """Milliseconds from the LLM's first answer token to the page showing it, per question."""
    llm = FakeLLMServer([{**reply(ANSWER), "pace": pace} for _ in range(questions)])
    live, service, context, page = _open(index, llm, browser)
    page.select_option("#agent", "naive-rag")
    lags = []
    try:
        for n in range(questions):
            page.fill("#question", f"Who showed Pepys how levers work? ({n})")
            page.press("#question", "Enter")
            page.locator("article.turn").nth(n).locator(".answer:not(.pending)").wait_for()
            shown = page.evaluate("window.sleuthTimings.firstTokenEpoch")
            lags.append(shown - 1000 * llm.first_content_at[-1])
    finally:
        context.close()
        live.close()
        service.close()
        llm.close()
    return lags


def cold_starts(index: Path, browser: Any, runs: int) -> list[float]:
    """Milliseconds from starting the server to the page showing the index's status."""
    times = []
    for _ in range(runs):
        llm = FakeLLMServer([])
        started = time.perf_counter()
        live, service, context, _ = _open(index, llm, browser)
        times.append(1000 * (time.perf_counter() - started))
        context.close()
        live.close()
        service.close()
        llm.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--cold", type=int, default=5, help="cold starts to time")
    parser.add_argument("--pace", type=float, default=0.02,
                        help="seconds between streamed words (0.02: 50 words/s)")
    parser.add_argument("--busy", type=int, default=0, help="busy processes beside it")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=_spin, args=(stop,)) for _ in range(args.busy)]
    for spinner in spinners:
        spinner.start()
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "idx"
        with Index.open(index, settings=Settings.load(), create=True) as built:
            built.add([sample_path()])
        try:
            with sync_playwright() as driver:
                browser = driver.chromium.launch(executable_path=args.chromium,
                                                 args=["--no-sandbox"])
                cold = cold_starts(index, browser, args.cold)
                lags = measure(index, browser, args.questions, args.pace)
                browser.close()
        finally:
            stop.set()
            for spinner in spinners:
                spinner.join()
        live, service = _serve(index, FakeLLMServer([]))
        sizes = {p: len(httpx.get(live.url + p).content)
                 for p in ("/", "/app/app.js", "/app/app.css")}
        live.close()
        service.close()
    print(f"busy processes: {args.busy}; pace {args.pace} s per word")
    print(f"first token shown after the LLM's (ms): p50 {statistics.median(lags):.0f}, "
          f"p95 {_percentile(lags, 0.95):.0f}, max {max(lags):.0f} over {len(lags)}")
    print(f"page ready on a cold server (ms): p50 {statistics.median(cold):.0f}, "
          f"max {max(cold):.0f} over {len(cold)}")
    print(f"app assets: {sum(sizes.values())} bytes ({sizes})")


if __name__ == "__main__":
    main()
