"""One conformance suite for every registered store backend.

Each backend in :func:`sleuth.store.base.backend_schemes` (the folder store, PostgreSQL
under both its schemes, and ``testfs://``: a third party's backend registered here
in-process) indexes the same small corpus through the public API: the bundled sample (open
to everyone) and documents of two tenants, one with access groups. Every test then runs
against each backend: reads, deletes, keyword search against a brute-force scan, semantic
search and BM25 against references computed here, access control, sessions and the graph
tables; and every backend must return what the folder store returns.
"""

from __future__ import annotations

import math
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import MemoEmbedder, TrigramEmbedder
from sleuth import Index, Settings, plugins
from sleuth.cli.quickstart import sample_path
from sleuth.errors import StoreError
from sleuth.settings import ChunkSettings
from sleuth.store import base
from sleuth.store import keyword as kw
from sleuth.store.base import Store, backend_schemes, open_store, register_backend
from sleuth.store.graphs import Extraction, Mention, Triple
from sleuth.store.local.store import LocalStore
from sleuth.text.access import Access
from sleuth.types import Chunk, Hit

pytestmark = pytest.mark.own_embedder  # TrigramEmbedder, no configured one

WORDS = ["the", "of", "pepys", "king", "child", "bones", "cornwall", "salary", "payroll",
         "zephyrine", "1660", "zzznotthere"]
PHRASES = ["of the", "my wife", "the king", "st. ives", "o'clock", "salary review", ","]
SUBSTRINGS = ["ing", "chil", "pay", "ephyr", "e", "ll o"]
ACCESSES = [None, Access.of("default"), Access.of("acme"), Access.of("acme", ["hr"]),
            Access.of(["acme", "globex"], ["finance"])]
TENANTS = {  # collection, groups → files
    ("acme", "hr"): {"salaries.md": "# Salaries\n\nThe salary review of 2024 raised every "
                     "payroll band. Zephyrine payroll data stays with HR.\n",
                     "hiring.md": "# Hiring\n\nHR hires two engineers; the payroll grows.\n"},
    ("acme", ""): {"handbook.md": "# Handbook\n\nEvery employee of Acme reads the handbook. "
                   "The king of the office is the coffee machine.\n"},
    ("globex", "finance"): {"budget.md": "# Budget\n\nGlobex finance plans the salary budget "
                            "and the zephyrine codeword launch.\n"},
}


def _access_id(access: Access | None) -> str:
    """A test id that is the same in every process (a frozenset's order is not)."""
    if access is None:
        return "everything"
    groups = "" if access.groups is None else "+" + ",".join(sorted(access.groups))
    return ",".join(sorted(access.collections)) + groups


class ThirdPartyStore(LocalStore):
    """A third party's backend: the folder store behind its own URL scheme."""

    def __init__(self, location: str, **options: Any) -> None:
        self.url = location
        super().__init__(location.split("://", 1)[1], **options)

    @property
    def where(self) -> str:
        return self.url


def settings() -> Settings:
    """Small chunks, so rankings have something to order."""
    return Settings.load().model_copy(update={"chunk": ChunkSettings(tokens=64)})


@pytest.fixture(scope="module")
def testfs() -> Iterator[None]:
    """``testfs://`` registered for this module, as a package would register it."""
    register_backend("testfs", ThirdPartyStore)
    yield
    del base._REGISTRY["testfs"]


@pytest.fixture(scope="module")
def tenants(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    folders = {}
    for (collection, groups), files in TENANTS.items():
        folder = tmp_path_factory.mktemp(f"{collection}-{groups or 'open'}")
        for name, text in files.items():
            (folder / name).write_text(text)
        folders[collection, groups] = folder
    return folders


@pytest.fixture(scope="module")
def embedder() -> MemoEmbedder:
    """Hashed trigrams: distinct similarities, so every backend's ranking is one order."""
    return MemoEmbedder(TrigramEmbedder())


@pytest.fixture(scope="module")
def built(request: pytest.FixtureRequest, testfs: None, embedder: MemoEmbedder,
          tenants: dict[tuple[str, str], Path],
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Index]]:
    """The corpus indexed into the backend of a scheme, once per scheme."""
    indexes: dict[str, Index] = {}

    def location(scheme: str) -> str:
        if scheme in ("", "testfs"):
            folder = tmp_path_factory.mktemp(f"conformance-{scheme or 'folder'}") / "idx"
            return f"testfs://{folder}" if scheme else str(folder)
        server = request.getfixturevalue("pg_server")
        database = server.replace("postgresql://", f"{scheme}://", 1)
        sep = "&" if "?" in database else "?"
        return f"{database}{sep}schema=conformance_{scheme}"

    def get(scheme: str) -> Index:
        if scheme not in indexes:
            index = Index.open(location(scheme), settings=settings(), create=True,
                               embedder=embedder)
            index.add([sample_path()])
            for (collection, groups), folder in tenants.items():
                index.add([folder], collection=collection, groups=groups)
            indexes[scheme] = index
        return indexes[scheme]

    yield get
    for index in indexes.values():
        index.close()


