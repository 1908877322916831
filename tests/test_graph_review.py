"""Human review of proposed triples (A2RAG's human-in-the-loop update) on real 2Wiki
passages: a verified answer becomes a proposal pointing at its source sentence, a reviewer
approves it into the graph or rejects it for good."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import needs

from sleuth import Index
from sleuth.graph import Graph
from sleuth.graph.review import pending, propose, relation_phrase, short_answer

pytestmark = needs("spacy")

QUESTION = "Who is the father of Jan Svěrák?"  # 2wiki-00014: Empties
ANSWER = "Zdeněk Svěrák [2wiki-00014#0]."
CHUNK = "2wiki-00014#0"
SENTENCE = ("Empties is a 2007 film directed by Jan Svěrák and written by his father "
            "Zdeněk Svěrák, who also stars in the film.")


@pytest.fixture()
def folder(graph_index: Path, tmp_path: Path) -> str:
    """A private copy: review writes to graph.db."""
    shutil.copytree(graph_index, tmp_path / "idx")
    return str(tmp_path / "idx")


@pytest.fixture()
def graph(folder: str) -> Iterator[Graph]:
    with Index.open(folder) as index, Graph.open(index) as opened:
        yield opened


def test_relation_phrases_and_short_answers() -> None:
    assert relation_phrase("Who is the father of Lothair II?", "Lothair II") == "father"
    assert relation_phrase("Where was Ada Lovelace born?", "Ada Lovelace") == "born in"
    assert relation_phrase("Who is Lothair II's mother?", "Lothair II") == "mother"
    assert relation_phrase("Who directed Empties?", "Empties") == "directed by"
    assert relation_phrase("Which company did Ada work for?", "Ada") == "worked for"
    assert relation_phrase("In which year was Empties released?", "Empties") == "released in"
    assert short_answer("Emperor Lothair I [2wiki-00004#0]") == "Emperor Lothair I"
    assert short_answer("Nanterre [turn1search1].") == "Nanterre"
    assert short_answer("Yes") is None and short_answer("I don't know.") is None
    assert short_answer("He was the second son of the emperor and his wife Ermengarde") is None


def test_a_verified_answer_is_proposed_with_its_source_sentence(graph: Graph) -> None:
    subject = graph.lookup("Jan Svěrák", limit=1)[0]
    assert all("Zdeněk" not in r["entity"] for r in graph.neighbors(subject))  # not known yet
    [proposal] = propose(graph, QUESTION, ANSWER, ["2wiki-00003#0", CHUNK])
    assert (proposal.subject, proposal.relation, proposal.object) == \
        ("Jan Svěrák", "father", "Zdeněk Svěrák")
    assert proposal.chunk_id == CHUNK and proposal.status == "pending"
    assert proposal.sentence == SENTENCE
    text = graph.index.read([CHUNK]).chunks[0].text  # chunk 0 starts the document
    assert text[proposal.start:proposal.end] == SENTENCE
    assert proposal.question == QUESTION and proposal.answer == ANSWER
    assert pending(graph) == [proposal]


def test_nothing_unsupported_is_proposed(graph: Graph) -> None:
    assert propose(graph, QUESTION, "Václav Havel", [CHUNK]) == []  # not in the evidence
    assert propose(graph, QUESTION, ANSWER, ["2wiki-00004#0"]) == []  # another page
    assert propose(graph, QUESTION, ANSWER, []) == []
    assert propose(graph, "Is Empties a film?", "Yes", [CHUNK]) == []
    assert propose(graph, QUESTION, "The evidence does not say.", [CHUNK]) == []
    assert pending(graph) == []


def test_known_and_repeated_triples_are_not_proposed_again(graph: Graph) -> None:
    # the offline graph already holds Empties --film directed by--> Jan Svěrák
    assert propose(graph, "Who directed Empties?", "Jan Svěrák", [CHUNK]) == []
    assert len(propose(graph, QUESTION, ANSWER, [CHUNK])) == 1
    assert propose(graph, QUESTION, "zdenek sverak", [CHUNK]) == []  # same names, normalised
    assert propose(graph, "Who was the father of Jan Svěrák?", ANSWER, [CHUNK]) == []
    assert len(pending(graph)) == 1


def test_cli_lists_approves_and_rejects(sleuth, folder: str) -> None:
    with Index.open(folder) as index, Graph.open(index) as graph:
        father = propose(graph, QUESTION, ANSWER, [CHUNK])[0].id
        born = propose(graph, "Where was Bernie Bonvoisin born?", "Nanterre",
                       ["2wiki-00020#0"])[0].id
    listed = sleuth("graph", "review", "--index", folder, "--json")
    assert listed.code == 0, listed.err
    rows = listed.json()["pending"]
    assert [(r["id"], r["subject"], r["relation"], r["object"]) for r in rows] == [
        (father, "Jan Svěrák", "father", "Zdeněk Svěrák"),
        (born, "Bernie Bonvoisin", "born in", "Nanterre")]
    text = sleuth("graph", "review", "--index", folder).out
    assert text.startswith("2 pending proposals:")
    assert f"#{father} Jan Svěrák --father--> Zdeněk Svěrák" in text
    assert f"source {CHUNK} [8:122]: {SENTENCE}" in text and f"from: {QUESTION}" in text

    approved = sleuth("graph", "review", "--approve", str(father), "--index", folder)
    assert approved.code == 0, approved.err
    assert f"approved #{father}: Jan Svěrák --father--> Zdeněk Svěrák" in approved.out
    relations = sleuth("graph", "neighbors", "Jan Svěrák", "--index", folder,
                       "--json").json()["relations"]
    added = next(r for r in relations if r["relation"] == "father")
    assert added["entity"] == "Zdeněk Svěrák" and added["direction"] == "out"
    assert added["chunk_id"] == CHUNK and added["sentence"] == SENTENCE
    assert added["qualifiers"] == {"source": "reviewed", "proposal": str(father)}
    with Index.open(folder) as index, Graph.open(index) as graph:
        assert graph.store.db.execute(
            "SELECT count(*) FROM relations WHERE source='reviewed'").fetchone()[0] == 1
        zdenek = graph.lookup("Zdeněk Svěrák", limit=1)[0]
        assert graph.path(graph.lookup("Jan Svěrák", limit=1)[0], zdenek, 1)

    rejected = sleuth("graph", "review", "--reject", str(born), "--index", folder, "--json")
    assert [(r["id"], r["status"]) for r in rejected.json()["decided"]] == [(born, "rejected")]
    assert sleuth("graph", "review", "--index", folder).out.strip() == "No pending proposals."
    with Index.open(folder) as index, Graph.open(index) as graph:
        assert propose(graph, "Where was Bernie Bonvoisin born?", "Nanterre",
                       ["2wiki-00020#0"]) == []  # rejected for good
        assert propose(graph, QUESTION, ANSWER, [CHUNK]) == []  # in the graph now

    unknown = sleuth("graph", "review", "--approve", "999", "--index", folder)
    assert unknown.code == 1 and "no proposal with id 999" in unknown.err
    again = sleuth("graph", "review", "--reject", str(father), "--index", folder)
    assert again.code == 1 and f"proposal {father} is already approved" in again.err

    rebuilt = sleuth("graph", "build", "--rebuild", "--index", folder, "--json")
    assert rebuilt.code == 0, rebuilt.err
    assert rebuilt.json()["reviewed_restored"] == 1  # a rebuild keeps what was approved
    relations = sleuth("graph", "neighbors", "Jan Svěrák", "--index", folder,
                       "--json").json()["relations"]
    assert any(r["relation"] == "father" and r["entity"] == "Zdeněk Svěrák" for r in relations)


def test_approve_all_after_rejections(sleuth, folder: str) -> None:
    with Index.open(folder) as index, Graph.open(index) as graph:
        first = propose(graph, QUESTION, ANSWER, [CHUNK])[0].id
        second = propose(graph, "Who is Lothair II's mother?", "Ermengarde of Tours",
                         ["2wiki-00004#0"])[0].id
        third = propose(graph, "Where was Bernie Bonvoisin born?", "Nanterre",
                        ["2wiki-00020#0"])[0].id
    both = sleuth("graph", "review", "--approve", str(first), "--reject", str(first),
                  "--index", folder)
    assert both.code == 1 and "both approved and rejected" in both.err
    result = sleuth("graph", "review", "--reject", str(second), "--all-approve", "--index",
                    folder, "--json")
    assert result.code == 0, result.err
    assert [(r["id"], r["status"]) for r in result.json()["decided"]] == [
        (second, "rejected"), (first, "approved"), (third, "approved")]
    relations = sleuth("graph", "neighbors", "Bernie Bonvoisin", "--relation", "born in",
                       "--index", folder, "--json").json()["relations"]
    assert [r["entity"] for r in relations] == ["Nanterre"]
