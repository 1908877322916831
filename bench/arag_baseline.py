"""The A-RAG authors' own code as a baseline, on Sleuth's chunks and local LLM (issue 22).

A-RAG (github.com/Ayanami0730/arag, MIT licence per its pyproject and README; it ships no
LICENSE file) runs as its authors' scripts, unmodified and outside this repository: the
adapter takes a checkout (``--arag PATH``) or exports the stored mirror's HEAD into
``~/.cache/sleuth/bench/arag/<commit>`` and says so. What it changes around that code:

- ``tiktoken`` (downloads its BPE file, fails offline) is ``bench/arag_shims/tiktoken``, put
  first on A-RAG's ``PYTHONPATH``: bpe-openai's ``o200k_base``, gpt-4o's encoding, so token
  counts are exact.
- The embedding model: A-RAG's config names Qwen3-Embedding-0.6B on the Hugging Face hub
  (unreachable). Its config also takes a local path, so ``embedding.model`` is the folder of
  Sleuth's bundled all-MiniLM-L6-v2, the model Sleuth's own semantic search uses, loaded by
  the real ``sentence_transformers.SentenceTransformer`` (installed with Sleuth's ``local``
  extra; no stand-in needed). The index is built by A-RAG's ``scripts/build_index.py``.
- The chunks: Sleuth's chunks of the dataset's corpus (``iter_documents`` + ``iter_chunks``
  with the configured chunk size, as ``Index.add`` cuts them; a 2Wiki passage is one chunk,
  its title as first line) written as A-RAG's ``chunks.json`` (``"<n>:<text>"``, n = 0, 1,
  ...) with ``chunk_map.json`` mapping n to Sleuth's chunk and document ids.
- The LLM: the local llama.cpp server Sleuth uses (``LocalServer``: ``--jinja``, prompt
  cache, one slot), or ``--base-url`` for one already running. A-RAG's batch runner talks
  to it through a recording pass-through on 127.0.0.1 that forwards every request unchanged
  and logs what A-RAG does not: replies with native ``tool_calls`` against calls written as
  text, timeouts, tokens processed. ``--cap-max-tokens N`` (default off) is the one change
  on the wire: it lowers A-RAG's ``max_tokens`` 16,384 to N (llama-server's own ``-n`` does
  not cap a request that names ``max_tokens``: tried, a 292-token reply under ``-n 20``).

A-RAG's settings stay as ``configs/example.yaml`` gives them (max_tokens 16,384, temperature
0, reasoning_effort "medium", 15 loops, 128k token budget; its runner passes only
``reasoning_effort`` on, the rest are its client's equal defaults) with its 300 s timeout: a
runaway reply costs 300 s, a forced answer after it up to 300 s more. Sampling is llama.cpp's
default (no repeat penalty; Sleuth's own client sends one).

Outputs in ``--output``: A-RAG's ``predictions.jsonl``; ``llm_calls.jsonl``, a line per
request; ``sleuth/predictions.jsonl``, the same records for ``sleuth eval score`` (gold ids
from the dataset, searched and read chunk ids mapped to passage ids); ``arag_eval/``, from
A-RAG's ``scripts/eval.py`` (LLM-Acc judged by the same local model, labelled); and
``summary.json``/``.md``. The same command resumes: A-RAG's runner skips finished ids, and
logged calls of questions an interruption cut off are dropped first.

    python bench/arag_baseline.py --model 0.5b --limit 5       # iteration run
    python bench/arag_baseline.py --model 1.5b --limit 100     # the published baseline
    python bench/arag_baseline.py --base-url http://127.0.0.1:PORT/v1 --limit 100

Other bench scripts call :func:`run_arag`, which returns the summary dict.

Seen (2026-11-24, 2 shared cores, load 2-7) with
``PYTHONPATH=src .venv/bin/python bench/arag_baseline.py --model 0.5b --limit 5 --output
/tmp/arag-05b-5``, hard-killed during question 3 and run again (it resumed at 2 of 5 done),
then run a third time (nothing left: converted and scored again in 36 s):

- A-RAG's index of the 6,124 Sleuth chunks (28,366 sentences) took 15 min, once.
- 8 LLM calls: 0 replies with native ``tool_calls`` (no tool ever ran; 1 step per
  question), 1 call written as text (``<json>{"name": "keyword_search", ...}``, taken by
  A-RAG as the final answer), 1 reply echoing the whole tool list (3,642 characters, 852
  tokens, 83 s), 3 replies that ran to the 300 s timeout, each followed by a forced answer.
- 205 s per question, answers 800 characters on average (the echo included).
- Contain-Acc 20.0 by A-RAG's ``scripts/eval.py`` and 20.0 by ``sleuth eval score`` (the
  converted file and A-RAG's own file alike); EM 0, F1 7.5, retrieved evidence R@5 0. LLM-Acc
  100.0 with the 0.5B model as judge: it called all 5 answers correct, so that judge is
  worthless here (labelled as such in the output).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import yaml
from _common import OUT_DIR, add_data_option, data_root, log, md_table, write_json

from sleuth.embed import minilm_path
from sleuth.eval.datasets import Question
from sleuth.eval.evaluate import select
from sleuth.eval.report import score_runs
from sleuth.ingest import iter_chunks, iter_documents
from sleuth.llm import local
from sleuth.llm.jsontools import json_objects
from sleuth.settings import Settings

MIRROR = Path("/work/.mirror/Ayanami0730+arag/repo")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sleuth" / "bench"
SHIMS = Path(__file__).resolve().parent / "arag_shims"
ARAG_TIMEOUT = 300.0  # A-RAG's LLMClient.chat: requests.post(..., timeout=300)
TOOLS = ("keyword_search", "semantic_search", "read_chunk")
_TEXT_CALL = re.compile(r"<tool_call>|\b(?:" + "|".join(TOOLS) + r")\s*\(")
_CHUNK_ID = re.compile(r"^Chunk ID: (\d+)", re.MULTILINE)


# -- A-RAG's code and data ------------------------------------------------------------------

def checkout(path: str | Path | None = None, mirror: Path = MIRROR) -> Path:
    """A-RAG's work tree: ``path``, else the mirror's HEAD exported once into the cache."""
    if path:
        root = Path(path).expanduser().resolve()
        if not (root / "scripts" / "batch_runner.py").is_file():
            raise SystemExit(f"{root} is not an A-RAG checkout (no scripts/batch_runner.py)")
        return root
    if not mirror.is_dir():
        raise SystemExit("no A-RAG code: git clone https://github.com/Ayanami0730/arag and pass "
                         "--arag PATH")
    commit = _git(["--git-dir", str(mirror), "rev-parse", "HEAD"])
    dest = CACHE / "arag" / commit[:12]
    if not (dest / "scripts" / "batch_runner.py").is_file():
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        archive = subprocess.run(["git", "--git-dir", str(mirror), "archive", "HEAD"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        tmp.replace(dest)
        log(f"A-RAG {commit[:7]}: exported from {mirror} into {dest}")
    else:
        log(f"A-RAG {commit[:7]}: the export in {dest}")
    return dest


def _git(args: list[str]) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def arag_commit(root: Path) -> str:
    try:
        return _git(["-C", str(root), "rev-parse", "HEAD"])
    except (OSError, subprocess.CalledProcessError):
        return root.name  # an export is named by its commit


def arag_env(root: Path, **extra: str) -> dict[str, str]:
    """The environment of A-RAG's scripts: the shims and its ``src`` only, hub offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARAG_")}
    env.update(PYTHONPATH=os.pathsep.join([str(SHIMS), str(root / "src")]), HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", **extra)
    return env


@dataclass(frozen=True)
class Corpus:
    """A dataset's corpus as A-RAG reads it, and A-RAG's chunk ids mapped back to Sleuth's."""

    chunks_file: Path
    index_dir: Path
    chunk_ids: list[str]  # A-RAG id n -> Sleuth chunk id
    doc_ids: list[str]  # A-RAG id n -> document (passage) id


def prepare_corpus(corpus: Path, root: Path, chunk_tokens: int) -> Corpus:
    """Sleuth's chunks of ``corpus`` as A-RAG's ``chunks.json`` and A-RAG's sentence index
    of them (its ``build_index.py``), each made once per corpus content and chunk size."""
    digest = hashlib.sha256(corpus.read_bytes() + f"|{chunk_tokens}".encode()).hexdigest()
    folder = CACHE / "arag-data" / f"{corpus.parent.name}-{digest[:12]}"
    chunks_file, map_file = folder / "chunks.json", folder / "chunk_map.json"
    if not map_file.is_file():
        entries, ids = [], []
        for doc in iter_documents([corpus]):
            for chunk in iter_chunks(doc, chunk_tokens):
                entries.append(f"{len(ids)}:{chunk.text}")
                ids.append([chunk.chunk_id, chunk.doc_id])
        folder.mkdir(parents=True, exist_ok=True)
        chunks_file.write_text(json.dumps(entries, ensure_ascii=False), encoding="utf-8")
        map_file.write_text(json.dumps(ids), encoding="utf-8")
        log(f"A-RAG chunks: {len(entries)} Sleuth chunks of {corpus} in {chunks_file}")
    ids = json.loads(map_file.read_text(encoding="utf-8"))
    index_dir = folder / "index"
    if not (index_dir / "sentence_index.pkl").is_file():
        tmp = folder / "index.tmp"
        log(f"A-RAG index: its build_index.py with the bundled MiniLM into {index_dir}")
        subprocess.run([sys.executable, str(root / "scripts" / "build_index.py"),
                        "--chunks", str(chunks_file), "--output", str(tmp),
                        "--model", str(minilm_path()), "--device", "cpu"],
                       env=arag_env(root), cwd=root, check=True)
        tmp.replace(index_dir)
    return Corpus(chunks_file, index_dir, [i[0] for i in ids], [i[1] for i in ids])


def write_config(root: Path, path: Path, base_url: str, model: str, corpus: Corpus,
                 questions: Path, output: Path) -> dict[str, Any]:
    """A-RAG's ``configs/example.yaml`` with only the endpoint, embedding model and data
    paths filled in."""
    config = yaml.safe_load((root / "configs" / "example.yaml").read_text(encoding="utf-8"))
    config["llm"].update(model=model, api_key="local", base_url=base_url)
    config["embedding"].update(model=str(minilm_path()), device="cpu")
    config["data"] = {"chunks_file": str(corpus.chunks_file),
                      "questions_file": str(questions), "index_dir": str(corpus.index_dir)}
    config["output"] = {"results_dir": str(output)}
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return config


# -- the recording pass-through -------------------------------------------------------------

class Recorder:
    """An OpenAI-compatible endpoint on 127.0.0.1 that forwards each request to ``upstream``
    and appends one JSON line per chat request to ``path``: the wire, measured, while A-RAG's
    code stays as published. Upstream requests time out just after A-RAG's own 300 s, so a
    reply A-RAG gave up on is not left running on the server's one slot."""

    def __init__(self, upstream: str, path: Path, cap_max_tokens: int | None = None) -> None:
        self.upstream = upstream.rstrip("/")
        self.path = path
        self.cap = cap_max_tokens
        self._client = httpx.Client(timeout=ARAG_TIMEOUT + 5)
        self._lock = threading.Lock()
        self._echoes: set[str] = set()  # tool description lines seen in any request
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                recorder.forward(self)

            def do_GET(self) -> None:
                recorder.forward(self)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> Recorder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def forward(self, handler: BaseHTTPRequestHandler) -> None:
        raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        route = handler.path.removeprefix("/v1")
        request = json.loads(raw) if raw else {}
        capped = bool(self.cap and request.get("max_tokens", self.cap + 1) > self.cap)
        if capped:
            request["max_tokens"] = self.cap
            raw = json.dumps(request).encode()
        started = time.time()
        try:
            reply = self._client.request(
                handler.command, self.upstream + route, content=raw or None,
                headers={"Content-Type": "application/json",
                         "Authorization": handler.headers.get("Authorization", "")})
            status, body = reply.status_code, reply.content
        except httpx.HTTPError as exc:
            status, body = 504, json.dumps({"error": {"message": f"upstream: {exc}"}}).encode()
        seconds = time.time() - started
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        except OSError:
            pass  # A-RAG gave up (its timeout): recorded below as timed out
        if route.endswith("/chat/completions"):
            with self._lock:
                self._echoes |= description_lines(request.get("tools") or [])
                entry = call_entry(request, status, body, started, seconds, capped,
                                   sorted(self._echoes))
                with self.path.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(entry, ensure_ascii=False) + "\n")