SCHEMES = ["", "postgresql", "postgres", "testfs"]


def _params(schemes: list[str]) -> list[Any]:
    """Each scheme as a test parameter, PostgreSQL's in the slow tier."""
    return [pytest.param(s, id=s or "folder", marks=[pytest.mark.postgres] *
                         s.startswith("postgres")) for s in schemes]


@pytest.fixture(params=_params(SCHEMES))
def index(request: pytest.FixtureRequest, built: Callable[[str], Index]) -> Index:
    return built(request.param)


def visible_chunks(store: Store, access: Access | None) -> list[Chunk]:
    owners = store.document_access()
    return [c for c in store.iter_chunks()
            if access is None or access.allows(*owners[c.doc_id])]


def key(hits: list[Hit]) -> list[tuple[str, str, str, float, tuple[str, ...]]]:
    return [(h.chunk_id, h.doc_id, h.title, h.score, h.snippets) for h in hits]


# -- the registry ----------------------------------------------------------------------


def test_every_registered_backend_runs_this_suite(testfs: None) -> None:
    assert set(backend_schemes()) == set(SCHEMES)


def test_an_unknown_scheme_names_the_known_ones(testfs: None) -> None:
    with pytest.raises(StoreError, match=r"no store backend for nosuch:// \(known: <folder>, "
                       r"postgres://, postgresql://, testfs://\)"):
        open_store("nosuch://x", create=False, embedder=None)


def test_a_package_registers_through_its_entry_point(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    points = [EntryPoint("epfs", f"{__name__}:ThirdPartyStore", base.BACKENDS),
              EntryPoint("broken", "sleuth_no_such_module:Store", base.BACKENDS)]
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))
    monkeypatch.setattr(base, "_discovered", False)
    monkeypatch.setattr(plugins, "entry_points",
                        lambda group: [p for p in points if p.group == group])
    assert {"epfs", "broken"} <= set(backend_schemes())
    store = open_store(f"epfs://{tmp_path / 'idx'}", create=True,
                       embedder={"name": "e", "dim": 3})
    assert isinstance(store, ThirdPartyStore) and store.folder == tmp_path / "idx"
    store.close()
    with pytest.raises(StoreError, match=r"broken:// indexes need sleuth_no_such_module: "
                       "pip install the package that provides broken://"):
        open_store("broken://x", create=False, embedder=None)


# -- documents and chunks --------------------------------------------------------------


def test_reads_return_what_was_added(index: Index) -> None:
    store = index.store
    owners = store.document_access()
    assert owners["acme~hr:salaries.md"] == ("acme", ("hr",))
    assert owners["acme:handbook.md"] == ("acme", ())
    assert store.stats().documents == len(owners) == 3 + 4
    chunks = list(store.iter_chunks())
    assert store.stats().chunks == len(chunks) == len({c.chunk_id for c in chunks})
    for doc_id in owners:
        document = store.get_document(doc_id)
        assert document is not None and document.doc_id == doc_id
        spans = store.chunk_spans(doc_id)
        mine = [c for c in chunks if c.doc_id == doc_id]
        assert [s[0] for s in spans] == [c.chunk_id for c in mine]
        for chunk in mine:
            assert chunk.text == document.text[chunk.start : chunk.end]
            assert [s.text for s in chunk.sentences] == \
                [document.text[s.start : s.end] for s in chunk.sentences]
        assert store.get_chunks([c.chunk_id for c in mine]) == {c.chunk_id: c for c in mine}
        vectors = store.document_vectors(doc_id)
        assert vectors.shape == (sum(len(c.sentences) for c in mine), index.embedder.dim)
    assert store.get_document("nosuch") is None and store.get_chunks(["nosuch#0"]) == {}


