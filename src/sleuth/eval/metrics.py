"""Answer metrics as in the A-RAG evaluation: SQuAD-normalised EM and F1, Contain-Acc, and
evidence Recall@k. Each answer metric takes the best score over the gold answer's aliases.
:func:`answered_wrong` counts the confident mistakes: answered, not abstained, not right.
:func:`abstains` (from :mod:`sleuth.text.abstain`) tells an answer that says the documents do
not answer from one that answers.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

from sleuth.text.abstain import abstains as abstains  # re-exported: eval scores with it

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lowercase, drop punctuation and articles, squeeze whitespace.
    Kept apart from the lexicon's normaliser (:func:`sleuth.text.lexicon.plain`) on
    purpose: it must score exactly as the A-RAG and SQuAD scorers do, so that the tables
    compare with the papers'."""
    return _normalised(text, "")


def _normalised(text: str, punctuation: str) -> str:
    """Lowercase, each punctuation mark replaced by ``punctuation``, articles dropped,
    whitespace squeezed."""
    text = "".join(punctuation if ch in _PUNCTUATION else ch for ch in text.lower())
    return " ".join(_ARTICLES.sub(" ", text).split())


def _golds(gold: str | Sequence[str]) -> list[str]:
    return [gold] if isinstance(gold, str) else [g for g in gold if g]


def exact_match(prediction: str, gold: str | Sequence[str]) -> float:
    """1.0 when the normalised prediction equals a normalised gold answer."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in _golds(gold)))


def _f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, gold: str | Sequence[str]) -> float:
    """Token-level F1 after normalisation (best over gold aliases)."""
    return max((_f1(prediction, g) for g in _golds(gold)), default=0.0)


def contain_match(prediction: str, gold: str | Sequence[str]) -> float:
    """Contain-Acc exactly as the A-RAG reference scorer (``scripts/eval.py``) computes it:
    1.0 when a normalised gold answer is a substring of the normalised prediction (best over
    the gold aliases). Substrings reward verbosity: gold "no" is contained in "I do not
    know."; :func:`contain_words` is the stricter variant."""
    if not prediction:
        return 0.0
    pred = normalize_answer(prediction)
    return float(any(normalize_answer(g) in pred for g in _golds(gold) if g))


def answered_wrong(prediction: str, gold: str | Sequence[str], abstained: bool = False) -> float:
    """1.0 when the question got an answer (not empty, not an abstention: the record's
    ``abstained`` or :func:`abstains`) that holds no gold answer (not Contain-correct): a
    confident mistake, what a user pays for more than for "the documents do not say".
    Meaningful for answerable questions only (an unanswerable one is scored by whether the
    answer abstains)."""
    if not prediction.strip() or abstained or abstains(prediction):
        return 0.0
    return 1.0 - contain_match(prediction, gold)


def contain_words(prediction: str, gold: str | Sequence[str]) -> float:
    """Contain-Acc on whole words: a normalised gold answer occurs in the normalised
    prediction as a run of whole tokens ("no" is not in "I do not know.")."""
    pred = f" {normalize_answer(prediction)} "
    return float(any(
        (norm := normalize_answer(g)) and f" {norm} " in pred for g in _golds(gold)
    ))


def passage_holds(passage: str, gold: str | Sequence[str]) -> float:
    """Whether a passage states a gold answer: its words, whole, where punctuation parts
    words (a manual's "stripAccents(String input)" holds "stripAccents"); a gold of
    punctuation only (":-") as written."""
    # punctuation parts words as code writes them: "stringutils stripaccents string input"
    text = f" {_normalised(passage, ' ')} "
    return float(any(
        f" {norm} " in text if (norm := _normalised(g, " ")) else g.strip() in passage
        for g in _golds(gold) if g.strip()
    ))


# a gold answer that is one figure ("$1577.00", "24.26", "-3.7", "12%"): FinanceBench's kind
_FIGURE = re.compile(r"^\s*(?:USD|US\$|\$)?\s*(-?\(?(?:\d[\d,]*(?:\.\d+)?|\.\d+)\)?)\s*%?\s*$",
                     re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?|(?<![\w.])-?\.\d+")


def _figure(text: str) -> float | None:
    match = _FIGURE.match(text)
    if not match:
        return None
    digits = match.group(1).replace(",", "")
    negative = digits.startswith("(") and digits.endswith(")")
    value = float(digits.strip("()"))
    return -value if negative else value


def numeric_match(prediction: str, gold: str | Sequence[str],
                  tolerance: float = 0.01) -> float | None:
    """For a gold answer that is one figure: 1.0 when the prediction states a number within
    ``tolerance`` (relative, 1 %) of it, sign aside ("a decline of 3.7 %" for "-3.7"), or
    one of at least four digits in another unit ("$381,603" thousand for "$382.00"
    million); None when no gold answer is a figure (the metric does not apply)."""
    figures = [abs(f) for g in _golds(gold) if (f := _figure(g)) is not None]
    if not figures:
        return None
    stated: list[float] = []
    for written in _NUMBER.findall(prediction):
        number = abs(float(written.replace(",", "")))
        digits = len(written.replace(",", "").replace(".", "").lstrip("-0"))
        stated += [number * scale for scale in _UNITS] if digits >= 4 else [number]
    return float(any(abs(n - f) <= tolerance * f + 1e-9 for f in figures for n in stated))


# a filing's figures in thousands or millions against a gold in millions or billions
_UNITS = (1.0, 1e-3, 1e3, 1e-6, 1e6)


def recall_at_k(retrieved: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Share of gold ids among the first ``k`` distinct retrieved ids (1.0 when no gold)."""
    wanted = set(gold)
    if not wanted:
        return 1.0
    top = list(dict.fromkeys(retrieved))[:k]
    return len(wanted.intersection(top)) / len(wanted)


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (``q`` in 0-100), as numpy's default."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)
