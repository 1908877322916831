"""Clients nobody here wrote agree with the MCP server: the official ``mcp`` SDK's client
talks to ``sleuth serve mcp`` over stdio (the SDK's newest protocol) and to the
streamable-HTTP app (the handshake protocol, whose sessions have an id); it lists the tools,
every input schema passes a strict JSON Schema check (what the MCP Inspector does), the
arguments it sends validate against them, and a reference id that ``search`` returned works
in ``find`` and ``open`` for the rest of that MCP session (and in no other). The MCP
Inspector's own CLI lists the tools and searches too (slow tier: ``python -m
sleuth.testing.setup`` installs it with npm into Sleuth's cache).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
jsonschema = pytest.importorskip("jsonschema")

from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import (  # noqa: E402
    create_mcp_http_client,
    streamable_http_client,
)

from conftest import LiveServer  # noqa: E402
from sleuth import Settings  # noqa: E402
from sleuth.server.mcp import http_app  # noqa: E402
from sleuth.service.service import Service  # noqa: E402
from sleuth.testing.setup import COMMAND, inspector_binary  # noqa: E402
from sleuth.tools import TOOLS  # noqa: E402

pytestmark = pytest.mark.slow  # the MCP SDK's client against server processes

KEY = "secret-key-1"
INSPECTOR_BINARY = inspector_binary()  # in the real home: tests run in one of their own


def _stdio(index: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "sleuth", "serve", "mcp", "--index", str(index)],
        env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _call(client: Client, schemas: dict[str, Any], name: str,
                arguments: dict[str, Any]) -> Any:
    """Call ``name`` as a strict client does: arguments checked against its schema first."""
    jsonschema.Draft202012Validator(schemas[name]).validate(arguments)
    return await client.call_tool(name, arguments)


async def _search_then_find(client: Client) -> dict[str, Any]:
    """List and check the tools, then search, find and open in this one MCP session."""
    listed = (await client.list_tools()).tools
    assert [t.name for t in listed] == [*TOOLS, "ask"]
    schemas = {}
    for tool in listed:
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        schemas[tool.name] = tool.input_schema
    assert "find" in (client.instructions or "") and "open" in (client.instructions or "")

    found = await _call(client, schemas, "search", {"queries": ["Greatorex levers"]})
    assert not found.is_error, _text(found)
    ref = found.structured_content["results"][0]["ref"]
    assert ref == "turn1search1"
    matched = await _call(client, schemas, "find", {"ref": ref, "patterns": ["Greatorex"]})
    assert not matched.is_error, _text(matched)
    assert matched.structured_content["doc_id"] == "pepys-diary-1660.md"
    assert matched.structured_content["matches"] == [{"pattern": "Greatorex", "lines": [4]}]
    assert "Greatorex" in _text(matched)
    opened = await _call(client, schemas, "open", {"ref": ref})
    assert not opened.is_error and "Greatorex" in _text(opened)
    return schemas


def test_stdio_search_then_find_in_one_session(sample_copy: Path) -> None:
    async def main() -> tuple[dict[str, Any], Any]:
        async with Client(_stdio(sample_copy)) as client:
            schemas = await _search_then_find(client)
        async with Client(_stdio(sample_copy)) as other:  # a new session knows no ids
            return schemas, await other.call_tool("find", {"ref": "turn1search1",
                                                           "patterns": ["Greatorex"]})

    schemas, elsewhere = anyio.run(main)
    assert elsewhere.is_error and "unknown reference id" in _text(elsewhere)
    # the schemas carry the limits the server holds calls to (serve.max_queries, ...)
    limits = Settings.load().serve
    assert schemas["keyword_search"]["properties"]["keywords"]["maxItems"] == limits.max_queries
    assert schemas["find"]["properties"]["patterns"]["maxItems"] == limits.max_queries
    too_many = {"keywords": [f"k{i}" for i in range(limits.max_queries + 1)]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schemas["keyword_search"]).validate(too_many)


def test_streamable_http_keeps_a_session_per_mcp_session(sample_copy: Path) -> None:
    service = Service(sample_copy, Settings.load(serve={"api_keys": {"tests": KEY}}))
    live = LiveServer(http_app(service))

    async def main() -> Any:
        # the handshake protocol: the server issues an Mcp-Session-Id
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {KEY}"})
        async with Client(streamable_http_client(f"{live.url}/mcp", http_client=http),
                          mode="legacy") as client:
            await _search_then_find(client)
        http = create_mcp_http_client(headers={"X-API-Key": KEY})
        async with Client(streamable_http_client(f"{live.url}/mcp", http_client=http),
                          mode="legacy") as other:
            elsewhere = await other.call_tool("open", {"ref": "turn1search1"})
        # the 2026-07-28 protocol has no sessions: a document id needs none
        http = create_mcp_http_client(headers={"X-API-Key": KEY})
        async with Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) \
                as stateless:
            return elsewhere, await stateless.call_tool("open", {"ref": "pepys-diary-1660.md"})

    try:
        elsewhere, by_document = anyio.run(main)
    finally:
        live.close()
        service.close()
    assert elsewhere.is_error and "unknown reference id" in _text(elsewhere)
    assert not by_document.is_error and "Greatorex" in _text(by_document)


def _inspector() -> Path:
    """The MCP Inspector's CLI, which the slow tier's set-up command installs; missing, the
    test fails naming that command."""
    if not INSPECTOR_BINARY.exists():
        pytest.fail(f"the MCP Inspector is not installed: run {COMMAND}", pytrace=False)
    return INSPECTOR_BINARY


def _inspect(binary: Path, index: Path, *args: str) -> dict[str, Any]:
    command = [sys.executable, "-m", "sleuth", "serve", "mcp", "--index", str(index)]
    done = subprocess.run([str(binary), "--cli", *command, *args], capture_output=True,
                          text=True, timeout=300, check=False,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.slow  # node and a server process per call
def test_the_inspector_cli_lists_the_tools_and_searches(sample_copy: Path) -> None:
    binary = _inspector()
    listed = _inspect(binary, sample_copy, "--method", "tools/list")["tools"]
    assert [t["name"] for t in listed] == [*TOOLS, "ask"]
    for entry in listed:
        jsonschema.Draft202012Validator.check_schema(entry["inputSchema"])
    found = _inspect(binary, sample_copy, "--method", "tools/call", "--tool-name", "search",
                     "--tool-arg", 'queries=["levers"]')
    assert not found.get("isError")
    assert "[turn1search1]" in found["content"][0]["text"]
