"""The OpenAI-compatible chat API, through the official ``openai`` client: a real uvicorn
server over the sample index, the scripted LLM behind the agent."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
openai = pytest.importorskip("openai")

from conftest import LiveServer  # noqa: E402
from sleuth import Settings  # noqa: E402
from sleuth.agent.variants import VARIANTS  # noqa: E402
from sleuth.server.chat import REVISED, passage_link  # noqa: E402
from sleuth.server.http import create_app  # noqa: E402
from sleuth.service.service import Service  # noqa: E402
from sleuth.settings import DEFAULT_AGENT  # noqa: E402
from sleuth.testing.fake import call, error, reply  # noqa: E402

PEPYS = "pepys-diary-1660.md#0"
KEY = "secret-key-1"
TENANT = "k-globex"
QUESTION = [{"role": "user", "content": "Who explained levers?"}]


def _script() -> list[Any]:
    """The hybrid agent: its answer from the first passages says they do not say (not
    streamed), so its own search follows the retrieval it starts with, then the answer."""
    return [reply("The passages do not say who explained levers."),
            call("keyword_search", keywords=["Greatorex"]),
            reply(f"Greatorex explained the levers [{PEPYS}].")]


class Chat:
    """The HTTP API of the sample index on 127.0.0.1, and an OpenAI client per key."""

    def __init__(self, folder: Path) -> None:
        self.service = Service(folder, Settings.load(serve={"api_keys": {
            "tests": KEY, "globex": {"key": TENANT, "collection": "globex"}}}))
        self.live = LiveServer(create_app(self.service))

    def client(self, key: str = KEY) -> Any:
        return openai.OpenAI(base_url=f"{self.live.url}/v1", api_key=key, max_retries=0)

    def close(self) -> None:
        self.live.close()
        self.service.close()


@pytest.fixture()
def serve(endpoint: Any, sample_copy: Path) -> Iterator[Any]:
    """``serve(script)``: the scripted LLM, then the API over the sample index using it."""
    opened: list[Any] = []

    def start(script: list[Any]) -> tuple[Chat, Any]:
        llm = endpoint(script)
        opened.append(llm)
        running = Chat(sample_copy)
        opened.append(running)
        return running, llm

    yield start
    for thing in reversed(opened):
        thing.close()


def test_every_agent_is_a_model(serve: Any) -> None:
    chat, _ = serve([])
    models = chat.client().models.list().data
    # the default agent first (a client that picks the first model answers as every face)
    assert [m.id for m in models] == [f"sleuth-{DEFAULT_AGENT}", *(
        f"sleuth-{n}" for n in [*VARIANTS, "auto"] if n != DEFAULT_AGENT)]
    assert {m.owned_by for m in models} == {"sleuth"}
    with pytest.raises(openai.AuthenticationError) as denied:
        chat.client("wrong").models.list()
    assert denied.value.status_code == 401
    assert denied.value.body["message"] == "invalid API key"  # OpenAI's error shape
    assert denied.value.code == "invalid_api_key"


def test_answers_streamed_and_not_with_linked_citations(serve: Any) -> None:
    chat, _ = serve(_script() * 2)
    client = chat.client()
    whole = client.chat.completions.create(model="sleuth-hybrid", messages=QUESTION)
    stream = client.chat.completions.create(
        model="sleuth-hybrid", messages=QUESTION, stream=True,
        stream_options={"include_usage": True})
    chunks = list(stream)
    message = whole.choices[0].message
    assert message.content.startswith(f"Greatorex explained the levers [{PEPYS}].")
    citation = chat.service.index.read([PEPYS]).chunks[0]
    links = re.findall(r"\]\((http[^)]+)\)", message.content)
    assert links and links[0].startswith(
        f"{chat.live.url}/#/passage?doc=pepys-diary-1660.md&chunk=pepys-diary-1660.md%230"
        "&lines=")
    assert citation.doc_id == "pepys-diary-1660.md"
    assert "keyword_search" in message.reasoning_content  # the steps, as reasoning
    assert whole.usage.total_tokens > 0

    deltas = [c.choices[0].delta for c in chunks if c.choices]
    content = "".join(d.content or "" for d in deltas)
    assert content == message.content
    pieces = [d.content for d in deltas if d.content]
    assert len(pieces) > 2  # the answer arrived as tokens, not in one piece
    reasoning = [i for i, d in enumerate(deltas) if getattr(d, "reasoning_content", None)]
    first_text = next(i for i, d in enumerate(deltas) if d.content)
    assert reasoning and max(reasoning) < first_text
    # one reasoning line per step, as it happened: the made retrieval, the answer from it
    # that said the passages do not say (as reasoning, never as the answer's text), the
    # model's search
    lines = [deltas[i].reasoning_content for i in reasoning]
    steps = [line for line in lines if not line.startswith("- reading ")]
    assert len(steps) < len(lines)  # and before each model call, what it reads
    assert steps[0].startswith("- hybrid_search(") and steps[1].startswith("- answer_first(")
    assert "keyword_search" in steps[2] and "do not say" not in content
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


def test_a_streamed_draft_the_agent_withholds_is_marked_and_followed_by_the_answer(
        serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A draft the agent withholds after the model wrote it (the corpus never mentions the
    term asked about) has already streamed: the answer follows it under a mark, and the
    turn sent back as history is the answer alone. (The ``small`` profile withholds it; the
    ``capable`` one, an endpoint's by default, flags it.)"""
    monkeypatch.setenv("SLEUTH_AGENT__PROFILE", "small")
    draft = "The default io_combine_limit is 128kB."
    chat, server = serve([reply(draft), reply(draft), reply("Nothing more.")])
    client = chat.client()
    question = [{"role": "user", "content": "What is the default io_combine_limit?"}]
    final = client.chat.completions.create(model="sleuth-hybrid",
                                           messages=question).choices[0].message.content
    assert final == "The documents do not say: the corpus never mentions 'io_combine_limit'."
    chunks = list(client.chat.completions.create(model="sleuth-hybrid", messages=question,
                                                 stream=True))
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert "".join(d.content or "" for d in deltas) == draft + REVISED + final
    assert any("unseen_terms" in (getattr(d, "reasoning_content", None) or "")
               for d in deltas)
    client.chat.completions.create(model="sleuth-hybrid", messages=[
        *question, {"role": "assistant", "content": draft + REVISED + final},
        {"role": "user", "content": "And anything else?"}])
    history = [m for m in server.requests[-1]["messages"] if m["role"] == "assistant"]
    assert history[0]["content"] == final


