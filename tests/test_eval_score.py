"""`sleuth eval score` against hand-computed values, with a cached LLM judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sleuth.testing.fake import FakeLLMServer, reply

RECORDS = [
    {"question_id": "a", "question": "Capital of France?", "answer": "Paris",
     "gold_answers": ["Paris"], "gold_ids": ["d1", "d2"], "question_type": "fact",
     "retrieved_doc_ids": ["d1", "d9", "d2"], "read_doc_ids": ["d1"],
     "total_retrieved_tokens": 100, "loops": 2, "llm_calls": 3, "total_cost": 0.01,
     "latency": 1.0, "error": None, "agent": "full"},
    {"question_id": "b", "question": "Who wrote Hamlet?", "answer": "It was William Shakespeare.",
     "gold_answers": ["William Shakespeare"], "gold_ids": ["d3"], "question_type": "fact",
     "retrieved_doc_ids": ["d4", "d5", "d6"], "read_doc_ids": [],
     "total_retrieved_tokens": 300, "loops": 4, "llm_calls": 5, "total_cost": 0.03,
     "latency": 3.0, "error": None, "agent": "full"},
    {"question_id": "c", "question": "Year?", "answer": "", "gold_answers": ["1901"],
     "gold_ids": ["d7"], "question_type": "date", "retrieved_doc_ids": [], "read_doc_ids": [],
     "total_retrieved_tokens": 0, "loops": 0, "llm_calls": 1, "total_cost": 0.0,
     "latency": 5.0, "error": "LLMError: down", "agent": "full"},
]


# the user prompt of A-RAG's scripts/eval.py (Evaluator.calculate_llm_accuracy), verbatim
ARAG_JUDGE = ("Please evaluate if the generated answer is correct by comparing it with the "
              "gold answer.\n") + """Generated answer: {pred}
Gold answer: {gold}

The generated answer should be considered correct if it:
1. Contains the key information from the gold answer
2. Is factually accurate and consistent with the gold answer
3. Does not contain any contradicting information

