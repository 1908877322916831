"""The statements pack: a metric a question defines in words, computed from the figures the
statements' rows state, on the command line and as the default agent's answer without a
model."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from tests.conftest import records_index

import sleuth
from sleuth.llm import OpenAIClient
from sleuth.statements.formula import parse
from sleuth.statements.metric import metric_arguments, subject
from sleuth.statements.rows import read_row
from sleuth.testing.fake import FakeLLMServer, reply

# statement pages as text taken from filings' PDFs writes them: a label, then "$" and the
# figures on lines of their own, the columns' years in a header (Brightwater's earliest
# year first, as some filings have it)
BALANCE = """ACME CORP
CONSOLIDATED BALANCE SHEETS
(In millions)
December 31,
2017
 
2016
ASSETS
Cash and cash equivalents
$
1,200
$
900
Inventories
410
380
Total assets
$
10,000
$
9,000
Accounts payable
$
640
$
600
Total current liabilities
2,500
2,100"""
INCOME = """ACME CORP
CONSOLIDATED STATEMENTS OF INCOME
(In millions)
Year Ended December 31,
2017
2016
2015
Net sales
$
12,000
$
11,000
$
10,500
Cost of sales
7,300
6,900
6,500
Net income (1)
$
950
$
800
$
700"""
CASH = """ACME CORP
CONSOLIDATED STATEMENTS OF CASH FLOWS
(In thousands)
2017 2016
Net cash provided by operating activities 3,000,000 2,400,000
Purchases of property and equipment (450,000) (400,000)"""
OTHER = """BRIGHTWATER INC
CONSOLIDATED BALANCE SHEETS
(In millions)
December 31,
2016
2017
Total assets
50,000
55,000
Total current liabilities
9,000
9,900"""
FILINGS = [
    {"id": "ACME_2017_10K_p40", "title": "ACME_2017_10K p40", "text": BALANCE},
    {"id": "ACME_2017_10K_p38", "title": "ACME_2017_10K p38", "text": INCOME},
    {"id": "ACME_2017_10K_p42", "title": "ACME_2017_10K p42", "text": CASH},
    {"id": "BRIGHTWATER_2017_10K_p7", "title": "BRIGHTWATER_2017_10K p7", "text": OTHER},
]
ROA = ("What is the FY2017 return on assets (ROA) for Acme? ROA is defined as: FY2017 net "
       "income / (average total assets between FY2016 and FY2017). Round your answer to two "
       "decimal places.")


@pytest.fixture(scope="module")
def filings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return records_index(tmp_path_factory, "filings", FILINGS)


def test_a_formula_in_words_is_read_into_arithmetic() -> None:
    dpo = parse("What is Acme's FY2017 days payable outstanding (DPO)? DPO is defined as: "
                "365 * (average accounts payable between FY2016 and FY2017) / (FY2017 COGS "
                "+ change in inventory between FY2016 and FY2017). Round your answer to two "
                "decimal places.")
    assert dpo is not None and dpo.metric == "DPO" and dpo.places == 2
    assert dpo.expression == ("365 * ( ((accounts_payable_2016 + accounts_payable_2017) / 2) "
                              ") / ( cogs_2017 + (inventory_2017 - inventory_2016) )")
    # one definition using others; a bare item is of the year the question asks about
    ccc = parse("What is the FY2019 cash conversion cycle (CCC) for Acme? CCC is defined as: "
                "DIO - DPO. DIO is defined as: 365 * inventory / COGS. DPO is defined as: "
                "365 * accounts payable / COGS.")
    assert ccc is not None and ccc.places is None
    assert ccc.expression == "(365 * inventory_2019 / cogs_2019) - " \
        "(365 * accounts_payable_2019 / cogs_2019)"
    assert [f.name for f in ccc.figures] == ["inventory_2019", "cogs_2019",
                                             "accounts_payable_2019"]
    # nothing defined, a term with no year to read it for, a definition using itself
    assert parse("What was Acme's net income in FY2017?") is None
    assert parse("Margin is defined as: operating income / revenue.") is None
    assert parse("In FY2017, X is defined as: X + 1.") is None


def test_the_subject_is_whom_the_question_names() -> None:
    assert subject(ROA, "ROA") == "Acme"
    assert subject("What is the FY2018 fixed asset turnover ratio for CVS Health? ...",
                   "Fixed asset turnover ratio") == "CVS Health"
    assert subject("What is Amazon's FY2017 days payable outstanding (DPO)?", "DPO") == "Amazon"


@pytest.mark.parametrize(("text", "item", "year", "value", "written"), [
    (BALANCE, "total assets", 2016, Decimal("9000e6"), "9,000"),
    (BALANCE, "inventory", 2017, Decimal("410e6"), "410"),  # the statement's "Inventories"
    (OTHER, "total assets", 2017, Decimal("55000e6"), "55,000"),  # earliest year first
    (INCOME, "net income", 2016, Decimal("800e6"), "800"),  # a footnote mark after the label
    (INCOME, "COGS", 2015, Decimal("6500e6"), "6,500"),
    (CASH, "cash from operations", 2017, Decimal("3000000e3"), "3,000,000"),  # one line
    (CASH, "capex", 2016, Decimal("-400000e3"), "(400,000)"),  # parentheses: negative
])
def test_a_row_is_read_for_the_year_asked(text: str, item: str, year: int, value: Decimal,
                                         written: str) -> None:
    row = read_row(text, item, year)
    assert row is not None and row.value == value and row.written == written


@pytest.mark.parametrize(("item", "year"), [
    ("total assets", 2015),  # a year the statement has no column for
    ("goodwill", 2017),  # a row it does not have
])
def test_a_row_not_there_is_not_read(item: str, year: int) -> None:
    assert read_row(BALANCE, item, year) is None


def test_the_default_agent_computes_a_defined_metric_without_a_model(filings: Path) -> None:
    with FakeLLMServer([]) as server:
        answer = sleuth.ask(ROA, index=filings, agent="hybrid",
                            llm=OpenAIClient("fake-model", server.base_url))
        assert server.requests == []
    assert [s.tool_name for s in answer.trajectory] == ["hybrid_search", "compute_metric"]
    # 950 / ((9,000 + 10,000) / 2) = 0.1, the figures quoted with the pages they are from
    first, _, how = answer.answer.partition("\n\n")
    assert first == "0.10 [ACME_2017_10K_p38#0] [ACME_2017_10K_p40#0]"
    assert "net_income_2017 = 950,000,000 (\"Net income (1)\", 950 in the 2017 column of " \
        "2017/2016/2015, in millions) [ACME_2017_10K_p38#0]" in how
    assert how.endswith("ROA = 950000000 / ((9000000000 + 10000000000) / 2) = 0.10")
    assert answer.llm_calls == 0


def test_a_figure_not_found_leaves_the_answer_to_the_model(filings: Path) -> None:
    asked = ("What is Acme's FY2017 goodwill ratio? Goodwill ratio is defined as: goodwill / "
             "total assets.")
    with FakeLLMServer([reply("The filings do not state Acme's goodwill.")]) as server:
        answer = sleuth.ask(asked, index=filings, agent="hybrid",
                            llm=OpenAIClient("fake-model", server.base_url))
        (request,) = server.requests
    assert [s.tool_name for s in answer.trajectory][:2] == ["hybrid_search", "compute_metric"]
    said = request["messages"][-1]["content"]
    assert "goodwill_2017: not found" in said and "total_assets_2017 = 10,000,000,000" in said
    assert answer.answer.startswith("The filings do not state")


def test_metric_on_the_command_line(filings: Path, sleuth) -> None:  # type: ignore[no-untyped-def]
    args = metric_arguments(ROA, 5)
    assert args == {"subject": "Acme", "formula": "ROA is defined as: FY2017 net income / "
                    "(average total assets between FY2016 and FY2017)", "year": 2017,
                    "places": 2}
    result = sleuth("metric", "Brightwater", "Quick ratio is defined as: total assets / "
                    "total current liabilities", "--year", "2017", "--index", str(filings))
    assert result.code == 0, result.err
    assert result.out.rstrip().endswith("= 5.5556")  # 55,000 / 9,900, Brightwater's own page
    assert "[BRIGHTWATER_2017_10K_p7#0]" in result.out
    bad = sleuth("metric", "Acme", "whatever it is", "--index", str(filings))
    assert bad.code != 0 and "cannot read the formula" in bad.err


@pytest.mark.parametrize("defined", [
    "M is defined as: " + "(" * 50_000 + "revenue" + ")" * 50_000 + ".",  # deep
    "D0 is defined as: D1 + D1. " + " ".join(f"D{i} is defined as: D{i + 1} + D{i + 1}."
                                               for i in range(1, 8)) + " D8 is defined as: x.",
    "M is defined as: " + "a " * 500_000 + "- b.",  # a 1 MB "line item"
    "M is defined as: " + " + ".join(f"item{i} in FY2017" for i in range(5_000)) + ".",
])
def test_a_hostile_definition_is_not_read(defined: str) -> None:
    """Bounded: more than calculate computes (an expression over 500 characters, 24
    figures, a line item of 12 words) is not read, quickly, and the agent goes on."""
    assert metric_arguments("What is it in FY2017? " + defined, 5) is None


def test_arguments_read_from_a_question_stay_within_the_tools_bounds(filings: Path) -> None:
    """A subject of 300 characters, rounding to 50 places: read within the tool's limits,
    so the agent's call before the model cannot fail on them."""
    asked = ("What is the FY2017 ROA for " + " ".join(["Acme"] * 60) + "? ROA is defined as: "
             "FY2017 net income / total assets. Round your answer to 50 decimal places.")
    args = metric_arguments(asked, 5)
    assert args is not None and len(args["subject"]) <= 200 and args["places"] is None
    with FakeLLMServer([]) as server:
        answer = sleuth.ask(asked, index=filings, agent="hybrid",
                            llm=OpenAIClient("fake-model", server.base_url))
    assert answer.answer.startswith("0.095 [")  # 950 / 10,000, no model call


