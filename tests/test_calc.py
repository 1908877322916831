"""The ``calculate`` tool: exact arithmetic on figures as filings write them, on every face,
and a clear refusal, never a hang, for anything that is not bounded arithmetic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import sleuth
from sleuth import Settings
from sleuth.agent import VARIANTS, Variant, register_variant
from sleuth.agent.variants import tool_loop
from sleuth.errors import ToolError
from sleuth.llm.client import OpenAIClient
from sleuth.testing.fake import FakeLLMServer, call, reply
from sleuth.tools import TOOLS, ToolContext
from sleuth.tools.tracker import Tracker

# 3M's FY2018 operating income and net sales in $ millions, as its 10-K prints them
MARGIN = {"expression": "operating_income / net_sales",
          "figures": ["operating_income = $7,207 million", "net_sales = $32,765 million"]}


def calc(expression: str, *figures: str) -> Any:
    """The tool as the agent calls it (no index needed)."""
    return TOOLS["calculate"].run(ToolContext(None, Tracker()),  # type: ignore[arg-type]
                                  {"expression": expression, "figures": list(figures)})


@pytest.mark.parametrize(("expression", "rounded", "exact"), [
    ("7,207 / 32,765", "0.21996", "0.2199603235159468945521135358"),
    ("(5,120 - 4,800) / 4,800", "0.0666667", "0.06666666666666666666666666667"),
    ("$1.2 + 12%", "1.32", "1.32"),
    ("$3.4 billion / 2", "1,700,000,000", "1700000000"),
    ("1.2B / 300k", "4,000", "4000"),
    ("-3 * -(2) + 2^10", "1,030", "1030"),  # ^ is a power, as people write it
    ("round(2.5) + round(1/3, 2)", "3.33", "3.33"),  # half up, as on paper
    ("max(1, 234, 7) - min(1,234, 5)", "229", "229"),  # "1,234" is one number, not 1 and 234
    ("abs(-4.5) * 1.5e6", "6,750,000", "6750000"),
    ("0.1 + 0.2", "0.3", "0.3"),  # decimal, not binary floating point
    ("100 × 3 ÷ 4 − 5", "70", "70"),
    # 1.1 ** 0.2 to 28 digits, less 1 (0.019244876491456620652066601613... to 50 digits)
    ("(1.1 ** (1/5)) - 1", "0.0192449", "0.019244876491456620652066602"),
])
def test_arithmetic_by_hand(expression: str, rounded: str, exact: str) -> None:
    result = calc(expression)
    assert result.data["rounded"] == rounded and result.data["exact"] == exact
    assert result.text.startswith(f"{expression} = {rounded}")
    assert result.retrieved_tokens == 0  # a computation is not retrieved text


def test_named_figures_and_what_was_computed() -> None:
    result = calc(MARGIN["expression"], *MARGIN["figures"])
    assert result.data["value"] == pytest.approx(7207 / 32765)
    assert result.text.splitlines() == [
        "operating_income / net_sales = 0.21996 (21.996%)",
        "computed: 7207000000 / 32765000000",
        "with operating_income = $7,207 million; net_sales = $32,765 million"]
    growth = calc("(y2019 - y2018) / y2018", "y2019: 1,050", "y2018 = 1,000")
    assert growth.data["rounded"] == "0.05" and "(5%)" in growth.text


@pytest.mark.parametrize(("expression", "figures", "says"), [
    ("1/0", [], "division by zero"),
    ("0/0", [], "undefined arithmetic"),
    ("(-8) ** 0.5", [], "undefined arithmetic"),
    ("9**9**9", [], "exponent 387420489 is over the limit of 1000"),
    ("10**40", [], "over the limit"),
    ("0.5 ** 1000", [], "fell under"),
    ("1e999", [], "too large"),
    ("x + 1", [], "unknown name 'x'"),
    ("__import__('os').system('true')", [], "is not arithmetic"),
    ("().__class__.__bases__", [], "an attribute is not arithmetic"),
    ("[0] * 10**8", [], "List is not arithmetic"),
    ("sum(range(10**12))", [], "a call is not arithmetic"),
    ("max(*[1, 2])", [], "Starred is not arithmetic"),
    ("round(1, ndigits=2)", [], "a call is not arithmetic"),
    ("round(1, 11)", [], "from 0 to 10"),
    ("max()", [], "takes 1 to 20 arguments"),
    ("1 if 1 else 2", [], "if/else is not arithmetic"),
    ("1 < 2", [], "a comparison is not arithmetic"),
    ("True + 1", [], "a literal is not arithmetic"),
    ("0x10 + 1_000", [], "a literal is not arithmetic"),
    ("lambda: 1", [], "a lambda is not arithmetic"),
    ("10 % 3", [], "there is no modulo"),
    ("1; 2", [], "cannot read"),
    ("-" * 400 + "1", [], "too complex"),
    ("+".join(["1"] * 150), [], "too complex"),
    ("(" * 240 + "1" + ")" * 240, [], "cannot read"),  # over the parser's 200 levels
    ("a", ["a = 1 + 2"], "is not one number"),
    ("a", ["a 12"], "is not 'name = number'"),
    ("max", ["max = 3"], "reserved"),
    ("1", [f"f{i} = {i}" for i in range(21)], "at most 20 items"),
])
def test_a_hostile_or_bad_expression_is_refused_with_a_reason(expression: str,
                                                              figures: list[str],
                                                              says: str) -> None:
    with pytest.raises(ToolError) as refused:
        calc(expression, *figures)
    assert says in str(refused.value)


def test_its_bounds_are_in_the_schema() -> None:
    parameters = TOOLS["calculate"].parameters
    assert parameters["required"] == ["expression"]
    assert parameters["properties"]["expression"]["maxLength"] == 500
    assert parameters["properties"]["figures"]["maxItems"] == 20
    with pytest.raises(ToolError, match="at most 500 characters"):
        calc("1+" * 250 + "1")


@pytest.mark.slow  # 400 generated examples
def test_every_figure_the_schema_admits_is_read() -> None:
    """The published pattern of a figure is one the tool reads: schemathesis (through
    hypothesis) generates figures from it, as a client nobody here wrote would."""
    hypothesis = pytest.importorskip("hypothesis")
    strategies = pytest.importorskip("hypothesis.strategies")
    item = TOOLS["calculate"].parameters["properties"]["figures"]["items"]

    @hypothesis.settings(max_examples=400, deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(strategies.from_regex(item["pattern"]))
    def read(figure: str) -> None:  # read, or the call would be refused with the reason
        assert calc("1", figure).data["figures"] == [figure.strip()]

    read()


# Bodies the published schema admits, at its edges: each is computed (200), or for a name no
# figure gives, 404; each the schema refuses is 400 naming the argument.
ACCEPTED = [({"expression": "big * tiny", "figures": [
                "big = $999,999,999,999,999,999.5 trillion", "tiny:.5e-30%"]}, 200),
            ({"expression": " r^2 ", "figures": ["r = 12 %", "R_2=1.e5K"]}, 200),
            ({"expression": "maximum - min(1, 2)", "figures": ["maximum = 3"]}, 200),
            ({"expression": "growth * 100", "figures": []}, 404)]
REFUSED = [({"expression": "1; 2"}, "expression"), ({"expression": " "}, "expression"),
           ({"expression": "a", "figures": ["a 12"]}, "figures.0"),
           ({"expression": "1", "figures": ["max = 3"]}, "figures.0"),
           ({"expression": "1", "figures": ["_a = 3"]}, "figures.0"),
           ({"expression": "1", "figures": ["a = 1e99"]}, "figures.0")]


def test_the_schema_says_what_the_server_reads(sample_copy: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from sleuth.server.http import create_app
    from sleuth.service.service import Service

    service = Service(sample_copy, Settings.load())
    try:
        client = TestClient(create_app(service, auth=False), base_url="http://localhost")
        paths = client.get("/openapi.json").json()["paths"]
        body = paths["/v1/tools/calculate"]["post"]["requestBody"]["content"]
        published = body["application/json"]["schema"]["properties"]
        assert published["figures"]["items"]["pattern"].startswith("^")
        assert published["expression"]["pattern"].startswith("^")
        for sent, status in ACCEPTED:
            got = client.post("/v1/tools/calculate", json=sent)
            assert got.status_code == status, (sent, got.text)
        unknown = client.post("/v1/tools/calculate", json=ACCEPTED[-1][0])
        assert "unknown name 'growth'" in unknown.json()["detail"]
        for sent, where in REFUSED:
            got = client.post("/v1/tools/calculate", json=sent)
            assert got.status_code == 400 and f"calculate: {where}:" in got.json()["detail"], \
                (sent, got.text)
        metric = client.post("/v1/tools/compute_metric", json={
            "subject": "Pepys", "formula": "Margin = operating income / revenue", "year": 1960})
        assert metric.status_code == 200, metric.text
        assert "Not computed" in metric.json()["text"]  # no statements in the diary
        refused = client.post("/v1/tools/compute_metric", json={"subject": "Pepys",
                                                                 "formula": "000"})
        assert refused.status_code == 400 and "compute_metric: formula:" in \
            refused.json()["detail"]
        # a definition the schema admits whose terms are no line items: said, not refused
        unread = client.post("/v1/tools/compute_metric", json={"subject": "Pepys",
                                                                "formula": "A is defined as0"})
        assert unread.status_code == 200, unread.text
        assert unread.json()["text"].startswith("Not computed: cannot read the formula's terms")
        assert unread.json()["data"]["answer"] is None
    finally:
        service.close()


def test_a_cli_command(sleuth: Any, sample_index: Path) -> None:
    result = sleuth("calculate", MARGIN["expression"], "--figures", MARGIN["figures"][0],
                    "--figures", MARGIN["figures"][1], "--index", str(sample_index), "--json")
    assert result.code == 0, result.err
    assert result.json()["rounded"] == "0.21996"  # type: ignore[index]
    text = sleuth("tool", "calculate", "(5,120 - 4,800) / 4,800", "--index", str(sample_index))
    assert text.code == 0 and "= 0.0666667 (6.6667%)" in text.out
    bad = sleuth("calculate", "().__class__", "--index", str(sample_index))
    assert bad.code == 1 and "an attribute is not arithmetic" in bad.err


def test_http_and_mcp(sample_copy: Path) -> None:
    pytest.importorskip("fastapi")
    pytest.importorskip("mcp")
    from fastapi.testclient import TestClient
    from mcp import Client

    from sleuth.server.http import create_app
    from sleuth.server.mcp import build_mcp
    from sleuth.service.service import Service

    service = Service(sample_copy, Settings.load())
    try:
        client = TestClient(create_app(service, auth=False), base_url="http://localhost")
        got = client.post("/v1/tools/calculate", json=MARGIN)
        assert got.status_code == 200, got.text
        assert got.json()["data"]["rounded"] == "0.21996"
        refused = client.post("/v1/tools/calculate", json={"expression": "9**9**9"})
        assert refused.status_code == 400 and "exponent" in refused.json()["detail"]
        assert "/v1/tools/calculate" in client.get("/openapi.json").json()["paths"]

        async def main() -> tuple[Any, Any]:
            async with Client(build_mcp(service)) as mcp:
                return (await mcp.call_tool("calculate", MARGIN),
                        await mcp.call_tool("calculate", {"expression": "[0] * 10**8"}))

        done, hostile = anyio.run(main)
        assert not done.is_error and done.structured_content["rounded"] == "0.21996"
        assert hostile.is_error and "List is not arithmetic" in hostile.content[0].text
    finally:
        service.close()


@pytest.fixture()
def calc_agent() -> Iterator[str]:
    """An agent that may search and calculate (the default agents do not offer it)."""
    register_variant(Variant("calc-agent", "search, then calculate", tool_loop(),
                             ("keyword_search", "calculate")))
    yield "calc-agent"
    del VARIANTS["calc-agent"]


def test_an_agent_reads_a_refusal_and_tries_again(calc_agent: str, sample_index: Path) -> None:
    script = [call("calculate", expression="7207 % 32765"),
              call("calculate", **MARGIN),
              reply("The operating margin was 22.0%.")]
    with FakeLLMServer(script) as server:
        answer = sleuth.ask("What was the operating margin?", index=sample_index,
                            agent=calc_agent, llm=OpenAIClient("fake-model", server.base_url))
    assert answer.answer == "The operating margin was 22.0%."
    assert [s.tool_name for s in answer.trajectory] == ["calculate", "calculate"]
    tools = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert "there is no modulo" in tools[0]["content"]
    assert tools[1]["content"].startswith("operating_income / net_sales = 0.21996")
    offered = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert offered == ["keyword_search", "calculate"]
