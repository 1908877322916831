"""Batch runs: one agent over a dataset, concurrently, resumable, one JSON line per question.

Each record is the A-RAG prediction record plus gold answers, gold evidence ids, the
documents behind retrieved and read chunks, timings, LLM calls and any error; whether the
question is answerable, whether the answer abstains (:func:`~sleuth.eval.metrics.abstains`,
or the agent's own flag) and the text of the chunks it cites (``cited_passages``), so a
score can tell whether the cited passages hold the gold answer without the index. Records are
appended and flushed as questions finish, so an interrupted run loses nothing finished and
``resume=True`` skips every id already in ``predictions.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sleuth.agent.citations import strip_citations
from sleuth.agent.run import NOT_SAID
from sleuth.agent.variants import build_agent
from sleuth.errors import ConfigError, SleuthError
from sleuth.eval.datasets import Dataset, Question
from sleuth.eval.metrics import abstains, contain_match
from sleuth.index.write import Index, IndexProgress
from sleuth.llm import LLM
from sleuth.llm.factory import llm_from_settings
from sleuth.settings import DEFAULT_AGENT, Settings, cache_dir

PREDICTIONS = "predictions.jsonl"


@dataclass
class RunStats:
    """Running totals, reported after every finished question."""

    total: int = 0
    done: int = 0
    skipped: int = 0
    answered: int = 0
    errors: int = 0
    unanswerable: int = 0  # finished without error, with no gold answer to contain
    contain: float = 0.0
    cost: float = 0.0
    # after a first Ctrl-C, the questions that were in flight (they finish and are saved)
    stopping: int | None = None

    @property
    def contain_acc(self) -> float:
        """Contain-Acc so far over the answerable questions that finished without error."""
        scored = self.done - self.errors - self.unanswerable
        return self.contain / scored if scored else 0.0


ProgressCallback = Callable[[RunStats], None]


class Interrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C: ``stats.done`` questions are saved in ``path``, and the run
    goes on where it stopped with ``resume=True`` (``--resume``)."""

    def __init__(self, stats: RunStats, path: Path) -> None:
        super().__init__(f"{stats.done} questions saved in {path}")
        self.stats, self.path = stats, path


class _Dropped(BaseException):
    """Ends a question's run at its next step once a second Ctrl-C dropped it (a
    BaseException: the question is not recorded as failed)."""


