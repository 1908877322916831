"""Evaluation from Python: ``sleuth.eval.run`` and ``score`` do what `sleuth eval run` does,
against the scripted fake LLM server, with no command line involved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sleuth import Settings
from sleuth.errors import ConfigError
from sleuth.eval import run, score
from sleuth.testing.fake import FakeLLMServer, reply


def _settings(base_url: str) -> Settings:
    return Settings.load(llm={"base_url": base_url, "model": "fake-model"})


def test_several_agents_run_and_are_scored_from_python(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "table1"
    script = [reply("London"), reply("Ada Lovelace"),  # direct
              reply("London"), reply("Charles Babbage"),  # naive-rag
              reply("correct"), reply("incorrect"), reply("correct"), reply("correct")]  # judge
    finished: list[dict[str, Any]] = []
    with FakeLLMServer(script) as server:
        result = run(dataset, ["direct", "naive-rag"], output=out, limit=2, workers=1,
                     judge=True, settings=_settings(server.base_url), index=tmp_path / "idx",
                     on_run=finished.append)
        assert len(server.requests) == 8
    assert [r["agent"] for r in result["runs"]] == ["direct", "naive-rag"] == \
        [r["agent"] for r in finished]
    assert result["runs"][0]["output"] == str(out / "direct" / "predictions.jsonl")
    assert [r["finished"] for r in result["runs"]] == [2, 2]
    overall = {r["agent"]: r["overall"] for r in result["scores"]["runs"]}
    assert overall["direct"]["llm_acc"] == 0.5 and overall["naive-rag"]["llm_acc"] == 1.0
    assert json.loads((out / "scores.json").read_text()) == result["scores"]
    assert "LLM-Acc" in (out / "scores.md").read_text()

    # scoring the finished runs again needs no LLM: verdicts come from the judge's cache
    with FakeLLMServer([]) as server:
        again = score([out / "direct", out / "naive-rag"], judge=True,
                      settings=_settings(server.base_url))
        assert server.requests == []
    assert [r["overall"] for r in again["runs"]] == [r["overall"] for r in
                                                      result["scores"]["runs"]]


def test_one_agent_runs_unscored_and_unknown_agents_are_refused(dataset: Path,
                                                                tmp_path: Path) -> None:
    with FakeLLMServer([reply("London")]) as server:
        result = run(dataset, "direct", output=tmp_path / "run", limit=1,
                     settings=_settings(server.base_url), index=tmp_path / "idx")
    assert result["scores"] is None and result["runs"][0]["contain_acc"] == 1.0
    assert not (tmp_path / "run" / "scores.json").exists()
    with pytest.raises(ConfigError, match=r"unknown agents \['nope'\]"):
        run(dataset, "full,nope", output=tmp_path / "never")
    assert not (tmp_path / "never").exists()


def test_replies_are_cached_by_request(dataset: Path, tmp_path: Path) -> None:
    """A re-run of an unchanged configuration is answered from the reply cache; any change
    to the request (another agent's prompt) goes to the server."""
    cache = tmp_path / "replies.sqlite"
    with FakeLLMServer([reply("London"), reply("Charles Babbage"), reply("Paris")]) as server:
        settings = _settings(server.base_url)
        first = run(dataset, "naive-rag", output=tmp_path / "a", limit=2, workers=1,
                    settings=settings, index=tmp_path / "idx", llm_cache=cache)
        assert len(server.requests) == 2
        again = run(dataset, "naive-rag", output=tmp_path / "b", limit=2, workers=1,
                    settings=settings, index=tmp_path / "idx", llm_cache=cache)
        assert len(server.requests) == 2  # nothing new was sent
        other = run(dataset, "direct", output=tmp_path / "c", limit=1, workers=1,
                    settings=settings, index=tmp_path / "idx", llm_cache=cache)
        assert len(server.requests) == 3
    assert (first["runs"][0]["llm_replies_new"], first["runs"][0]["llm_replies_cached"]) == (2, 0)
    assert (again["runs"][0]["llm_replies_new"], again["runs"][0]["llm_replies_cached"]) == (0, 2)
    assert other["runs"][0]["llm_replies_new"] == 1

    def answers(folder: str) -> dict[str, tuple[str, int]]:
        records = [json.loads(line) for line in
                   (tmp_path / folder / "predictions.jsonl").read_text().splitlines()]
        return {r["question_id"]: (r["answer"], r["prompt_tokens"]) for r in records}

    assert answers("a") == answers("b") and len(answers("a")) == 2
    # a local server started again listens on another port: the same requests still hit
    with FakeLLMServer([]) as restarted:
        run(dataset, "naive-rag", output=tmp_path / "d", limit=2, workers=1,
            settings=_settings(restarted.base_url), index=tmp_path / "idx", llm_cache=cache)
        assert restarted.requests == []
    assert answers("d") == answers("a")
