"""LLM knowledge-graph extraction against the scripted OpenAI-compatible server: tolerant
parsing, re-asks with the validation problem, failed chunks retried by the next build,
provenance located in the text, the per-chunk cache, and ``sleuth graph build --extractor
llm``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import TINY_CORPUS

from sleuth import Index, Settings
from sleuth.graph.llm_extract import CACHE_FILE, LLMExtractor
from sleuth.llm import OpenAIClient
from sleuth.store.local.graph import GraphStore
from sleuth.testing.fake import FakeLLMServer, error, reply

ADA: dict[str, Any] = {
    "entities": [{"name": "Ada Lovelace", "type": "person"},
                 {"name": "Analytical Engine", "type": "PRODUCT"},
                 {"name": "London", "type": "GPE"}],
    "relations": [{"subject": "Ada Lovelace", "relation": "Born in", "object": "London",
                   "qualifiers": {"date": 1815, "place": None}},
                  {"subject": "Ada Lovelace", "relation": "wrote algorithm for",
                   "object": "Analytical Engine"}]}
BABBAGE = {"entities": [{"name": "Charles Babbage", "type": "PERSON"},
                        {"name": "Analytical Engine", "type": "PRODUCT"}],
           "relations": [{"subject": "Charles Babbage", "relation": "designed",
                          "object": "Analytical Engine", "qualifiers": {}}]}
TURING = {"entities": [{"name": "Alan Turing", "type": "PERSON"},
                       {"name": "Bletchley Park", "type": "LOC"}],
          "relations": [{"subject": "Alan Turing", "relation": "worked at",
                         "object": "Bletchley Park", "qualifiers": {}}]}
DOCS = {r["id"]: f"{r['title']}\n{r['text']}" for r in TINY_CORPUS}  # each one chunk


def turns(*replies: dict[str, Any]) -> list[Any]:
    return [reply(json.dumps(r)) for r in replies]


@pytest.fixture(scope="session")
def tiny_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three tiny passages, indexed once; tests build their graphs on copies."""
    root = tmp_path_factory.mktemp("graph-llm")
    corpus = root / "corpus.json"
    corpus.write_text(json.dumps(TINY_CORPUS))
    with Index.open(root / "idx", settings=Settings.load(), create=True) as index:
        index.add([corpus])
    return root / "idx"