def call_entry(request: dict[str, Any], status: int, body: bytes, started: float,
               seconds: float, capped: bool, echoes: Sequence[str] = ()) -> dict[str, Any]:
    """One logged chat request: whose question, what came back, how long, tokens."""
    question = next((m.get("content") for m in request.get("messages", [])
                     if m.get("role") == "user"), None)
    entry: dict[str, Any] = {
        "question": question, "started": round(started, 3), "seconds": round(seconds, 3),
        "status": status, "timed_out": seconds >= ARAG_TIMEOUT,
        "tools_offered": bool(request.get("tools")), "max_tokens": request.get("max_tokens"),
        "capped": capped, "reply": "error"}
    try:
        data = json.loads(body)
        message = data["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        entry["error"] = body[:500].decode("utf-8", "replace")
        return entry
    usage = data.get("usage") or {}
    entry.update(
        reply=classify(message, echoes), finish_reason=data["choices"][0].get("finish_reason"),
        tool_calls=[c.get("function", {}).get("name") for c in message.get("tool_calls") or []],
        content=(message.get("content") or "")[:4000],
        prompt_tokens=usage.get("prompt_tokens", 0),
        cached_tokens=(usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0),
        completion_tokens=usage.get("completion_tokens", 0),
        prompt_processed=(data.get("timings") or {}).get("prompt_n"))
    return entry


def classify(message: dict[str, Any], echoes: Sequence[str] = ()) -> str:
    """``native`` (the server returned ``tool_calls``), ``echo`` (the text repeats a line of
    a tool description, e.g. the whole tool list), ``text_call`` (a call of one of A-RAG's
    tools written in the text: a JSON object naming it, a ``<tool_call>`` tag or
    ``tool(...)``) or ``answer``. A-RAG takes any reply without ``tool_calls`` as its final
    answer."""
    if message.get("tool_calls"):
        return "native"
    text = message.get("content") or ""
    if any(line in text for line in echoes):
        return "echo"
    for obj in json_objects(text):
        name = obj.get("name") or obj.get("tool") or (obj.get("function") or {}).get("name")
        if name in TOOLS:
            return "text_call"
    return "text_call" if _TEXT_CALL.search(text) else "answer"


def description_lines(tools: Sequence[dict[str, Any]]) -> set[str]:
    """Lines of 30+ characters of the tools' descriptions, as written and JSON-escaped: a
    reply holding one repeats the prompt rather than answering."""
    lines = set()
    for tool in tools:
        for line in str(tool.get("function", {}).get("description", "")).splitlines():
            if len(line.strip()) >= 30:
                lines.update({line.strip(), json.dumps(line.strip())[1:-1]})
    return lines


# -- running and resuming -------------------------------------------------------------------

def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The whole records of a JSONL file (a line cut by a crash is skipped)."""
    if not path.is_file():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            yield record


def finished(predictions: Path) -> dict[str, dict[str, Any]]:
    """A-RAG's finished records by question id, as its batch runner decides what is done."""
    return {str(r.get("qid") or r.get("id")): r for r in read_jsonl(predictions)
            if "question" in r and "pred_answer" in r}


def prepare_resume(out: Path) -> int:
    """Cut a half-written last line of A-RAG's predictions (its runner would append to it),
    drop its error records of questions that no logged call reached the model for (the
    runner went on after the adapter's pass-through was gone), and drop logged calls of
    questions without a prediction (an interrupted attempt). Both run again. Returns the
    number of calls dropped."""
    predictions, calls_file = out / "predictions.jsonl", out / "llm_calls.jsonl"
    calls = list(read_jsonl(calls_file))
    if predictions.is_file():
        data = predictions.read_bytes()
        if data and not data.endswith(b"\n"):
            data = data[: data.rfind(b"\n") + 1]
        asked = {c.get("question") for c in calls}
        lines = data.decode("utf-8").splitlines(keepends=True)
        kept_lines = [line for line in lines
                      if line.strip() and not _unreached(json.loads(line), asked)]
        if len(kept_lines) != len(lines):
            log(f"resuming: {len(lines) - len(kept_lines)} error records of questions that "
                "never reached the model dropped")
        predictions.write_text("".join(kept_lines), encoding="utf-8")
    done = {r["question"] for r in finished(predictions).values()}
    kept = [c for c in calls if c.get("question") in done]
    if len(kept) != len(calls):
        calls_file.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in kept),
                              encoding="utf-8")
    return len(calls) - len(kept)


