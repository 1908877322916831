"""Scoring ``predictions.jsonl`` files: answer metrics, evidence recall, cost and latency,
overall and by question type, as a Markdown table and JSON. The optional LLM judge's
verdicts are cached next to the predictions so re-scoring costs nothing.

A question the corpus does not answer (no gold answer, or ``"answerable": false``) is
scored apart: by whether the answer abstains (``abstain_unanswerable``), never in EM, F1,
Contain-Acc or LLM-Acc, which are over the answerable questions. ``cited_contains_answer``
is the share of answers, of answerable questions answered with at least one cited chunk,
whose cited chunks hold the gold answer (:func:`~sleuth.eval.metrics.passage_holds`: whole
words, normalised as Contain-Acc normalises, with punctuation parting words as code writes);
``cited_right`` the same share of the right (Contain-correct) answers alone.
``answered_wrong`` is the share of answerable questions answered (not empty, not an
abstention) and wrong (not Contain-correct): the confident mistakes, over every answerable
question, abstentions included in the count. ``numeric`` is over the questions whose gold
answer is one figure (FinanceBench's
"$1577.00", "24.26"): a number of the answer within 1 % of it; ``numeric_n`` counts them.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sleuth.agent.citations import strip_citations
from sleuth.agent.loop import prompt
from sleuth.errors import IngestError
from sleuth.eval.datasets import doc_key
from sleuth.eval.metrics import (
    abstains,
    answered_wrong,
    contain_match,
    contain_words,
    exact_match,
    f1_score,
    numeric_match,
    passage_holds,
    percentile,
    recall_at_k,
)
from sleuth.llm import LLM

JUDGE_CACHE = "judge_cache.jsonl"
# LLM-Acc as A-RAG's scripts/eval.py asks for it: its system and user prompts (judge.md), and
# a verdict counted only when the reply is exactly "correct". The version keeps verdicts
# cached under an earlier judge prompt from being reused.
JUDGE_SYSTEM = "You are an expert evaluator."
JUDGE_VERSION = "a-rag-eval-1"


def read_predictions(path: Path) -> list[dict[str, Any]]:
    """Records of a predictions file (or of ``predictions.jsonl`` in a folder)."""
    if path.is_dir():
        path = path / "predictions.jsonl"
    if not path.is_file():
        raise IngestError(f"no predictions at {path}")
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise IngestError(f"{path}:{number} is not a JSON record") from None
        check_record(record, f"{path}:{number}")
        records.append(record)
    return records


def prediction_of(record: dict[str, Any]) -> str:
    """The predicted answer of a record: Sleuth's (``pred_answer``, also written for A-RAG's
    scorer, else ``answer``) or the A-RAG reference code's (``pred_answer``)."""
    value = record.get("pred_answer", record.get("answer"))
    return str(value or "")


def check_record(record: Any, where: str) -> None:
    """An IngestError unless ``record`` is a prediction record this scorer knows (Sleuth's
    or A-RAG's): a file of something else must not score as zeros."""
    if not isinstance(record, dict) or not ({"pred_answer", "answer"} & record.keys()):
        raise IngestError(f"{where} is not a prediction record: it has no 'pred_answer' "
                          "(A-RAG) or 'answer' (Sleuth) field")
    if not ({"gold_answer", "gold_answers"} & record.keys()):
        raise IngestError(f"{where} has no gold answer ('gold_answer' or 'gold_answers'): "
                          "score a predictions file written by `sleuth eval run` or by "
                          "A-RAG's batch runner")


