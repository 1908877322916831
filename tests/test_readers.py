"""The scripted readers (an oracle, a model answering from memory) through the default agent
on a corpus made here, the harness that counts what each answer check does to them
(``bench/checks.py``), and the answer tables' "answered wrong"."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import sleuth
from conftest import REPO
from sleuth import Index, Settings
from sleuth.agent.checks import CheckContext, register_check
from sleuth.agent.checks.base import CHECKS, When
from sleuth.agent.draft import Draft
from sleuth.eval.datasets import Question, load_dataset
from sleuth.eval.metrics import contain_match, normalize_answer
from sleuth.llm import OpenAIClient
from sleuth.testing.fake import FakeLLMServer
from sleuth.testing.readers import FromMemory, Oracle, Reader, golds, passages
from sleuth.text.abstain import abstains
from sleuth.text.ids import cited_ids, strip_citations

CORPUS = [
    {"id": "ada", "title": "Ada Lovelace", "text": "Ada Lovelace wrote the first published "
     "algorithm for the Analytical Engine. She was born in London in 1815."},
    {"id": "babbage", "title": "Charles Babbage", "text": "Charles Babbage designed the "
     "Analytical Engine. He was born in Walworth, Surrey, in 1791."},
    {"id": "turing", "title": "Alan Turing", "text": "Alan Turing proposed the Turing machine "
     "in 1936. During the war he worked at Bletchley Park."},
    {"id": "hopper", "title": "Grace Hopper", "text": "Grace Hopper developed the A-0 System, "
     "an early compiler, in 1952. She served in the United States Navy."},
]
QUESTIONS = [
    {"id": "q1", "question": "Where was Ada Lovelace born?", "answer": "London",
     "type": "place", "supporting_passage_ids": ["ada"]},
    {"id": "q2", "question": "Where did Alan Turing work during the war?",
     "answer": "Bletchley Park", "type": "place", "supporting_passage_ids": ["turing"]},
    {"id": "q3", "question": "Which compiler did Grace Hopper develop?",
     "answer": "A-0 System", "answer_aliases": ["A-0"], "type": "thing",
     "supporting_passage_ids": ["hopper"]},
    # the corpus does not say: the oracle abstains, from-memory answers all the same
    {"id": "q4", "question": "Where was Grace Hopper born?", "answer": "New York City",
     "type": "place", "supporting_passage_ids": []},
]
RIGHT = {"q1", "q2", "q3"}  # what an oracle can answer from this corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[Question]]]:
    folder = tmp_path_factory.mktemp("readers")
    (folder / "corpus.json").write_text(json.dumps(CORPUS))
    (folder / "questions.json").write_text(json.dumps(QUESTIONS))
    with Index.open(folder / "idx", create=True) as index:
        index.add([folder / "corpus.json"])
    yield folder, load_dataset(folder).questions


def _ask(index: Path, reader: Reader, question: str, profile: str = "capable",
         **agent: object) -> sleuth.Answer:
    with FakeLLMServer([], reader=reader) as server:
        settings = Settings.load(llm={"tool_mode": "json" if profile == "small" else "native"},
                                 agent={"profile": profile, **agent})
        llm = OpenAIClient("fake-model", server.base_url)
        if profile == "small":
            from sleuth.llm.jsontools import JsonToolCalls

            llm = JsonToolCalls(llm, facts_first=True)  # type: ignore[assignment]
        answer = sleuth.ask(question, index=index, agent="hybrid", settings=settings, llm=llm)
        assert server.reader_errors == []
        return answer


def _texts(index: Path, ids: list[str]) -> dict[str, str]:
    with Index.open(index) as opened:
        return {c.chunk_id: c.text for c in opened.read(ids).chunks}


def _holds(text: str, answer: str) -> bool:
    return f" {normalize_answer(answer)} " in f" {normalize_answer(text)} "


@pytest.mark.parametrize("profile", ["capable", "small"])
def test_the_oracle_answers_the_gold_it_is_shown_and_abstains_otherwise(
        corpus: tuple[Path, list[Question]], profile: str) -> None:
    folder, questions = corpus
    oracle = Oracle(golds(questions))
    for q in questions:
        answer = _ask(folder / "idx", oracle, q.question, profile, checks=[])
        text = strip_citations(answer.answer)
        if q.id in RIGHT:
            assert contain_match(text, q.answers) and not abstains(text), (q.id, answer.answer)
            cited = _texts(folder / "idx", [c.chunk_id for c in answer.citations])
            assert cited and any(_holds(t, a) for t in cited.values() for a in q.answers)
        else:
            assert abstains(text) and not contain_match(text, q.answers), answer.answer
            # not shown the answer, it searched on with the tools before it said so
            searched = [s.tool_name for s in answer.trajectory if s.kind != "retrieval"]
            assert "semantic_search" in searched and "keyword_search" in searched, searched


def test_from_memory_never_answers_the_gold_and_cites_a_shown_chunk_without_it(
        corpus: tuple[Path, list[Question]]) -> None:
    folder, questions = corpus
    reader = FromMemory(golds(questions))
    for q in questions:
        answer = _ask(folder / "idx", reader, q.question, checks=[])
        text = strip_citations(answer.answer)
        assert text and not abstains(text) and not contain_match(text, q.answers), answer.answer
        record = answer.to_record()
        cited = cited_ids(answer.answer)
        assert cited and set(cited) <= set(record["retrieved_ids"]), (cited, record)
        held = _texts(folder / "idx", cited)
        assert len(held) == len(cited) and not any(_holds(t, text) for t in held.values())


def test_passages_are_read_by_the_id_before_each_not_its_neighbours() -> None:
    shown = passages([
        {"role": "system", "content": "Cite [doc-7#0]."},
        {"role": "user", "content": "Where was Ada born?"},
        {"role": "tool", "content": "Top 2 chunks:\n\n=== chunk ada#1 (document ada#7; prev: "
         "ada#0, next: ada#2) ===\nShe was born in London.\n[... 40 more tokens: chunk_read "
         "ada#1]\n\n=== chunk org/bab-1#0 (document org/bab-1; prev: none, next: "
         "org/bab-1#1) ===\nBabbage."},
        {"role": "user", "content": "Question: q\n\nPassages:\n[turn1search3] Ada: In 1815."},
    ])
    assert list(shown) == ["ada#1", "org/bab-1#0", "turn1search3"]
    assert "London" in shown["ada#1"] and "Babbage" not in shown["ada#1"]
    assert shown["turn1search3"].endswith("In 1815.")


def test_the_oracle_answers_the_checks_own_requests() -> None:
    """answer_span's JSON and past_echo's "one full sentence", from the passages shown."""
    oracle = Oracle({"Where was Ada born?": golds([Question("q", "Where was Ada born?",
                                                            ("London",))])["Where was Ada born?"]})
    span = oracle({"messages": [
        {"role": "system", "content": 'Reply with one JSON object: {"answerable": true, ...}'},
        {"role": "user", "content": "Question: Where was Ada born?\n\nPassages:\n[ada#0] Ada "
         "wrote an algorithm. She was born in London in 1815.\n\nDraft answer: London"}]})
    assert json.loads(str(span["content"])) == {
        "answerable": True, "chunk_id": "ada#0", "answer": "London",
        "sentence": "She was born in London in 1815."}
    echo = oracle({"messages": [
        {"role": "user", "content": "Question: Where was Ada born?\n\nRetrieved passages:\n"
         "=== chunk ada#0 (document ada) ===\nShe was born in London in 1815.\n\nDo not "
         'answer with only "Ada": the question already names it.'}]})
    assert str(echo["content"]).startswith("She was born in London in 1815. [ada#0]")


def test_the_oracle_cites_each_page_a_yes_or_no_rests_on() -> None:
    question = "Were Ada Lovelace and Charles Babbage both born in England?"
    oracle = Oracle(golds([Question("q", question, ("yes",), metadata={
        "supporting_titles": ["Ada Lovelace", "Charles Babbage"]})]))
    shown = ("Question: " + question + "\n\nRetrieved passages:\n=== chunk ada#0 (document "
             "ada) ===\nAda Lovelace was born in London.\n=== chunk babbage#0 (document "
             "babbage) ===\nCharles Babbage was born in Walworth, Surrey.")
    said = str(oracle({"messages": [{"role": "user", "content": shown}]})["content"])
    assert said.startswith("yes [ada#0] [babbage#0]")
    one = shown.split("\n=== chunk babbage")[0]  # one page shown: not held
    assert abstains(str(oracle({"messages": [{"role": "user", "content": one}]})["content"]))


# --- the harness ------------------------------------------------------------------------


@dataclass(frozen=True)
class Withhold:
    """A check that withholds every answer: the harness must count each as withheld."""

    name: str = "withhold_all"
    when: When = "draft"
    calls_model: bool = False
    verdicts: bool = False

    def applies(self, draft: Draft, ctx: CheckContext) -> bool:
        return not abstains(draft.answer)

    def check(self, draft: Draft, ctx: CheckContext) -> Draft | None:
        return draft.revise(self.name, "withheld", answer="The documents do not say.",
                            abstained=True)


@pytest.fixture()
def harness() -> Iterator[object]:
    sys.path.insert(0, str(REPO / "bench"))
    import checks

    register_check(Withhold())
    yield checks
    CHECKS.pop("withhold_all", None)
    sys.path.remove(str(REPO / "bench"))


def test_the_harness_counts_what_each_check_does(corpus: tuple[Path, list[Question]],
                                                  harness, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder, questions = corpus
    checks = harness
    for reader in checks.READERS:
        cell = checks.Cell("medical", reader, "capable", questions, questions, folder / "idx",
                           tmp_path / reader, workers=1)
        cell.measure(["withhold_all", "grounded:flag"], log=lambda *_: None)
    oracle, memory = (checks.summarise(tmp_path / r, "medical", r, "capable",
                                       Settings.from_name("capable").agent.checks)
                      for r in checks.READERS)
    assert (oracle.n, oracle.right, oracle.wrong, oracle.abstained) == (4, 3, 0, 1)
    assert (oracle.right_none, oracle.lost) == (3, 0)
    assert (memory.right, memory.wrong, memory.abstained, memory.wrong_none) == (0, 4, 0, 4)
    effects = {e.check: e for e in oracle.effects}
    withheld = effects["withhold_all"]
    assert (withheld.fires, withheld.changes, withheld.withheld_right) == (3, 3, 3)
    assert (withheld.right_to_wrong, withheld.wrong_to_right, withheld.withheld_wrong) == \
        (0, 0, 0)
    assert (effects["grounded:flag"].flagged_right, effects["grounded:flag"].fires) == (0, 3)
    effects = {e.check: e for e in memory.effects}
    assert (effects["withhold_all"].withheld_wrong, effects["withhold_all"].withheld_right) == \
        (4, 0)
    assert effects["grounded:flag"].flagged_wrong == 4
    assert all(e.fires == 0 or e.compared == e.fires for e in memory.effects)
    assert not (tmp_path / "oracle" / "plus-grounded-flag.jsonl").exists()  # in the profile
    rows = checks.summary_table([oracle, memory]).splitlines()
    # the capable profile flags each of the from-memory reader's wrong answers (grounded:flag)
    assert rows[2].endswith("| 0 of 3 | — |") and rows[3].endswith("| 4 of 4 (100 %) |")


def test_answered_wrong_is_in_every_answer_table(sleuth, corpus, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    folder, questions = corpus
    out = tmp_path / "run"
    with FakeLLMServer([], reader=FromMemory(golds(questions))) as server:
        monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
        monkeypatch.setenv("SLEUTH_MODEL", "fake-model")
        run = sleuth("eval", "run", "--dataset", str(folder), "--agent", "hybrid",
                     "--workers", "1", "--output", str(out), "--index", str(folder / "idx"))
    assert run.code == 0, run.err
    scored = sleuth("eval", "score", str(out), "--json")
    assert scored.json()["runs"][0]["overall"]["answered_wrong"] == 1.0  # type: ignore[index]
    table = sleuth("eval", "score", str(out)).out
    head, _, first = table.splitlines()[:3]
    cells = dict(zip(head.split(" | "), first.split(" | "), strict=True))
    assert cells["answered wrong"] == "100.0%" and cells["Contain"] == "0.0%"