def test_a_deleted_document_is_gone_everywhere(index: Index, tmp_path: Path) -> None:
    store = index.store
    (tmp_path / "extra.md").write_text("# Extra\n\nQuuxification of the flibbertigibbet.\n")
    before = store.stats()
    index.add([tmp_path], collection="extra")
    assert store.stats().documents == before.documents + 1
    [hit] = store.keyword_search(["flibbertigibbet"], 5)
    assert hit.doc_id == "extra:extra.md"
    store.delete(["extra:extra.md"])
    assert store.get_document("extra:extra.md") is None
    assert store.get_chunks([hit.chunk_id]) == {} and store.chunk_spans("extra:extra.md") == []
    assert store.keyword_search(["flibbertigibbet"], 5) == []
    assert store.bm25_search(["flibbertigibbet"], 5) == []
    assert (store.stats().documents, store.stats().chunks) == (before.documents, before.chunks)


@pytest.mark.parametrize("access", ACCESSES, ids=_access_id)
def test_the_document_list_matches_the_documents(index: Index, access: Access | None) -> None:
    store = index.store
    owners = store.document_access()
    listed = store.document_list(access)
    visible = sorted(d for d, (c, g) in owners.items() if access is None or access.allows(c, g))
    assert [info.doc_id for info in listed] == visible and listed
    for info in listed:
        document = store.get_document(info.doc_id)
        assert document is not None
        assert (info.title, info.type, info.path) == (document.title, document.type,
                                                      document.path)
        assert (info.collection, info.groups) == owners[info.doc_id]
        assert info.chunks == len(store.chunk_spans(info.doc_id)) and info.pages is None
    some = [info.doc_id for info in listed[::2]]
    assert store.document_list(access, [*some, "nosuch"]) == listed[::2]


def test_the_document_list_counts_pdf_pages(index: Index, tmp_path: Path) -> None:
    pymupdf = pytest.importorskip("pymupdf")
    pdf = pymupdf.open()
    for text in ("Quaggas grazed here.", "The quagga was a zebra."):
        pdf.new_page().insert_text((72, 72), text)
    pdf.save(tmp_path / "quagga.pdf")
    index.add([tmp_path / "quagga.pdf"], collection="pdfs", groups=["zoo"])
    try:
        [info] = index.store.document_list(Access.of("pdfs", ["zoo"]))
        assert (info.doc_id, info.type, info.pages, info.groups) == \
            ("pdfs~zoo:quagga.pdf", "pdf", 2, ("zoo",))
        assert info.chunks == len(index.store.chunk_spans(info.doc_id)) >= 1
        assert index.store.document_list(Access.of("pdfs", [])) == []  # not in its group
    finally:
        index.store.delete(["pdfs~zoo:quagga.pdf"])


# -- searches --------------------------------------------------------------------------


@pytest.mark.parametrize("access", ACCESSES, ids=_access_id)
def test_keyword_search_equals_a_brute_force_scan(index: Index, access: Access | None) -> None:
    chunks = [(c.chunk_id, c.text) for c in visible_chunks(index.store, access)]
    queries: list[tuple[list[str], kw.KeywordMode]] = [
        *(([w], "word") for w in WORDS), (WORDS[:4], "word"), ([*PHRASES[:3], "bones"], "word"),
        *(([p], "word") for p in PHRASES), *(([s], "substring") for s in SUBSTRINGS)]
    found = 0
    for keywords, mode in queries:
        for top_k in (3, 1000):
            hits = index.store.keyword_search(keywords, top_k, mode, access)
            assert [(h.chunk_id, h.score) for h in hits] == \
                kw.brute_force(chunks, keywords, top_k, mode), (keywords, mode)
            found += bool(hits)
    assert found > (len(queries) if access is None else 2)  # the queries find something


def best_sentences(store: Store, query: np.ndarray, access: Access | None,
                   doc_ids: list[str] | None = None) -> list[tuple[str, float]]:
    """Chunks by best-sentence cosine, computed here from the stored vectors."""
    best: dict[str, float] = {}
    chunks = visible_chunks(store, access)
    for doc_id in sorted({c.doc_id for c in chunks}):
        if doc_ids is not None and doc_id not in doc_ids:
            continue
        scores = iter(store.document_vectors(doc_id) @ query)
        for chunk_id in [s[0] for s in store.chunk_spans(doc_id)]:
            [chunk] = store.get_chunks([chunk_id]).values()
            best[chunk_id] = max(float(next(scores)) for _ in chunk.sentences)
    return sorted(best.items(), key=lambda item: -item[1])


