"""Answer metrics and Recall@k against hand-computed values."""

from __future__ import annotations

import pytest

from sleuth.eval import (
    contain_match,
    contain_words,
    exact_match,
    f1_score,
    normalize_answer,
    numeric_match,
    percentile,
    recall_at_k,
)


def test_normalisation() -> None:
    assert normalize_answer("  The Eiffel-Tower, in PARIS! ") == "eiffeltower in paris"
    assert normalize_answer("An apple a day") == "apple day"


def test_exact_match() -> None:
    assert exact_match("the Paris.", "Paris") == 1.0
    assert exact_match("Paris, France", "Paris") == 0.0
    assert exact_match("Lyon", ["Paris", "lyon"]) == 1.0


def test_f1_by_hand() -> None:
    # pred tokens: barack obama president; gold: obama  -> P=1/3, R=1, F1=0.5
    assert f1_score("Barack Obama, president", "Obama") == pytest.approx(0.5)
    # pred: new york city; gold: york city new jersey -> common 3 (new,york,city)
    # P=3/3, R=3/4 -> F1 = 2*1*0.75/1.75
    assert f1_score("New York City", "York City, New Jersey") == pytest.approx(1.5 / 1.75)
    assert f1_score("nothing", "Paris") == 0.0
    assert f1_score("Paris", ["London", "the Paris"]) == 1.0


def test_a_passage_holds_a_gold_where_punctuation_parts_its_words() -> None:
    from sleuth.eval.metrics import passage_holds

    # a manual writes code: "stripAccents(String input)" holds "stripAccents"
    assert passage_holds("static String stripAccents(String input)", "stripAccents") == 1.0
    assert passage_holds("StringUtils.stripAccents(s)", "StringUtils.stripAccents") == 1.0
    assert passage_holds("MILLIS_PER_DAY = 86400000L", "86400000") == 0.0  # whole words
    assert passage_holds("I do not know.", "no") == 0.0
    assert passage_holds("${name:-default}", ":-") == 1.0  # a gold of punctuation only
    assert passage_holds("${name}", ":-") == 0.0


def test_contain_words_uses_whole_tokens() -> None:
    assert contain_words("The answer is Paris, France.", "paris") == 1.0
    assert contain_words("Comparison", "paris") == 0.0
    assert contain_words("He was born in 1901.", ["1900", "1901"]) == 1.0
    assert contain_words("anything", "") == 0.0
    assert contain_words("I do not know.", "no") == 0.0


def test_contain_match_is_the_reference_scorers_substring_test() -> None:
    # A-RAG's scripts/eval.py: normalised gold is a substring of the normalised prediction
    assert contain_match("The answer is Paris, France.", "paris") == 1.0
    assert contain_match("Comparison", "paris") == 1.0
    assert contain_match("I do not know.", "no") == 1.0  # what A-RAG counts, verbosity wins
    assert contain_match("He was born in 1901.", ["1900", "1901"]) == 1.0
    assert contain_match("anything", "") == 0.0
    assert contain_match("", "paris") == 0.0


def test_recall_at_k_on_known_rankings() -> None:
    ranking = ["d3", "d1", "d3", "d7", "d2"]
    assert recall_at_k(ranking, ["d1", "d2"], 2) == 0.5  # distinct top-2: d3, d1
    assert recall_at_k(ranking, ["d1", "d2"], 4) == 1.0  # d3, d1, d7, d2
    assert recall_at_k(ranking, ["d9"], 5) == 0.0
    assert recall_at_k(ranking, [], 5) == 1.0


def test_percentile_matches_numpy() -> None:
    import numpy as np

    values = [3.0, 1.0, 7.0, 2.0, 10.0, 4.0]
    for q in (0, 50, 95, 100):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_numeric_match_takes_a_figure_within_one_percent() -> None:
    # FinanceBench's gold figures: "$1577.00" (USD millions), "24.26", "-3.7"
    assert numeric_match("FY2018 capital expenditure was $1,577 million.", "$1577.00") == 1.0
    assert numeric_match("The ratio is about 24.3.", "24.26") == 1.0  # 0.2 % off
    assert numeric_match("The ratio is 24.6.", "24.26") == 0.0  # 1.4 % off
    assert numeric_match("a decline of 3.7 %", "-3.7") == 1.0  # sign in words
    assert numeric_match("Revenue grew 12% to 1.29 billion", "0.83") == 0.0
    assert numeric_match("0.01", ["0.01"]) == 1.0 and numeric_match("0.011", "0.01") == 0.0
    assert numeric_match("FY2019: 4,401", "(4401)") == 1.0  # an accountant's negative
    # the filing's unit: $381,603 thousand is $382 million; a short number is not rescaled
    assert numeric_match("$381,603", "$382.00") == 1.0
    assert numeric_match("$1.577 billion", "$1577.00") == 1.0
    assert numeric_match("$1.58 billion", "$1577.00") == 0.0  # three digits: too loose
    assert numeric_match("$830 million", "0.83") == 0.0
    # a gold answer in words is not a figure: the metric does not apply
    assert numeric_match("It shrank 0.9%", "The consumer segment shrunk by 0.9%.") is None
    assert numeric_match("1577", "") is None