def _unreached(record: dict[str, Any], asked: set[Any]) -> bool:
    return str(record.get("pred_answer", "")).startswith("Error:") and \
        record.get("question") not in asked


def write_questions(path: Path, questions: Sequence[Question]) -> None:
    """The chosen questions in A-RAG's ``questions.json`` shape (id, question, answer)."""
    records = [{"id": q.id, "question": q.question, "answer": q.answers[0] if q.answers else ""}
               for q in questions]
    path.write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")


def served_model(base_url: str) -> str:
    """The model id an OpenAI-compatible server reports (its first)."""
    try:
        data = httpx.get(base_url.rstrip("/") + "/models", timeout=10).json()
        return str(data["data"][0]["id"])
    except (httpx.HTTPError, ValueError, KeyError, IndexError):
        return "unknown"


# -- converting and scoring -----------------------------------------------------------------

def searched_ids(record: dict[str, Any]) -> list[str]:
    """A-RAG ids of the chunks its searches returned, in first-returned order (from the
    results the model saw: A-RAG logs no ids for semantic_search)."""
    ids: dict[str, None] = {}
    for step in record.get("trajectory") or []:
        if step.get("tool_name") in ("keyword_search", "semantic_search"):
            ids.update(dict.fromkeys(_CHUNK_ID.findall(str(step.get("tool_result") or ""))))
    return list(ids)


