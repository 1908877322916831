"""`sleuth eval run`: datasets, concurrent workers, resume, and failures that do not stop a run."""

from __future__ import annotations

import json
from pathlib import Path

from sleuth.eval.datasets import load_dataset
from sleuth.llm import FakeLLMServer, error, reply


def _lines(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_dataset_loader_reads_gold(dataset: Path) -> None:
    loaded = load_dataset(dataset)
    assert loaded.corpus == dataset / "corpus.json"
    q1 = loaded.questions[0]
    assert (q1.id, q1.answers, q1.type, q1.gold_ids) == (
        "q1", ("London", "London, England"), "fact", ("p1",))


def test_run_resume_and_records(sleuth, dataset: Path, tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "run"
    with FakeLLMServer([reply("London")] * 2) as server:
        monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
        monkeypatch.setenv("SLEUTH_MODEL", "fake-model")
        first = sleuth("eval", "run", "--dataset", str(dataset), "--agent", "naive-rag",
                       "--limit", "2", "--workers", "2", "--output", str(out), "--json")
    assert first.code == 0, first.err
    records = _lines(out / "predictions.jsonl")
    assert sorted(r["question_id"] for r in records) == ["q1", "q2"]
    q1 = next(r for r in records if r["question_id"] == "q1")
    assert q1["gold_answers"] == ["London", "London, England"] and q1["gold_ids"] == ["p1"]
    assert q1["question_type"] == "fact" and q1["error"] is None and q1["latency"] > 0
    assert q1["retrieved_doc_ids"][0] in {"p1", "p2", "p3"} and q1["read_doc_ids"]
    assert {"trajectory", "total_cost", "loops", "tool_usage_summary",
            "total_retrieved_tokens", "chunks_read_count", "chunks_read_ids"} <= set(q1)

    again = sleuth("eval", "run", "--dataset", str(dataset), "--output", str(out))
    assert again.code == 1 and "--resume" in again.err

    with (out / "predictions.jsonl").open("a") as fh:
        fh.write('{"question_id": "q3", "answ')  # a line cut by a crash
    with FakeLLMServer([reply("Bletchley Park")]) as server:
        monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
        resumed = sleuth("eval", "run", "--dataset", str(dataset), "--agent", "naive-rag",
                         "--resume", "--output", str(out), "--json")
        assert len(server.requests) == 1  # only q3 ran
    assert resumed.code == 0, resumed.err
    summary = resumed.json()
    assert summary["skipped_done"] == 2 and summary["finished"] == 1
    ids = [r["question_id"] for r in _lines(out / "predictions.jsonl")]  # all lines valid
    assert sorted(ids) == ["q1", "q2", "q3"]


def test_a_failing_question_is_recorded_and_the_run_goes_on(sleuth, dataset: Path,
                                                             tmp_path: Path, monkeypatch):
    out = tmp_path / "run"
    script = [reply("London"), error(400, "context length exceeded"), reply("Bletchley Park")]
    with FakeLLMServer(script) as server:
        monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
        monkeypatch.setenv("SLEUTH_MODEL", "fake-model")
        result = sleuth("eval", "run", "--dataset", str(dataset), "--agent", "direct",
                        "--workers", "1", "--output", str(out), "--json")
    assert result.code == 0, result.err
    records = {r["question_id"]: r for r in _lines(out / "predictions.jsonl")}
    assert records["q2"]["error"].startswith("LLMError") and "HTTP 400" in records["q2"]["error"]
    assert records["q1"]["answer"] == "London" and records["q3"]["error"] is None
    summary = result.json()
    assert summary["errors"] == 1 and summary["contain_acc"] == 1.0
