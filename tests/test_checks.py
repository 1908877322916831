"""The declared answer pipeline: ``agent.checks`` lists the checks in order (the one switch
of each), the model profiles are presets of that list chosen from the endpoint, and the
settings refuse a misspelt key with the nearest valid one."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import sleuth
from sleuth.agent.checks import CHECKS, CheckContext, register_check
from sleuth.agent.checks.base import When
from sleuth.agent.draft import Draft
from sleuth.errors import ConfigError
from sleuth.llm import OpenAIClient
from sleuth.llm.factory import llm_from_settings
from sleuth.llm.jsontools import JsonToolCalls
from sleuth.settings import Settings
from sleuth.testing.fake import FakeLLMServer, reply

PEPYS = "pepys-diary-1660.md#0"
ECHO = "What did Greatorex show Pepys about levers?"  # "Greatorex" only repeats it
SMALL = ["bridge", "read_facts", "past_echo", "unfounded", "cite_holder", "support",
         "quote_named", "no_figure", "silence"]


def _ask(index: Path, script: list, question: str = ECHO,  # type: ignore[type-arg]
         **agent: object) -> sleuth.Answer:
    with FakeLLMServer(script) as server:
        return sleuth.ask(question, index=index, agent="hybrid",
                          settings=Settings.load(agent=agent or None),
                          llm=OpenAIClient("fake-model", server.base_url))


def test_the_small_profile_is_todays_chain_and_the_record_says_so(sample_index: Path) -> None:
    assert Settings.from_name("small").profile().checks == tuple(SMALL)
    answer = _ask(sample_index, [reply(f"Greatorex [{PEPYS}]"),
                                 reply(f"That levers trade time for strength [{PEPYS}].")])
    assert answer.profile == "small" and answer.checks == SMALL
    record = answer.to_record()
    assert record["profile"] == "small" and record["checks"] == SMALL
    notes = {n["name"]: n for n in record["check_notes"]}
    assert notes["past_echo"]["changed"] and notes["past_echo"]["calls"] == 1
    assert record["flags"] == [] and answer.answer.startswith("That levers")


def test_a_check_left_out_of_the_list_does_not_run(sample_index: Path) -> None:
    without = [c for c in SMALL if c != "past_echo"]
    answer = _ask(sample_index, [reply(f"Greatorex [{PEPYS}]"), reply("unused")],
                  checks=without)
    assert answer.answer.startswith("Greatorex") and answer.llm_calls == 1
    assert "past_echo" not in [s.tool_name for s in answer.trajectory]
    assert answer.checks == without
    assert "past_echo" not in [n.name for n in answer.check_notes]


def test_the_checks_run_in_the_order_listed(sample_index: Path) -> None:
    """An answer of nothing but a chunk's name: quote_named first says what the chunk says
    (silence then has nothing to do); silence first makes it an abstention."""
    named = f"chunk {PEPYS} [{PEPYS}]"
    quoted = _ask(sample_index, [reply(named)], checks=["quote_named", "silence"])
    assert quoted.answer.startswith('"') and not quoted.abstained
    assert [n.name for n in quoted.check_notes] == ["quote_named"]
    silent = _ask(sample_index, [reply(named)], checks=["silence", "quote_named"])
    assert silent.answer.startswith("I cannot answer this reliably") and silent.abstained
    assert [n.name for n in silent.check_notes] == ["silence"]


@pytest.mark.parametrize(("checks", "said"), [
    (["cite_holdr"], "unknown check 'cite_holdr' (did you mean 'cite_holder'?)"),
    (["unfounded:flagg"], "unknown mode 'flagg'"),
    (["bridge:flag"], "cannot flag"),
])
def test_an_unknown_check_is_a_clear_error(sample_index: Path, checks: list[str],
                                           said: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(said)):
        _ask(sample_index, [], checks=checks)


def test_the_command_line_says_an_unknown_check_in_one_line(sleuth, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SLEUTH_AGENT__CHECKS", '["silense"]')
    result = sleuth("llm", "status")
    assert result.code != 0
    assert result.err.strip().splitlines() == [
        "error: agent.checks: unknown check 'silense' (did you mean 'silence'?); the checks: "
        "answer_span, bridge, cite_holder, grounded, no_figure, one_sided, past_echo, "
        "quote_named, read_facts, silence, support, unfounded"]


def test_flag_mode_keeps_the_answer_and_says_why(sample_index: Path) -> None:
    """The question names a term the corpus never holds: the small profile withholds the
    model's answer, the capable one keeps it, flagged, with a step that says so."""
    question, said = "What is the default io_combine_limit?", "It is 128kB."
    small = _ask(sample_index, [reply(said)], question, profile="small")
    assert small.answer.startswith("The documents do not say: the corpus never mentions")
    assert small.abstained and small.flags == []
    capable = _ask(sample_index, [reply(said)], question, profile="capable")
    assert capable.answer == said and not capable.abstained
    # the value is a model's too: no passage holds it (grounded:flag)
    assert capable.flags == ["unfounded: the corpus never mentions 'io_combine_limit'",
                             "grounded: the passages retrieved do not hold '128kb'"]
    assert [s.tool_name for s in capable.trajectory[-2:]] == ["grounded", "flag"]
    assert [n.name for n in capable.check_notes] == ["unfounded", "grounded", "cite_holder"]
    assert [n.name for n in capable.check_notes if n.flagged] == ["unfounded", "grounded"]