@pytest.mark.parametrize("access", ACCESSES, ids=_access_id)
def test_semantic_search_ranks_chunks_by_their_best_sentence(index: Index,
                                                            access: Access | None) -> None:
    for question in ("When did the king return?", "How much do the payroll bands pay?",
                     "What keeps a child's bones healthy?"):
        vector = index.embedder.embed([question])[0]
        hits = index.store.semantic_search(vector, 5, access=access)
        expected = best_sentences(index.store, vector, access)[:5]
        assert [h.chunk_id for h in hits] == [c for c, _ in expected], question
        assert [h.score for h in hits] == pytest.approx([s for _, s in expected], abs=1e-5)
        assert all(h.snippets for h in hits)
        within = ["acme:hiring.md", "childs-health-primer.txt"]
        hits = index.store.semantic_search(vector, 3, doc_ids=within, access=access)
        expected = best_sentences(index.store, vector, access, within)[:3]
        assert [h.chunk_id for h in hits] == [c for c, _ in expected], question


def reference_bm25(chunks: list[Chunk], terms: list[str]) -> dict[str, float]:
    """BM25 (k1 1.2, b 0.75, idf log(1 + (N - df + 0.5) / (df + 0.5))) over ``chunks``."""
    counts = {c.chunk_id: Counter(kw.tokenize(c.text.lower())) for c in chunks}
    average = sum(sum(c.values()) for c in counts.values()) / len(counts)
    scores = {}
    for chunk_id, tf in counts.items():
        score = 0.0
        for term in terms:
            df = sum(1 for c in counts.values() if c[term])
            if tf[term]:
                idf = math.log(1 + (len(counts) - df + 0.5) / (df + 0.5))
                length = sum(tf.values())
                score += idf * tf[term] * 2.2 / (tf[term] + 1.2 * (0.25 + 0.75 * length / average))
        if score:
            scores[chunk_id] = round(score, 6)
    return scores


@pytest.mark.parametrize("access", ACCESSES[1:], ids=_access_id)
def test_bm25_counts_only_what_the_caller_sees(index: Index, access: Access) -> None:
    chunks = visible_chunks(index.store, access)
    for terms in (["salary", "payroll"], ["king", "wife"], ["zephyrine"], ["bones", "the"]):
        hits = index.store.bm25_search(terms, 1000, access=access)
        expected = reference_bm25(chunks, terms)
        assert {h.chunk_id: h.score for h in hits} == pytest.approx(expected, abs=1e-5)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert all(any(t in s.lower() for t in terms for s in h.snippets) for h in hits)


# -- access control --------------------------------------------------------------------


@pytest.mark.parametrize("access", ACCESSES[1:], ids=_access_id)
def test_a_caller_sees_only_its_collections_and_groups(index: Index, access: Access) -> None:
    store = index.store
    owners = store.document_access()
    visible = {d for d, (collection, groups) in owners.items()
               if access.allows(collection, groups)}
    hidden = set(owners) - visible
    assert hidden and store.visible_documents(access) == visible
    assert set(store.document_titles(access)) == visible
    assert store.stats(access).documents == len(visible)
    assert store.stats(access).chunks == len(visible_chunks(store, access))
    for doc_id in hidden:
        spans = store.chunk_spans(doc_id)
        assert store.get_document(doc_id, access) is None
        assert store.chunk_spans(doc_id, access) == []
        assert store.get_chunks([s[0] for s in spans], access) == {}
    for doc_id in visible:
        assert store.get_document(doc_id, access) is not None
    vector = index.embedder.embed(["salary payroll budget of the king"])[0]
    for hits in (store.keyword_search(["the", "salary", "zephyrine"], 1000, "word", access),
                 store.bm25_search(["salary", "payroll", "king"], 1000, access=access),
                 store.semantic_search(vector, 50, access=access),
                 store.semantic_search(vector, 50, doc_ids=sorted(owners), access=access)):
        assert hits and {h.doc_id for h in hits} <= visible
    assert set(store.summaries(access)[0]) <= visible


# -- sessions, the graph, the side folder ----------------------------------------------