def test_passage_link_format() -> None:
    citation = {"doc_id": "notes/a b.pdf", "chunk_id": "notes/a b.pdf#3",
                "where": "page 2, lines 10–14"}
    assert passage_link(citation, "http://h:1") == (
        "http://h:1/#/passage?doc=notes%2Fa%20b.pdf&chunk=notes%2Fa%20b.pdf%233"
        "&lines=10-14&page=2")
    assert passage_link({"doc_id": "d", "chunk_id": "d#0", "where": "line 7"}, "b") == \
        "b/#/passage?doc=d&chunk=d%230&lines=7-7"
    assert passage_link({"doc_id": "d", "chunk_id": ""}, "b") == "b/#/passage?doc=d&chunk="


def test_earlier_turns_are_the_agents_history(serve: Any) -> None:
    chat, server = serve([reply("In 1660 [turn1search1].")])
    earlier = "Greatorex explained the levers."
    messages = [{"role": "system", "content": "You are a pirate."},
                {"role": "user", "content": "Who explained levers?"},
                {"role": "assistant", "content": f"<think>searched</think>{earlier}\n\n"
                 "Sources:\n1. [Diary](http://x/#/passage?doc=d&chunk=d%230)"},
                {"role": "user", "content": [{"type": "text", "text": "In which year?"}]}]
    answer = chat.client().chat.completions.create(model="sleuth-direct",
                                                   messages=messages)
    assert answer.choices[0].message.content.startswith("In 1660")
    sent = server.requests[-1]["messages"]
    assert sent[0]["role"] == "system" and "pirate" not in sent[0]["content"]
    assert sent[1:] == [{"role": "user", "content": "Who explained levers?"},
                        {"role": "assistant", "content": earlier},
                        {"role": "user", "content": "In which year?"}]


def test_a_follow_up_goes_to_the_default_agents_tool_loop_with_its_history(
        serve: Any) -> None:
    """The default agent answers a first question from its first passages in one request
    without tools; a later turn needs the earlier ones, so it goes to the tool loop."""
    chat, server = serve([reply(f"In 1660 [{PEPYS}].")])
    messages = [{"role": "user", "content": "Who explained levers to Pepys?"},
                {"role": "assistant", "content": "Greatorex."},
                {"role": "user", "content": "In which year?"}]
    answer = chat.client().chat.completions.create(model="sleuth-hybrid", messages=messages)
    assert answer.choices[0].message.content.startswith("In 1660")
    (request,) = server.requests
    assert "hybrid_search" in [t["function"]["name"] for t in request["tools"]]
    sent = [m for m in request["messages"] if m["role"] in ("user", "assistant")
            and m.get("content")]
    assert [m["content"] for m in sent[:3]] == ["Who explained levers to Pepys?", "Greatorex.",
                                               "In which year?"]


def test_errors_in_openais_shape(serve: Any) -> None:
    chat, _ = serve([error(400, "the model is unwell"), error(400, "the model is unwell")])
    client = chat.client()
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="gpt-4o", messages=QUESTION)
    assert unknown.value.code == "model_not_found" and "sleuth-auto" in unknown.value.message
    for messages, said in (([{"role": "user", "content": "  "}], "is empty"),
                           ([{"role": "system", "content": "hi"}], "no user message")):
        with pytest.raises(openai.BadRequestError) as bad:
            client.chat.completions.create(model="sleuth-auto", messages=messages)
        assert said in bad.value.message and bad.value.body["type"] == "invalid_request_error"
    with pytest.raises(openai.AuthenticationError):
        chat.client("wrong").chat.completions.create(model="sleuth-auto", messages=QUESTION)
    with pytest.raises(openai.InternalServerError) as failed:
        client.chat.completions.create(model="sleuth-direct", messages=QUESTION)
    assert failed.value.status_code == 502 and "unwell" in failed.value.message
    with pytest.raises(openai.APIError, match="unwell"):  # inside a begun stream
        list(client.chat.completions.create(model="sleuth-direct", messages=QUESTION,
                                            stream=True))


def test_a_tenant_cannot_get_another_tenants_document_cited(serve: Any) -> None:
    # (with retrieval: an agent cites only what its run retrieved, as each key reads it)
    chat, _ = serve([reply(f"Levers [{PEPYS}].")] * 2)
    admin = chat.client().chat.completions.create(model="sleuth-hybrid",
                                                  messages=QUESTION)
    tenant = chat.client(TENANT).chat.completions.create(model="sleuth-hybrid",
                                                         messages=QUESTION)
    assert "doc=pepys-diary-1660.md" in admin.choices[0].message.content
    assert "#/passage" not in tenant.choices[0].message.content  # cited id, nothing linked
