# ruff: noqa: E402
"""A2RAG's out-of-scope gate: how often it lets in-scope questions through and stops others.

Opens a built index (``--index``; its document summaries are made at index time, or filled
in on first use for older indexes) and scores every question of the in-scope dataset and of
each out-of-scope dataset with ``Index.scope`` (the best cosine similarity between the
question and a document summary). Prints percentiles of the scores and, for each threshold,
the share of in-scope questions let through (higher is better) and of out-of-scope
questions stopped (higher is better), plus the scoring latency.

Run: python bench/diagnostics/gate.py     # 2Wiki in scope; FinanceBench, GraphRAG-Bench out

Dataset folders are named under the data root (``--data``); the index is the in-scope
set's dev index (``_common.dev_index``, built on first use and cached) unless ``--index``
names another.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import (
    OUT_DIR,
    add_data_option,
    command_line,
    data_root,
    machine_facts,
    machine_md,
    md_table,
    resolve_index,
    write_json,
)

from sleuth import Index

THRESHOLDS = (0.2, 0.25, 0.3, 0.35)


def questions(data: Path, folder: str, limit: int) -> list[str]:
    """The first ``limit`` questions of a dataset folder (a path, or a folder of ``data``)."""
    where = Path(folder) if Path(folder).is_dir() else data / folder
    records = json.loads((where / "questions.json").read_text())
    return [r["question"] for r in records][:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", default=None,
                        help="index of the in-scope set [the 2Wiki dev index]")
    parser.add_argument("--inside", default="2wikimultihopqa",
                        help="dataset folder the index was built on [2wikimultihopqa]")
    parser.add_argument("--outside",
                        default="financebench,graphrag_bench_medical,graphrag_bench_novel",
                        help="comma-separated dataset folders")
    parser.add_argument("--limit", type=int, default=200, help="questions per dataset")
    add_data_option(parser)
    args = parser.parse_args()
    data = data_root(args.data)
    args.index = str(resolve_index(args.index, "2wiki", data))
    sets = {Path(args.inside).name + " (in scope)": questions(data, args.inside, args.limit)}
    for folder in args.outside.split(","):
        sets[Path(folder).name + " (out of scope)"] = questions(data, folder, args.limit)
    with Index.open(args.index) as index:
        started = time.perf_counter()
        index.summaries()
        prepare = time.perf_counter() - started
        rows, results = [], {}
        latencies: list[float] = []
        for name, texts in sets.items():
            scores = []
            for text in texts:
                started = time.perf_counter()
                scores.append(index.scope(text)[0])
                latencies.append(time.perf_counter() - started)
            array = np.array(scores)
            inside = "in scope" in name
            shares = {t: float((array >= t).mean() if inside else (array < t).mean())
                      for t in THRESHOLDS}
            results[name] = {"n": len(texts), "percentiles": {
                p: round(float(np.percentile(array, p)), 3) for p in (1, 5, 50, 95)},
                "share": shares}
            rows.append([name, str(len(texts))]
                        + [f"{np.percentile(array, p):.3f}" for p in (5, 50, 95)]
                        + [f"{100 * shares[t]:.1f}" for t in THRESHOLDS])
    heads = ["questions", "n", "p5", "p50", "p95"] + [
        f"{'passed / stopped'} % @{t}" for t in THRESHOLDS]
    print(machine_md(machine_facts()))
    print(f"command: {command_line()}\n")
    print(f"summaries ready in {prepare:.1f} s; scope p50 "
          f"{1000 * float(np.median(latencies)):.1f} ms per question\n")
    print(md_table(heads, rows))
    write_json(OUT_DIR / "gate.json", {"results": results, "prepare_s": prepare,
                                       "scope_ms_p50": 1000 * float(np.median(latencies))})


if __name__ == "__main__":
    main()
