# ruff: noqa: E402
"""Index build throughput vs raw model encode throughput, measured in the same run.

Takes the first ``--passages`` passages of the 2Wiki corpus (written to a temporary
corpus.json), loads the default embedder (bundled MiniLM; load time reported apart) and
measures, alternating, ``--repeats`` times:

(a) raw encode: the exact sentences indexing embeds (``chunk_document`` + the
    ``Index._embed_inputs`` "title: sentence" inputs), timed ``embedder.embed(texts)``
    only, default batch size, after a warm-up -> sentences/s;
(b) end to end: ``Index.open(fresh, create=True, embedder=loaded).add([corpus.json])``
    -> sentences/s.

Reports (b)/(a) (target >= 0.8) and a breakdown of one extra instrumented end-to-end build
(reading, chunking, embedding, store writes, finish_build; measured by wrapping those
calls in this process only - src/ is unchanged).

Run: python bench/build.py [--passages 1500]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    OUT_DIR,
    add_data_option,
    command_line,
    data_root,
    load_minilm,
    log,
    machine_facts,
    machine_md,
    md_table,
    wiki_corpus,
    write_json,
)

import sleuth.index.indexing as sleuth_indexing
import sleuth.index.write as sleuth_write
from sleuth import Index
from sleuth.index.indexing import embed_inputs
from sleuth.ingest import IngestReport, JsonFields, iter_chunks, iter_documents
from sleuth.settings import Settings


class TimedEmbedder:
    """Pass-through embedder that sums the time spent in embed()."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.seconds = 0.0
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str], *, on_batch: Any = None) -> np.ndarray:
        t0 = time.perf_counter()
        out = self.inner.embed(texts, on_batch=on_batch)
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        self.texts += len(texts)
        return out


def raw_inputs(corpus: Path, chunk_tokens: int) -> tuple[list[str], dict[str, float]]:
    t0 = time.perf_counter()
    docs = list(iter_documents([corpus], fields=JsonFields(),
                               report=IngestReport(skipped=[], duplicates=[])))
    t1 = time.perf_counter()
    chunked = [(d, list(iter_chunks(d, chunk_tokens))) for d in docs]
    t2 = time.perf_counter()
    texts = [t for d, cs in chunked for t in embed_inputs(d, cs)]
    t3 = time.perf_counter()
    return texts, {"read_s": t1 - t0, "chunk_s": t2 - t1, "inputs_s": t3 - t2,
                   "documents": len(docs), "chunks": sum(len(cs) for _, cs in chunked)}


def end_to_end(corpus: Path, embedder: Any, workdir: Path, tag: str) -> dict[str, Any]:
    folder = workdir / f"index-{tag}"
    shutil.rmtree(folder, ignore_errors=True)
    t0 = time.perf_counter()
    index = Index.open(folder, create=True, embedder=embedder)
    t1 = time.perf_counter()
    report = index.add([corpus])
    t2 = time.perf_counter()
    index.close()
    return {"open_s": t1 - t0, "add_s": t2 - t1, "total_s": t2 - t0,
            "sentences": report.sentences, "chunks": report.chunks,
            "documents": len(report.added)}


