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
from sleuth.llm import FakeLLMServer, reply


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
