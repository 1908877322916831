"""Evaluation: batch runs of agents over datasets, answer metrics and retrieval recall.

:func:`run` and :func:`score` are ``sleuth eval run`` and ``sleuth eval score`` as Python
functions; :mod:`sleuth.eval.evaluate` also has ``retrieval``, ``graph_loss`` and ``sweep``
(not re-exported here: submodules of this package carry those names).
"""

from sleuth.eval.evaluate import run, score
from sleuth.eval.metrics import (
    abstains,
    contain_match,
    contain_words,
    exact_match,
    f1_score,
    normalize_answer,
    numeric_match,
    percentile,
    recall_at_k,
)

__all__ = ["abstains", "contain_match", "contain_words", "exact_match", "f1_score",
           "normalize_answer", "numeric_match", "percentile", "recall_at_k", "run", "score"]