def read_ids(record: dict[str, Any]) -> list[str]:
    """A-RAG ids of the chunks ``read_chunk`` returned, in reading order."""
    ids: dict[str, None] = {}
    for entry in record.get("retrieval_logs") or []:
        if entry.get("tool_name") == "read_chunk":
            ids.update(dict.fromkeys(map(str, entry.get("metadata", {}).get("new_chunks_read",
                                                                            []))))
    return list(ids)


def convert(record: dict[str, Any], q: Question, calls: list[dict[str, Any]],
            corpus: Corpus, model: str) -> dict[str, Any]:
    """A-RAG's record plus the fields ``sleuth eval score`` reads (Sleuth's ids, gold
    evidence, calls, tokens, seconds). Cost is 0: A-RAG prices an unknown model at a
    default rate, and the local model costs nothing."""

    def mapped(ids: list[str], table: list[str]) -> list[str]:
        return list(dict.fromkeys(table[int(i)] for i in ids if int(i) < len(table)))

    searched, read = searched_ids(record), read_ids(record)
    answer = str(record.get("pred_answer") or "")
    replies = Counter(c["reply"] for c in calls)
    return {
        **record,
        "question_id": q.id, "answer": answer, "agent": "a-rag", "model": model,
        "total_cost": 0.0, "arag_total_cost": record.get("total_cost"),
        "gold_answers": list(q.answers), "gold_ids": list(q.gold_ids),
        "gold_docs": list(q.gold_docs), "question_type": q.type,
        "retrieved_ids": mapped(searched, corpus.chunk_ids),
        "chunks_read_ids": mapped(read, corpus.chunk_ids),
        "retrieved_doc_ids": mapped(searched, corpus.doc_ids),
        "read_doc_ids": mapped(read, corpus.doc_ids),
        "llm_calls": len(calls),
        "prompt_tokens": sum(c.get("prompt_tokens", 0) for c in calls),
        "cached_prompt_tokens": sum(c.get("cached_tokens", 0) for c in calls),
        "prompt_tokens_processed": sum(c.get("prompt_processed") or 0 for c in calls),
        "completion_tokens": sum(c.get("completion_tokens", 0) for c in calls),
        "native_tool_call_replies": replies["native"],
        "text_tool_call_replies": replies["text_call"], "echo_replies": replies["echo"],
        "timed_out_replies": sum(bool(c.get("timed_out")) for c in calls),
        "latency": round(max(c["started"] + c["seconds"] for c in calls)
                         - min(c["started"] for c in calls), 3) if calls else 0.0,
        "answer_chars": len(answer), "error": record.get("error"),
    }


