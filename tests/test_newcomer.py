"""What a new user meets first, through the faces they meet it on (issue 62, Must 6): no
citation of a chunk the run did not retrieve, an empty index said so without a model, scores
that mean something, progress with a total and a time, one default agent on every face, and
internals shown as what they are."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sleuth.testing.fake import FakeLLMServer, reply

REPO = Path(__file__).resolve().parents[1]


def _hashed(monkeypatch: pytest.MonkeyPatch, server: FakeLLMServer) -> None:
    """Point Sleuth at the scripted model, its hashed embeddings as the embedder."""
    for key, value in {"SLEUTH_BASE_URL": server.base_url, "SLEUTH_MODEL": "scripted",
                       "SLEUTH_EMBED__MODEL": "openai:hashed",
                       "SLEUTH_EMBED__BASE_URL": server.base_url}.items():
        monkeypatch.setenv(key, value)


# -- a batch interrupted ---------------------------------------------------------------------


def _questions(n: int) -> list[dict[str, Any]]:
    return [{"id": f"q{i}", "question": f"Where was person {i} born?", "answer": f"Town {i}",
             "supporting_passage_ids": [f"p{i}"]} for i in range(n)]


def _eval_process(tmp_path: Path, server: FakeLLMServer) -> subprocess.Popen[str]:
    data = tmp_path / "set"
    data.mkdir()
    (data / "corpus.json").write_text(json.dumps([
        {"id": f"p{i}", "title": f"Person {i}", "text": f"Person {i} was born in Town {i}."}
        for i in range(6)]))
    (data / "questions.json").write_text(json.dumps(_questions(6)))
    env = {**os.environ, "SLEUTH_BASE_URL": server.base_url, "SLEUTH_MODEL": "scripted",
           "SLEUTH_EMBED__MODEL": "openai:hashed", "SLEUTH_EMBED__BASE_URL": server.base_url,
           "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "sleuth", "eval", "run", "--dataset", str(data), "--workers",
         "2", "--output", str(tmp_path / "out"), "--index", str(tmp_path / "idx"),
         "--no-llm-cache"], env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, cwd=tmp_path, preexec_fn=_ctrl_c_delivered)


def _ctrl_c_delivered() -> None:
    """Ctrl-C as a terminal delivers it, even where the test run was started with SIGINT
    ignored (a background job of a shell without job control, nohup): Python keeps an
    inherited SIG_IGN instead of raising KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait(check: Any, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.slow  # signals and delays, through a process of its own
@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_in_a_batch_saves_what_is_done_and_says_how_to_go_on(tmp_path: Path,
                                                                    presses: int) -> None:
    """The first Ctrl-C lets the questions in flight finish and saves them; a second stops
    at once and still keeps everything finished; what it says is true (the run goes on with
    --resume, not with the same command)."""
    turns = [{**reply("Town 0 [set-p0#0]."), "delay": 1.5 if presses == 1 else 6}
             for _ in range(12)]
    with FakeLLMServer(turns) as server:
        process = _eval_process(tmp_path, server)
        _wait(lambda: len(server.requests) >= 2)  # two questions in flight
        process.send_signal(signal.SIGINT)
        if presses == 2:
            time.sleep(1.0)
            process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    lines = (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()
    assert process.returncode == 130, err
    assert "Traceback" not in err
    if presses == 1:  # the two in flight finished and were saved; none started after
        assert len(lines) == 2 and len(server.requests) == 2, err
        assert "2 in flight" in err
    else:  # stopped at once: the two in flight were dropped
        assert lines == [] and len(server.requests) == 2, err
    assert f"{len(lines)} of 6 questions saved" in err and "--resume" in err
    assert "the same command resumes" not in err


# -- a small manual, indexed with the scripted model's hashed embeddings ----------------------

PAGES = {
    "limits.md": "# Limits\n\nA table holds at most 2000 columns by default. The "
                 "SQLITE_MAX_COLUMN option raises the limit of columns.\n",
    "pragmas.md": "# Pragmas\n\nThe busy_timeout pragma sets how long a connection waits on "
                  "a locked database, in milliseconds.\n",
    "types.md": "# Types\n\nA column of INTEGER affinity stores whole numbers; TEXT stores "
                "strings.\n",
    "vacuum.md": "# Vacuum\n\nVACUUM rebuilds the database file, repacking it into a minimal "
                 "amount of disk space.\n",
    "backup.md": "# Backup\n\nThe online backup API copies a live database page by page.\n",
    "triggers.md": "# Triggers\n\nA trigger runs SQL statements when a row is inserted, "
                   "updated or deleted.\n",
    "views.md": "# Views\n\nA view is a named query; reading it runs the query.\n",
    "json.md": "# JSON\n\nThe json_extract function reads a value out of a JSON text.\n",
}
IDS = [f"{name}#0" for name in PAGES]
QUESTION = "How many columns can a table hold?"


@pytest.fixture()
def model(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Start the scripted model (``model(script, reader=None)``) and point Sleuth at it."""
    started: list[FakeLLMServer] = []

    def start(script: list[Any], reader: Any = None) -> FakeLLMServer:
        server = FakeLLMServer(script, reader=reader)
        _hashed(monkeypatch, server)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


def _manual(tmp_path: Path, sleuth: Any, pages: dict[str, str] = PAGES) -> str:
    docs = tmp_path / "manual"
    docs.mkdir()
    for name, text in pages.items():
        (docs / name).write_text(text)
    index = str(tmp_path / "idx")
    built = sleuth("index", str(docs), "--index", index)
    assert built.code == 0, built.err
    return index


def _shown_text(body: dict[str, Any]) -> str:
    return " ".join(str(m.get("content")) for m in body["messages"] if m["role"] != "system")


# -- 1. citations of what the run retrieved, scores that mean something -----------------------


def test_a_citation_of_a_chunk_the_run_never_retrieved_is_no_citation(
        model: Any, sleuth: Any, tmp_path: Path) -> None:
    """The model cites the passage it was shown, a real chunk it was not shown and the
    prompt's example id: only the first stays, in the citations and in the text; a check
    step says what was taken out, and the CLI prints it as a check."""
    hidden: list[str] = []

    def answer(body: dict[str, Any]) -> Any:
        text = _shown_text(body)
        hidden.append(next(i for i in IDS if i not in text))
        return reply(f"A table holds at most 2000 columns [limits.md#0] [{hidden[-1]}] "
                     "[doc-7#0].\nRelevance: limits.md#0=0.9, doc-7#0=0.8")

    model([], reader=answer)
    index = _manual(tmp_path, sleuth)
    record = sleuth("ask", QUESTION, "--index", index, "--json").json()
    assert [c["chunk_id"] for c in record["citations"]] == ["limits.md#0"]
    assert record["answer"].startswith("A table holds at most 2000 columns [limits.md#0].")
    assert hidden[-1] not in record["answer"] and "doc-7#0" not in record["answer"]
    checks = [s for s in record["trajectory"] if s["kind"] == "check"]
    assert checks[-1]["tool_name"] == "citations"
    assert checks[-1]["tool_input"] == {"removed": [hidden[-1], "doc-7#0"]}
    shown = sleuth("ask", QUESTION, "--index", index)
    assert shown.code == 0, shown.err
    assert "  check: citations — the answer cited" in shown.err
    assert "doc-7#0" not in shown.out


def test_a_citation_shows_the_score_its_search_found_it_with(
        model: Any, sleuth: Any, tmp_path: Path) -> None:
    """Each citation carries the score hybrid_search showed the model for its chunk
    (relative to the search's best hit: the best is 1), not a constant; where the model
    states no relevance, none is made up."""
    shown: list[str] = []

    def answer(body: dict[str, Any]) -> Any:  # the best passage, and the third shown
        shown[:] = re.findall(r"=== chunk (\S+) \(", _shown_text(body))
        return reply(f"A table holds at most 2000 columns [{shown[0]}]; see also "
                     f"[{shown[2]}].")

    model([], reader=answer)
    index = _manual(tmp_path, sleuth)
    record = sleuth("ask", QUESTION, "--index", index, "--json").json()
    search = record["trajectory"][0]
    assert search["tool_name"] == "hybrid_search" and shown[0] == "limits.md#0"
    scores = {c["chunk_id"]: c["score"] for c in record["citations"]}
    assert list(scores) == [shown[0], shown[2]]
    for chunk_id, score in scores.items():  # as the search's output showed it
        assert f"=== chunk {chunk_id} (document {chunk_id[:-2]}, score: {score:g};" in \
            search["tool_output"]
    assert scores[shown[0]] == 1.0 and 0 < scores[shown[2]] < 1.0
    assert all(c["relevance"] is None for c in record["citations"])
    out = sleuth("ask", QUESTION, "--index", index).out
    assert "(found by hybrid_search, score 1.00)" in out
    assert f"score {scores[shown[2]]:.2f})" in out and "relevance" not in out


# -- 1b. an empty index, on every face --------------------------------------------------------

NO_DOCUMENTS = "The index holds no documents: index some with `sleuth index PATH`."


def test_an_empty_index_is_said_without_a_model_on_the_cli(model: Any, sleuth: Any,
                                                           tmp_path: Path) -> None:
    from sleuth import Index, Settings

    server = model([])  # any request to the model would fail: none is made
    with Index.open(tmp_path / "empty", settings=Settings.load(), create=True):
        pass
    asked = sleuth("ask", "How many columns can a table hold?", "--index",
                   str(tmp_path / "empty"))
    assert asked.code == 1 and asked.out.strip().startswith(NO_DOCUMENTS), asked.err
    assert "[" not in asked.out.replace("`sleuth index PATH`", "")  # no citation at all
    record = sleuth("ask", "How many columns?", "--index", str(tmp_path / "empty"),
                    "--json").json()
    assert record["answer"] == NO_DOCUMENTS and record["citations"] == []
    assert record["llm_calls"] == 0 and record["forced"] == "no_documents"
    assert server.requests == []


class _Served:
    """The HTTP API of an index on 127.0.0.1 with an admin key and a tenant key."""

    def __init__(self, folder: Path, tmp_path: Path) -> None:
        from conftest import LiveServer
        from sleuth import Settings
        from sleuth.server.http import create_app
        from sleuth.service.service import Service

        keys = tmp_path / "keys.json"
        keys.write_text(json.dumps({"root": "k-root",
                                    "acme": {"key": "k-acme", "collection": "acme"}}))
        self.service = Service(folder, Settings.load(serve={"api_keys": str(keys)}))
        self.live = LiveServer(create_app(self.service))

    def client(self, key: str = "k-root") -> Any:
        import httpx

        return httpx.Client(base_url=self.live.url, timeout=60,
                            headers={"Authorization": f"Bearer {key}"})

    def close(self) -> None:
        self.live.close()
        self.service.close()


def _events(client: Any, body: dict[str, Any]) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    with client.stream("POST", "/v1/ask/stream", json=body) as response:
        assert response.status_code == 200
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[6:])))
    return events


def _chunks(client: Any, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` deltas of a streamed chat completion."""
    deltas = []
    with client.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as got:
        assert got.status_code == 200
        for line in got.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                deltas += [c["delta"] for c in json.loads(line[6:])["choices"]]
    return deltas


def _mcp_ask(service: Any, arguments: dict[str, Any]) -> Any:
    import anyio
    from mcp import Client

    from sleuth.server.mcp import build_mcp

    async def main() -> Any:
        async with Client(build_mcp(service)) as client:
            return await client.call_tool("ask", arguments)

    return anyio.run(main)


def test_an_empty_index_is_said_without_a_model_on_every_served_face(model: Any,
                                                                     tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from sleuth import Index, Settings

    server = model([])
    with Index.open(tmp_path / "empty", settings=Settings.load(), create=True):
        pass
    served = _Served(tmp_path / "empty", tmp_path)
    question = {"question": "How many columns can a table hold?"}
    try:
        with served.client() as admin, served.client("k-acme") as tenant:
            assert admin.post("/v1/ask", json=question).json()["answer"] == NO_DOCUMENTS
            assert tenant.post("/v1/ask", json=question).json()["answer"] == \
                "Your collection holds no documents: add some first."
            assert _events(admin, question)[-1][1]["answer"] == NO_DOCUMENTS
            chat = {"model": f"sleuth-{_default()}",
                    "messages": [{"role": "user", "content": question["question"]}]}
            said = admin.post("/v1/chat/completions", json=chat).json()
            assert said["choices"][0]["message"]["content"] == NO_DOCUMENTS
            streamed = "".join(d.get("content") or "" for d in _chunks(admin, chat))
            assert streamed == NO_DOCUMENTS
        got = _mcp_ask(served.service, question)
        assert not got.is_error and got.structured_content["answer"] == NO_DOCUMENTS
    finally:
        served.close()
    assert server.requests == []


def _default() -> str:
    from sleuth.settings import DEFAULT_AGENT

    return DEFAULT_AGENT


# -- 2. a sense of time -----------------------------------------------------------------------


def test_indexing_progress_has_a_total_a_percentage_and_the_time_left(
        model: Any, sleuth: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sleuth.cli.console import Bar

    monkeypatch.setattr(Bar, "PLAIN_EVERY", 0.0)  # a plain line at every step
    model([])
    docs = tmp_path / "manual"
    docs.mkdir()
    for name, text in PAGES.items():
        (docs / name).write_text(text)
    built = sleuth("index", str(docs), "--index", str(tmp_path / "idx"))
    assert built.code == 0, built.err
    lines = [line for line in built.err.splitlines() if line.startswith("indexing: ")]
    assert any(re.match(r"indexing: [1-7] of 8 files \(\d+%\) in \d+ s \(.*, about \d+ s "
                        r"left\)", line) for line in lines), built.err
    assert lines[-1].startswith("indexing: 8 of 8 files (100%) in ")


def test_a_watched_answer_says_what_the_model_reads_and_for_how_long_here(
        model: Any, sleuth: Any, tmp_path: Path) -> None:
    """Before the model reads, the CLI says what and, once a call was measured on this
    machine, about how long; a chat client gets it as reasoning, never in the answer; the
    app's stream has it as an event the app shows."""
    model([], reader=lambda body: reply("A table holds at most 2000 columns [limits.md#0]."))
    index = _manual(tmp_path, sleuth)
    first = sleuth("ask", QUESTION, "--index", index)
    assert first.code == 0, first.err
    assert re.search(r"\n  reading \d+ passages \([\d,]+ tokens\) \.\.\.", first.err), first.err
    second = sleuth("ask", QUESTION, "--index", index)  # now measured here
    assert re.search(r"\n  reading \d+ passages \(about \d+ s here\) \.\.\.", second.err)
    assert "about a minute" not in first.err + second.err
    served = _Served(Path(index), tmp_path)
    try:
        with served.client() as admin:
            events = _events(admin, {"question": QUESTION})
            chat = {"model": f"sleuth-{_default()}",
                    "messages": [{"role": "user", "content": QUESTION}]}
            deltas = _chunks(admin, chat)
            page = admin.get("/app/app.js").text
    finally:
        served.close()
    progress = [data for name, data in events if name == "progress"]
    assert progress and re.fullmatch(r"reading \d+ passages \(about \d+ s here\)",
                                     progress[0]["text"])
    assert progress[0]["seconds"] is not None and progress[0]["tokens"] > 0
    thinking = "".join(d.get("reasoning_content") or "" for d in deltas)
    content = "".join(d.get("content") or "" for d in deltas)
    assert re.search(r"- reading \d+ passages \(about \d+ s here\)\n", thinking)
    assert content.startswith("A table holds at most 2000 columns") and "reading" not in content
    assert 'name === "progress"' in page and "showReading(reading, data)" in page


# -- 3. one default agent on every face -------------------------------------------------------


def test_every_face_answers_with_the_same_default_agent(model: Any, sleuth: Any,
                                                        tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mcp")
    model([], reader=lambda body: reply("A table holds at most 2000 columns [limits.md#0]."))
    index = _manual(tmp_path, sleuth)
    agents = {"cli ask": sleuth("ask", QUESTION, "--index", index, "--json").json()["agent"]}
    monkeypatch.setattr(sys, "stdin", __import__("io").StringIO(f"{QUESTION}\n"))
    chat_cli = sleuth("chat", "--index", index, "--json")
    assert f"({_default()} agent, new session)" in chat_cli.err
    agents["cli chat"] = json.loads(chat_cli.out)["agent"]
    served = _Served(Path(index), tmp_path)
    try:
        with served.client() as admin:
            agents["/v1/ask"] = admin.post("/v1/ask", json={"question": QUESTION}).json()["agent"]
            agents["/v1/ask/stream"] = _events(admin, {"question": QUESTION})[-1][1]["agent"]
            first_model = admin.get("/v1/models").json()["data"][0]["id"]
            said = admin.post("/v1/chat/completions", json={
                "model": first_model, "messages": [{"role": "user", "content": QUESTION}]})
            assert said.status_code == 200
            agents["chat"] = first_model.removeprefix("sleuth-")
            listed = admin.get("/v1/agents").json()
            agents["app"] = next(a["name"] for a in listed if a["default"])
            page, script = admin.get("/").text, admin.get("/app/app.js").text
        agents["mcp"] = _mcp_ask(served.service, {"question": QUESTION}).structured_content[
            "agent"]
    finally:
        served.close()
    assert set(agents.values()) == {_default()}, agents
    assert listed[0]["name"] == _default() and listed[0]["label"] == "Default (recommended)"
    # the app picks what the server says is the default, never a name of its own
    assert 'value="auto"' not in page and "a.default" in script and '"auto"' not in script


# -- 4. internals shown as what they are ------------------------------------------------------


def test_checks_are_shown_as_checks_and_the_summary_counts_what_was_printed(
        model: Any, sleuth: Any, tmp_path: Path) -> None:
    """The model cites a passage that does not hold its answer: the capable profile flags
    what the model cited (grounded), cite_holder re-cites the one that does, and the CLI
    shows each as a check, not a tool call; the closing line counts the steps and checks it
    printed."""
    model([], reader=lambda body: reply("A table holds at most 2000 columns [types.md#0]."))
    index = _manual(tmp_path, sleuth)
    shown = sleuth("ask", QUESTION, "--index", index)
    assert shown.code == 0, shown.err
    assert shown.out.startswith("A table holds at most 2000 columns [limits.md#0].")
    assert "  check: cite_holder — the chunks the answer cites do not hold its words" in \
        shown.err
    assert "  check: grounded — " in shown.err
    assert not re.search(r"step \d+: (cite_holder|grounded)\(", shown.err)
    steps = len(re.findall(r"^  step \d+: ", shown.err, re.M))
    checks = len(re.findall(r"^  check: ", shown.err, re.M))
    assert steps == 1 and checks == 3, shown.err  # grounded, its flag, cite_holder
    assert "(1 step and 3 checks, 1 LLM call, " in shown.err.splitlines()[-1]


def test_status_reads_as_text(model: Any, sleuth: Any, tmp_path: Path) -> None:
    model([])
    index = _manual(tmp_path, sleuth)
    for command in (("status", "--index", index), ("llm", "status")):
        said = sleuth(*command)
        assert said.code == 0, said.err
        assert not re.search(r"[{}\[\]]", said.out), said.out  # no dict or list reprs
        assert sleuth(*command, "--json").json()  # the record stays machine-readable
    assert "embedder openai:hashed (64 dimensions" in sleuth("status", "--index", index).out


def test_the_app_offers_agents_by_plain_names(model: Any, sleuth: Any, tmp_path: Path) -> None:
    model([])
    served = _Served(Path(_manual(tmp_path, sleuth)), tmp_path)
    try:
        with served.client() as admin:
            listed = {a["name"]: a for a in admin.get("/v1/agents").json()}
            script = admin.get("/app/app.js").text
    finally:
        served.close()
    assert listed["naive-rag"]["label"] == "Plain search then answer"
    for agent in listed.values():  # a plain name and one line each, the research name apart
        assert agent["label"] and agent["label"] != agent["name"]
        assert agent["summary"] and "\n" not in agent["summary"] and len(agent["summary"]) < 90
    assert "a.label" in script and 'el("small", { class: "research" }, agent.name)' in script


def test_search_with_a_mistyped_subcommand_suggests_it(model: Any, sleuth: Any,
                                                       tmp_path: Path) -> None:
    model([])
    index = _manual(tmp_path, sleuth)
    typo = sleuth("search", "keywrod", "columns", "--index", index)
    assert typo.code == 2
    assert "no such subcommand 'keywrod' (did you mean 'keyword'?)" in typo.err
    assert sleuth("search", "columns", "table", "--index", index).code == 0  # still a query


FACTS = "Greatorex showed Pepys how levers work and what happens to them over time."


def test_the_quickstart_answer_cites_the_passage_that_holds_it(
        model: Any, sleuth: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The small model's answer as the README once quoted it: the name alone, citing the
    diary's chunk 4, with the facts under it; its facts become the answer (past_echo), and
    the citation goes to chunk 0, the passage that holds them (cite_holder)."""
    monkeypatch.setenv("SLEUTH_AGENT__PROFILE", "small")
    monkeypatch.setenv("SLEUTH_LLM__TOOL_MODE", "json")
    wrong = "pepys-diary-1660.md#4"
    echo = json.dumps({"facts": FACTS, "answer": f"Greatorex [{wrong}]", "sources": [wrong]})
    again = json.dumps({"facts": FACTS, "answer": f"{FACTS} [{wrong}]", "sources": [wrong]})
    model([{"content": echo}, *({"content": again} for _ in range(4))])
    tour = sleuth("quickstart", "--index", str(tmp_path / "qs"))
    assert tour.code == 0, tour.err
    answer = tour.out[tour.out.index("Greatorex showed Pepys"):]
    assert answer.startswith(f"{FACTS[:-1]} [pepys-diary-1660.md#0].")
    assert wrong not in answer
    assert "  [pepys-diary-1660.md#0] " in answer