@pytest.fixture()
def folder(tiny_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A copy of the tiny index; one extraction worker, so requests follow the script in
    chunk order."""
    shutil.copytree(tiny_index, tmp_path / "idx")
    monkeypatch.setenv("SLEUTH_GRAPH__LLM_WORKERS", "1")
    return str(tmp_path / "idx")


def build(sleuth: Any, folder: str, *args: str) -> dict[str, Any]:
    result = sleuth("graph", "build", "--extractor", "llm", "--index", folder, "--json", *args)
    assert result.code == 0, result.err
    data: dict[str, Any] = result.json()
    return data


def test_entities_relations_and_provenance_are_stored(sleuth, endpoint, folder: str):
    script = [reply(json.dumps(ADA)),
              reply("```json\n" + json.dumps(BABBAGE) + "\n```"),  # fenced
              reply("Here it is: " + json.dumps(TURING) + " Hope this helps.")]  # chatty
    with endpoint(script) as server:
        data = build(sleuth, folder)
    assert (data["processed"], data["calls"], data["cached"], data["failures"]) == (3, 3, 0, [])
    user = server.requests[0]["messages"][-1]["content"]
    assert "Ada Lovelace" in user and DOCS["p1"].split("\n")[1] in user
    store = GraphStore(folder)
    try:
        assert set(store.extracted()) == {"p1#0", "p2#0", "p3#0"}
        london = store.by_key("london")
        assert london is not None and london.type == "GPE"
        spans = store.db.execute("SELECT chunk_id, start, end FROM mentions WHERE entity=?",
                                 (london.id,)).fetchall()
        assert [(c, DOCS["p1"][s:e]) for c, s, e in spans] == [("p1#0", "London")]
        sentence = DOCS["p1"].index("She was born")
        assert sentence <= spans[0][1] and spans[0][2] <= len(DOCS["p1"])
        ada = store.by_key("ada lovelace")
        assert ada is not None
        relations = {r["relation"]: r for r in store.relations_of(ada.id)}
        born = relations["born in"]  # the label is lowercased, qualifiers are text
        assert born["object"] == "London" and born["qualifiers"] == {"date": "1815"}
        assert DOCS["p1"][born["start"]:born["end"]] == "She was born in London in 1815."
        wrote = relations["wrote algorithm for"]  # both ends in one sentence
        assert DOCS["p1"][wrote["start"]:wrote["end"]].startswith("Ada Lovelace wrote")
        engine = store.by_key("analytical engine")
        assert engine is not None
        chunks = {c for c, in store.db.execute(
            "SELECT chunk_id FROM mentions WHERE entity=?", (engine.id,))}
        assert chunks == {"p1#0", "p2#0"}  # one entity, mentioned in two passages
    finally:
        store.close()
    text = sleuth("graph", "neighbors", "Ada Lovelace", "--index", folder).out
    assert "Ada Lovelace --born in--> London [date: 1815] (chunk p1#0): She was born" in text
    assert "--wrote algorithm for--> Analytical Engine" in text


def test_a_malformed_reply_is_sent_back_with_the_problem(sleuth, endpoint, folder: str):
    script = [reply('{"entities": [{"type": "PERSON"}]}'), *turns(ADA, BABBAGE, TURING)]
    with endpoint(script) as server:
        data = build(sleuth, folder)
    assert data["failures"] == [] and data["calls"] == 4 and data["extracted"] == 3
    retry = server.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": '{"entities": [{"type": "PERSON"}]}'}
    assert "not valid" in retry[-1]["content"]
    assert "entities.0.name: Field required" in retry[-1]["content"]
    assert data["relations"] == 4


def test_a_chunk_that_stays_malformed_fails_and_is_retried_next_build(sleuth, endpoint,
                                                                     folder: str):
    bad = [reply("I cannot find any entities."), reply('{"entities": [oops'),
           reply('{"relations": []}')]
    with endpoint([*bad, *turns(BABBAGE, TURING)]):
        result = sleuth("graph", "build", "--extractor", "llm", "--index", folder)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("processed 3 chunks")
    assert lines[1] == "1 chunks failed (retried on the next build):"
    assert lines[2].startswith("  p1#0: malformed reply after 3 attempts: entities")
    store = GraphStore(folder)
    try:
        assert set(store.extracted()) == {"p2#0", "p3#0"}  # not marked extracted
        assert store.by_key("london") is None
    finally:
        store.close()
    with endpoint(turns(ADA)):
        data = build(sleuth, folder)
    assert (data["processed"], data["unchanged"], data["calls"]) == (1, 2, 1)
    assert data["failures"] == [] and data["extracted"] == 3


def test_rebuild_from_the_cache_costs_no_llm_call(sleuth, endpoint, folder: str):
    with endpoint(turns(ADA, BABBAGE, TURING)):
        first = build(sleuth, folder)
    assert (Path(folder) / CACHE_FILE).is_file()
    with endpoint([]) as server:  # an exhausted script answers HTTP 500
        again = build(sleuth, folder, "--rebuild")
        assert server.requests == []
    assert (again["calls"], again["cached"], again["processed"]) == (0, 3, 3)
    for key in ("entities", "relations", "mentions", "extracted"):
        assert again[key] == first[key]
    with endpoint([]):
        incremental = build(sleuth, folder)
    assert (incremental["processed"], incremental["unchanged"]) == (0, 3)


def test_invented_entities_are_dropped_and_near_names_keep_a_sentence(sleuth, endpoint,
                                                                      folder: str):
    invented = {"entities": [*ADA["entities"], {"name": "Napoleon Bonaparte", "type": "PERSON"},
                             {"name": "Countess Lovelace", "type": "PERSON"}],
                "relations": [{"subject": "Ada Lovelace", "relation": "met",
                               "object": "Napoleon Bonaparte"},
                              {"subject": "Royal Society", "relation": "honoured",
                               "object": "Ada Lovelace"}]}
    with endpoint(turns(invented, BABBAGE, TURING)):
        data = build(sleuth, folder)
    assert data["relations"] == 2  # only Babbage's and Turing's
    store = GraphStore(folder)
    try:
        assert store.by_key("napoleon bonaparte") is None
        assert store.by_key("royal society") is None
        countess = store.by_key("countess lovelace")  # not in the text, shares a word
        assert countess is not None
        (start, end), = store.db.execute("SELECT start, end FROM mentions WHERE entity=?",
                                         (countess.id,)).fetchall()
        assert DOCS["p1"][start:end] == "Ada Lovelace"  # the first sentence naming Lovelace
    finally:
        store.close()


def test_concurrent_requests_yield_in_input_order(folder: str, tmp_path: Path):
    engine = {"entities": [{"name": "analytical engine", "type": "PRODUCT"}], "relations": []}
    with FakeLLMServer(turns(engine, engine, engine)) as server, Index.open(folder) as index:
        extractor = LLMExtractor(OpenAIClient("fake-model", server.base_url),
                                 tmp_path / CACHE_FILE, workers=3)
        chunks = list(index.store.iter_chunks())
        results = list(extractor.extract(chunks, index.store.document_titles()))
    assert extractor.name == "llm:fake-model:v1" and extractor.calls == 3
    assert [c.chunk_id for c, _ in results] == ["p1#0", "p2#0", "p3#0"]
    for chunk, found in results:
        names = [(m.type, DOCS[chunk.doc_id][m.start:m.end]) for m in found.mentions]
        title = next(r["title"] for r in TINY_CORPUS if r["id"] == chunk.doc_id)
        engine_named = "Analytical Engine" in DOCS[chunk.doc_id]
        assert names == [("TITLE", title)] + [("PRODUCT", "Analytical Engine")] * engine_named


def test_an_llm_error_stops_the_build_with_one_clear_line(sleuth, endpoint, folder: str):
    with endpoint([error(401, "invalid api key")]):
        result = sleuth("graph", "build", "--extractor", "llm", "--index", folder)
    assert result.code == 1 and "invalid api key" in result.err
    store = GraphStore(folder)
    try:
        assert store.extracted() == {}
    finally:
        store.close()