def summarise(records: list[dict[str, Any]], calls: list[dict[str, Any]]) -> dict[str, Any]:
    """What the run did: answers, replies by kind, timeouts, steps, calls, tokens, time."""

    def mean(key: str) -> float:
        return round(statistics.fmean(r[key] for r in records), 2) if records else 0.0

    replies = Counter(c["reply"] for c in calls)
    return {
        "questions": len(records),
        "answered": sum(bool(r["answer"].strip()) and not r.get("error") for r in records),
        "errors": sum(bool(r.get("error")) for r in records),
        "llm_calls": len(calls),
        "replies_native_tool_calls": replies["native"],
        "replies_tool_calls_as_text": replies["text_call"],
        "replies_echoing_tool_descriptions": replies["echo"],
        "replies_answer_text": replies["answer"],
        "requests_failed_incl_timeouts": replies["error"],
        "replies_timed_out": sum(bool(c.get("timed_out")) for c in calls),
        "replies_capped": sum(bool(c.get("capped")) for c in calls),
        "forced_answer_requests": sum(not c.get("tools_offered") for c in calls),
        "questions_with_a_native_call": sum(r["native_tool_call_replies"] > 0 for r in records),
        "steps_mean": mean("loops"), "llm_calls_mean": mean("llm_calls"),
        "prompt_tokens_processed_mean": mean("prompt_tokens_processed"),
        "completion_tokens_mean": mean("completion_tokens"),
        "seconds_per_question": mean("latency"), "answer_chars_mean": mean("answer_chars"),
    }