def test_the_profile_follows_the_endpoint_and_is_overridable(
        sleuth, endpoint, sample_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    assert Settings.load().profile().name == "small"  # no endpoint: the local model
    with endpoint([reply(f"Levers trade time for strength [{PEPYS}].")]):
        settings = Settings.load()
        assert settings.profile().name == "capable" and not settings.profile().facts_first
        assert Settings.load(agent={"profile": "small"}).profile().facts_first
        status = sleuth("llm", "status", "--json").json()
        assert status["profile"]["name"] == "capable"
        assert status["profile"]["checks"] == list(Settings.from_name("capable").profile()
                                                   .checks)
        out = sleuth("ask", "What did Greatorex show Pepys about levers?", "--json",
                     "--index", str(sample_index))
        record = out.json()
        assert record["profile"] == "capable"
        assert record["checks"] == status["profile"]["checks"]
        monkeypatch.setenv("SLEUTH_AGENT__PROFILE", "small")
        assert sleuth("llm", "status", "--json").json()["profile"]["name"] == "small"


def test_the_profile_says_whether_a_json_answer_starts_with_facts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLEUTH_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SLEUTH_MODEL", "m")
    for profile, facts in (("capable", False), ("small", True)):
        llm = llm_from_settings(Settings.load(llm={"tool_mode": "json"},
                                              agent={"profile": profile}))
        assert isinstance(llm, JsonToolCalls) and llm.facts_first is facts


@dataclass(frozen=True)
class Shout:
    """A check from outside: the answer in capitals."""

    name: str = "shout_test"
    when: When = "draft"
    calls_model: bool = False
    verdicts: bool = False

    def applies(self, draft: Draft, ctx: CheckContext) -> bool:
        return bool(draft.answer)

    def check(self, draft: Draft, ctx: CheckContext) -> Draft | None:
        return draft.revise(self.name, "in capitals", answer=draft.answer.upper())


def test_a_registered_check_runs_where_the_list_names_it(sample_index: Path) -> None:
    register_check(Shout())
    try:
        answer = _ask(sample_index, [reply(f"Levers trade time [{PEPYS}].")],
                      checks=["shout_test"])
        assert answer.answer.startswith("LEVERS TRADE TIME")
        assert answer.check_notes[0].note == "in capitals"
    finally:
        del CHECKS["shout_test"]


SECTIONS = [name for name, field in Settings.model_fields.items()
            if isinstance(field.annotation, type) and hasattr(field.annotation, "model_fields")]


@pytest.mark.parametrize("section", SECTIONS)
def test_every_section_refuses_an_unknown_key_naming_the_nearest(section: str) -> None:
    model = Settings.model_fields[section].annotation
    key = max(model.model_fields, key=len)  # type: ignore[union-attr]
    typo = key[:-1]
    with pytest.raises(ConfigError, match=rf"^unknown setting {section}\.{typo} \(did you "
                                          rf"mean '{key}'\?\)$"):
        Settings.load(**{section: {typo: 1}})


def test_a_misspelt_key_in_a_file_or_the_environment_is_an_error(
        tmp_path: Path, sleuth, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "sleuth.yaml"
    config.write_text("agent:\n  answr_first: false\n")
    with pytest.raises(ConfigError, match="did you mean 'answer_first'"):
        Settings.load(config)
    result = sleuth("llm", "status", "--config", str(config))
    assert result.code != 0 and result.err.strip().splitlines() == [
        "error: unknown setting agent.answr_first (did you mean 'answer_first'?)"]
    with pytest.raises(ConfigError, match=r"unknown setting agnet \(did you mean 'agent'"):
        Settings.load(agnet={"max_steps": 3})
    config.write_text(json.dumps({"agnet": {"max_steps": 3}}))
    with pytest.raises(ConfigError, match="did you mean 'agent'"):
        Settings.load(config)
    monkeypatch.setenv("SLEUTH_AGENT__MAX_STEP", "3")
    with pytest.raises(ConfigError, match="did you mean 'max_steps'.*SLEUTH_AGENT__MAX_STEP"):
        Settings.load()
    monkeypatch.delenv("SLEUTH_AGENT__MAX_STEP")
    monkeypatch.setenv("SLEUTH_NOT_A_SETTING", "x")  # another program's name: ignored
    assert Settings.load().agent.max_steps == 15


def test_presets_by_name() -> None:
    assert Settings.presets() == ["capable", "small"]
    capable = Settings.from_name("capable", agent={"max_steps": 4})
    assert capable.agent.profile == "capable" and capable.agent.max_steps == 4
    assert capable.profile().checks[:2] == ("bridge", "unfounded:flag")
    assert "past_echo" not in capable.profile().checks
    assert Settings.from_name("small").agent.facts_first is True
    with pytest.raises(ConfigError, match=r"unknown preset 'smal' \(did you mean 'small'\?\)"):
        Settings.from_name("smal")
