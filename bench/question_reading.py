"""Whether the tools read a question the same way however it is typed (issue 40).

Every tool with a ``from_question`` (the facts pack's ``compare_dates`` and
``person_fact``) reads the 2Wiki dev questions of ``bench/sets/2wiki-natural`` twice: as
2Wiki wrote them (``written.json``) and as people type them (``questions.json``, the same
160 questions reworded: "Who's younger: A or B?", "X's dad died where?"). For each tool:
how many questions it applies to in each wording, the apply rate on rewrites against the
originals' (the issue's target: ≥ 90 %), and how many rewrites get the same call as their
original (names compared without case and punctuation). No index and no model: this is
the question reading alone (``bench/pagefacts.py`` scores the verdicts).

    python bench/question_reading.py
    python bench/question_reading.py --show differ        # the rewrites read otherwise

Writes ``bench/out/question_reading.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import OUT_DIR, command_line, machine_facts, write_json

from sleuth.tools import TOOLS

SETS = Path(__file__).resolve().parent / "sets" / "2wiki-natural"


def _plain(value: Any) -> Any:
    """Arguments compared without case and punctuation ("Louis Xv" = "louis XV.")."""
    if isinstance(value, str):
        return " ".join(re.findall(r"\w+", value.lower()))
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--written", default=str(SETS / "written.json"))
    parser.add_argument("--natural", default=str(SETS / "questions.json"))
    parser.add_argument("--show", choices=("differ", "missed"),
                        help="print rewrites read otherwise than their original, or missed")
    args = parser.parse_args()
    written = {q["id"]: q for q in json.loads(Path(args.written).read_text())}
    natural = json.loads(Path(args.natural).read_text())
    tools = {n: t for n, t in TOOLS.items() if t.from_question is not None}
    results: dict[str, dict[str, Any]] = {}
    for name, tool in tools.items():
        counts = {"written": 0, "natural": 0, "same_call": 0, "other_call": 0,
                  "natural_only": 0}
        shown = []
        for q in natural:
            before = tool.question_arguments(written[q["id"]]["question"], 5)
            after = tool.question_arguments(q["question"], 5)
            counts["written"] += before is not None
            counts["natural"] += after is not None
            if before is not None and after is not None:
                same = {k: _plain(v) for k, v in before.items()} == \
                    {k: _plain(v) for k, v in after.items()}
                counts["same_call" if same else "other_call"] += 1
                if not same and args.show == "differ":
                    shown.append((q["question"], before, after))
            elif after is not None:
                counts["natural_only"] += 1
            elif before is not None and args.show == "missed":
                shown.append((q["question"], before, None))
        counts["apply_rate_vs_written"] = round(100 * counts["natural"] /
                                                max(1, counts["written"]), 1)
        results[name] = counts
        print(f"{name}: {counts}")
        for question, before, after in shown:
            print(f"  {question}\n    written: {before}\n    natural: {after}")
    total_w = sum(r["written"] for r in results.values())
    total_n = sum(r["same_call"] for r in results.values())
    print(f"all tools: {total_n} of {total_w} originals' calls read the same from the "
          f"rewrite ({100 * total_n / max(1, total_w):.1f} %)")
    path = write_json(OUT_DIR / "question_reading.json", {
        "command": command_line(), "machine": machine_facts(), "questions": len(natural),
        "results": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