def arag_eval(root: Path, out: Path, judge_url: str, judge_model: str) -> dict[str, Any]:
    """A-RAG's ``scripts/eval.py`` on its predictions (left unchanged: it writes its copy to
    ``arag_eval/``); its LLM judge is ``judge_url``."""
    target = out / "arag_eval"
    subprocess.run([sys.executable, str(root / "scripts" / "eval.py"), "--predictions",
                    str(out / "predictions.jsonl"), "--workers", "1", "--output", str(target)],
                   env=arag_env(root, ARAG_BASE_URL=judge_url, ARAG_MODEL=judge_model,
                                ARAG_API_KEY="local"), cwd=root, check=True)
    summary: dict[str, Any] = json.loads(
        (target / "predictions_eval_summary.json").read_text(encoding="utf-8"))
    return summary


def side_by_side(arag: dict[str, Any] | None, sleuth: dict[str, float],
                 raw: dict[str, float]) -> str:
    """The Markdown table of both scorers' numbers."""
    def pct(value: float | None) -> str:
        return "" if value is None else f"{100 * value:.1f}"

    rows = [["Contain-Acc (over answered)", pct(arag and arag["contain_accuracy"]),
             pct(sleuth.get("contain")), pct(raw.get("contain"))],
            ["Contain-Acc (over all)", "", pct(sleuth.get("contain_all")),
             pct(raw.get("contain_all"))],
            ["contain, whole words", "", pct(sleuth.get("contain_words")), ""],
            ["EM", "", pct(sleuth.get("em")), pct(raw.get("em"))],
            ["F1", "", pct(sleuth.get("f1")), pct(raw.get("f1"))],
            ["LLM-Acc (judge: the same local model)", pct(arag and arag["llm_accuracy"]), "",
             ""],
            ["retrieved evidence R@5", "", pct(sleuth.get("recall@5")), ""],
            ["read evidence recall", "", pct(sleuth.get("read_recall")), ""]]
    return md_table(["metric", "A-RAG scripts/eval.py", "sleuth eval score (converted)",
                     "sleuth eval score (A-RAG's file)"], rows)


