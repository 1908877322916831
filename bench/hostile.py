"""Hostile input at full size against a live server with two tenants (issue 37).

Three measurements:

1. **Parsing** (in process, each file through the sandboxed reader Sleuth uses): for each
   hostile file of about 1 MB or its attack's published size, how long until it is read or
   skipped, and the reason given.
2. **Neighbours** (a real ``sleuth serve http`` over a two-tenant index, its body limit
   raised to 4 MB so that every file reaches the parser): while tenant ``acme`` uploads
   each hostile file again and again for a few seconds, tenant ``globex`` calls
   ``keyword_search`` in a loop and the app's page ``/`` is fetched; their latencies are
   compared with the same loop with nothing else running (same server, same run). Then,
   with a large upload in flight, the server gets SIGTERM and the time to exit is
   measured.
3. **Attacks by a neighbour** (issue 61; another server over the same kind of index, its
   keys at the default shares, globex's rate unlimited so that its loop measures latency,
   not its own limit): globex's ``keyword_search`` p50/p95 with nothing else running, then
   while tenant ``acme``, from a process of its own, floods tool calls (36 clients calling
   ``search``; once at acme's default rate, once with its rate lifted so that only the fair
   queue and ``serve.calls_per_key`` hold it), floods uploads (two at a time, each a new
   ≈400 KB document; globex's own small uploads are timed meanwhile), holds slow bodies
   (1,000 connections from 4 addresses, each sending a key and a trickle of body), asks for
   page images of PDFs of 10,000 stroked lines (:func:`render_attack`), and while one core
   spins (``python -c "while True: pass"``).

    python bench/hostile.py                      # all three, quiet
    python bench/hostile.py --busy 1             # with one other busy process (a spinning core)
    python bench/hostile.py --skip-parse --skip-server --attack-seconds 5   # only the attacks
    python bench/hostile.py --skip-parse --skip-server --tool-threads     # tool calls on threads

The files (generated here, never checked in):
``html-deep`` 199,000 nested <div> (≈1 MB); ``html-flat`` 1 MB of ordinary paragraphs;
``docx-paragraphs`` 50,000 empty paragraphs (a few KB zipped); ``docx-bomb`` ≈17.6 MB of
XML zipped to ≈50 KB; ``pdf-expand`` a ≈60 KB PDF whose content stream inflates to ≈21 MB of
text; ``json-deep`` 1 MB of nested lists as a corpus.json; ``text-one-line`` 1 MB without
a space or a sentence end.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import OUT_DIR, machine_facts, md_table, pct, write_json  # noqa: E402

# globex measures: its own rate is lifted (rate 0), so its loop is never held by it
KEYS = {"acme": {"key": "k-acme", "collection": "acme"},
        "acme-unlimited": {"key": "k-acme-x", "collection": "acme", "rate": 0},
        "globex": {"key": "k-globex", "collection": "globex", "rate": 0}}
MB = 1 << 20
UPLOAD_WINDOW = 6.0  # seconds each hostile file is uploaded again and again


# -- the files ---------------------------------------------------------------------------

def html_deep() -> bytes:
    return b"<html><body>" + b"<div>" * 199_000 + b"deep</body></html>"


def html_flat() -> bytes:
    para = b"<p>The tide turns twice a day along this coast, and the harbour master logs it.</p>"
    return b"<html><head><title>Tides</title></head><body>" + para * (MB // len(para)) + \
        b"</body></html>"


def _docx(paragraphs: int, text: str) -> bytes:
    import docx

    word = docx.Document()
    body = word.element.body
    template = word.add_paragraph(text)._p
    for _ in range(paragraphs - 1):
        body.append(template.__copy__())
    out = io.BytesIO()
    word.save(out)
    return out.getvalue()


def docx_paragraphs() -> bytes:
    return _docx(50_000, "")


def docx_bomb() -> bytes:
    return _docx(250_000, "a" * 40)


def one_page_pdf(stream: bytes) -> bytes:
    """A one-page PDF (Helvetica as /F1) whose content is ``stream``, FlateDecoded."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" /Filter /FlateDecode >>\nstream\n" +
        stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n"
              "%%EOF\n".encode())
    return out.getvalue()


