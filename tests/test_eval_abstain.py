"""Unanswerable questions are run and scored by abstention, apart from answer accuracy; and
whether the passages an answer cites hold the gold answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO, TINY_CORPUS, TINY_QUESTIONS
from sleuth.agent.run import abstention
from sleuth.eval import abstains
from sleuth.eval.datasets import load_dataset
from sleuth.testing.fake import FakeLLMServer, reply

ABSTAINING = [
    abstention("the evidence stayed insufficient after 2 attempts"),
    "The documents do not mention Django's CONN_MAX_AGE [p1#0].",
    "The provided passages don't say where he worked.",
    "That setting is not found in the provided documents.",
    "I could not find the default value.",
    "I couldn’t find it.",
    "There is no information about innodb_buffer_pool_size in the manual.",
    "The answer cannot be determined from the context.",
    "It is not mentioned in the retrieved passages.",
    "The PostgreSQL documentation does not mention transaction_timeout.",
    "I was unable to find any mention of pgbouncer.",
    "Insufficient information to answer.",
    "I don't know.",
    "Unknown.",
]
ANSWERING = ["Port of Spain", "The default is 5432 [runtime-config-connection.html#3].", "no",
             "No, it does not.", "The function returns NULL when no row is found.",
             "It cannot be null.", "10 August 1960", "The server did not start.",
             "Unknown Pleasures", "scram-sha-256"]


@pytest.mark.parametrize("answer", ABSTAINING)
def test_abstentions_are_recognised(answer: str) -> None:
    assert abstains(answer)


@pytest.mark.parametrize("answer", ANSWERING)
def test_answers_are_not_abstentions(answer: str) -> None:
    assert not abstains(answer)


def test_the_pgdocs_set_keeps_its_unanswerable_questions() -> None:
    loaded = load_dataset(REPO / "bench" / "sets" / "pgdocs" / "questions.json")
    assert len(loaded.questions) == 117 and loaded.unanswerable == 0
    unanswerable = [q for q in loaded.questions if not q.answerable]
    assert len(unanswerable) == 14 and {q.type for q in unanswerable} == {"unanswerable"}
    assert all(q.answers == () for q in unanswerable)


QUESTIONS = [
    *TINY_QUESTIONS,  # q1 London (p1), q2 Charles Babbage (p2), q3 Bletchley Park (p3)
    {"id": "q4", "question": "What is Ada Lovelace's shoe size?", "answer": "",
     "answer_aliases": [], "type": "unanswerable", "supporting_passage_ids": [],
     "answerable": False},
    # a gold answer, but marked unanswerable: never counted as contained
    {"id": "q5", "question": "Which city did Turing visit in 1950?", "answer": "Paris",
     "type": "unanswerable", "answerable": False},
]
REPLIES = [
    "London [p1#0].",  # right, and its cited passage says London
    "Charles Babbage [p1#0].",  # right, but the passage it cites does not name him
    "The documents do not say where Alan Turing worked.",  # abstains on an answerable one
    "I could not find Ada Lovelace's shoe size in the documents.",  # abstains: right
    "Paris [p3#0].",  # answers an unanswerable question
]


def _lines(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_run_scores_abstention_and_cited_passages(sleuth, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "corpus.json").write_text(json.dumps(TINY_CORPUS))
    (folder / "questions.json").write_text(json.dumps(QUESTIONS))
    out = tmp_path / "run"
    with FakeLLMServer([reply(r) for r in REPLIES]) as server:
        monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
        monkeypatch.setenv("SLEUTH_MODEL", "fake-model")
        result = sleuth("eval", "run", "--dataset", str(folder), "--agent", "naive-rag",
                        "--workers", "1", "--output", str(out), "--json")
    assert result.code == 0, result.err
    summary = result.json()
    assert summary["finished"] == 5  # type: ignore[index]
    assert summary["contain_acc"] == 0.6667  # type: ignore[index]  # rounded; q5 left out

    records = {r["question_id"]: r for r in _lines(out / "predictions.jsonl")}
    assert [records[q]["answerable"] for q in sorted(records)] == [True] * 3 + [False] * 2
    assert [records[q]["abstained"] for q in sorted(records)] == [False, False, True, True,
                                                                  False]
    # A-RAG's scripts/eval.py takes `gold_answer or answer` as the gold: an unanswerable
    # question is judged against the abstention, not against the prediction itself
    assert [records[q]["gold_answer"] for q in ("q4", "q5")] == ["The documents do not say"] * 2
    cited = records["q1"]["cited_passages"]
    assert [c["chunk_id"] for c in cited] == ["p1#0"] and "born in London" in cited[0]["text"]
    assert records["q3"]["cited_passages"] == []

    scored = sleuth("eval", "score", str(out), "--json")
    assert scored.code == 0, scored.err
    run = scored.json()["runs"][0]  # type: ignore[index]
    overall = run["overall"]
    assert overall["n"] == 5 and overall["unanswerable"] == 2
    assert overall["abstain_unanswerable"] == pytest.approx(1 / 2)  # q4 yes, q5 no
    assert overall["abstained"] == pytest.approx(2 / 5)  # q3 and q4
    # answer accuracy over the 3 answerable questions only (q5's "Paris" is not counted)
    assert overall["em"] == pytest.approx(2 / 3) and overall["f1"] == pytest.approx(2 / 3)
    assert overall["answered"] == 3 and overall["contain"] == pytest.approx(2 / 3)
    assert overall["contain_all"] == pytest.approx(2 / 3)
    # answered with a citation: q1 (its passage says London) and q2 (its passage does not)
    assert overall["cited"] == 2 and overall["cited_contains_answer"] == pytest.approx(1 / 2)
    # both are right answers: of the right answers too, one in two cites a passage holding it
    assert overall["cited_right"] == pytest.approx(1 / 2)
    by_type = run["by_type"]
    assert by_type["unanswerable"]["abstain_unanswerable"] == pytest.approx(1 / 2)
    assert "em" not in by_type["unanswerable"] and "contain" not in by_type["unanswerable"]
    assert by_type["fact"]["cited_contains_answer"] == pytest.approx(1 / 2)

    table = sleuth("eval", "score", str(out)).out
    head, _, first = table.splitlines()[:3]
    cells = dict(zip(head.split(" | "), first.split(" | "), strict=True))
    assert cells["abstain unans."] == "50.0%" and cells["cited has ans"] == "50.0%"
    assert cells["unans. n"] == "2" and cells["Contain"] == "66.7%"


def test_older_records_and_a_rag_records_score_as_before(sleuth, tmp_path: Path) -> None:
    from sleuth.eval.report import aggregate, score_record

    # no abstained / cited_passages fields: no abstain or citation metric for them
    old = {"answer": "Paris [d1#0]", "gold_answers": ["Paris"]}
    row = score_record(old, [2])
    assert "abstained" not in row and "cited_contains_answer" not in row
    assert "unanswerable" not in aggregate([row])
    # A-RAG's layout, with an empty gold answer: unanswerable, scored by abstention only
    arag = [{"qid": "1", "question": "q", "gold_answer": "", "pred_answer": "I don't know."},
            {"qid": "2", "question": "q", "gold_answer": "no", "pred_answer": "no"}]
    path = tmp_path / "arag.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in arag))
    overall = sleuth("eval", "score", str(path), "--json").json()["runs"][0]["overall"]  # type: ignore[index]
    assert overall["unanswerable"] == 1 and overall["abstain_unanswerable"] == 1.0
    assert overall["em"] == 1.0 and overall["answered"] == 1