# -- the whole run --------------------------------------------------------------------------

def run_arag(dataset: str | Path, *, limit: int | None = None,
             questions: str | Path | None = None, model: str = "1.5b",
             base_url: str | None = None, arag: str | Path | None = None,
             output: str | Path | None = None, workers: int = 1,
             cap_max_tokens: int | None = None, score: bool = True) -> dict[str, Any]:
    """Run A-RAG's batch runner on the dataset's first ``limit`` questions (as ``sleuth eval
    run --limit`` picks them), convert and score; resumes what ``output`` already holds."""
    root = checkout(arag)
    data, chosen = select(dataset, questions, limit)
    if data.corpus is None:
        raise SystemExit(f"{dataset} has no corpus file to chunk")
    # absolute: A-RAG's runner works in its own folder
    out = Path(output or OUT_DIR / "arag" / f"{data.name}-{model if not base_url else 'server'}"
               ).resolve()
    out.mkdir(parents=True, exist_ok=True)
    corpus = prepare_corpus(data.corpus, root, Settings.load().chunk.tokens)
    write_questions(out / "questions.json", chosen)
    dropped = prepare_resume(out)
    if dropped:
        log(f"resuming: {dropped} logged calls of unfinished questions dropped")
    server = None if base_url else local.LocalServer(local.model_path(model)).start()
    upstream = server.base_url if server else str(base_url)
    label = local.spec(model).label if server else served_model(upstream)
    started = time.time()
    try:
        with Recorder(upstream, out / "llm_calls.jsonl", cap_max_tokens) as recorder:
            config = write_config(root, out / "config.yaml", recorder.base_url, label, corpus,
                                  out / "questions.json", out)
            subprocess.run([sys.executable, str(root / "scripts" / "batch_runner.py"),
                            "--config", str(out / "config.yaml"), "--questions",
                            str(out / "questions.json"), "--output", str(out),
                            "--workers", str(workers)], env=arag_env(root), cwd=root, check=True)
        wall = time.time() - started
        records = write_converted(out, chosen, corpus, label)
        calls = [c for c in read_jsonl(out / "llm_calls.jsonl")
                 if c.get("question") in {r["question"] for r in records}]
        arag_scores = arag_eval(root, out, upstream, label) if score and records else None
    finally:
        if server:
            server.stop()
    sleuth = score_runs([out / "sleuth"], ks=(2, 5))["runs"][0]["overall"] if records else {}
    raw = score_runs([out / "predictions.jsonl"])["runs"][0]["overall"] if records else {}
    summary = {
        "arag_commit": arag_commit(root), "arag_path": str(root), "dataset": data.name,
        "output": str(out),
        "model": label, "server": "started by the adapter" if server else upstream,
        "cap_max_tokens": cap_max_tokens, "workers": workers,
        "arag_config": {k: config[k] for k in ("llm", "agent", "embedding")},
        "embedding": "Sleuth's bundled all-MiniLM-L6-v2 (sentence-transformers, local path)",
        "chunks": f"{len(corpus.chunk_ids)} Sleuth chunks ({corpus.chunks_file})",
        "wall_seconds_this_run": round(wall, 1), "run": summarise(records, calls),
        "arag_eval": arag_scores, "sleuth_score": sleuth, "sleuth_score_arag_file": raw,
        "llm_acc_judge": f"the same local model ({label}), A-RAG's judge prompt",
    }
    write_json(out / "summary.json", summary)
    (out / "summary.md").write_text(render(summary, out), encoding="utf-8")
    return summary


