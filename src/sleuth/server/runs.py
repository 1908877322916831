"""The run viewer: JSON endpoints over the eval runs under one folder, the chunk text behind
their ids, and the page (``viewer/``) that browses them. Metrics are those of
:func:`sleuth.eval.report.score_runs`; nothing here recomputes them.

A run is any folder holding a ``predictions.jsonl`` (``sleuth eval run --output DIR`` writes
one per agent); its id is its path relative to the runs root (``bench/a2rag``), or ``~`` for
the root itself. Ids that resolve outside the root are unknown: 404, like any other."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

from sleuth.errors import IngestError, MissingDependency
from sleuth.eval.report import read_predictions, score_record, score_runs
from sleuth.index.read import ReadIndex
from sleuth.server.openapi import PATH_ID_MAX, PATH_ID_PATTERN
from sleuth.server.openapi import responses as _errors

try:
    from fastapi import APIRouter, Depends, HTTPException
    from fastapi import Path as PathParameter
    from fastapi.responses import FileResponse
except ImportError as exc:  # pragma: no cover - the minimal install
    raise MissingDependency("fastapi", "serve") from exc

__all__ = ["ROOT_ID", "runs_router"]

PREDICTIONS = "predictions.jsonl"
ROOT_ID = "~"
VIEWER = Path(__file__).with_name("viewer")
KS = (2, 5)
RunId = Annotated[str, PathParameter(min_length=1, max_length=PATH_ID_MAX,
                                     pattern=PATH_ID_PATTERN,
                                     description="Run id: its folder under the runs root")]
ChunkId = Annotated[str, PathParameter(min_length=1, max_length=PATH_ID_MAX,
                                       pattern=PATH_ID_PATTERN, description="Chunk id")]
QuestionId = Annotated[str, PathParameter(min_length=1, max_length=PATH_ID_MAX,
                                          description="Question id")]
# The columns of the run list, in the order the page shows them (when a run has them).
MAIN_METRICS = ("n", "llm_acc", "contain", "em", "f1", *(f"recall@{k}" for k in KS),
                "doc_recall@1", "read_recall", "steps", "llm_calls", "llm_tokens",
                "latency", "latency_p95", "abstained", "errors")


def _main(metrics: dict[str, float]) -> dict[str, float]:
    return {k: metrics[k] for k in MAIN_METRICS if k in metrics}


class RunStore:
    """The runs under one root, scored once per version of their predictions file."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._lock = threading.Lock()
        self._cache: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = {}

    def run_ids(self) -> list[str]:
        ids = []
        for folder, dirs, files in os.walk(self.root):  # symlinked folders are not followed
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            if PREDICTIONS in files:
                ids.append(self.run_id(Path(folder)))
        return ids

    def run_id(self, folder: Path) -> str:
        relative = folder.resolve().relative_to(self.root).as_posix()
        return ROOT_ID if relative == "." else relative

    def folder(self, run_id: str) -> Path:
        """The folder of a run id; 404 for anything that is not a run inside the root."""
        if run_id == ROOT_ID:
            folder = self.root
        else:
            parts = run_id.split("/")
            if run_id.startswith("/") or any(p in ("", ".", "..") or "\\" in p for p in parts):
                raise HTTPException(404, f"no run {run_id!r}")
            folder = (self.root / run_id).resolve()
        try:
            found = folder.is_relative_to(self.root) and (folder / PREDICTIONS).is_file()
        except (OSError, ValueError):  # a name too long for the file system, a NUL
            found = False
        if not found:
            raise HTTPException(404, f"no run {run_id!r}")
        return folder

    def load(self, folder: Path) -> dict[str, Any]:
        """The run's records, scores (:func:`score_runs`) and per-question rows, cached until
        its predictions file changes."""
        stat = (folder / PREDICTIONS).stat()
        version = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            cached = self._cache.get(folder)
        if cached and cached[0] == version:
            return cached[1]
        records = read_predictions(folder)
        scores = score_runs([folder], ks=KS)["runs"][0]
        _add_judged(scores, folder)
        loaded = {"records": records, "scores": scores,
                  "rows": [score_record(r, KS) for r in records]}
        with self._lock:
            self._cache[folder] = (version, loaded)
        return loaded


    def summary(self, run_id: str) -> dict[str, Any]:
        """One line of the run list: agent, model, size and main metrics."""
        folder = self.folder(run_id)
        try:
            loaded = self.load(folder)
        except IngestError as exc:
            return {"id": run_id, "path": str(folder), "error": str(exc)}
        scores, records = loaded["scores"], loaded["records"]
        return {
            "id": run_id, "path": str(folder), "agent": scores.get("agent"),
            "model": records[0].get("model") if records else None,
            "n": len(records), "metrics": _main(scores["overall"]),
            "by_type": {t: _main(m) for t, m in scores["by_type"].items()},
            **({"control": scores["control"]} if "control" in scores else {}),
        }