Respond with ONLY 'correct' or 'incorrect'.
Response:"""


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return folder


def test_scores_by_hand(sleuth, run_dir: Path) -> None:
    result = sleuth("eval", "score", str(run_dir), "--k", "1,2", "--json")
    assert result.code == 0, result.err
    overall = result.json()["runs"][0]["overall"]
    assert overall["n"] == 3
    assert overall["em"] == pytest.approx(1 / 3)           # only "Paris"
    # F1: a=1; b: pred "it was william shakespeare" vs gold -> P=2/4, R=1 -> 2/3; c=0
    assert overall["f1"] == pytest.approx((1 + 2 / 3 + 0) / 3)
    # Contain-Acc as A-RAG's scorer reports it: over the 2 answered questions; over all 3 too
    assert overall["answered"] == 2
    assert overall["contain"] == pytest.approx(2 / 2)
    assert overall["contain_all"] == pytest.approx(2 / 3)
    assert overall["recall@1"] == pytest.approx((0.5 + 0 + 0) / 3)
    assert overall["recall@2"] == pytest.approx((0.5 + 0 + 0) / 3)  # d1, d9
    assert overall["read_recall"] == pytest.approx((0.5 + 0 + 0) / 3)
    assert overall["retrieved_tokens"] == pytest.approx(400 / 3)
    assert overall["steps"] == pytest.approx(2.0) and overall["llm_calls"] == pytest.approx(3.0)
    assert overall["cost_total"] == pytest.approx(0.04)
    assert overall["latency"] == pytest.approx(3.0)
    assert overall["latency_p95"] == pytest.approx(4.8)  # numpy linear: 3 + 0.9 * 2
    assert overall["errors"] == 1
    by_type = result.json()["runs"][0]["by_type"]
    assert by_type["fact"]["n"] == 2 and by_type["date"]["n"] == 1


def test_markdown_and_side_by_side(sleuth, run_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({**RECORDS[0], "agent": "naive"}) + "\n")
    text = sleuth("eval", "score", str(run_dir), str(other), "--compare").out
    assert "| run | n |" in text and "full (" in text and "naive (" in text
    assert "By question type" in text and "| fact |" in text


def test_llm_judge_verdicts_are_cached(sleuth, run_dir: Path, monkeypatch) -> None:
    with FakeLLMServer([reply("correct"), reply("incorrect")]) as server:
        monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
        monkeypatch.setenv("SLEUTH_MODEL", "judge-model")
        first = sleuth("eval", "score", str(run_dir), "--judge", "--json").json()
        assert len(server.requests) == 2  # the empty answer is judged incorrect locally
        asked = server.requests[0]["messages"]  # A-RAG's judge prompts, as its eval.py sends
        assert asked[0] == {"role": "system", "content": "You are an expert evaluator."}
        assert asked[1]["content"] == ARAG_JUDGE.format(pred="Paris", gold="Paris")
        second = sleuth("eval", "score", str(run_dir), "--judge", "--json").json()
        assert len(server.requests) == 2  # nothing asked again
    for scores in (first, second):  # over the answered questions, as A-RAG's scorer
        assert scores["runs"][0]["overall"]["llm_acc"] == pytest.approx(1 / 2)
        assert scores["runs"][0]["overall"]["llm_acc_all"] == pytest.approx(1 / 3)


def test_citations_do_not_count_against_em_and_f1() -> None:
    from sleuth.eval.report import score_record

    record = {"answer": "Paris [d1#0] [d2#3, d1#0]\nRelevance: d1#0=0.9",
              "gold_answers": ["Paris"]}
    row = score_record(record, [2])
    assert (row["em"], row["f1"], row["contain"]) == (1.0, 1.0, 1.0)
    # brackets that are not chunk ids stay part of the answer
    assert score_record({"answer": "[citation needed]", "gold_answers": ["x"]}, [2])["em"] == 0


def test_a_figure_is_scored_within_one_percent_only_where_the_gold_is_one() -> None:
    from sleuth.eval.report import aggregate, score_record

    rows = [score_record({"answer": "It was $1,580 million [p3#0].", "gold_answers": ["$1577.00"]},
                         [2]),
            score_record({"answer": "0.9 [p4#1]", "gold_answers": ["0.83"]}, [2]),
            score_record({"answer": "Yes [p5#0]", "gold_answers": ["Yes, it improved."]}, [2])]
    assert [r.get("numeric") for r in rows] == [1.0, 0.0, None]
    overall = aggregate(rows)
    assert (overall["numeric"], overall["numeric_n"]) == (0.5, 2.0)


def test_document_recall_at_1_comes_from_cited_relevance() -> None:
    from sleuth.eval.report import score_record

    record = {"answer": "x", "gold_answers": ["x"], "gold_docs": ["ACME_2020_10K"],
              "document_ranking": ["ACME_2020_10K#p7", "BETA_2021_10K#p1"]}
    assert score_record(record, [1])["doc_recall@1"] == 1.0
    record["document_ranking"] = ["BETA_2021_10K.pdf", "ACME_2020_10K.pdf"]
    assert score_record(record, [1])["doc_recall@1"] == 0.0
    del record["document_ranking"]  # records of older runs: no document metric
    assert "doc_recall@1" not in score_record(record, [1])


def test_scores_the_a_rag_reference_codes_predictions(sleuth, tmp_path: Path) -> None:
    # the record layout of A-RAG's scripts/batch_runner.py: pred_answer, gold_answer
    arag = tmp_path / "arag.jsonl"
    arag.write_text("".join(json.dumps(r) + "\n" for r in [
        {"qid": "1", "question": "Capital of France?", "gold_answer": "Paris",
         "pred_answer": "The capital is Paris.", "trajectory": [], "total_cost": 0.0,
         "loops": 2, "total_retrieved_tokens": 50, "chunks_read_ids": []},
        {"qid": "2", "question": "Is it?", "gold_answer": "no",
         "pred_answer": "I do not know.", "trajectory": [], "total_cost": 0.0, "loops": 1},
    ]))
    result = sleuth("eval", "score", str(arag), "--json")
    assert result.code == 0, result.err
    overall = result.json()["runs"][0]["overall"]
    assert overall["n"] == 2 and overall["steps"] == pytest.approx(1.5)
    assert overall["contain"] == pytest.approx(1.0)  # the reference's substring Contain-Acc
    assert overall["contain_words"] == pytest.approx(0.5)  # "no" is not a word of the second


def test_a_file_of_other_records_is_an_error_not_zeros(sleuth, tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "x", "text": "a corpus passage"}) + "\n")
    result = sleuth("eval", "score", str(other))
    assert result.code != 0
    assert "other.jsonl:1 is not a prediction record" in result.err
    no_gold = tmp_path / "no_gold.jsonl"
    no_gold.write_text(json.dumps({"question": "q", "pred_answer": "a"}) + "\n")
    result = sleuth("eval", "score", str(no_gold))
    assert result.code != 0 and "no gold answer" in result.err