def test_sessions_round_trip(index: Index) -> None:
    sessions = index.store.sessions()
    data = {"format": "sleuth-session", "agent": "docs", "turns": [{"question": "Who?"}],
            "updated": "2026-01-01T00:00:00+00:00"}
    for owner in (None, "tenant-key"):
        assert not sessions.exists(owner, "conformance")
        sessions.save(owner, "conformance", data)
        assert sessions.exists(owner, "conformance")
        assert sessions.load(owner, "conformance") == data
        [listed] = [s for s in sessions.list(owner) if s["id"] == "conformance"]
        assert (listed["turns"], listed["first_question"]) == (1, "Who?")
        assert listed["title"] is None  # never named
        sessions.save(owner, "conformance", {**data, "title": "Bones of Cornwall"})
        [listed] = [s for s in sessions.list(owner) if s["id"] == "conformance"]
        assert listed["title"] == "Bones of Cornwall"
    assert sessions.owners()[0] is None and "tenant-key" in sessions.owners()
    assert sessions.load("other-key", "conformance") is None
    for owner in (None, "tenant-key"):
        assert sessions.delete(owner, "conformance")
        assert not sessions.delete(owner, "conformance")
        assert sessions.load(owner, "conformance") is None


def test_the_graph_tables_round_trip(index: Index) -> None:
    tables = index.store.graph_tables()
    tables.drop()
    assert not tables.exists()
    chunk = next(index.store.iter_chunks())
    extraction = Extraction(
        mentions=[Mention("Samuel Pepys", "PERSON", chunk.chunk_id, 0, 12),
                  Mention("Whitehall", "GPE", chunk.chunk_id, 20, 29)],
        triples=[Triple("Samuel Pepys", "PERSON", "walked to", "Whitehall", "GPE",
                        chunk.chunk_id, 0, 40)])
    graph = tables.open()
    try:
        graph.add([(chunk.chunk_id, "digest", extraction)], "conformance")
        counts = graph.counts()
        pepys = graph.by_key("samuel pepys")
        assert pepys is not None and pepys.name == "Samuel Pepys"
        [relation] = graph.relations_of(pepys.id)
        rows = {t: list(graph.table_rows(t)) for t in ("entities", "relations")}
    finally:
        graph.close()
    assert counts["entities"] == 2 and counts["relations"] == 1
    assert relation["relation"] == "walked to"
    assert tables.exists()
    again = tables.open()
    try:
        assert again.counts() == counts
        assert {t: list(again.table_rows(t)) for t in rows} == rows
    finally:
        again.close()
    tables.drop()
    assert not tables.exists()


def test_the_index_lives_where_its_backend_says(index: Index) -> None:
    store = index.store
    assert index.folder == store.folder and index.location == store.where
    assert Path(store.sessions().where(None)).is_relative_to(store.folder) or \
        "schema" in store.sessions().where(None)


# -- parity ----------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", _params(SCHEMES[1:]))
def test_every_backend_answers_as_the_folder_store(built: Callable[[str], Index],
                                                    scheme: str) -> None:
    folder, other = built(""), built(scheme)
    vector = folder.embedder.embed(["What did Pepys do in the morning?"])[0]
    for access in ACCESSES:
        for keywords, mode in ((["the", "king"], "word"), (["chil"], "substring"),
                               (["my wife", "o'clock"], "word")):
            assert key(other.store.keyword_search(keywords, 20, mode, access)) == \
                key(folder.store.keyword_search(keywords, 20, mode, access))
        a = folder.store.semantic_search(vector, 8, access=access)
        b = other.store.semantic_search(vector, 8, access=access)
        assert [h.chunk_id for h in a] == [h.chunk_id for h in b]
        assert [h.snippets for h in a] == [h.snippets for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)
        assert other.store.document_titles(access) == folder.store.document_titles(access)
        assert other.store.stats(access).chunks == folder.store.stats(access).chunks
        if access is not None:  # BM25 over the visible chunks, computed alike
            assert key(other.store.bm25_search(["salary", "king", "bones"], 20,
                                               access=access)) == \
                key(folder.store.bm25_search(["salary", "king", "bones"], 20, access=access))
    assert other.store.document_hashes() == folder.store.document_hashes()


def test_a_third_party_backend_opens_as_an_index(built: Callable[[str], Index],
                                                 tmp_path: Path) -> None:
    folder = built("testfs").store.folder
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    with Index.open(f"testfs://{copy}", settings=settings()) as index:
        assert isinstance(index.store, ThirdPartyStore)
        assert index.location == f"testfs://{copy}" and index.folder == copy
        assert index.store.keyword_search(["pepys"], 3)