class _LazyIndex:
    """The index behind chunk requests, opened on the first one and kept open."""

    def __init__(self, opener: Callable[[], ReadIndex] | None) -> None:
        self.opener = opener
        self._index: ReadIndex | None = None
        self._lock = threading.Lock()

    def __call__(self) -> ReadIndex:
        if self.opener is None:
            raise HTTPException(503, "the viewer has no index to read chunks from")
        with self._lock:
            if self._index is None:
                self._index = self.opener()
            return self._index


def _add_judged(scores: dict[str, Any], folder: Path) -> None:
    """LLM-Acc needs the judge, which only ``sleuth eval run --judge`` calls: take it from the
    ``scores.json`` written next to the run (in the folder or its parent) when there is one."""
    for candidate in (folder / "scores.json", folder.parent / "scores.json"):
        try:
            saved = json.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for run in saved.get("runs") or []:
            path = Path(str(run.get("run") or ""))
            if path.name != folder.name or run.get("agent") != scores.get("agent"):
                continue
            if "llm_acc" in (run.get("overall") or {}):
                scores["overall"]["llm_acc"] = run["overall"]["llm_acc"]
                for qtype, values in (run.get("by_type") or {}).items():
                    if qtype in scores["by_type"] and "llm_acc" in values:
                        scores["by_type"][qtype]["llm_acc"] = values["llm_acc"]
            return


def _splits(run_id: str, question_id: str) -> list[tuple[str, str]]:
    """Every reading of ``RUN/questions/QUESTION`` as a run id and a question id, the
    router's first (the longest run id): both may hold ``/``, and a question id even
    ``/questions/``."""
    parts = f"{run_id}/questions/{question_id}".split("/questions/")
    return [("/questions/".join(parts[:i]), "/questions/".join(parts[i:]))
            for i in range(len(parts) - 1, 0, -1)]


def _question_row(record: dict[str, Any], row: dict[str, float]) -> dict[str, Any]:
    control = record.get("control") if isinstance(record.get("control"), dict) else None
    return {
        "question_id": str(record.get("question_id")),
        "question": record.get("question"),
        "question_type": record.get("question_type") or "all",
        "answer": record.get("answer"),
        "gold_answers": record.get("gold_answers")
        or ([record["gold_answer"]] if record.get("gold_answer") else []),
        "correct": row["contain"] >= 1.0,
        "em": row["em"], "f1": row["f1"], "contain": row["contain"],
        "latency": row["latency"], "steps": row["steps"], "llm_calls": row["llm_calls"],
        "error": record.get("error"),
        "abstained": record.get("abstained"),
        "outcome": control.get("outcome") if control else None,
    }


def _chunk(index: ReadIndex, chunk_id: str) -> dict[str, Any]:
    found = index.read([chunk_id]).chunks
    if not found:
        raise HTTPException(404, f"unknown chunk id {chunk_id!r}")
    chunk = found[0]
    doc = index.document(chunk.doc_id)
    return {"chunk_id": chunk.chunk_id, "doc_id": chunk.doc_id,
            "title": doc.title if doc else None, "position": chunk.position,
            "text": chunk.text, "n_tokens": chunk.n_tokens,
            "prev_id": chunk.prev_id, "next_id": chunk.next_id}


VIEWER_FILES = {"index.html": "text/html; charset=utf-8",
                "viewer.js": "text/javascript; charset=utf-8",
                "viewer.css": "text/css; charset=utf-8"}


