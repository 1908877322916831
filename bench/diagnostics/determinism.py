"""Whether the default agent's first search shows the same text in every process.

The reply cache, reruns and every before/after comparison assume that one question gets one
request to the model. Python randomises string hashes per process (``PYTHONHASHSEED``), so
anything that iterates a set of words, or sums floats in that order, may differ between
processes. This runs ``hybrid_search`` for each question of each set (the whole question, 5
chunks, as the default agent's first call) in one child process per seed and reports the
questions whose text differs between seeds.

    python bench/diagnostics/determinism.py --set pgdocs --set 2wiki-natural --limit 80 \\
        --seeds 11,12,13,139

A set is a dev set's name (its questions, over its dev index: ``_common.dev_index``, built
on first use and cached) or ``NAME=INDEX:QUESTIONS``.

Writes ``bench/out/determinism.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import OUT_DIR, add_data_option, command_line, dev_set, machine_facts, write_json


def texts(sets: list[tuple[str, str, str]], limit: int | None) -> dict[str, str]:
    """Question id → digest of its first search's text, in this process."""
    from sleuth.index.write import Index
    from sleuth.tools import TOOLS, ToolContext
    from sleuth.tools.tracker import Tracker

    tool = TOOLS["hybrid_search"]
    out: dict[str, str] = {}
    for name, index_path, questions in sets:
        index = Index.open(index_path)
        items = json.loads(Path(questions).read_text())
        items = items if isinstance(items, list) else items["questions"]
        for item in items[:limit]:
            result = tool.run(ToolContext(index, Tracker()),
                              tool.question_arguments(item["question"], 5))
            out[f"{name}:{item['id']}"] = hashlib.sha256(result.text.encode()).hexdigest()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=None,
                        help="a dev set (pgdocs, 2wiki-natural, ...) or NAME=INDEX:QUESTIONS "
                        "(a questions JSON file) (repeatable) [pgdocs, 2wiki-natural]")
    parser.add_argument("--limit", type=int, default=None, help="first N questions of each")
    parser.add_argument("--seeds", default="11,12,13", help="PYTHONHASHSEED values")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    add_data_option(parser)
    args = parser.parse_args()
    if args.child:
        sets = [(s.split("=", 1)[0], *s.split("=", 1)[1].split(":", 1)) for s in args.set]
        print(json.dumps(texts(sets, args.limit)))  # type: ignore[arg-type]
        return
    resolved = [dev_set(s, args.data) for s in args.set or ("pgdocs", "2wiki-natural")]
    specs = [f"{name}={index}:{questions}" for name, index, questions in resolved]
    runs: dict[str, dict[str, str]] = {}
    for seed in args.seeds.split(","):
        child = subprocess.run([sys.executable, __file__, "--child", *sum(
            (["--set", s] for s in specs), []), *(
            ["--limit", str(args.limit)] if args.limit else [])],
            env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True,
            check=True)
        runs[seed] = json.loads(child.stdout.strip().splitlines()[-1])
    first = next(iter(runs.values()))
    differ = sorted(q for q in first if len({run[q] for run in runs.values()}) > 1)
    print(f"{len(first)} questions, seeds {args.seeds}: {len(differ)} whose first search "
          "differs between processes")
    for q in differ:
        print(f"  {q}")
    write_json(OUT_DIR / "determinism.json", {
        "command": command_line(), "machine": machine_facts(), "seeds": args.seeds,
        "questions": len(first), "differ": differ})


if __name__ == "__main__":
    main()
