"""Evaluation: answer metrics and retrieval recall (batch runner and scorer to follow)."""

from sleuth.eval.metrics import (
    contain_match,
    exact_match,
    f1_score,
    normalize_answer,
    percentile,
    recall_at_k,
)

__all__ = ["contain_match", "exact_match", "f1_score", "normalize_answer", "percentile",
           "recall_at_k"]