# a reader's notes that copy a filing's rows (and get a figure wrong): no report's form in
# the title, no cover page, no statement's title line
NOTES = """Notes on Acme from our reading group
(In millions)
December 31,
2017
2016
Total assets
$
20,000
$
18,000
Total current liabilities
4,000
3,000"""


def test_figures_are_read_from_filings_only(tmp_path_factory: pytest.TempPathFactory,
                                            sleuth) -> None:  # type: ignore[no-untyped-def]
    """The pack applies per document: a table in a document that is no filing is not read
    as a statement, beside a filing or alone."""
    from sleuth.statements.filing import filing

    assert filing("3M_2018_10K", "") and filing("acme-10-q-2023.pdf", "")
    assert filing("Acme", "UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nFORM 10-K")
    assert filing("Acme p40", BALANCE)  # a primary statement's title on a line of its own
    assert not filing("Notes on Acme", NOTES) and not filing("10KB_ACME", NOTES)
    quick = ["metric", "Acme", "Quick ratio is defined as: total assets / total current "
             "liabilities", "--year", "2017"]
    alone = records_index(tmp_path_factory, "notes", [
        {"id": "ACME_notes", "title": "Notes on Acme", "text": NOTES}])
    result = sleuth(*quick, "--index", str(alone))
    assert result.code == 0, result.err
    assert "Not computed" in result.out and "5.0000" not in result.out
    both = records_index(tmp_path_factory, "notes-and-filing", [
        {"id": "ACME_notes", "title": "Notes on Acme", "text": NOTES},
        {"id": "ACME_2017_10K_p40", "title": "ACME_2017_10K p40", "text": BALANCE}])
    result = sleuth(*quick, "--index", str(both))
    assert result.code == 0, result.err
    assert result.out.rstrip().endswith("= 4")  # 10,000 / 2,500, the filing's page
    assert "[ACME_notes#0]" not in result.out