class Judge:
    """A-RAG's correct/incorrect LLM judging (its prompts, its exact verdict test), with
    verdicts cached in a JSONL file."""

    def __init__(self, llm: LLM, cache: Path) -> None:
        self.llm = llm
        self.cache = cache
        self._lock = threading.Lock()
        self.verdicts: dict[str, bool] = {}
        if cache.is_file():
            for line in cache.read_text(encoding="utf-8").splitlines():
                try:
                    item = json.loads(line)
                    self.verdicts[item["key"]] = bool(item["correct"])
                except (json.JSONDecodeError, KeyError):
                    continue

    def __call__(self, question: str, golds: Sequence[str], prediction: str) -> bool:
        gold = " / ".join(golds)
        key = hashlib.sha256(
            json.dumps([self.llm.model, question, gold, prediction, JUDGE_VERSION]).encode()
        ).hexdigest()
        if key in self.verdicts:
            return self.verdicts[key]
        if not prediction.strip():
            verdict = False
        else:
            text = prompt("judge").rstrip("\n").format(gold=gold, prediction=prediction)
            reply = self.llm.chat([{"role": "system", "content": JUDGE_SYSTEM},
                                   {"role": "user", "content": text}]).content or ""
            verdict = reply.strip().lower() == "correct"  # the reference's exact test
        with self._lock:
            self.verdicts[key] = verdict
            with self.cache.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps({"key": key, "correct": verdict}) + "\n")
        return verdict


def golds_of(record: dict[str, Any]) -> list[str]:
    """The gold answers of a record (Sleuth's ``gold_answers``, A-RAG's ``gold_answer``)."""
    return record.get("gold_answers") or ([record["gold_answer"]]
                                          if record.get("gold_answer") else [])


def answerable(record: dict[str, Any]) -> bool:
    """Whether the record's question has an answer in the corpus: a gold answer, and not
    marked ``"answerable": false``."""
    return bool(golds_of(record)) and record.get("answerable") is not False


def score_record(record: dict[str, Any], ks: Sequence[int],
                 judge: Judge | None = None) -> dict[str, float]:
    """Per-question metrics of one prediction record. An unanswerable question's row has
    ``unanswerable`` and ``abstain_unanswerable``; its answer metrics are 0 and
    :func:`aggregate` leaves them out."""
    answer = strip_citations(prediction_of(record))
    golds = golds_of(record)
    row: dict[str, float] = {
        "em": exact_match(answer, golds), "f1": f1_score(answer, golds),
        "contain": contain_match(answer, golds),
        "contain_words": contain_words(answer, golds),
        "answered": float(bool(prediction_of(record).strip())),
        "retrieved_tokens": float(record.get("total_retrieved_tokens") or 0),
        "steps": float(record.get("loops") or 0),
        "llm_calls": float(record.get("llm_calls") or 0),
        "llm_tokens": float((record.get("prompt_tokens") or 0)
                            + (record.get("completion_tokens") or 0)),
        # prompt tokens the server computed: those it reused from its prompt cache left out
        "prompt_processed": float((record.get("prompt_tokens") or 0)
                                  - (record.get("cached_prompt_tokens") or 0)),
        "answer_chars": float(len(answer)),
        "cost": float(record.get("total_cost") or 0.0),
        "latency": float(record.get("latency") or record.get("seconds") or 0.0),
        "error": float(bool(record.get("error"))),
    }
    figure = numeric_match(answer, golds)
    if figure is not None:  # a gold answer that is one figure (FinanceBench's kind)
        row["numeric"] = figure
    abstained = bool(record.get("abstained")) or abstains(answer)
    if "abstained" in record:  # written by `sleuth eval run` (and the agents that abstain)
        row["abstained"] = float(abstained)
    if not answerable(record):
        row["unanswerable"] = 1.0
        row["abstain_unanswerable"] = float(abstained)
        return _judged(row, record, golds, answer, ks, judge)
    row["answered_wrong"] = answered_wrong(answer, golds, abstained)
    if row["answered"] and not abstained and record.get("cited_passages"):
        row["cited_contains_answer"] = float(any(
            passage_holds(str(p.get("text") or ""), golds) for p in record["cited_passages"]))
        if row["contain"]:
            row["cited_right"] = row["cited_contains_answer"]
    return _judged(row, record, golds, answer, ks, judge)


