"""The MCP server, through the official SDK's own client (in-process and over stdio)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402

from sleuth import Settings  # noqa: E402
from sleuth.errors import SleuthError  # noqa: E402
from sleuth.server.mcp import build_mcp  # noqa: E402
from sleuth.service.service import Service  # noqa: E402
from sleuth.testing.fake import call, reply  # noqa: E402
from sleuth.tools import TOOLS  # noqa: E402

PEPYS_DOC = "pepys-diary-1660.md"
PEPYS = f"{PEPYS_DOC}#0"
ARGUMENTS: dict[str, dict[str, Any]] = {
    "keyword_search": {"keywords": ["Greatorex"], "top_k": 3},
    "semantic_search": {"query": "who explained levers?"},
    "chunk_read": {"chunk_ids": [PEPYS], "adjacent": 1},
    "naive_embedding_search": {"query": "who explained levers?"},
    "hybrid_search": {"query": "Who explained levers to Pepys?", "top_k": 2},
    "compare_dates": {"entities": ["Pepys", "Greatorex"], "event": "born"},
    "person_fact": {"entity": "Pepys", "fact": "birth_place"},
    "search": {"queries": ["Greatorex levers"]},
    "find": {"ref": PEPYS_DOC, "patterns": ["Greatorex"]},
    "open": {"ref": PEPYS_DOC, "line": 3},
    "summarize": {"notes": "Greatorex explained levers."},
    "graph_entity": {"name": "Pepys"},
    "graph_neighbors": {"entity": "Pepys"},
    "graph_path": {"source": "Pepys", "target": "London"},
    "graph_ppr": {"entities": ["Pepys"]},
    "calculate": {"expression": "(5,120 - 4,800) / 4,800"},
    "compute_metric": {"subject": "Pepys", "formula": "Ratio is defined as: total assets / "
                       "revenue", "year": 1660},
}


@pytest.fixture()
def service(sample_copy: Path) -> Iterator[Service]:
    service = Service(sample_copy, Settings.load())
    yield service
    service.close()


def _expected(service: Service, name: str) -> tuple[bool, str, Any]:
    """(is_error, text, data) of calling ``name`` through the service directly."""
    try:
        result = service.call_tool(name, ARGUMENTS[name])
    except SleuthError as exc:
        return True, str(exc), None
    return False, result.text, result.data


def test_lists_every_tool_as_the_agent_sees_it_and_calls_each(service: Service) -> None:
    assert set(ARGUMENTS) == set(TOOLS)  # a new tool needs a case here

    async def main() -> None:
        async with Client(build_mcp(service)) as client:
            listed = (await client.list_tools()).tools
            assert [t.name for t in listed] == [*TOOLS, "ask"]
            for tool in listed[:-1]:
                function = TOOLS[tool.name].schema()["function"]
                assert tool.description == function["description"]
                assert tool.input_schema == function["parameters"]
            for name in TOOLS:
                got = await client.call_tool(name, ARGUMENTS[name])
                is_error, text, data = _expected(service, name)
                assert bool(got.is_error) == is_error, (name, got)
                assert got.content[0].text == text, name  # type: ignore[union-attr]
                if not is_error:
                    assert got.structured_content == data, name

    anyio.run(main)


def test_limits_and_bad_arguments_come_back_as_tool_errors(service: Service) -> None:
    async def main() -> None:
        async with Client(build_mcp(service)) as client:
            cases = [("search", {"queries": list("abcdef")}, "at most 5"),
                     ("keyword_search", {"keywords": ["a"], "top_k": 51}, "limit of 50"),
                     ("semantic_search", {"query": "x" * 2001}, "at most 2000"),
                     ("keyword_search", {"words": ["a"]}, "invalid arguments"),
                     ("ask", {}, "question")]
            for name, arguments, message in cases:
                got = await client.call_tool(name, arguments)
                assert got.is_error and message in got.content[0].text  # type: ignore[union-attr]

    anyio.run(main)


def test_keyword_search_equals_the_cli(service: Service, sleuth: Any, sample_copy: Path) -> None:
    async def main() -> Any:
        async with Client(build_mcp(service)) as client:
            return await client.call_tool("keyword_search", ARGUMENTS["keyword_search"])

    got = anyio.run(main)
    cli = sleuth("search", "keyword", "Greatorex", "--top-k", "3", "--index", str(sample_copy),
                 "--json").json()
    assert got.structured_content == {k: v for k, v in cli.items()
                                      if k not in ("tool", "arguments", "retrieved_tokens")}


def test_ask(endpoint: Any, sample_copy: Path) -> None:
    server = endpoint([reply("The passages do not say who explained levers."),
                       call("keyword_search", keywords=["Greatorex"]),
                       reply(f"Greatorex explained levers [{PEPYS}].")])
    service = Service(sample_copy, Settings.load())

    async def main() -> Any:
        async with Client(build_mcp(service)) as client:
            return await client.call_tool("ask", {"question": "Who explained levers?"})

    try:
        with server:
            got = anyio.run(main)
    finally:
        service.close()
    assert not got.is_error
    assert got.content[0].text.startswith("Greatorex explained levers")
    # the default agent: its hybrid retrieval first, the answer from it that says the
    # passages do not say, then the model's own call
    assert [s["tool_name"] for s in got.structured_content["trajectory"]] == [
        "hybrid_search", "answer_first", "keyword_search"]


@pytest.mark.slow  # a server in a subprocess (test_mcp_sdk.py drives stdio too)
def test_stdio_subprocess(sample_copy: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "sleuth", "serve", "mcp", "--index", str(sample_copy)], env=env)

    async def main() -> tuple[list[str], Any]:
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            return names, await client.call_tool("chunk_read", {"chunk_ids": [PEPYS]})

    names, got = anyio.run(main)
    assert names == [*TOOLS, "ask"]
    assert not got.is_error and got.structured_content["chunks"][0]["chunk_id"] == PEPYS
