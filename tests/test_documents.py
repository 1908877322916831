"""The AgenticRAG document tools by hand: `sleuth search` / `find` / `open` on filings (PDFs
generated from tests/data/filings.json: an earnings release and an 8-K)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.conftest import ACME, GLOBEX


@pytest.fixture()
def filings(filings_index: Path, tmp_path: Path) -> str:
    """A private copy (the CLI session file is written into the index folder)."""
    folder = tmp_path / "idx"
    shutil.copytree(filings_index, folder)
    return str(folder)


def test_search_merges_queries_and_hands_out_reference_ids(sleuth, filings: str):
    result = sleuth("search", "net sales fourth quarter", "shareholder vote results",
                    "--index", filings, "--json")
    assert result.code == 0, result.err
    data = result.json()
    results = data["results"]
    assert [r["ref"] for r in results] == ["turn1search1", "turn1search2"]
    assert {r["file"] for r in results} == {ACME, GLOBEX}  # one entry per document
    acme = next(r for r in results if r["file"] == ACME)
    assert acme["type"] == "pdf" and acme["page"] == 1
    assert acme["queries"] == [1, 2] and 0 < acme["score"] <= 1
    assert acme["title"] == "Acme Stores Announces Fourth Quarter Fiscal 2022 Results"
    assert acme["where"].startswith("page 1, line")
    # text form: header per result with id, title, file, type, page, lines, score, snippet
    text = sleuth("search", "comparable sales", "--index", filings, "--top-k", "1").out
    assert text.startswith("Search results for 1 query (1 document):")
    first = text.splitlines()[3]
    assert first.startswith("[turn1search3] Acme Stores") and f"file: {ACME}" in first
    assert "type: pdf | page " in first and "score: " in first
    assert text.splitlines()[4].strip().split(":")[0].isdigit()  # a line-numbered snippet


def test_too_many_queries_and_unknown_refs_are_refused(sleuth, filings: str):
    six = sleuth("search", "a", "b", "c", "d", "e", "f", "--index", filings)
    assert six.code == 1 and "at most 5 items" in six.err
    unknown = sleuth("find", "turn9search9", "sales", "--index", filings)
    assert unknown.code == 1 and "unknown reference id 'turn9search9'" in unknown.err
    assert "run search first" in unknown.err


def test_find_shows_two_passages_per_pattern_with_line_numbers(sleuth, filings: str):
    sleuth("search", "Acme Stores fourth quarter results", "--index", filings)
    data = sleuth("find", "turn1search1", "net sales", "operating income", "no-such-phrase",
                  "--index", filings, "--json").json()
    matches = {m["pattern"]: m["lines"] for m in data["matches"]}
    assert len(matches["net sales"]) > 2 and matches["no-such-phrase"] == []
    text = sleuth("find", "turn1search1", "net sales", "--index", filings).out
    assert text.startswith("[turn1search1] Acme Stores")
    assert f'pattern "net sales": {len(matches["net sales"])} matches' in text
    assert "more matches at lines" in text
    first = matches["net sales"][0]
    assert f"{first}: " in text and "net sales" in text.lower()
    semantic = sleuth("find", "turn1search1", "how much money did stores bring in",
                      "--semantic", "--index", filings, "--json").json()
    assert semantic["mode"] == "semantic" and semantic["matches"][0]["lines"]


def test_find_output_is_capped_in_tokens(sleuth, filings: str, monkeypatch):
    monkeypatch.setenv("SLEUTH_AGENT__FIND_TOKEN_CAP", "500")
    sleuth("search", "Acme Stores fourth quarter results", "--index", filings)
    data = sleuth("find", "turn1search1", "net sales", "fiscal", "stores", "--index", filings,
                  "--json").json()
    assert data["truncated"] is True
    text = sleuth("find", "turn1search1", "net sales", "fiscal", "stores", "--index",
                  filings).out
    assert "output cut at ≈500 tokens" in text


def test_open_shows_a_numbered_window_with_its_header(sleuth, filings: str, monkeypatch):
    sleuth("search", "Acme Stores fourth quarter results", "--index", filings)
    whole = sleuth("open", "turn1search1", "--index", filings, "--json").json()
    total = whole["lines"]
    assert whole["first"] == 0 and whole["last"] == total - 1  # shorter than 1,800 lines
    assert whole["chunks"] and all(c.startswith(ACME + "#") for c in whole["chunks"])
    monkeypatch.setenv("SLEUTH_AGENT__OPEN_WINDOW", "20")
    text = sleuth("open", "turn1search1", "--line", "40", "--index", filings).out
    assert text.splitlines()[1] == (f"Viewing lines [40–59] of {total} lines; open line 60 "
                                    "to continue")
    assert text.splitlines()[2].startswith("40: ")
    paged = sleuth("open", "turn1search1", "--line", "0", "--index", filings).out
    assert "(ACME_2023Q4_EARNINGS.pdf, pdf, page 1)" in paged.splitlines()[0]
    past = sleuth("open", "turn1search1", "--line", str(total + 5), "--index", filings)
    assert past.code == 1 and f"past the end of turn1search1 ({total} lines" in past.err
    by_id = sleuth("open", GLOBEX, "--index", filings)  # a document id works too
    assert by_id.code == 0 and "Viewing lines [0–19]" in by_id.out


def test_reference_ids_continue_across_cli_calls_and_sessions(sleuth, filings: str):
    sleuth("search", "net sales", "--index", filings, "--top-k", "1")
    again = sleuth("search", "votes cast", "--index", filings, "--top-k", "1", "--json").json()
    assert again["results"][0]["ref"] == "turn1search2"
    other = sleuth("search", "votes cast", "--index", filings, "--top-k", "1",
                   "--session", "mine", "--json").json()
    assert other["results"][0]["ref"] == "turn1search1"
    assert sleuth("open", "turn1search2", "--index", filings, "--session", "mine").code == 1


def test_title_field_search_names_documents_by_rare_title_words():
    from sleuth.text.titles import TitleIndex

    titles = {f"{name}#p{page}": name for name in
              ("3M_2018_10K", "3M_2022_10K", "AMAZON_2018_10K", "BOEING_2018_10K",
               "PEPSICO_2022_10K", "NIKE_2019_10K", "NETFLIX_2017_10K", "COSTCO_2021_10K")
              for page in range(3)}
    index = TitleIndex(titles)
    named = index.match(["fy2018", "capital", "expenditure", "3m"])
    assert set(named) == {f"3M_2018_10K#p{p}" for p in range(3)}  # every page, tied
    assert index.match(["10k", "capital"]) == []  # "10k" is in every title: no signal
    assert set(index.match(["amazon"])) == {f"AMAZON_2018_10K#p{p}" for p in range(3)}


def test_title_field_search_reads_names_run_together_prefixes_and_the_latest_year():
    from sleuth.text.titles import TitleIndex

    names = ("BESTBUY_2023_10K", "BESTBUY_2024Q2_10Q", "MGMRESORTS_2022_10K", "COSTCO_2021_10K",
             "CORNING_2021_10K", "CORNING_2022_10K", "NIKE_2019_10K", "AMAZON_2017_10K")
    index = TitleIndex({name: name for name in names})
    assert index.match(["best", "buy", "stores", "2023"]) == ["BESTBUY_2023_10K"]  # run together
    assert index.match(["mgm", "topline", "fy2022"]) == ["MGMRESORTS_2022_10K"]  # a prefix
    # "between FY2021 and FY2022": the report of the latest year
    assert index.match(["corning", "tax", "rate", "fy2021", "fy2022"]) == ["CORNING_2022_10K"]
    assert index.match(["best", "buy", "q2", "fy2024"]) == ["BESTBUY_2024Q2_10Q"]  # 2024Q2