def _judged(row: dict[str, float], record: dict[str, Any], golds: list[str], answer: str,
            ks: Sequence[int], judge: Judge | None) -> dict[str, float]:
    """``row`` with the evidence recalls and, with ``judge``, LLM-Acc."""
    gold_ids = record.get("gold_ids") or []
    if gold_ids:
        retrieved = record.get("retrieved_doc_ids") or []
        for k in ks:
            row[f"recall@{k}"] = recall_at_k(retrieved, gold_ids, k)
        read = record.get("read_doc_ids") or []
        row["read_recall"] = recall_at_k(read, gold_ids, len(read) or 1)
    gold_docs = record.get("gold_docs") or []
    if gold_docs and "document_ranking" in record:
        ranking = [doc_key(d) for d in record.get("document_ranking") or []]
        row["doc_recall@1"] = recall_at_k(ranking, gold_docs, 1)
    if judge is not None and "unanswerable" not in row:
        row["llm_acc"] = float(judge(str(record.get("question", "")), golds, answer))
    return row


# Answer accuracy: averaged over the answerable questions only
_ANSWER_METRICS = ("em", "f1", "contain", "contain_words", "answered", "llm_acc", "numeric",
                   "answered_wrong")


def aggregate(rows: Iterable[dict[str, float]]) -> dict[str, float]:
    rows = list(rows)
    if not rows:
        return {"n": 0}
    keys = sorted({k for r in rows for k in r})
    out: dict[str, float] = {"n": len(rows)}
    answerable_rows = [r for r in rows if "unanswerable" not in r]
    for key in keys:
        over = answerable_rows if key in _ANSWER_METRICS else rows
        values = [r[key] for r in over if key in r]
        if values:
            out[key] = statistics.fmean(values)
    out.pop("unanswerable", None)
    if len(answerable_rows) < len(rows):  # a count, not a share
        out["unanswerable"] = float(len(rows) - len(answerable_rows))
    if "numeric" in out:
        out["numeric_n"] = float(sum("numeric" in r for r in answerable_rows))  # its count
    if "cited_contains_answer" in out:
        out["cited"] = float(sum("cited_contains_answer" in r for r in rows))  # its count
    latencies = [r["latency"] for r in rows]
    out["latency_p95"] = percentile(latencies, 95)
    for key in ("llm_tokens", "llm_calls"):
        values = [r[key] for r in rows if key in r]
        if values:
            out[f"{key}_p95"] = percentile(values, 95)
    out["cost_total"] = sum(r["cost"] for r in rows)
    out["errors"] = sum(r["error"] for r in rows)
    _over_answered(answerable_rows, out)
    return out


def _over_answered(rows: list[dict[str, float]], out: dict[str, float]) -> None:
    """Contain-Acc and LLM-Acc as A-RAG's scorer reports them: over the answered questions
    (a non-empty prediction); over every question under ``contain_all`` / ``llm_acc_all``
    (of ``rows``: the answerable questions)."""
    answered = sum(r.get("answered", 1.0) for r in rows)
    out["answered"] = answered
    for key in ("contain", "llm_acc"):
        if key in out:
            out[f"{key}_all"] = out[key]
            out[key] = sum(r.get(key, 0.0) for r in rows) / answered if answered else 0.0


def score_runs(paths: Sequence[Path], ks: Sequence[int] = (2, 5),
               judge_llm: LLM | None = None) -> dict[str, Any]:
    """Scores of each run, overall and by question type."""
    runs = []
    for path in paths:
        records = read_predictions(path)
        folder = path if path.is_dir() else path.parent
        judge = Judge(judge_llm, folder / JUDGE_CACHE) if judge_llm else None
        rows = [(r.get("question_type") or "all", score_record(r, ks, judge)) for r in records]
        types = sorted({t for t, _ in rows})
        runs.append({
            "run": str(path),
            "agent": records[0].get("agent") if records else None,
            "overall": aggregate(row for _, row in rows),
            "by_type": {t: aggregate(row for rt, row in rows if rt == t) for t in types},
            **({"control": control} if (control := control_summary(records)) else {}),
        })
    return {"runs": runs, "ks": list(ks)}


