"""`sleuth eval run`: datasets, concurrent workers, resume, and failures that do not stop a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sleuth.agent import VARIANTS
from sleuth.eval.datasets import load_dataset
from sleuth.testing.fake import FakeLLMServer, call, error, reply


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


def test_a_slow_run_says_how_long_each_question_takes(sleuth, dataset: Path, tmp_path: Path,
                                                     monkeypatch) -> None:
    # a local model takes a minute a question: "0.0/s" would say nothing
    slow = {**reply("London"), "delay": 1.2}
    with FakeLLMServer([slow, slow]) as server:
        monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
        monkeypatch.setenv("SLEUTH_MODEL", "fake-model")
        result = sleuth("eval", "run", "--dataset", str(dataset), "--agent", "naive-rag",
                        "--limit", "2", "--workers", "1", "--output", str(tmp_path / "run"))
    assert result.code == 0, result.err
    last = [line for line in result.err.splitlines() if line.startswith("questions: ")][-1]
    assert last.startswith("questions: 2 of 2 q (100%) in ") and " s each" in last
    assert "/s)" not in last and "left" not in last  # nothing is left at the end


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


@pytest.mark.parametrize("agent", sorted(VARIANTS))
def test_every_variant_runs_a_dataset(sleuth, dataset: Path, tmp_path: Path, monkeypatch,
                                      agent: str) -> None:
    answers = ["London [p1#0]", "Charles Babbage [p2#0]"]
    names = ["Lovelace", "Babbage"]  # what each question's search looks for
    if agent == "memory":  # one memory update (judged sufficient), then the answer
        script = [turn for a in answers for turn in (
            reply(f"<update>{a}</update><sufficient>yes</sufficient>"), reply(a))]
    elif agent in ("direct", "naive-rag"):
        script = [reply(a) for a in answers]
    elif agent == "ircot":  # the first reasoning sentence already gives the answer
        script = [reply(f"So the answer is: {a}.") for a in answers]
    elif agent == "a2rag":  # the answer from the evidence, then Triple-Check passes it
        script = [turn for a in answers for turn in (reply(a), reply(
            '{"relevance": true, "grounding": true, "adequacy": true, "reason": "ok"}'))]
    else:  # one search with the variant's first tool (for the passage cited), the answer
        tool = VARIANTS[agent].tools[0]
        key, listed = {"keyword_search": ("keywords", True),
                       "search": ("queries", True)}.get(tool, ("query", False))
        script = [turn for a, name in zip(answers, names, strict=True) for turn in (
            call(tool, **{key: [name] if listed else name}), reply(a))]
    out = tmp_path / agent
    with FakeLLMServer(script) as server:
        monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
        monkeypatch.setenv("SLEUTH_MODEL", "fake-model")
        # every answer from the model: person_fact settles q1 by itself otherwise
        monkeypatch.setenv("SLEUTH_AGENT__SETTLED_ANSWERS", "model")
        result = sleuth("eval", "run", "--dataset", str(dataset), "--agent", agent, "--limit",
                        "2", "--workers", "1", "--output", str(out), "--json")
    assert result.code == 0, result.err
    records = _lines(out / "predictions.jsonl")
    assert [r["question_id"] for r in records] == ["q1", "q2"]
    for record, expected in zip(records, answers, strict=True):
        assert record["error"] is None and record["agent"] == agent
        if agent == "direct":  # it retrieves nothing, so it can cite nothing
            assert record["answer"] == expected.split(" [")[0] and not record["citations"]
        else:
            assert record["answer"] == expected
            assert record["citations"][0]["chunk_id"] == expected.split("[")[1].rstrip("]")
        assert ("memory_state" in record) == (agent == "memory")
        searched = [s for s in record["trajectory"] if s["kind"] != "check"]
        assert (searched == []) == (agent == "direct")


def test_sweep_over_reasoning_effort(sleuth, dataset: Path, tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "sweep"
    script = [reply("London"), reply("Charles Babbage"),  # effort=low
              reply("Paris"), reply("Charles Babbage")]  # effort=high
    args = ["eval", "sweep", "--dataset", str(dataset), "--agent", "naive-rag", "--param",
            "reasoning_effort", "--values", "low,high", "--limit", "2", "--workers", "1",
            "--output", str(out)]
    with FakeLLMServer(script) as server:
        monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
        monkeypatch.setenv("SLEUTH_MODEL", "fake-model")
        result = sleuth(*args, "--json")
        efforts = [r.get("reasoning_effort") for r in server.requests]
    assert result.code == 0, result.err
    assert efforts == ["low", "low", "high", "high"]
    data = result.json()
    assert [(p["value"], p["contain"], p["n"]) for p in data["points"]] == [
        ("low", 1.0, 2), ("high", 0.5, 2)]
    assert json.loads((out / "sweep.json").read_text())["points"][1]["em"] == 0.5
    assert (out / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(_lines(out / "reasoning_effort=high" / "predictions.jsonl")) == 2

    with FakeLLMServer([]) as server:  # resumed: every question is done, nothing is asked
        monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
        again = sleuth(*args, "--resume")
        assert server.requests == []
    assert again.code == 0, again.err
    assert "| high | 50.0 | 50.0 |" in again.out and "sweep.png" in again.out


def test_sweep_rejects_bad_values_before_running(sleuth, dataset: Path, tmp_path: Path,
                                                 monkeypatch) -> None:
    monkeypatch.setenv("SLEUTH_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SLEUTH_MODEL", "fake-model")
    base = ["eval", "sweep", "--dataset", str(dataset), "--output", str(tmp_path / "s")]
    bad = sleuth(*base, "--param", "reasoning_effort", "--values", "low,extreme")
    assert bad.code != 0 and "invalid reasoning_effort value 'extreme'" in bad.err
    unknown = sleuth(*base, "--param", "temperature", "--values", "0,1")
    assert unknown.code != 0 and "cannot sweep 'temperature'" in unknown.err
    assert not (tmp_path / "s").exists()


def test_several_agents_in_one_command_scored_with_the_judge(sleuth, dataset: Path,
                                                             tmp_path: Path, monkeypatch):
    """A-RAG's Table 1 protocol for one dataset: every agent, then LLM-Acc side by side."""
    out = tmp_path / "table1"
    script = [reply("London"), reply("Ada Lovelace"),  # direct
              reply("London"), reply("Charles Babbage"),  # naive-rag
              reply("correct"), reply("incorrect"), reply("correct"), reply("correct")]  # judge
    with FakeLLMServer(script) as server:
        monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
        monkeypatch.setenv("SLEUTH_MODEL", "fake-model")
        result = sleuth("eval", "run", "--dataset", str(dataset), "--agent", "direct,naive-rag",
                        "--limit", "2", "--workers", "1", "--judge", "--output", str(out),
                        "--no-llm-cache")  # the judge sees a request twice: both are sent
        assert len(server.requests) == 8
    assert result.code == 0, result.err
    assert len(_lines(out / "direct" / "predictions.jsonl")) == 2
    assert len(_lines(out / "naive-rag" / "predictions.jsonl")) == 2
    scores = json.loads((out / "scores.json").read_text())
    overall = {r["agent"]: r["overall"] for r in scores["runs"]}
    assert overall["direct"]["llm_acc"] == 0.5 and overall["naive-rag"]["llm_acc"] == 1.0
    assert overall["direct"]["contain"] == 0.5
    assert "LLM-Acc" in result.out and "LLM-Acc" in (out / "scores.md").read_text()

    bad = sleuth("eval", "run", "--dataset", str(dataset), "--agent", "full,nope")
    assert bad.code != 0 and "unknown agents ['nope']" in bad.err