def pdf_expand() -> bytes:
    """A one-page PDF whose content stream shows ≈21 MB of text, zipped (FlateDecode)."""
    line = b"BT /F1 1 Tf 10 10 Td (" + b"A" * 200 + b") Tj ET\n"
    stream = zlib.compress(line * (21 * MB // len(line)), 9)
    return one_page_pdf(stream)


def json_deep() -> bytes:
    depth = MB // 2
    return b"[" * depth + b"]" * depth


def text_one_line() -> bytes:
    return b"x" * MB


CASES: dict[str, tuple[str, Callable[[], bytes]]] = {
    "html-deep": ("deep.html", html_deep),
    "html-flat": ("flat.html", html_flat),
    "docx-paragraphs": ("paragraphs.docx", docx_paragraphs),
    "docx-bomb": ("bomb.docx", docx_bomb),
    "pdf-expand": ("expand.pdf", pdf_expand),
    "json-deep": ("corpus.json", json_deep),
    "text-one-line": ("one-line.txt", text_one_line),
}


# -- 1. parsing ----------------------------------------------------------------------------

def parse_times(folder: Path) -> list[dict[str, Any]]:
    """Each file read alone through iter_documents (the sandbox for HTML, PDF, .docx)."""
    from sleuth import Settings
    from sleuth.ingest import IngestReport, ReadLimits, iter_documents

    limits = ReadLimits.of(Settings.load().ingest)
    rows = []
    for case, (name, make) in CASES.items():
        data = make()
        path = folder / name
        path.write_bytes(data)
        report = IngestReport()
        started = time.perf_counter()
        try:
            docs = list(iter_documents([path], report=report, limits=limits))
            outcome = f"read: {sum(len(d.text) for d in docs):,} characters" if docs else \
                (report.skipped[0].reason if report.skipped else "nothing read")
        except Exception as exc:  # noqa: BLE001 - a corpus.json named directly: IngestError
            outcome = f"refused: {exc}"
        took = time.perf_counter() - started
        rows.append({"case": case, "bytes": len(data), "seconds": round(took, 2),
                     "outcome": outcome.replace(str(path), name)[:160]})
        print(f"  parse {case}: {len(data):,} bytes, {took:.2f} s: {outcome[:100]}",
              flush=True)
    return rows


# -- 2. neighbours -------------------------------------------------------------------------

def build_index(folder: Path) -> Path:
    """Two tenants' documents: acme's and globex's, 40 short pages each."""
    from sleuth import Index, Settings

    for tenant in ("acme", "globex"):
        docs = folder / tenant
        docs.mkdir(parents=True)
        for i in range(40):
            (docs / f"page-{i}.md").write_text(
                f"# {tenant.title()} page {i}\n\n{tenant.title()} keeps its ledger {i} in the "
                f"harbour office. The tide table for week {i} lists two high waters a day. "
                f"Ships unload zephyrine crates at pier {i % 7}.\n")
    index = folder / "idx"
    with Index.open(index, settings=Settings.load(), create=True) as built:
        for tenant in ("acme", "globex"):
            built.add([folder / tenant], collection=tenant)
    return index


class Server:
    """``sleuth serve http`` on a free port, in its own process (``env``: more settings)."""

    def __init__(self, index: Path, keys: Path, **env: str) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        env = {**os.environ, "SLEUTH_SERVE__API_KEYS": str(keys),
               "SLEUTH_SERVE__MAX_BODY_BYTES": str(4 * MB), **env}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sleuth", "serve", "http", "--index", str(index), "--port",
             str(self.port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(self.url + "/", timeout=2)
                return
            except httpx.TransportError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.2)

    def stop(self) -> float:
        """SIGTERM, and the seconds until the process is gone."""
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return time.monotonic() - started


def neighbour_latency(url: str, seconds: float, stop: threading.Event | None = None
                      ) -> dict[str, Any]:
    """globex's keyword_search and the page ``/``, in turn, for ``seconds`` or until
    ``stop``; latencies in ms (a failed call counts in ``errors``, its time too)."""
    search, page, errors = [], [], []
    deadline = time.monotonic() + seconds
    headers = {"Authorization": "Bearer k-globex"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        while not search or (time.monotonic() < deadline and not (stop and stop.is_set())):
            started = time.perf_counter()
            try:
                got = client.post("/v1/tools/keyword_search",
                                  json={"keywords": ["zephyrine", "tide"], "top_k": 5})
                if got.status_code != 200:
                    errors.append(f"{got.status_code} {got.text[:100]}")
            except httpx.HTTPError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
            search.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            client.get("/").raise_for_status()
            page.append((time.perf_counter() - started) * 1000)
    return {"n": len(search), "search_p50": statistics.median(search),
            "search_p95": pct(search, 95), "page_p50": statistics.median(page),
            "page_p95": pct(page, 95), "page_max": max(page), "errors": len(errors),
            "error_kinds": sorted(set(e[:60] for e in errors))[:5]}


def upload(url: str, name: str, data: bytes) -> dict[str, Any]:
    started = time.monotonic()
    got = httpx.post(f"{url}/v1/documents", files={"files": (name, data)},
                     headers={"Authorization": "Bearer k-acme"}, timeout=600)
    took = time.monotonic() - started
    body = got.json()
    detail = body.get("detail") or "; ".join(
        f"{f['status']}" + (f": {f['error']}" if f.get("error") else "")
        for f in body.get("files", []))
    return {"status": got.status_code, "seconds": round(took, 2), "outcome": detail[:160]}


def neighbours(folder: Path, quiet_seconds: float) -> dict[str, Any]:
    index = build_index(folder)
    keys = folder / "keys.json"
    keys.write_text(json.dumps(KEYS))
    server = Server(index, keys)
    try:
        deadline = time.monotonic() + 120  # the server loads its embedder in the background
        while not httpx.get(server.url + "/v1/status", timeout=10,
                            headers={"Authorization": "Bearer k-globex"}).json()["warm"]:
            assert time.monotonic() < deadline, "the server did not warm up"
            time.sleep(0.5)
        neighbour_latency(server.url, 3)
        quiet = neighbour_latency(server.url, quiet_seconds)
        print(f"  quiet: search p95 {quiet['search_p95']:.1f} ms, / p95 "
              f"{quiet['page_p95']:.1f} max {quiet['page_max']:.1f} ms", flush=True)
        rows = []
        for case, (name, make) in CASES.items():
            data = make()
            path = folder / name
            path.write_bytes(data)
            # the uploads come from a process of their own: in this one, encoding 1 MB
            # bodies would hold the GIL that the latency loop needs
            sender = subprocess.Popen(
                [sys.executable, __file__, "--upload-worker", server.url, str(path)],
                stdout=subprocess.PIPE, text=True)
            stop = threading.Event()
            said: list[str] = []

            def wait(sender: subprocess.Popen[str] = sender, stop: threading.Event = stop,
                     said: list[str] = said) -> None:
                said.append(sender.communicate()[0])
                stop.set()

            waiter = threading.Thread(target=wait)
            waiter.start()
            time.sleep(0.3)  # its interpreter starting
            during = neighbour_latency(server.url, 600, stop)
            waiter.join()
            uploads: list[dict[str, Any]] = json.loads(said[0])
            first = uploads[0]
            rows.append({"case": case, "bytes": len(data), "status": first["status"],
                         "outcome": first["outcome"], "uploads": len(uploads),
                         "seconds": round(statistics.mean(u["seconds"] for u in uploads), 2),
                         **during,
                         "search_p95_ratio": during["search_p95"] / quiet["search_p95"]})
            print(f"  {case}: {len(uploads)} uploads, {first['status']} in "
                  f"{rows[-1]['seconds']} s each ({first['outcome'][:70]}); search p95 "
                  f"{during['search_p95']:.1f} ms ({rows[-1]['search_p95_ratio']:.2f}x), "
                  f"/ p95 {during['page_p95']:.1f} max {during['page_max']:.1f} ms "
                  f"({during['n']} calls)", flush=True)
        def doomed() -> None:  # the server stops under it: no answer to read
            with contextlib.suppress(httpx.HTTPError, ValueError):
                upload(server.url, "slow.html", html_flat() * 3)

        slow = threading.Thread(target=doomed, daemon=True)
        slow.start()
        time.sleep(1.0)
        sigterm = server.stop()
        print(f"  SIGTERM during an upload: exited in {sigterm:.2f} s", flush=True)
    finally:
        if server.process.poll() is None:
            server.process.kill()
    return {"quiet": quiet, "cases": rows, "sigterm_seconds": round(sigterm, 2)}


def upload_worker(url: str, path: Path) -> None:
    """Upload ``path`` again and again for :data:`UPLOAD_WINDOW` seconds (at least once);
    the answers as JSON on stdout."""
    data, uploads = path.read_bytes(), []
    started = time.monotonic()
    while not uploads or time.monotonic() - started < UPLOAD_WINDOW:
        uploads.append(upload(url, path.name, data))
    print(json.dumps(uploads))


# -- 3. attacks by a neighbour -----------------------------------------------------------

ATTACKS = ["tool-flood", "tool-flood-unlimited", "upload-flood", "slow-bodies", "render",
           "busy-core"]
ATTACK_ADDRESSES = [f"127.0.0.{i}" for i in range(10, 14)]  # slow bodies' client addresses


def _count(counts: dict[str, int], what: str, lock: threading.Lock) -> None:
    with lock:
        counts[what] = counts.get(what, 0) + 1


def tool_flood(url: str, seconds: float, key: str = "k-acme") -> dict[str, int]:
    """36 clients (12 connections × 3 calls, as the issue's attack) calling ``search``."""
    counts: dict[str, int] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def one() -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"},
                          timeout=60) as client:
            while time.monotonic() < deadline:
                try:
                    got = client.post("/v1/tools/search", json={
                        "queries": ["zephyrine crates pier", "tide table week"], "top_k": 10})
                    _count(counts, str(got.status_code), lock)
                    if got.status_code == 429:  # as a client would: wait as it is told
                        time.sleep(min(float(got.headers.get("retry-after", 1)), 1.0))
                except httpx.HTTPError as exc:
                    _count(counts, type(exc).__name__, lock)

    _in_threads(one, 36)
    return counts


def _in_threads(work: Callable[[], None], n: int) -> None:
    """``work`` in ``n`` threads at once, until each returns."""
    threads = [threading.Thread(target=work) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _varied_text(n: int, size: int) -> bytes:
    """≈``size`` bytes of distinct sentences (no two uploads alike: each is indexed)."""
    lines, i = [f"# Ledger {n}\n"], 0
    while sum(len(line) for line in lines) < size:
        lines.append(f"Entry {n}-{i}: crate {i * 7 % 997} of batch {n} left pier {i % 13} "
                     f"on tide {i % 29}, logged by clerk {i % 41}.\n")
        i += 1
    return "".join(lines).encode()


def upload_flood(url: str, seconds: float) -> dict[str, int]:
    """Two uploads at a time, each a new ≈400 KB document, until ``seconds`` pass (those
    running then are let finish)."""
    counts: dict[str, int] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    numbers = iter(range(1_000_000))

    def one() -> None:
        while time.monotonic() < deadline:
            n = next(numbers)
            try:
                got = httpx.post(f"{url}/v1/documents", headers={
                    "Authorization": "Bearer k-acme"}, timeout=900,
                    files={"files": (f"ledger-{os.getpid()}-{n}.md", _varied_text(n, 400_000))})
                _count(counts, str(got.status_code), lock)
            except httpx.HTTPError as exc:
                _count(counts, type(exc).__name__, lock)

    _in_threads(one, 2)
    return counts


def slow_bodies(url: str, seconds: float, per_address: int = 250) -> dict[str, int]:
    """1,000 connections from :data:`ATTACK_ADDRESSES`, each sending acme's key and the
    start of a 100 KB body, then a byte a second; one closed is opened again."""
    import selectors

    port = int(url.rsplit(":", 1)[1])
    head = (b"POST /v1/ask HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k-acme\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
            b'{"question": "')
    counts: dict[str, int] = {}
    lock = threading.Lock()
    selector = selectors.DefaultSelector()

    def connect(address: str) -> None:
        sock = socket.socket()
        sock.setblocking(False)
        sock.bind((address, 0))
        with contextlib.suppress(BlockingIOError):
            sock.connect(("127.0.0.1", port))
        selector.register(sock, selectors.EVENT_READ, address)
        with contextlib.suppress(OSError):
            time.sleep(0.001)
            sock.send(head)

    for address in ATTACK_ADDRESSES:
        for _ in range(per_address):
            connect(address)
    deadline = time.monotonic() + seconds
    last_trickle = time.monotonic()
    while time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.2):
            sock, address = key.fileobj, key.data
            assert isinstance(sock, socket.socket)
            try:
                answer = sock.recv(64)
            except OSError:
                answer = b""
            status = answer[9:12].decode() if answer.startswith(b"HTTP/1.1 ") else "closed"
            _count(counts, status, lock)
            selector.unregister(sock)
            sock.close()
            connect(address)
        if time.monotonic() - last_trickle >= 1:
            last_trickle = time.monotonic()
            for key in list(selector.get_map().values()):
                with contextlib.suppress(OSError):
                    key.fileobj.send(b"x")  # type: ignore[union-attr]
    for key in list(selector.get_map().values()):
        key.fileobj.close()  # type: ignore[union-attr]
    return counts


def heavy_pdf(n: int, lines: int = 10_000) -> bytes:
    """A one-page PDF of ``lines`` stroked lines (costly to draw, cheap to send)."""
    text = f"BT /F1 12 Tf 72 720 Td (Harbour drawing {n}) Tj ET\n"
    strokes = (text + "".join(f"{(i * 37 + n) % 612} {(i * 91) % 792} m {(i * 53) % 612} "
                              f"{(i * 17 + n) % 792} l S\n" for i in range(lines))).encode()
    stream = zlib.compress(strokes, 9)
    return one_page_pdf(stream)


def render_attack(url: str, seconds: float, variants: int = 4) -> dict[str, int]:
    """The render attack (issue 61 item 1), through the public route: acme uploads PDFs of
    10,000 stroked lines (with a line of text, so that each is indexed), then two clients
    ask for their page images, one variant after another, until ``seconds`` pass. (Page
    images are drawn in a bounded child and kept: see ``GET /v1/page-image``.)"""
    counts: dict[str, int] = {}
    lock = threading.Lock()
    headers = {"Authorization": "Bearer k-acme"}
    files = [("files", (f"heavy-{n}.pdf", heavy_pdf(n))) for n in range(variants)]
    got = httpx.post(f"{url}/v1/documents", headers=headers, files=files, timeout=600)
    ids = [d for d in got.json().get("added_ids", []) + got.json().get("updated_ids", [])]
    if not ids:  # a PDF without text is not indexed: nothing to draw
        return {f"upload {got.status_code}: no document": 1}
    deadline = time.monotonic() + seconds

    def one(first: int) -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=600) as client:
            n = first
            while time.monotonic() < deadline:
                try:
                    answer = client.get("/v1/page-image",
                                        params={"doc": ids[n % len(ids)], "page": 1})
                    _count(counts, str(answer.status_code), lock)
                except httpx.HTTPError as exc:
                    _count(counts, type(exc).__name__, lock)
                n += 1

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return counts


def busy_core(url: str, seconds: float) -> dict[str, int]:
    """One core spinning (not a tenant: the machine busy with something else)."""
    spinner = spin(1)[0]
    time.sleep(seconds)
    spinner.kill()
    return {}


ATTACK_RUNS: dict[str, Callable[[str, float], dict[str, int]]] = {
    "tool-flood": tool_flood,
    "tool-flood-unlimited": lambda url, seconds: tool_flood(url, seconds, "k-acme-x"),
    "upload-flood": upload_flood, "slow-bodies": slow_bodies, "render": render_attack,
    "busy-core": busy_core,
}


def tiny_uploads(url: str, stop: threading.Event, took: list[float]) -> None:
    """globex's small uploads, one after another until ``stop``: the seconds each took."""
    n = 0
    while not stop.is_set():
        started = time.monotonic()
        got = httpx.post(f"{url}/v1/documents", headers={"Authorization": "Bearer k-globex"},
                         files={"files": (f"note-{n}.md", f"# Note {n}\n\nTide {n}.\n".encode())},
                         timeout=900)
        took.append(time.monotonic() - started if got.status_code == 200 else float("nan"))
        n += 1
        stop.wait(0.5)


def attacks(folder: Path, names: list[str], seconds: float, quiet_seconds: float,
            tool_processes: bool = True) -> dict[str, Any]:
    """Each attack of ``names`` for ``seconds`` from a process of its own, globex's
    keyword_search measured meanwhile (and, during the upload flood, its small uploads);
    the server's tool calls in processes (``serve.tool_processes``) or on its threads."""
    index = build_index(folder)
    keys = folder / "keys.json"
    keys.write_text(json.dumps(KEYS))
    server = Server(index, keys, SLEUTH_SERVE__TOOL_PROCESSES=str(tool_processes).lower())
    try:
        deadline = time.monotonic() + 120
        while not httpx.get(server.url + "/v1/status", timeout=10,
                            headers={"Authorization": "Bearer k-globex"}).json()["warm"]:
            assert time.monotonic() < deadline, "the server did not warm up"
            time.sleep(0.5)
        neighbour_latency(server.url, 2)
        quiet = neighbour_latency(server.url, quiet_seconds)
        print(f"  quiet: search p50 {quiet['search_p50']:.1f} p95 {quiet['search_p95']:.1f} "
              f"ms", flush=True)
        rows = []
        for name in names:
            attacker = subprocess.Popen(
                [sys.executable, __file__, "--attack", name, server.url, str(seconds)],
                stdout=subprocess.PIPE, text=True)
            time.sleep(1.0 if name != "render" else 3.0)  # started (render: uploaded)
            stop, uploads = threading.Event(), []
            timer = threading.Thread(target=tiny_uploads, args=(server.url, stop, uploads))
            if name == "upload-flood":
                timer.start()
            during = neighbour_latency(server.url, max(1.0, seconds - 1.5))
            stop.set()
            if timer.is_alive():
                timer.join()
            counts = json.loads(attacker.communicate()[0] or "{}")
            rows.append({"attack": name, "answers": counts, **during,
                         "search_p95_ratio": during["search_p95"] / quiet["search_p95"],
                         "tiny_upload_seconds": [round(u, 2) for u in uploads]})
            print(f"  {name}: acme got {counts}; globex search p50 {during['search_p50']:.1f} "
                  f"p95 {during['search_p95']:.1f} ms ({rows[-1]['search_p95_ratio']:.2f}x), "
                  f"{during['errors']} errors {during['error_kinds']}"
                  + (f"; globex uploads {rows[-1]['tiny_upload_seconds']} s" if uploads
                     else ""), flush=True)
    finally:
        server.process.kill()
    return {"quiet": quiet, "attacks": rows, "seconds": seconds}


def attack_table(result: dict[str, Any]) -> str:
    quiet = result["quiet"]
    rows = [["(none: quiet)", "", f"{quiet['search_p50']:.1f}", f"{quiet['search_p95']:.1f}",
             "1.00", quiet["errors"], ""]]
    for r in result["attacks"]:
        answers = ", ".join(f"{k}: {v}" for k, v in sorted(r["answers"].items())) or "-"
        uploads = r["tiny_upload_seconds"]
        rows.append([r["attack"], answers, f"{r['search_p50']:.1f}", f"{r['search_p95']:.1f}",
                     f"{r['search_p95_ratio']:.2f}", r["errors"],
                     f"{statistics.median(uploads):.2f} (max {max(uploads):.2f}, n "
                     f"{len(uploads)})" if uploads else ""])
    return md_table(["attack by acme", "acme's answers", "globex search p50 ms", "p95 ms",
                     "p95 × quiet", "globex errors", "globex upload s"], rows)


def spin(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=0, help="Other busy processes meanwhile")
    parser.add_argument("--quiet-seconds", type=float, default=20.0,
                        help="Seconds of the quiet latency loop")
    parser.add_argument("--cases", default=",".join(CASES),
                        help="Comma-separated cases to run (default: all)")
    parser.add_argument("--skip-parse", action="store_true")
    parser.add_argument("--skip-server", action="store_true")
    parser.add_argument("--attacks", default=",".join(ATTACKS),
                        help="Comma-separated attacks of part 3 (none: skip it)")
    parser.add_argument("--attack-seconds", type=float, default=10.0,
                        help="Seconds each attack of part 3 runs")
    parser.add_argument("--tool-threads", action="store_true",
                        help="part 3's server runs tool calls on its threads "
                        "(serve.tool_processes false), the way before issue 61's processes")
    parser.add_argument("--upload-worker", nargs=2, metavar=("URL", "FILE"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--attack", nargs=3, metavar=("NAME", "URL", "SECONDS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.attack:
        name, url, seconds = args.attack
        print(json.dumps(ATTACK_RUNS[name](url, float(seconds))))
        return
    for case in set(CASES) - set(args.cases.split(",")):
        del CASES[case]
    if args.upload_worker:
        upload_worker(args.upload_worker[0], Path(args.upload_worker[1]))
        return
    busy = spin(args.busy)
    try:
        with tempfile.TemporaryDirectory(prefix="sleuth-hostile-") as tmp:
            folder = Path(tmp)
            result: dict[str, Any] = {"machine": machine_facts(), "busy": args.busy}
            if not args.skip_parse:
                print("parsing, each file alone:", flush=True)
                (folder / "parse").mkdir()
                result["parse"] = parse_times(folder / "parse")
            if not args.skip_server:
                print("a live server, two tenants:", flush=True)
                result["server"] = neighbours(folder / "server", args.quiet_seconds)
            names = [n for n in args.attacks.split(",") if n]
            if names:
                print("attacks by a neighbour:", flush=True)
                result["attacks"] = attacks(folder / "attacks", names, args.attack_seconds,
                                            args.quiet_seconds, not args.tool_threads)
                result["tool_processes"] = not args.tool_threads
    finally:
        for process in busy:
            process.kill()
    out = write_json(OUT_DIR / f"hostile-busy{args.busy}"
                     f"{'-threads' if args.tool_threads else ''}.json", result)
    if "parse" in result:
        print(md_table(["case", "bytes", "seconds", "outcome"],
                       [[r["case"], f"{r['bytes']:,}", r["seconds"], r["outcome"]]
                        for r in result["parse"]]))
    if "server" in result:
        server = result["server"]
        print(md_table(
            ["upload (acme)", "status", "s each", "uploads", "globex search p95 ms",
             "× quiet", "/ p95 ms", "/ max ms"],
            [["(nothing: quiet)", "", "", "", f"{server['quiet']['search_p95']:.1f}", "1.00",
              f"{server['quiet']['page_p95']:.1f}", f"{server['quiet']['page_max']:.1f}"]] +
            [[r["case"], r["status"], r["seconds"], r["uploads"], f"{r['search_p95']:.1f}",
              f"{r['search_p95_ratio']:.2f}", f"{r['page_p95']:.1f}", f"{r['page_max']:.1f}"]
             for r in server["cases"]]))
        print(f"SIGTERM with an upload in flight: {server['sigterm_seconds']} s")
    if "attacks" in result:
        print(attack_table(result["attacks"]))
    print(f"written {out}")


if __name__ == "__main__":
    main()
