"""The document agents (`docs`; `agenticrag`, the published loop) on filings (PDFs generated
from tests/data/filings.json), under the scripted endpoint: context management at 90 % / 100 %
of the budget, reference-id citations with relevance, sessions and chat."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from tests.conftest import ACME, GLOBEX

import sleuth
from sleuth.service.sessions import Session
from sleuth.testing.fake import call, reply


@pytest.fixture()
def filings(filings_index: Path, tmp_path: Path) -> str:
    folder = tmp_path / "idx"
    shutil.copytree(filings_index, folder)
    return str(folder)


def usage(prompt_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": 20,
            "total_tokens": prompt_tokens + 20}


def test_context_manager_warns_at_90_and_summarizes_at_100_percent(
        endpoint, sleuth, filings: str, monkeypatch):
    monkeypatch.setenv("SLEUTH_AGENT__TOKEN_BUDGET", "20000")
    monkeypatch.setenv("SLEUTH_AGENT__OPEN_WINDOW", "20")
    server = endpoint([
        {**call("search", queries=["Acme Stores net sales", "Globex shareholder votes"]),
         "usage": usage(1000)},
        {**call("open", ref="turn1search1", line=0), "usage": usage(18_500)},  # -> over 90 %
        {**call("find", ref="turn1search2", patterns=["votes"]), "usage": usage(19_990)},
        call("summarize", notes="Acme net sales were $3.2 billion [turn1search1].",
             keep_refs=["turn1search1"]),  # forced at 100 %
        reply("Net sales were $3.2 billion [turn1search1].\nRelevance: turn1search1=0.9"),
    ])
    with server:
        result = sleuth("ask", "What were Acme Stores' fourth quarter net sales?", "--agent",
                        "agenticrag", "--index", filings, "--json")
    assert result.code == 0, result.err
    record = result.json()
    assert [s["tool_name"] for s in record["trajectory"]] == ["search", "open", "find",
                                                              "summarize"]
    warning, summary = record["context_events"]
    assert warning["event"] == "warning" and warning["step"] == 2
    assert 18_000 <= warning["tokens"] < 20_000
    assert summary["event"] == "summarize" and summary["forced"] is True
    assert "turn1search1" in summary["kept"] and "turn1search2" in summary["dropped"]
    assert summary["tokens_after"] < 20_000 <= summary["tokens_before"]
    # the warning reached the model before its third call
    third = server.requests[2]["messages"]
    assert "Context note" in third[-1]["content"] and "(9" in third[-1]["content"]
    # the forced call offered only summarize and required a tool call
    forced = server.requests[3]
    assert forced["tool_choice"] == "required"
    assert [t["function"]["name"] for t in forced["tools"]] == ["summarize"]
    assert "context budget is full" in forced["messages"][-1]["content"]
    # after summarizing: kept output verbatim, the rest reduced to stubs naming their ids
    tools = [m["content"] for m in server.requests[4]["messages"] if m["role"] == "tool"]
    search_out, open_out, find_out, summary_out = tools
    assert "[turn1search1] " in search_out and "[removed by summarize: turn1search2]" in \
        search_out
    assert open_out.startswith("[turn1search1]") and "Viewing lines [0–19]" in open_out
    assert find_out == "[removed by summarize: turn1search2]"
    assert summary_out.startswith("Notes recorded. Keeping the output of: turn1search1")
    # the notes themselves stay in the conversation
    assert any("Acme net sales were $3.2 billion" in str(m.get("tool_calls"))
               for m in server.requests[4]["messages"] if m["role"] == "assistant")
    assert record["answer"].startswith("Net sales were $3.2 billion")
    assert record["chunks_read_ids"]  # the opened window counts as read


def test_a_summary_written_as_text_still_frees_the_context(endpoint, filings: str):
    server = endpoint([
        {**call("search", queries=["Acme Stores net sales"]), "usage": usage(1_000_000)},
        reply("Notes: net sales $3.2 billion in turn1search1."),  # ignores the forced call
        reply("Net sales were $3.2 billion [turn1search1]."),
    ])
    settings = sleuth.Settings.load(agent={"token_budget": 1_000_000})
    with server:
        answer = sleuth.ask("Acme net sales?", index=filings, agent="agenticrag", settings=settings)
    events = answer.context_events
    assert events[-1]["event"] == "summarize" and "turn1search1" in events[-1]["kept"]
    assert answer.trajectory[-1].tool_name == "summarize"
    assert answer.citations[0].ref == "turn1search1" and answer.forced is None


def test_citations_of_reference_ids_rank_documents_by_relevance(endpoint, filings: str):
    server = endpoint([
        call("search", queries=["Globex annual meeting votes", "Acme net sales"]),
        reply("Net sales rose 15.2% [turn1search2]; see also [turn1search1].\n"
              "Relevance: turn1search1=0.3, turn1search2=0.9"),
    ])
    with server:
        answer = sleuth.ask("How much did Acme's net sales grow?", index=filings,
                            agent="agenticrag")
    by_ref = {c.ref: c for c in answer.citations}
    assert set(by_ref) == {"turn1search1", "turn1search2"}
    acme = next(c for c in answer.citations if c.doc_id == ACME)
    assert acme.relevance == 0.9 and acme.where and acme.where.startswith("page ")
    assert answer.document_ranking == [ACME, GLOBEX]
    record = answer.to_record()
    assert record["document_ranking"] == [ACME, GLOBEX]
    assert {c["ref"] for c in record["citations"]} == {"turn1search1", "turn1search2"}


def test_all_agent_offers_every_tool(endpoint, filings: str):
    server = endpoint([reply("No tools needed.")])
    with server:
        sleuth.ask("hi", index=filings, agent="all")
    offered = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert offered == ["keyword_search", "semantic_search", "chunk_read", "search", "find",
                       "open", "summarize"]


def test_follow_up_reuses_earlier_references_and_the_session_persists(endpoint,
                                                                      filings: str):
    server = endpoint([
        call("search", queries=["Acme Stores fourth quarter net sales"]),
        reply("Net sales were $3.2 billion [turn1search1]."),
        call("find", ref="turn1search1", patterns=["operating income"]),  # no new search
        reply("Operating income was reported too [turn1search1]."),
    ])
    with server, sleuth.Index.open(filings) as index:
        session = Session(index, agent="agenticrag", session_id="demo")
        first = session.ask("What were Acme's Q4 net sales?")
        second = session.ask("And its operating income?")
    assert first.citations[0].ref == "turn1search1"
    assert second.trajectory[0].tool_name == "find" and second.trajectory[0].error is None
    assert "operating income" in second.trajectory[0].tool_output.lower()
    follow_up = server.requests[2]["messages"]
    assert follow_up[0]["role"] == "system"
    assert [m["content"] for m in follow_up if m["role"] == "user"] == [
        "What were Acme's Q4 net sales?", "And its operating income?"]
    assert any("[turn1search1]" in str(m.get("content")) for m in follow_up
               if m["role"] == "tool")  # the earlier search output is still visible
    with sleuth.Index.open(filings) as index:
        resumed = Session.open(index, "demo")
        assert len(resumed.turns) == 2 and "turn1search1" in resumed.tracker.refs
        assert [s["id"] for s in Session.saved(index)] == ["demo"]
    assert (Path(filings) / "sessions" / "demo.json").is_file()


def test_chat_answers_each_line_and_resumes(endpoint, sleuth, filings: str, monkeypatch):
    server = endpoint([
        call("search", queries=["Globex shareholder votes"]),
        reply("The proposals passed [turn1search1]."),
        reply("Yes, as said before [turn1search1]."),
        reply("Still yes [turn1search1]."),
    ])
    with server:
        monkeypatch.setattr("sys.stdin", io.StringIO("Did the proposals pass?\n\nSure?\n"))
        first = sleuth("chat", "--session", "s1", "--agent", "docs", "--index", filings,
                       "--json")
        monkeypatch.setattr("sys.stdin", io.StringIO("Really?\n/exit\nignored\n"))
        resumed = sleuth("chat", "--session", "s1", "--index", filings)
    assert first.code == 0, first.err
    answers = [line for line in first.out.splitlines() if line.startswith("{")]
    assert len(answers) == 2
    assert "new session s1" in first.err
    assert resumed.code == 0 and "Still yes" in resumed.out
    assert "2 earlier turns" in resumed.err and server.remaining == 0
    listing = sleuth("chat", "--list", "--index", filings, "--json").json()
    assert [(s["id"], s["turns"]) for s in listing] == [("s1", 3)]


def test_docs_agent_starts_from_a_search_for_the_whole_question(endpoint, filings: str):
    """The default `docs` agent is given its first search (the whole question, as the
    hybrid agent is given hybrid_search), written as the model's own first call; the
    published AgenticRAG loop, where the model makes every search, is `agenticrag`."""
    question = "What were Acme Stores' net sales in the fourth quarter of fiscal 2022?"
    server = endpoint([
        reply("Net sales were $3.2 billion [turn1search1].\nRelevance: turn1search1=0.9"),
    ])
    with server:
        answer = sleuth.ask(question, index=filings, agent="docs")
    first = answer.trajectory[0]
    assert first.tool_name == "search"
    assert first.tool_input == {"queries": [question], "top_k": 5}
    sent = server.requests[0]["messages"]
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "search"
    assert sent[-1]["role"] == "tool" and sent[-1]["content"].startswith("Search results")
    assert "[turn1search1]" in sent[-1]["content"]
    assert answer.citations[0].ref == "turn1search1"
    assert "acme" in answer.citations[0].doc_id.lower()