def write_converted(out: Path, chosen: Sequence[Question], corpus: Corpus,
                    model: str) -> list[dict[str, Any]]:
    """``sleuth/predictions.jsonl``: every finished A-RAG record of the chosen questions,
    converted (rewritten whole, so a resumed run converts everything again)."""
    done = finished(out / "predictions.jsonl")
    calls: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for call in read_jsonl(out / "llm_calls.jsonl"):
        calls[str(call.get("question"))].append(call)
    records = [convert(done[q.id], q, calls[done[q.id]["question"]], corpus, model)
               for q in chosen if q.id in done]
    (out / "sleuth").mkdir(exist_ok=True)
    (out / "sleuth" / "predictions.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return records


def render(summary: dict[str, Any], out: Path) -> str:
    run = summary["run"]
    records = list(read_jsonl(out / "sleuth" / "predictions.jsonl"))
    rows = [[r["question_id"][:12], r["loops"], r["llm_calls"], r["native_tool_call_replies"],
             r["text_tool_call_replies"], r["echo_replies"], r["timed_out_replies"],
             r["latency"], r["answer_chars"], " ".join(r["answer"].split())[:60]]
            for r in records]
    lines = [f"# A-RAG ({summary['arag_commit'][:7]}) on {summary['dataset']}, "
             f"{summary['model']}", "",
             md_table(["what", "value"], [[k, v] for k, v in run.items()]), "",
             side_by_side(summary["arag_eval"], summary["sleuth_score"],
                          summary["sleuth_score_arag_file"]), "",
             f"LLM-Acc judge: {summary['llm_acc_judge']}." if summary["arag_eval"] else
             "A-RAG's scripts/eval.py not run (--no-score).",
             f"Re-score: `sleuth eval score {out / 'sleuth'}`", "",
             md_table(["question", "steps", "calls", "native", "as text", "echo", "timeouts",
                       "seconds", "chars", "answer"], rows)]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    # a SIGTERM exits through SystemExit: A-RAG's runner and the model server stop with us
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="2wikimultihopqa",
                        help="dataset folder (questions.json + corpus.json): a folder of the "
                        "data root or a path [2wikimultihopqa]")
    parser.add_argument("--questions", help="another questions file of the dataset")
    parser.add_argument("--limit", type=int, help="the first N questions")
    parser.add_argument("--model", choices=sorted(local.MODELS), default="1.5b",
                        help="the local model the adapter serves with llama.cpp")
    parser.add_argument("--base-url", help="an already running OpenAI-compatible server "
                        "(e.g. http://127.0.0.1:PORT/v1) instead of starting one")
    parser.add_argument("--arag", help="an A-RAG checkout (default: export the stored mirror)")
    parser.add_argument("--output", help="run folder (default bench/out/arag/<dataset>-<model>)")
    parser.add_argument("--workers", type=int, default=1, help="A-RAG batch runner workers")
    parser.add_argument("--cap-max-tokens", type=int, default=None,
                        help="lower A-RAG's max_tokens (16384) to N on the wire (default off)")
    parser.add_argument("--no-score", action="store_true",
                        help="skip A-RAG's scripts/eval.py (its LLM judge)")
    add_data_option(parser)
    args = parser.parse_args(argv)
    dataset = Path(args.dataset)
    if not dataset.is_dir():
        dataset = data_root(args.data) / args.dataset
    summary = run_arag(dataset, limit=args.limit, questions=args.questions,
                       model=args.model, base_url=args.base_url, arag=args.arag,
                       output=args.output, workers=args.workers,
                       cap_max_tokens=args.cap_max_tokens, score=not args.no_score)
    print(render(summary, Path(summary["output"])))


if __name__ == "__main__":
    main()
