"""The knowledge graph (A2RAG): offline build on real 2Wiki passages, the graph tools by
hand, incremental rebuilds and PPR map-back."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.conftest import needs

from sleuth import Index
from sleuth.graph import Graph
from sleuth.store.graphs import acronym, norm

pytestmark = needs("spacy")


@pytest.fixture()
def copy(graph_index: Path, tmp_path: Path) -> str:
    folder = tmp_path / "idx"
    shutil.copytree(graph_index, folder)
    return str(folder)


def test_names_merge_by_normal_form_and_acronym() -> None:
    assert norm("The  Lion King!") == norm("lion king") == "lion king"
    assert norm("Émile Zola") == "emile zola"
    assert acronym("International Business Machines") == "ibm"
    assert acronym("Lothair") is None


def test_neighbors_list_relations_with_their_source_chunks(sleuth, graph_index: Path):
    result = sleuth("graph", "neighbors", "Lothair II", "--index", str(graph_index), "--json")
    assert result.code == 0, result.err
    relations = result.json()["relations"]
    others = {r["entity"] for r in relations}
    assert {"Lotharingia", "Emperor Lothair I", "Teutberga"} <= others
    king = next(r for r in relations if r["entity"] == "Lotharingia")
    assert king["relation"] == "king of" and king["chunk_id"] == "2wiki-00004#0"
    assert "king of Lotharingia" in king["sentence"]
    text = sleuth("graph", "neighbors", "lothair ii", "--relation", "son", "--index",
                  str(graph_index)).out
    assert text.startswith("Relations of Lothair II")
    assert "--son--> Emperor Lothair I (chunk 2wiki-00004#0)" in text
    assert "Lotharingia" not in text.split("\n", 1)[1]  # filtered by relation


def test_entity_path_and_ppr_by_hand(sleuth, graph_index: Path):
    index = str(graph_index)
    entities = sleuth("graph", "entity", "Lothair 2", "--index", index, "--json").json()
    assert entities["entities"][0]["name"] == "Lothair II"  # a near spelling still matches
    path = sleuth("graph", "path", "Teutberga", "Emperor Lothair I", "--index", index,
                  "--json").json()["path"]
    assert path and path[0]["chunk_id"] and len(path) <= 3
    ppr = sleuth("graph", "ppr", "Lothair II", "--top-k", "3", "--index", index, "--json").json()
    assert ppr["seeds"] == ["Lothair II"] and len(ppr["chunks"]) == 3
    assert "2wiki-00004#0" in [c["chunk_id"] for c in ppr["chunks"]]  # his own page
    unknown = sleuth("graph", "neighbors", "Zzyzx Qwerty", "--index", index)
    assert unknown.code == 1 and "no entity named 'Zzyzx Qwerty'" in unknown.err


def test_rebuild_is_incremental_and_forgets_deleted_chunks(copy: str):
    with Index.open(copy) as index, Graph.open(index) as graph:
        before = graph.store.counts()
        again = graph.build()
        assert again.processed == 0 and again.unchanged == before["extracted"]
        index.delete(["2wiki-00004"])
        after = graph.build()
        assert after.removed == 1 and after.processed == 0
        assert graph.store.counts()["extracted"] == before["extracted"] - 1
        lothair = graph.lookup("Lothair II", limit=1)[0]
        assert all(r["chunk_id"] != "2wiki-00004#0" for r in graph.neighbors(lothair))


def test_graph_tools_need_a_built_graph(sleuth, tmp_path: Path, wiki_corpus: Path):
    folder = tmp_path / "idx"
    assert sleuth("index", str(wiki_corpus), "--index", str(folder)).code == 0
    result = sleuth("graph", "neighbors", "Lothair II", "--index", str(folder))
    assert result.code == 1 and "sleuth graph build" in result.err


def test_eval_retrieval_builds_the_graph_and_fuses_it(sleuth, dataset: Path):
    result = sleuth("eval", "retrieval", "--dataset", str(dataset), "--tools",
                    "graph,hybrid+graph", "--k", "1,3", "--json")
    assert result.code == 0, result.err
    tools = result.json()["tools"]
    assert set(tools) == {"graph", "hybrid+graph"}
    assert tools["hybrid+graph"]["recall@3"] == 1.0
    assert tools["graph"]["recall@3"] > 0  # seeds such as "Ada Lovelace" reach their page


def test_extraction_loss_hides_nodes_and_plots_the_curve(sleuth, dataset: Path,
                                                         tmp_path: Path):
    out = tmp_path / "loss"
    result = sleuth("eval", "graph-loss", "--dataset", str(dataset), "--fractions",
                    "0,0.5", "--k", "1,3", "--output", str(out), "--json")
    assert result.code == 0, result.err
    data = result.json()
    assert [r["fraction"] for r in data["rows"]] == [0.0, 0.5]
    assert data["rows"][0]["hidden"] == 0 and data["rows"][1]["hidden"] > 0
    assert data["rows"][1]["graph@3"] <= data["rows"][0]["graph@3"]
    assert data["hybrid"]["hybrid@3"] == 1.0
    assert (out / "extraction_loss.png").read_bytes()[:4] == b"\x89PNG"
    bad = sleuth("eval", "graph-loss", "--dataset", str(dataset), "--fractions", "1.5")
    assert bad.code != 0 and "fractions must be in [0, 1)" in bad.err


def test_hidden_entities_disappear_from_lookup_and_ppr(copy: str):
    with Index.open(copy) as index, Graph.open(index) as graph:
        lothair = graph.lookup("Lothair II", limit=1)[0]
        graph.removed = frozenset({lothair.id})
        assert all(e.id != lothair.id for e in graph.lookup("Lothair II"))
        assert lothair.id not in graph.ppr(graph.lookup("Teutberga", limit=1))
        assert graph.simulate_loss(0.0) == 0 and graph.lookup("Lothair II", limit=1)


def test_progressive_retrieval_records_the_stage_reached(sleuth, copy: str, dataset: Path):
    with Index.open(copy) as index, Graph.open(index) as graph:
        chunks, stage = graph.progressive("Which king of Lotharingia married Teutberga?")
        assert stage == "local" and "2wiki-00004#0" in chunks  # Lothair II's own page
        never = graph.progressive("Which king of Lotharingia married Teutberga?",
                                  sufficient=lambda q, c: False)
        assert never[1] == "failed" and never[0]  # evidence is still returned
        assert graph.progressive("what is it?") == ([], "none")
    result = sleuth("eval", "retrieval", "--dataset", str(dataset), "--tools", "progressive",
                    "--k", "1,3")
    assert result.code == 0, result.err
    assert "progressive: questions ending at each stage:" in result.out
