"""Per-caller visibility of the knowledge graph: a view scoped to some documents answers every
query as a graph built from those documents alone would, and never shows what lies outside.

The whole graph is the 40-passage ``graph_index``; the caller may read ten of its documents:
Teutberga's page and her circle, but neither Lothair II's own page nor his daughter's."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import needs, twowiki_records

from sleuth import Index, Settings
from sleuth.agent import Tracker
from sleuth.errors import StoreError, ToolError
from sleuth.graph import Graph
from sleuth.store.graphs import Entity
from sleuth.tools.base import ToolContext
from sleuth.tools.graph import graph_entity, graph_neighbors, graph_path

pytestmark = needs("spacy")

VISIBLE = frozenset(f"2wiki-{i:05d}" for i in range(12)) - {"2wiki-00004", "2wiki-00006"}
QUESTIONS = ("Which king of Lotharingia married Teutberga?", "Who is the father of Bertha?",
             "Where was Teutberga buried?", "Who is Waldrada of Lotharingia's husband?",
             "Who was the mother of Lothair II?", "Who directed Coney Island Baby?")


@pytest.fixture(scope="module")
def visible_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The visible documents alone, indexed and graphed offline: what the view must equal."""
    corpus = tmp_path_factory.mktemp("visible-corpus") / "corpus.json"
    corpus.write_text(json.dumps([r for r in twowiki_records(40) if r["id"] in VISIBLE]))
    folder = tmp_path_factory.mktemp("visible-index") / "idx"
    with Index.open(folder, settings=Settings.load(), create=True) as index:
        index.add([corpus])
        with Graph.open(index) as graph:
            graph.build()
    return folder


@pytest.fixture()
def graphs(graph_index: Path, visible_only: Path) -> Iterator[tuple[Graph, Graph, Graph]]:
    """(whole graph, its view for ``VISIBLE``, the graph of the visible documents alone)."""
    with Index.open(graph_index) as whole_index, Index.open(visible_only) as only_index, \
            Graph.open(whole_index) as whole, Graph.open(only_index) as only:
        yield whole, whole.scoped(VISIBLE), only


def _keys(graph: Graph) -> set[str]:
    return {key for _, key, _, _ in graph.entity_names()}


def _relations(graph: Graph) -> set[tuple[str, str, str, str]]:
    return {(r["subject"], r["relation"], r["object"], r["chunk_id"])
            for i, _, _, _ in graph.entity_names() for r in graph.relations_of(i)}


def _by_name(graph: Graph, scores: dict[int, float]) -> dict[str, float]:
    names = {i: key for i, key, _, _ in graph.entity_names()}
    return {names[i]: score for i, score in scores.items()}


def test_the_view_answers_as_the_graph_of_the_visible_documents(graphs):
    whole, view, only = graphs
    assert view.counts() == only.counts() != whole.counts()
    assert _keys(view) == _keys(only) and _keys(view) < _keys(whole)
    assert _relations(view) == _relations(only)
    assert set(view.names().keys) == set(only.names().keys)
    for question in QUESTIONS:
        assert view.seeds(question) and \
            {e.name for e in view.seeds(question)} == {e.name for e in only.seeds(question)}
        assert view.relation_seeds(question) == only.relation_seeds(question)
        assert view.rank(question) == only.rank(question)
        assert view.progressive(question) == only.progressive(question)
        seen, expected = view.ppr(view.seeds(question)), only.ppr(only.seeds(question))
        assert _by_name(view, seen) == pytest.approx(_by_name(only, expected), abs=1e-12)
        chunks = dict(view.map_back(seen, top_nodes=1000, top_k=1000))
        assert chunks == pytest.approx(dict(only.map_back(expected, top_nodes=1000,
                                                          top_k=1000)), abs=1e-12)
        assert all(c.rsplit("#", 1)[0] in VISIBLE for c in chunks)