@dataclass
class EvalRun:
    """Run ``agent`` over ``questions`` against ``index`` and write ``output/predictions``."""

    index: Index
    settings: Settings
    agent: str = DEFAULT_AGENT
    output: Path = Path("results")
    workers: int = 4
    resume: bool = False
    llm: LLM | None = None
    on_progress: ProgressCallback | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, questions: Sequence[Question]) -> RunStats:
        self.output.mkdir(parents=True, exist_ok=True)
        path = self.output / PREDICTIONS
        done = self._finished_ids(path)
        todo = [q for q in questions if q.id not in done]
        stats = RunStats(total=len(questions), skipped=len(questions) - len(todo))
        llm = self.llm or llm_from_settings(self.settings)
        build_agent(self.agent, self.index, llm, self.settings)  # fail fast on a bad name
        pool = ThreadPoolExecutor(max_workers=max(1, self.workers))
        dropped = threading.Event()
        written: set[Future[dict[str, Any]]] = set()
        try:
            with path.open("a", encoding="utf-8") as out:
                futures = [pool.submit(self._one, q, llm, dropped) for q in todo]
                try:
                    self._collect(out, futures, written, stats)
                except KeyboardInterrupt:
                    self._wind_down(out, futures, written, stats, dropped)
                    raise Interrupted(stats, path) from None
        finally:  # no question waits in the queue; one still running stops at its next step
            dropped.set()
            pool.shutdown(wait=False, cancel_futures=True)
        return stats

    def _collect(self, out: Any, futures: Sequence[Future[dict[str, Any]]],
                 written: set[Future[dict[str, Any]]], stats: RunStats) -> None:
        """Write each question's record as it finishes."""
        for future in as_completed(futures):
            self._write(out, future.result(), stats)
            written.add(future)

    def _wind_down(self, out: Any, futures: Sequence[Future[dict[str, Any]]],
                   written: set[Future[dict[str, Any]]], stats: RunStats,
                   dropped: threading.Event) -> None:
        """After a first Ctrl-C: no question starts any more; those in flight finish and
        are saved (``stats.stopping`` says how many). A second Ctrl-C drops those still
        running (they stop at their next step); whatever finished is saved all the same."""
        for future in futures:
            future.cancel()
        left = [f for f in futures if f not in written and not f.cancelled()]
        stats.stopping = sum(not f.done() for f in left)
        if self.on_progress:
            self.on_progress(stats)
        try:
            self._collect(out, left, written, stats)
        except KeyboardInterrupt:
            dropped.set()
            for future in left:
                if future.done() and future not in written and future.exception() is None:
                    self._write(out, future.result(), stats)

    def _finished_ids(self, path: Path) -> set[str]:
        if not path.exists() or path.stat().st_size == 0:
            return set()
        if not self.resume:
            raise ConfigError(
                f"{path} already holds predictions; pass --resume to continue that run or "
                "choose another --output"
            )
        _drop_partial_line(path)
        ids = set()
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    ids.add(str(json.loads(line)["question_id"]))
                except (json.JSONDecodeError, KeyError):
                    continue  # a line cut by a crash: that question runs again
        return ids

    def _one(self, q: Question, llm: LLM, dropped: threading.Event) -> dict[str, Any]:
        started = time.perf_counter()
        agent = build_agent(self.agent, self.index, llm, self.settings)

        def unless_dropped(_: object) -> None:
            if dropped.is_set():
                raise _Dropped

        try:
            record = agent.run(q.question, question_id=q.id,
                               on_step=unless_dropped).to_record()
            record["error"] = None
        except SleuthError as exc:
            record = _failed(q, self.agent, f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 - one question's bug must not end the run
            detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
            record = _failed(q, self.agent, f"unexpected {detail}")
        answer = strip_citations(str(record.get("answer") or ""))
        record.update({
            # the answer without citation markers, under the A-RAG scorer's field name
            "pred_answer": answer,
            # what A-RAG's scorer compares with; it reads a question with none against the
            # record's own "answer" (the prediction), so one the corpus does not answer
            # gets the reply it should have
            "gold_answer": q.answers[0] if q.answerable else NOT_SAID,
            "gold_answers": list(q.answers),
            "gold_ids": list(q.gold_ids),
            "gold_docs": list(q.gold_docs),
            "question_type": q.type,
            "retrieved_doc_ids": self._doc_ids(record.get("retrieved_ids", [])),
            "read_doc_ids": self._doc_ids(record.get("chunks_read_ids", [])),
            "answerable": q.answerable,
            "abstained": bool(record.get("abstained")) or abstains(answer),
            "cited_passages": self._cited(record.get("citations") or []),
            "latency": round(time.perf_counter() - started, 3),
        })
        return record

    def _cited(self, citations: list[dict[str, Any]]) -> list[dict[str, str]]:
        """The chunks the answer cites, with their text (a reference id cited stands for
        the chunk its passage is in; a whole document cited names no chunk)."""
        ids = list(dict.fromkeys(c["chunk_id"] for c in citations if c.get("chunk_id")))
        texts = {c.chunk_id: c.text for c in self.index.read(ids).chunks}
        return [{"chunk_id": i, "text": texts[i]} for i in ids if i in texts]

    def _doc_ids(self, chunk_ids: list[str]) -> list[str]:
        chunks = {c.chunk_id: c.doc_id for c in self.index.read(chunk_ids).chunks}
        return list(dict.fromkeys(chunks[c] for c in chunk_ids if c in chunks))

    def _write(self, out: Any, record: dict[str, Any], stats: RunStats) -> None:
        with self._lock:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
            os.fsync(out.fileno())
            stats.done += 1
            stats.cost += float(record.get("total_cost") or 0.0)
            if record["error"]:
                stats.errors += 1
            else:
                stats.answered += bool(str(record.get("answer") or "").strip())
                if record["answerable"]:
                    stats.contain += contain_match(record["pred_answer"],
                                                   record["gold_answers"])
                else:
                    stats.unanswerable += 1
        if self.on_progress:
            self.on_progress(stats)


def _drop_partial_line(path: Path) -> None:
    """A crash can leave half a record at the end; cut it so the next record starts clean."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as fh:
            fh.truncate(data.rfind(b"\n") + 1)


def _failed(q: Question, agent: str, error: str) -> dict[str, Any]:
    return {"question_id": q.id, "question": q.question, "answer": "", "trajectory": [],
            "total_cost": 0.0, "loops": 0, "tool_usage_summary": {},
            "total_retrieved_tokens": 0, "chunks_read_count": 0, "chunks_read_ids": [],
            "retrieved_ids": [], "citations": [], "agent": agent, "error": error}


def dataset_index(dataset: Dataset, settings: Settings, location: str | Path | None,
                  on_progress: Callable[[IndexProgress], None] | None = None) -> Index:
    """The index of a dataset's corpus, built once and reused (incremental afterwards);
    ``on_progress`` follows the build (see :meth:`Index.add`)."""
    if dataset.corpus is None:
        if location is None:
            raise ConfigError(f"dataset {dataset.name!r} has no corpus file; pass --index")
        return Index.open(location, settings=settings)
    if location is None:
        digest = hashlib.sha256(str(dataset.corpus.resolve()).encode()).hexdigest()[:12]
        location = cache_dir() / "datasets" / f"{dataset.name}-{digest}"
    index = Index.open(location, settings=settings, create=True)
    index.add([dataset.corpus], on_progress=on_progress)
    return index