def control_summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """For a2rag and --verify runs: the share of questions by outcome (verified, abstained,
    out of scope, unverified), by the retrieval stage their last attempt reached, and the
    mean number of attempts. Empty when no record has a ``control`` field."""
    controls = [r["control"] for r in records if isinstance(r.get("control"), dict)]
    if not controls:
        return {}

    def shares(values: list[str]) -> dict[str, float]:
        return {v: values.count(v) / len(values) for v in sorted(set(values))}

    attempts = [c.get("attempts") or [] for c in controls]
    stages = [a[-1]["stage"] for a in attempts if a and a[-1].get("stage")]
    return {"n": len(controls),
            "outcome": shares([str(c.get("outcome") or "none") for c in controls]),
            "stage": shares(stages) if stages else {},
            "attempts_mean": statistics.fmean(len(a) for a in attempts)}


_COLUMNS = [("n", "n", "{:.0f}"), ("llm_acc", "LLM-Acc", "{:.1%}"),
            ("contain", "Contain", "{:.1%}"), ("answered_wrong", "answered wrong", "{:.1%}"),
            ("em", "EM", "{:.1%}"), ("f1", "F1", "{:.1%}"),
            ("numeric", "figure ±1%", "{:.1%}"), ("numeric_n", "figures n", "{:.0f}")]
_TAIL = [("doc_recall@1", "Doc R@1", "{:.1%}"), ("read_recall", "Read R", "{:.1%}"),
         ("retrieved_tokens", "tokens", "{:.0f}"),
         ("steps", "steps", "{:.1f}"), ("llm_calls", "calls", "{:.1f}"),
         ("llm_tokens", "LLM tok", "{:.0f}"), ("prompt_processed", "processed", "{:.0f}"),
         ("answer_chars", "ans chars", "{:.0f}"),
         ("cost_total", "cost $", "{:.4f}"), ("latency", "lat s", "{:.2f}"),
         ("latency_p95", "p95 s", "{:.2f}"), ("abstained", "abstain", "{:.1%}"),
         ("unanswerable", "unans. n", "{:.0f}"),
         ("abstain_unanswerable", "abstain unans.", "{:.1%}"),
         ("cited_contains_answer", "cited has ans", "{:.1%}"),
         ("cited_right", "cited has ans (right)", "{:.1%}"),
         ("errors", "errors", "{:.0f}")]


def to_markdown(scores: dict[str, Any]) -> str:
    """One table of the runs side by side, then one table per run by question type."""
    columns = _COLUMNS + [(f"recall@{k}", f"R@{k}", "{:.1%}") for k in scores["ks"]] + _TAIL
    present = [c for c in columns if any(c[0] in r["overall"] for r in scores["runs"])]

    def table(rows: list[tuple[str, dict[str, float]]], first: str) -> list[str]:
        lines = ["| " + " | ".join([first] + [c[1] for c in present]) + " |",
                 "|" + "---|" * (len(present) + 1)]
        for name, values in rows:
            cells = [fmt.format(values[key]) if key in values else "" for key, _, fmt in present]
            lines.append("| " + " | ".join([name] + cells) + " |")
        return lines

    out = table([(f"{r['agent'] or '?'} ({r['run']})", r["overall"]) for r in scores["runs"]],
                "run")
    for r in scores["runs"]:
        if r.get("control"):
            c = r["control"]
            parts = [f"{name} {share:.0%}" for name, share in c["outcome"].items()]
            stages = [f"{name} {share:.0%}" for name, share in c["stage"].items()]
            out += ["", f"Control ({r['agent']}): " + ", ".join(parts)
                    + (f"; last stage: {', '.join(stages)}" if stages else "")
                    + f"; {c['attempts_mean']:.2f} attempts per question"]
    for r in scores["runs"]:
        if len(r["by_type"]) > 1:
            out += ["", f"By question type: {r['run']}", ""]
            out += table(sorted(r["by_type"].items()), "type")
    return "\n".join(out)
