"""Agents compose: a variant added in one module runs through every public entry point, and
the wrappers (``--verify``, ``auto``) take it like any built-in."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import sleuth
from sleuth.agent import VARIANTS
from sleuth.llm import OpenAIClient
from sleuth.testing.fake import FakeLLMServer, reply

PEPYS = "pepys-diary-1660.md#0"
QUESTION = "What did Greatorex show Pepys about levers?"
OK = '{"relevance": true, "grounding": true, "adequacy": true, "reason": "ok"}'

# Everything a new variant needs: a runner, and its registration.
SEARCH_ONCE = '''
"""One semantic search, then one answer from its hits."""

from dataclasses import dataclass

from sleuth.agent import ModelRunner, Variant, register_variant
from sleuth.tools import TOOLS, ToolContext
from sleuth.types import Step


@dataclass
class SearchOnce(ModelRunner):
    def run(self, question, *, question_id=None, on_step=None, tracker=None, history=()):
        with self.start(question, question_id=question_id, on_step=on_step,
                        tracker=tracker) as run:
            arguments = {"query": question, "top_k": 2}
            found = TOOLS["semantic_search"].run(ToolContext(self.index, run.tracker), arguments)
            run.record(Step(run.next_step, "semantic_search", arguments, found.text))
            reply = run.chat([{"role": "system", "content": self.system_prompt},
                              {"role": "user", "content": f"{question}\\n\\n{found.text}"}])
            run.finish(reply.content or "", self.index)
        return run.answer


register_variant(Variant("search-once", "one semantic search, then an answer",
                         lambda setup: SearchOnce(**setup.fields()), ("semantic_search",)))
'''


@pytest.fixture()
def search_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The variant above, written as a module and imported (which registers it)."""
    (tmp_path / "search_once.py").write_text(textwrap.dedent(SEARCH_ONCE))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("search_once")
    yield "search-once"
    del VARIANTS["search-once"]
    sys.modules.pop("search_once", None)


@pytest.mark.minilm  # which chunks a semantic search finds is MiniLM's
def test_a_variant_from_one_module_runs_through_the_cli(search_once: str, endpoint, sleuth,
                                                       minilm_sample_index: Path) -> None:
    listed = sleuth("agents", "--json").json()
    assert {"name": search_once, "tools": ["semantic_search"],
            "description": "one semantic search, then an answer"} in listed
    with endpoint([reply(f"Levers trade time for strength [{PEPYS}].\n"
                         f"Relevance: {PEPYS}=0.8")]) as server:
        result = sleuth("ask", QUESTION, "--agent", search_once, "--index",
                        str(minilm_sample_index), "--json")
    assert result.code == 0, result.err
    record = result.json()
    assert record["agent"] == search_once and record["answer"].startswith("Levers trade")
    assert record["llm_calls"] == 1 and record["prompt_tokens"] > 0 and record["seconds"] > 0
    assert [s["tool_name"] for s in record["trajectory"]] == ["semantic_search"]
    assert PEPYS in record["retrieved_ids"]
    assert [(c["chunk_id"], c["relevance"]) for c in record["citations"]] == [(PEPYS, 0.8)]
    system, user = server.requests[0]["messages"]
    assert "e.g. [doc-7#0]" in system["content"]  # the `full` prompt, examples filled in
    assert PEPYS in user["content"]


@pytest.mark.minilm  # which chunks a semantic search finds is MiniLM's
def test_wrappers_take_a_registered_variant(search_once: str, minilm_sample_index: Path) -> None:
    settings = sleuth.Settings.load(a2rag={"verify": True})
    script = [reply(f"Levers trade time for strength [{PEPYS}]."), reply(OK)]
    with FakeLLMServer(script) as server:
        verified = sleuth.ask(QUESTION, index=minilm_sample_index, agent=search_once,
                              settings=settings, llm=OpenAIClient("fake-model", server.base_url))
    assert verified.agent == f"{search_once}+verify" and verified.llm_calls == 2
    assert verified.control is not None and verified.control.outcome == "verified"
    assert verified.control.attempts[0].evidence == [PEPYS]  # what the answer cited

    settings = sleuth.Settings.load(router={"simple_agent": search_once})
    with FakeLLMServer([reply(f"Levers trade time for strength [{PEPYS}].")]) as server:
        routed = sleuth.ask(QUESTION, index=minilm_sample_index, agent="auto", settings=settings,
                            llm=OpenAIClient("fake-model", server.base_url))
    assert routed.route is not None and routed.route.agent == search_once
    assert routed.to_record()["route"]["decision"] == "simple"
    assert routed.agent == search_once and routed.llm_calls == 1
