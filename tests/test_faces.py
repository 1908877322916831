"""One tool definition, every face: a tool registered here (a small typed function) is at
once a CLI command, an HTTP route and an MCP tool, with the same schema and limits on each."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import pytest
from pydantic import Field

pytest.importorskip("fastapi")
pytest.importorskip("mcp")

from fastapi.testclient import TestClient  # noqa: E402
from mcp import Client  # noqa: E402

from sleuth import Settings  # noqa: E402
from sleuth.errors import RequestError  # noqa: E402
from sleuth.server.http import create_app  # noqa: E402
from sleuth.server.mcp import build_mcp  # noqa: E402
from sleuth.service.service import Service  # noqa: E402
from sleuth.service.sessions import Session  # noqa: E402
from sleuth.tools import QUERY, TOOLS, TOP_K, ToolContext, ToolResult, register, tool  # noqa: E402


@tool
def word_titles(
    ctx: ToolContext,
    words: Annotated[list[str], Field(min_length=1, max_length=8), QUERY],
    top_k: Annotated[int, Field(ge=1, le=4), TOP_K] = 2,
    order: Literal["score", "title"] = "score",
) -> ToolResult:
    """The titles of the chunks that contain the words, best first.

    Args:
        words: Words to look for.
        top_k: How many titles (1-4).
        order: "score" (best first) or "title" (alphabetical).
    """
    hits = ctx.index.keyword_search(words, top_k=top_k)
    rows = [{"chunk_id": h.chunk_id, "title": h.title} for h in hits]
    if order == "title":
        rows.sort(key=lambda r: r["title"])
    return ToolResult("\n".join(r["title"] for r in rows) or "nothing", {"titles": rows})


ARGUMENTS = {"words": ["Greatorex"], "top_k": 1, "order": "score"}


@pytest.fixture()
def registered() -> Iterator[None]:
    register(word_titles)
    yield
    del TOOLS["word_titles"]


@pytest.fixture()
def service(sample_copy: Path) -> Iterator[Service]:
    service = Service(sample_copy, Settings.load())
    yield service
    service.close()


def _cli_data(result: Any) -> dict[str, Any]:
    data = result.json()
    assert data["tool"] == "word_titles" and data["arguments"] == ARGUMENTS
    return {k: v for k, v in data.items() if k not in ("tool", "arguments", "retrieved_tokens")}


def test_a_registered_tool_is_a_cli_command(registered: None, sleuth: Any,
                                            sample_copy: Path) -> None:
    listed = sleuth("tool", "--help").out
    assert "word_titles" in listed
    usage = sleuth("tool", "word_titles", "--help").out
    assert "WORDS..." in usage and "--top-k INTEGER RANGE" in usage
    assert "[score|title]" in usage and "How many titles (1-4)." in usage
    result = sleuth("tool", "word_titles", "Greatorex", "--top-k", "1", "--index",
                    str(sample_copy), "--json")
    assert result.code == 0, result.err
    titles = _cli_data(result)["titles"]
    assert [t["chunk_id"] for t in titles] == ["pepys-diary-1660.md#0"]
    text = sleuth("tool", "word_titles", "Greatorex", "levers", "--order", "title", "--index",
                  str(sample_copy)).out
    assert titles[0]["title"] in text
    assert sleuth("tool", "word_titles", "x", "--top-k", "5", "--index",
                  str(sample_copy)).code == 2  # the argument's own range, from its Field
    six = sleuth("tool", "word_titles", *"abcdef", "--index", str(sample_copy))
    assert six.code == 1 and "at most 5 items" in six.err  # the serving limit, from QUERY


def test_a_registered_tool_is_an_http_route(registered: None, service: Service, sleuth: Any,
                                            sample_copy: Path) -> None:
    client = TestClient(create_app(service, auth=False), base_url="http://localhost")
    got = client.post("/v1/tools/word_titles", json=ARGUMENTS)
    assert got.status_code == 200, got.text
    cli = sleuth("tool", "word_titles", "Greatorex", "--top-k", "1", "--index",
                 str(sample_copy), "--json")
    assert got.json()["data"] == _cli_data(cli)
    over = client.post("/v1/tools/word_titles", json={"words": list("abcdef")})
    assert over.status_code == 400 and "at most 5" in over.json()["detail"]
    listed = {t["name"]: t for t in client.get("/v1/tools").json()}
    assert listed["word_titles"]["input_schema"] == word_titles.parameters
    paths = client.get("/openapi.json").json()["paths"]
    assert "/v1/tools/word_titles" in paths  # its own operation, not a generic route
    assert "/v1/tools/{name}" not in paths


def test_a_registered_tool_is_an_mcp_tool(registered: None, service: Service, sleuth: Any,
                                          sample_copy: Path) -> None:
    async def main() -> Any:
        async with Client(build_mcp(service)) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert listed["word_titles"].input_schema == word_titles.parameters
            assert listed["word_titles"].description == word_titles.description
            return await client.call_tool("word_titles", ARGUMENTS)

    got = anyio.run(main)
    assert not got.is_error
    cli = sleuth("tool", "word_titles", "Greatorex", "--top-k", "1", "--index",
                 str(sample_copy), "--json")
    assert got.structured_content == _cli_data(cli)


def test_schema_declares_the_limits_the_server_and_the_cli_enforce(service: Service,
                                                                   sleuth: Any,
                                                                   sample_copy: Path) -> None:
    schema = TOOLS["keyword_search"].parameters["properties"]
    assert schema["keywords"]["maxItems"] == 5  # the tool allows 10; the server 5
    assert schema["keywords"]["items"]["maxLength"] == 2000
    assert schema["top_k"]["maximum"] == 20  # the tool's own bound, under the server's 50
    assert TOOLS["chunk_read"].parameters["properties"]["chunk_ids"]["maxItems"] == 10  # ids
    six = [f"word{i}" for i in range(6)]
    with pytest.raises(RequestError, match="at most 5 items"):
        service.call_tool("keyword_search", {"keywords": six})
    assert service.call_tool("keyword_search", {"keywords": six[:5]}).data["hits"] == []
    cli = sleuth("search", "keyword", *six, "--index", str(sample_copy))
    assert cli.code == 1 and "at most 5 items" in cli.err
    tight = TOOLS["keyword_search"].input_schema(Settings.load(
        serve={"max_queries": 2, "max_top_k": 3, "max_query_chars": 50}).serve)["properties"]
    assert (tight["keywords"]["maxItems"], tight["top_k"]["maximum"],
            tight["keywords"]["items"]["maxLength"]) == (2, 3, 50)


def test_reference_ids_live_in_the_session_on_every_face(service: Service, sleuth: Any,
                                                         sample_copy: Path) -> None:
    found = service.call_tool("search", {"queries": ["Greatorex levers"]}, session="s1")
    ref = found.data["results"][0]["ref"]
    opened = service.call_tool("open", {"ref": ref}, session="s1")
    assert opened.data["ref"] == ref
    with pytest.raises(Exception, match="unknown reference id"):
        service.call_tool("open", {"ref": ref})  # no session: no reference ids
    via_cli = sleuth("open", ref, "--session", "s1", "--index", str(sample_copy), "--json")
    assert via_cli.code == 0 and via_cli.json()["ref"] == ref  # the same session store
    live = Session(service.index, persist=False)  # held by a face (an MCP connection)
    ref = service.call_tool("search", {"queries": ["levers"]}, session=live).data[
        "results"][0]["ref"]
    found = service.call_tool("find", {"ref": ref, "patterns": ["levers"]}, session=live)
    assert found.data["ref"] == ref and found.data["matches"][0]["lines"]


def test_an_argument_named_like_a_face_option_is_refused() -> None:
    @tool
    def clashing(ctx: ToolContext, session: str) -> ToolResult:
        """A tool whose argument would shadow ``--session`` and ``?session=``.

        Args:
            session: Anything.
        """
        return ToolResult(session)

    with pytest.raises(ValueError, match="argument 'session' is reserved"):
        register(clashing)
    assert "clashing" not in TOOLS


_GATE = threading.Event()


@tool
def wait_for_gate(ctx: ToolContext) -> ToolResult:
    """Waits until the test opens the gate (at most 60 s)."""
    return ToolResult(f"opened: {_GATE.wait(60)}")


def test_a_slow_call_in_one_session_does_not_hold_up_another(service: Service) -> None:
    register(wait_for_gate)
    _GATE.clear()
    try:
        slow = concurrent.futures.ThreadPoolExecutor(1).submit(
            service.call_tool, "wait_for_gate", {}, session="first")
        time.sleep(0.2)  # the slow call holds session "first"
        started = time.perf_counter()
        other = service.call_tool("keyword_search", {"keywords": ["Greatorex"]},
                                  session="second")
        took = time.perf_counter() - started
        assert not slow.done() and "Greatorex" in other.text and took < 30
    finally:
        _GATE.set()
        del TOOLS["wait_for_gate"]
    assert slow.result(timeout=30).text == "opened: True"