def viewer_router() -> APIRouter:
    """``GET /viewer`` (the page) and ``/viewer/viewer.js``, ``/viewer/viewer.css``. They
    hold no data and are served without a key, like the app: the page reads the runs from
    the API with the key of the browser tab (session storage), so the key is never in a URL,
    and the page allows no inline script (Content-Security-Policy ``script-src 'self'``)."""
    router = APIRouter(include_in_schema=False)

    @router.get("/viewer")
    def page() -> FileResponse:
        """The run viewer page (deep links: ``/viewer#run=ID&q=QUESTION_ID``)."""
        return FileResponse(VIEWER / "index.html", media_type=VIEWER_FILES["index.html"],
                            headers={"Cache-Control": "no-cache"})

    @router.get("/viewer/{name}")
    def asset(name: str) -> FileResponse:
        if name not in VIEWER_FILES or name == "index.html":
            raise HTTPException(404, f"no viewer file {name!r}")
        return FileResponse(VIEWER / name, media_type=VIEWER_FILES[name],
                            headers={"Cache-Control": "no-cache"})

    return router


def runs_router(runs_root: Path, index_opener: Callable[[], ReadIndex] | None = None,
                auth: Callable[..., Any] | Sequence[Callable[..., Any]] | None = None,
                responses: dict[int | str, dict[str, Any]] | None = None) -> APIRouter:
    """The viewer's data: ``GET /v1/runs``, ``/v1/runs/{run_id}``,
    ``/v1/runs/{run_id}/questions/{question_id}`` and ``/v1/chunks/{chunk_id}`` (the page
    itself: :func:`viewer_router`).

    ``index_opener`` is called once, on the first chunk request, and the index it returns
    stays open (the caller owns it); without one, chunk requests get 503. ``auth`` is a
    FastAPI dependency, or several run in order, attached to every route (``None``: open),
    and ``responses`` the error statuses they answer with, for the OpenAPI document."""
    store = RunStore(Path(runs_root))
    checks = [] if auth is None else [auth] if callable(auth) else list(auth)
    router = APIRouter(dependencies=[Depends(check) for check in checks], tags=["runs"],
                       responses=responses)
    index = _LazyIndex(index_opener)

    def scored(run_id: str) -> dict[str, Any]:
        try:
            return store.load(store.folder(run_id))
        except IngestError as exc:
            raise HTTPException(422, str(exc)) from None

    @router.get("/v1/runs")
    def list_runs() -> dict[str, Any]:
        """Every run under the root with its main metrics, overall and per question type."""
        return {"root": str(store.root), "runs": [store.summary(i) for i in store.run_ids()]}

    @router.get("/v1/runs/{run_id:path}/questions/{question_id:path}",
                responses=_errors(404, 422))
    def get_question(run_id: RunId, question_id: QuestionId) -> dict[str, Any]:
        """One question's full prediction record, with its scores. A question id may hold
        ``/`` (as ``2wiki/123``), plain or encoded as ``%2F``."""
        for run, question in _splits(run_id, question_id):
            try:
                loaded = scored(run)
            except HTTPException:
                continue
            for record, row in zip(loaded["records"], loaded["rows"], strict=True):
                if str(record.get("question_id")) == question:
                    return {"run_id": run, "record": record, "scores": row,
                            "summary": _question_row(record, row)}
        scored(run_id)  # 404 when there is no such run
        raise HTTPException(404, f"no question {question_id!r} in run {run_id!r}")

    @router.get("/v1/runs/{run_id:path}", responses=_errors(404, 422))
    def get_run(run_id: RunId) -> dict[str, Any]:
        """A run's metrics (overall, per question type, A2RAG control) and its questions."""
        loaded = scored(run_id)
        scores = loaded["scores"]
        return {
            "id": run_id, "path": str(store.folder(run_id)), "agent": scores.get("agent"),
            "model": loaded["records"][0].get("model") if loaded["records"] else None,
            "overall": scores["overall"], "by_type": scores["by_type"],
            "control": scores.get("control"), "ks": list(KS),
            "questions": [_question_row(r, row)
                          for r, row in zip(loaded["records"], loaded["rows"], strict=True)],
        }

    @router.get("/v1/chunks/{chunk_id:path}", responses=_errors(404, 422, 503))
    def get_chunk(chunk_id: ChunkId) -> dict[str, Any]:
        """The text of one chunk, for the page's click-through."""
        return _chunk(index(), chunk_id)

    return router
