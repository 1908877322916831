"""Hostile input at full size against a live server with two tenants (issue 37).

Two measurements:

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

    python bench/hostile.py                      # both, quiet
    python bench/hostile.py --busy 1             # with one other busy process (a spinning core)

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

KEYS = {"acme": {"key": "k-acme", "collection": "acme"},
        "globex": {"key": "k-globex", "collection": "globex"}}
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


def pdf_expand() -> bytes:
    """A one-page PDF whose content stream shows ≈21 MB of text, zipped (FlateDecode)."""
    line = b"BT /F1 1 Tf 10 10 Td (" + b"A" * 200 + b") Tj ET\n"
    stream = zlib.compress(line * (21 * MB // len(line)), 9)
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
    """``sleuth serve http`` on a free port, in its own process."""

    def __init__(self, index: Path, keys: Path) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        env = {**os.environ, "SLEUTH_SERVE__API_KEYS": str(keys),
               "SLEUTH_SERVE__MAX_BODY_BYTES": str(4 * MB)}
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
    ``stop``; latencies in ms."""
    search, page = [], []
    deadline = time.monotonic() + seconds
    headers = {"Authorization": "Bearer k-globex"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        while not search or (time.monotonic() < deadline and not (stop and stop.is_set())):
            started = time.perf_counter()
            got = client.post("/v1/tools/keyword_search",
                              json={"keywords": ["zephyrine", "tide"], "top_k": 5})
            got.raise_for_status()
            search.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            client.get("/").raise_for_status()
            page.append((time.perf_counter() - started) * 1000)
    return {"n": len(search), "search_p50": statistics.median(search),
            "search_p95": pct(search, 95), "page_p50": statistics.median(page),
            "page_p95": pct(page, 95), "page_max": max(page)}


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
    parser.add_argument("--upload-worker", nargs=2, metavar=("URL", "FILE"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
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
    finally:
        for process in busy:
            process.kill()
    out = write_json(OUT_DIR / f"hostile-busy{args.busy}.json", result)
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
    print(f"written {out}")


if __name__ == "__main__":
    main()
