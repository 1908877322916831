"""Plugins (:mod:`sleuth.plugins`): a package nobody here wrote, built and installed by the
test, adds a tool and an agent through its entry points, and every face finds them: ``sleuth
tool``, ``sleuth agents``, ``sleuth ask --agent``, ``/openapi.json``, HTTP and MCP. The
built-in facts pack goes through the same loader and can be turned off, and the core works
without it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from sleuth.testing.fake import FakeLLMServer

pytestmark = pytest.mark.slow  # builds and pip-installs a package

PACKAGE = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "sleuth-hello"
        version = "0.1.0"

        [tool.setuptools]
        py-modules = ["sleuth_hello"]

        [project.entry-points."sleuth.tools"]
        hello = "sleuth_hello:shout"

        [project.entry-points."sleuth.agents"]
        hello = "sleuth_hello:AGENTS"

        [project.entry-points."sleuth.backends"]
        broken = "sleuth_hello_missing:Store"
        """,
    "sleuth_hello.py": '''
        """An outside package: one tool and one agent."""
        from typing import Annotated

        from pydantic import Field

        from sleuth.agent.variants import Variant
        from sleuth.tools import QUERY, ToolContext, ToolResult, tool
        from sleuth.types import Answer


        @tool
        def shout(ctx: ToolContext,
                  text: Annotated[str, Field(description="What to shout."), QUERY]
                  ) -> ToolResult:
            """Say it louder."""
            return ToolResult(text.upper() + "!", {"shouted": text.upper()})


        class Echo:
            name = "echo"

            def run(self, question, *, question_id=None, on_step=None, tracker=None,
                    history=()):
                return Answer(question=question, answer="you asked: " + question,
                              question_id=question_id, agent=self.name)


        AGENTS = [Variant("echo", "repeats the question", lambda setup: Echo())]
        ''',
}


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package, installed with pip into a folder of its own (put on PYTHONPATH)."""
    source = tmp_path_factory.mktemp("sleuth-hello")
    for name, text in PACKAGE.items():
        (source / name).write_text(textwrap.dedent(text).lstrip())
    target = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(target),
                           str(source)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return target


def _env(site: Path | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLEUTH_")}
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    return {**env, **extra}


def _sleuth(site: Path | None, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sleuth", *args], capture_output=True,
                          text=True, env=_env(site, **extra), timeout=300)


def test_an_outside_tool_is_a_command(outside: Path, sample_copy: Path) -> None:
    got = _sleuth(outside, "tool", "shout", "hello", "--index", str(sample_copy), "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["shouted"] == "HELLO"
    listed = _sleuth(outside, "tool", "--help")
    assert "shout" in listed.stdout
    assert "shout" not in _sleuth(None, "tool", "--help").stdout


def test_an_outside_agent_answers(outside: Path, sample_copy: Path) -> None:
    agents = _sleuth(outside, "agents", "--index", str(sample_copy), "--json")
    assert agents.returncode == 0, agents.stderr
    assert "echo" in json.dumps(json.loads(agents.stdout))
    with FakeLLMServer([]) as server:  # an endpoint is configured; the agent calls none
        got = _sleuth(outside, "ask", "--agent", "echo", "who taught Pepys?", "--index",
                      str(sample_copy), "--json", SLEUTH_BASE_URL=server.base_url,
                      SLEUTH_MODEL="fake-model")
        assert not server.requests
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["answer"] == "you asked: who taught Pepys?"


def test_a_backend_that_does_not_load_is_a_clear_error(outside: Path) -> None:
    got = _sleuth(outside, "status", "--index", "broken://x")
    assert got.returncode == 1
    assert "broken:// indexes need sleuth_hello_missing" in got.stderr


@pytest.fixture(scope="module")
def served(outside: Path, sample_copy: Path) -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = FakeLLMServer([])
    process = subprocess.Popen([sys.executable, "-m", "sleuth", "serve", "http", "--no-auth",
                                "--port", str(port), "--index", str(sample_copy)],
                               env=_env(outside, SLEUTH_BASE_URL=llm.base_url,
                                        SLEUTH_MODEL="fake-model"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{url}/v1/status", timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.2)
    yield url
    process.terminate()
    process.wait(10)
    llm.close()


def test_an_outside_tool_is_an_http_route_in_the_openapi(served: str) -> None:
    paths = httpx.get(f"{served}/openapi.json").json()["paths"]
    assert "/v1/tools/shout" in paths
    got = httpx.post(f"{served}/v1/tools/shout", json={"text": "hi"})
    assert got.status_code == 200, got.text
    assert got.json()["data"] == {"shouted": "HI"}
    asked = httpx.post(f"{served}/v1/ask", json={"question": "q?", "agent": "echo"},
                       timeout=60)
    assert asked.status_code == 200, asked.text
    assert asked.json()["answer"] == "you asked: q?"


def test_an_outside_tool_is_an_mcp_tool(outside: Path, sample_copy: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "sleuth", "serve", "mcp", "--index",
                                         str(sample_copy)], env=_env(outside))

    async def main() -> tuple[list[str], Any]:
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            return names, await client.call_tool("shout", {"text": "mcp"})

    names, got = anyio.run(main)
    assert "shout" in names
    assert not got.is_error and got.structured_content == {"shouted": "MCP"} or \
        "MCP!" in json.dumps(got.model_dump(mode="json"))


def test_the_core_runs_without_the_packs(sample_copy: Path) -> None:
    code = textwrap.dedent("""
        import json
        from sleuth import Index, Settings
        from sleuth.agent.variants import build_agent
        from sleuth.tools import TOOLS
        from sleuth.testing.fake import FakeLLMServer
        with Index.open(INDEX) as index:
            agent = build_agent("hybrid", index, None, Settings.load())
            hits = index.keyword_search(["Greatorex"], top_k=1)
        print(json.dumps({"tools": sorted(TOOLS), "first": list(agent.also_first),
                          "hits": len(hits)}))
    """).replace("INDEX", repr(str(sample_copy)))
    on = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        env=_env(None), timeout=300)
    off = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(None, SLEUTH_PLUGINS__DISABLED='["facts", "statements"]'),
                         timeout=300)
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    with_pack, without = json.loads(on.stdout), json.loads(off.stdout)
    assert with_pack["first"] == ["compare_dates", "person_fact", "compute_metric"]
    assert without["first"] == [] and without["hits"] == 1
    assert set(with_pack["tools"]) - set(without["tools"]) == {"compare_dates", "person_fact",
                                                               "compute_metric"}
    got = _sleuth(None, "tool", "keyword_search", "Greatorex", "--index", str(sample_copy),
                  "--json", SLEUTH_PLUGINS__DISABLED='["facts", "statements"]')
    assert got.returncode == 0, got.stderr