def test_hidden_entities_and_relations_never_come_back(graphs):
    whole, view, _ = graphs
    boso = whole.lookup("Boso the Elder", limit=1)[0]  # named on Lothair II's page only
    assert boso.name == "Boso the Elder" and boso.id in whole.adjacency().row_of
    assert all(e.id != boso.id for e in view.lookup("Boso the Elder", cutoff=0.3))
    assert all(e.id != boso.id for e in view.seeds("Who was Boso the Elder's son?"))
    assert "boso the elder" not in view.names().keys and "boso the elder" not in _keys(view)
    assert boso.id not in view.adjacency().row_of and not view.relations_of(boso.id)
    # Lothair II is named on Teutberga's page, so he shows, but only with what it says
    lothair = view.lookup("Lothair II", limit=1)[0]
    hidden = _keys(whole) - _keys(view)
    whole_rows, rows = whole.neighbors(lothair), view.neighbors(lothair)
    assert {r["chunk_id"] for r in whole_rows} - {r["chunk_id"] for r in rows} == {
        "2wiki-00004#0", "2wiki-00006#0"}
    assert rows and all(r["chunk_id"].rsplit("#", 1)[0] in VISIBLE for r in rows)
    names = {i: key for i, key, _, _ in whole.entity_names()}
    assert not {names[r["entity_id"]] for r in rows} & hidden
    ermengarde = view.lookup("Ermengarde of Tours", limit=1)[0]  # his mother, own page
    assert whole.relation_between(lothair.id, ermengarde.id) is not None
    assert view.relation_between(lothair.id, ermengarde.id) is None
    scores = whole.ppr([lothair])  # scores from elsewhere never map back to hidden chunks
    assert all(c.rsplit("#", 1)[0] in VISIBLE for c, _ in view.map_back(scores, top_k=100))
    assert boso.id in scores and boso.id not in view.ppr([lothair])


def test_a_path_through_hidden_documents_is_no_path(graphs):
    whole, view, only = graphs
    teutberga = view.lookup("Teutberga", limit=1)[0]
    boritzer = view.lookup("Etan Boritzer", limit=1)[0]
    bridge = whole.path(teutberga, boritzer)  # through a hidden film's page
    assert bridge and set(bridge) - {i for i, _, _, _ in view.entity_names()}
    assert view.path(teutberga, boritzer) is None
    assert only.path(only.lookup("Teutberga", limit=1)[0],
                     only.lookup("Etan Boritzer", limit=1)[0]) is None
    entities = [Entity(i, name, kind) for i, _, name, kind in view.entity_names()]
    for a, b in itertools.combinations(entities[:40], 2):
        for left, right in itertools.pairwise(view.path(a, b) or []):
            relation = view.relation_between(left, right)
            assert relation and relation["chunk_id"].rsplit("#", 1)[0] in VISIBLE


def _tool(graph: Graph, tool: str, **arguments: Any) -> str:
    index: Any = type("Scoped", (), {"graph": lambda self: graph,
                                     "read": lambda self, ids: graph.index.read(ids)})()
    ctx = ToolContext(index, Tracker())
    tools = {"entity": graph_entity, "neighbors": graph_neighbors, "path": graph_path}
    try:
        return tools[tool].run(ctx, arguments).text
    except ToolError as error:
        return str(error)


def test_the_graph_tools_read_the_same_for_hidden_and_absent_entities(graphs):
    whole, view, only = graphs
    assert "Boso the Elder" in _tool(whole, "entity", name="Boso the Elder")
    for name in ("Boso the Elder", "Bertha, daughter of Lothair II", "Zzyzx Qwerty",
                 "Lothair II", "Teutberga"):
        for tool, arguments in (("entity", {"name": name}), ("neighbors", {"entity": name}),
                                ("path", {"source": "Teutberga", "target": name}),
                                ("path", {"source": name, "target": "Etan Boritzer"})):
            assert _tool(view, tool, **arguments) == _tool(only, tool, **arguments)
    bertha = "Bertha, daughter of Lothair II"  # named on hidden pages only
    assert bertha in _tool(whole, "neighbors", entity=bertha)
    assert _tool(view, "neighbors", entity=bertha).startswith(f"no entity named {bertha!r}")


def test_the_whole_graph_and_its_views_stay_apart(graphs):
    whole, view, only = graphs
    before = (whole.counts(), _keys(whole), whole.rank(QUESTIONS[0]))
    assert whole.scoped(None) is whole and view.rank(QUESTIONS[0])
    narrower = view.scoped(frozenset({"2wiki-00000", "2wiki-00004"}))  # what both allow
    assert narrower.counts()["extracted"] == 1
    assert (whole.counts(), _keys(whole), whole.rank(QUESTIONS[0])) == before
    view.close()  # a view leaves the store open
    assert whole.lookup("Boso the Elder") and view.lookup("Teutberga")
    whole.forget_caches()  # after a write: the views rebuild theirs too
    assert view.counts() == only.counts() and view.rank(QUESTIONS[1]) == only.rank(QUESTIONS[1])
    with pytest.raises(StoreError, match="scoped view"):
        view.build()