def instrumented(corpus: Path, embedder: Any, workdir: Path) -> dict[str, float]:
    """One more end-to-end build with each stage wrapped in a timer (this process only)."""
    timed = TimedEmbedder(embedder)
    acc = {"read": 0.0, "chunk": 0.0, "store_write": 0.0, "finish_build": 0.0}
    orig_chunk, orig_iter = sleuth_indexing.iter_chunks, sleuth_write.iter_documents

    def stage_timer(items: Iterator[Any], stage: str) -> Iterator[Any]:
        while True:
            t0 = time.perf_counter()
            try:
                item = next(items)
            except StopIteration:
                acc[stage] += time.perf_counter() - t0
                return
            acc[stage] += time.perf_counter() - t0
            yield item

    def chunk_wrap(*a: Any, **k: Any) -> Iterator[Any]:
        return stage_timer(iter(orig_chunk(*a, **k)), "chunk")

    def iter_wrap(*a: Any, **k: Any) -> Iterator[Any]:
        return stage_timer(iter(orig_iter(*a, **k)), "read")

    sleuth_indexing.iter_chunks = chunk_wrap  # type: ignore[assignment]
    sleuth_write.iter_documents = iter_wrap  # type: ignore[assignment]
    folder = workdir / "index-instrumented"
    shutil.rmtree(folder, ignore_errors=True)
    try:
        index = Index.open(folder, create=True, embedder=timed)  # type: ignore[arg-type]
        store = index.store
        write, finish = store.write, store.finish_build

        def write_wrap(docs: Any) -> None:
            t0 = time.perf_counter()
            write(docs)
            acc["store_write"] += time.perf_counter() - t0

        def finish_wrap() -> None:
            t0 = time.perf_counter()
            finish()
            acc["finish_build"] += time.perf_counter() - t0

        store.write = write_wrap  # type: ignore[method-assign]
        store.finish_build = finish_wrap  # type: ignore[method-assign]
        t0 = time.perf_counter()
        report = index.add([corpus])
        total = time.perf_counter() - t0
        index.close()
    finally:
        sleuth_indexing.iter_chunks = orig_chunk  # type: ignore[assignment]
        sleuth_write.iter_documents = orig_iter  # type: ignore[assignment]
    out = {"add_s": total, "embed": timed.seconds, "embed_calls": timed.calls,
           **acc, "sentences": report.sentences}
    out["other"] = total - sum(acc.values()) - timed.seconds
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--passages", type=int, default=1500,
                    help="first N passages of the corpus")
    ap.add_argument("--corpus", type=Path, default=None,
                    help="a corpus.json [the data root's 2wikimultihopqa/corpus.json]")
    ap.add_argument("--repeats", type=int, default=2,
                    help="alternating (raw, end-to-end) measurement pairs")
    ap.add_argument("--out", type=Path, default=OUT_DIR / "build.json")
    add_data_option(ap)
    args = ap.parse_args()
    args.corpus = args.corpus or wiki_corpus(data_root(args.data))

    facts = machine_facts()
    log(f"machine: {facts['cpu_model']}, {facts['cores']} cores, {facts['ram_gib']} GiB")
    import torch

    torch_threads = torch.get_num_threads()
    settings = Settings.load()
    workdir = Path(tempfile.mkdtemp(prefix="sleuth-bench-build-"))
    try:
        records = json.loads(args.corpus.read_text(encoding="utf-8"))[: args.passages]
        corpus = workdir / "corpus.json"
        corpus.write_text(json.dumps(records), encoding="utf-8")
        embedder, load_s = load_minilm()
        log(f"model loaded in {load_s:.2f} s (batch size {settings.embed.batch_size}, "
            f"torch threads {torch_threads})")
        texts, prep = raw_inputs(corpus, settings.chunk.tokens)
        log(f"{len(texts):,} sentences to embed from {prep['documents']} documents")
        embedder.embed(texts[:512])  # warm-up
        raw_runs, e2e_runs = [], []
        for rep in range(args.repeats):
            t0 = time.perf_counter()
            embedder.embed(texts)
            raw_s = time.perf_counter() - t0
            raw_runs.append({"seconds": raw_s, "sentences_per_s": len(texts) / raw_s})
            log(f"raw encode {rep + 1}: {len(texts) / raw_s:.1f} sentences/s ({raw_s:.1f} s)")
            e = end_to_end(corpus, embedder, workdir, str(rep))
            e["sentences_per_s"] = e["sentences"] / e["total_s"]
            e2e_runs.append(e)
            log(f"end to end {rep + 1}: {e['sentences_per_s']:.1f} sentences/s "
                f"({e['total_s']:.1f} s)")
        # the same embed() calls indexing makes: batches of >= 2048 sentences, length-sorted
        # per call (Index.add flushes every BATCH_SENTENCES); shows the per-call sort effect
        log("raw encode in Index.add-sized calls")
        bounds = _flush_bounds(corpus, settings.chunk.tokens)
        t0 = time.perf_counter()
        for a, b in bounds:
            embedder.embed(texts[a:b])
        flush_s = time.perf_counter() - t0
        inst = instrumented(corpus, embedder, workdir)
        log(f"instrumented: {inst}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    raw_med = statistics.median(r["sentences_per_s"] for r in raw_runs)
    e2e_med = statistics.median(r["sentences_per_s"] for r in e2e_runs)
    result = {
        "benchmark": "build", "command": command_line(), "machine": facts,
        "passages": args.passages, "sentences": len(texts), "documents": prep["documents"],
        "chunks": prep["chunks"], "model_load_s": round(load_s, 2),
        "batch_size": settings.embed.batch_size, "torch_threads": torch_threads,
        "prep_outside_timing": {k: round(v, 3) for k, v in prep.items()},
        "raw_runs": raw_runs, "end_to_end_runs": e2e_runs,
        "raw_sentences_per_s_median": round(raw_med, 1),
        "end_to_end_sentences_per_s_median": round(e2e_med, 1),
        "ratio_end_to_end_over_raw": round(e2e_med / raw_med, 3),
        "raw_in_add_sized_calls": {"calls": len(bounds), "seconds": round(flush_s, 2),
                                   "sentences_per_s": round(len(texts) / flush_s, 1)},
        "instrumented_breakdown_s": {k: (round(v, 3) if isinstance(v, float) else v)
                                     for k, v in inst.items()},
        "target_ratio_ge_0_8": e2e_med / raw_med >= 0.8,
    }
    facts["loadavg_end"] = os.getloadavg()
    write_json(args.out, result)
    print(report(result))
    log(f"wrote {args.out}")


def _flush_bounds(corpus: Path, chunk_tokens: int) -> list[tuple[int, int]]:
    """Sentence ranges of the embed() calls Index.add makes (same flush rule)."""
    docs = iter_documents([corpus], fields=JsonFields(),
                          report=IngestReport(skipped=[], duplicates=[]))
    bounds, start, pending = [], 0, 0
    for d in docs:
        pending += sum(len(c.sentences) for c in iter_chunks(d, chunk_tokens))
        if pending >= sleuth_indexing.BATCH_SENTENCES:
            bounds.append((start, start + pending))
            start, pending = start + pending, 0
    if pending:
        bounds.append((start, start + pending))
    return bounds


def report(r: dict[str, Any]) -> str:
    bd = r["instrumented_breakdown_s"]
    total = bd["add_s"]
    rows = []
    for k, label in (("read", "read corpus.json (iter_documents)"),
                     ("chunk", "chunk_document (sentences + token counts)"),
                     ("embed", f"embedder.embed ({bd['embed_calls']} calls)"),
                     ("store_write", "store.write (SQLite rows + keyword index + .npy)"),
                     ("finish_build", "finish_build (vector compaction)"),
                     ("other", "other (hashing, bookkeeping)")):
        rows.append([label, f"{bd[k]:.2f}", f"{100 * bd[k] / total:.1f}%"])
    rows.append(["total Index.add", f"{total:.2f}", "100%"])
    runs = [[f"raw encode {i + 1}", f"{x['seconds']:.2f}", f"{x['sentences_per_s']:.1f}"]
            for i, x in enumerate(r["raw_runs"])]
    runs += [[f"end to end {i + 1} (open + add)", f"{x['total_s']:.2f}",
              f"{x['sentences_per_s']:.1f}"] for i, x in enumerate(r["end_to_end_runs"])]
    a = r["raw_in_add_sized_calls"]
    runs.append([f"raw encode in the {a['calls']} Index.add-sized embed() calls",
                 f"{a['seconds']:.2f}", f"{a['sentences_per_s']:.1f}"])
    return "\n".join([
        "## Index build throughput vs raw encode", "",
        f"- Command: `{r['command']}`",
        machine_md(r["machine"]),
        f"- Input: first {r['passages']:,} 2Wiki passages -> {r['documents']:,} documents, "
        f"{r['chunks']:,} chunks, {r['sentences']:,} sentences (\"title: sentence\" inputs); "
        f"bundled MiniLM, batch size {r['batch_size']}, torch threads {r['torch_threads']}; "
        f"model load {r['model_load_s']} s (excluded)", "",
        md_table(["run", "seconds", "sentences/s"], runs), "",
        md_table(["measure", "value"], [
            ["raw encode, median", f"{r['raw_sentences_per_s_median']} sentences/s"],
            ["end to end, median", f"{r['end_to_end_sentences_per_s_median']} sentences/s"],
            ["ratio end to end / raw", f"{r['ratio_end_to_end_over_raw']}"],
            ["target ≥ 0.8", "MET" if r["target_ratio_ge_0_8"] else "MISSED"],
        ]), "",
        "Breakdown of one instrumented end-to-end build:", "",
        md_table(["stage", "seconds", "share"], rows),
    ])


if __name__ == "__main__":
    main()
