"""The one results file of the answer benchmarks, ``bench/results.json``, and the tables made
from it.

A row is one measured run of one agent over one dev set with one model: Contain-Acc, EM,
F1 and new-word F1 (F1 with the question's words left out of answer and gold,
``bench/answer_form.py``: a sentence gold, GraphRAG-Bench's, gives F1 to an answer that only
restates its question), evidence Recall@5, the share of unanswerable questions it abstains
on, the share of answerable questions it answers wrong (an answer that is no abstention and
holds no gold), seconds per question, how many questions, and where it comes from (date, commit, the
command, the BENCHMARKS section). A column that was never measured is ``null`` and shows
as "—".

Bench scripts write rows with :func:`record` (or :func:`row_from_predictions`, which scores
a ``sleuth eval run`` folder the way ``sleuth eval score`` does); the README's results table
and BENCHMARKS.md's summary are generated from the file by cog (``[[[cog ... ]]]`` blocks
calling :func:`table` and :func:`full_table`), and ``tests/test_docs.py`` runs ``cog
--check``, so a table that differs from the file fails the tests.

From the command line::

    python bench/results.py record --dataset pgdocs --agent hybrid --run RUN_DIR \\
        --section "§42" --run-command "sleuth eval run ..."   # score a run and record it
    python bench/results.py table                              # the README's table
    cog -r README.md BENCHMARKS.md                              # regenerate both tables
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results.json"

# The dev sets, in the tables' order: key -> how the tables name it
DATASETS: dict[str, str] = {
    "2wiki-written": "2Wiki, as written",
    "2wiki-natural": "2Wiki, as people type it",
    "pgdocs": "PostgreSQL 15 manual",
    "javadoc": "Commons Lang's Javadoc",
    "gitdocs": "Git 2.39's manual",
    "medical": "GraphRAG-Bench medical",
    "novel": "GraphRAG-Bench novel",
    "financebench": "FinanceBench",
}
# The agents of the README's table: the default, one-shot RAG, A-RAG's own agent
AGENTS = ("hybrid", "naive-rag", "full")
LOCAL_MODEL = "Qwen2.5-Coder-1.5B (local)"  # the bundled offline model, llama.cpp on the CPU
NONE = "—"


@dataclass(frozen=True)
class Row:
    """One measured run. Rates are percentages (0-100); ``None``: not measured."""

    dataset: str  # a key of DATASETS
    agent: str
    model: str
    n: int  # answerable questions
    contain: float | None
    em: float | None
    f1: float | None
    evidence_r5: float | None
    s_per_question: float | None
    date: str  # YYYY-MM-DD
    commit: str | None
    command: str
    section: str | None  # the BENCHMARKS section that reports it ("§41")
    unanswerable: int = 0  # questions the corpus does not answer, scored apart
    abstain_unanswerable: float | None = None  # % of those the agent abstains on
    answered_wrong: float | None = None  # % of answerable ones answered, and wrong
    new_word_f1: float | None = None  # F1 without the question's words (answer_form.py)
    note: str | None = None  # what a reader must know to read the row

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise ValueError(f"unknown dataset {self.dataset!r}: one of {', '.join(DATASETS)}")
        if self.n < 1 or self.unanswerable < 0:
            raise ValueError(f"question counts must be positive: n={self.n}, "
                             f"unanswerable={self.unanswerable}")
        for name in ("contain", "em", "f1", "new_word_f1", "evidence_r5",
                     "abstain_unanswerable", "answered_wrong"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= 100:
                raise ValueError(f"{name} is a percentage, not {value}")
        if self.abstain_unanswerable is not None and not self.unanswerable:
            raise ValueError("abstain_unanswerable needs unanswerable questions")
        datetime.strptime(self.date, "%Y-%m-%d")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Row:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown result fields: {', '.join(unknown)}")
        return cls(**data)


@dataclass(frozen=True)
class Timing:
    """A set-up step timed on a 2-core machine: the README's first command on a fresh
    machine (``bench/first_run.py``), the test suite."""

    what: str  # what was timed
    quiet_s: float
    busy_s: float | None  # with one other process keeping a core busy
    date: str
    commit: str | None
    command: str
    section: str | None


def load(path: Path = RESULTS) -> tuple[list[Row], list[Timing]]:
    """The rows of the results file, in the order they were recorded."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return ([Row.from_dict(r) for r in data["answers"]],
            [Timing(**r) for r in data.get("timings", [])])


def _save(rows: Sequence[Row], first: Sequence[Timing], path: Path) -> None:
    data = {"answers": [_compact(asdict(r)) for r in rows],
            "timings": [asdict(r) for r in first]}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _compact(row: dict[str, Any]) -> dict[str, Any]:
    """A row without the optional fields left at their defaults."""
    defaults = {"unanswerable": 0, "abstain_unanswerable": None, "answered_wrong": None,
                "note": None}
    return {k: v for k, v in row.items() if k not in defaults or v != defaults[k]}


def record(row: Row | dict[str, Any], path: Path = RESULTS) -> Row:
    """Add a measured run to the results file. A row of the same dataset, agent, model,
    date and commit is replaced (a run measured again); every other row stays."""
    new = row if isinstance(row, Row) else Row.from_dict(row)
    rows, first = load(path)
    same = (new.dataset, new.agent, new.model, new.date, new.commit)
    rows = [r for r in rows if (r.dataset, r.agent, r.model, r.date, r.commit) != same]
    _save([*rows, new], first, path)
    return new


def record_timing(new: Timing | dict[str, Any], path: Path = RESULTS) -> Timing:
    """Add a set-up timing (the README's first command, a test tier) to the results file. A
    timing of the same ``what``, date and commit is replaced (timed again); others stay."""
    new = new if isinstance(new, Timing) else Timing(**new)
    rows, runs = load(path)
    same = (new.what, new.date, new.commit)
    _save(rows, [*(r for r in runs if (r.what, r.date, r.commit) != same), new], path)
    return new


def row_from_predictions(run: Path, *, dataset: str, agent: str, model: str, command: str,
                         section: str | None, commit: str | None = None,
                         note: str | None = None) -> Row:
    """A row scored from a ``sleuth eval run`` folder (its ``predictions.jsonl``) with the
    scorer of ``sleuth eval score``: dated today, at the repository's commit unless given."""
    from answer_form import score as form_score

    from sleuth.eval.report import aggregate, read_predictions, score_record

    records = read_predictions(run)
    rows = [score_record(r, (5,)) for r in records]
    if not rows:
        raise ValueError(f"no predictions in {run}")
    overall = aggregate(rows)
    answerable = [r for r in rows if "unanswerable" not in r]
    # answered, not an abstention (the record's flag or its words), not Contain-correct:
    # the scorer's own "answered wrong" (sleuth.eval.metrics.answered_wrong)
    wrong = [r for r in answerable if r.get("answered_wrong")]
    unanswerable = int(overall.get("unanswerable", 0))

    def pct(key: str) -> float | None:
        return round(100 * overall[key], 1) if key in overall else None

    latency = overall.get("latency")
    return Row(dataset=dataset, agent=agent, model=model, n=len(answerable),
               unanswerable=unanswerable, contain=pct("contain"), em=pct("em"),
               f1=pct("f1"), new_word_f1=form_score(records, 5).get("new_word_f1"),
               evidence_r5=pct("recall@5"),
               abstain_unanswerable=pct("abstain_unanswerable") if unanswerable else None,
               answered_wrong=round(100 * len(wrong) / len(answerable), 1)
               if answerable else None,
               s_per_question=round(latency, 1) if latency else None,
               date=datetime.now(UTC).strftime("%Y-%m-%d"),
               commit=commit or _head(), command=command, section=section, note=note)


def _head() -> str | None:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=False, cwd=RESULTS.parent)
    return done.stdout.strip() or None


# -- tables ---------------------------------------------------------------------------------


def _cell(value: float | None, digits: int = 1) -> str:
    return NONE if value is None else f"{value:.{digits}f}"


def _questions(row: Row) -> str:
    return f"{row.n} + {row.unanswerable}" if row.unanswerable else str(row.n)


def _abstains(row: Row) -> str:
    if not row.unanswerable:
        return NONE
    if row.abstain_unanswerable is None:
        return NONE
    return f"{round(row.abstain_unanswerable * row.unanswerable / 100)} of {row.unanswerable}"


def latest(rows: Iterable[Row], model: str = LOCAL_MODEL) -> dict[tuple[str, str], Row]:
    """The last row recorded for each (dataset, agent) with ``model``."""
    out: dict[tuple[str, str], Row] = {}
    for row in rows:
        if row.model == model:
            out[(row.dataset, row.agent)] = row
    return out


_HEADER = ["set", "agent", "questions", "Contain", "EM", "F1", "new-word F1", "evidence R@5",
           "abstains (unanswerable)", "answered wrong", "s/question"]


def _line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _metrics(row: Row) -> list[str]:
    return [_questions(row), _cell(row.contain), _cell(row.em), _cell(row.f1),
            _cell(row.new_word_f1), _cell(row.evidence_r5), _abstains(row),
            _cell(row.answered_wrong), _cell(row.s_per_question)]


def table(path: Path = RESULTS, model: str = LOCAL_MODEL) -> str:
    """The README's table: every dev set × the default agent, naive-rag and A-RAG's
    ``full``, the latest run of each with ``model``; a pair never run is a row of "—"."""
    rows, _ = load(path)
    found = latest(rows, model)
    lines = [_line(_HEADER), _line(["---"] * len(_HEADER))]
    for key, label in DATASETS.items():
        for agent in AGENTS:
            row = found.get((key, agent))
            name = f"`{agent}` (default)" if agent == "hybrid" else f"`{agent}`"
            cells = _metrics(row) if row else [NONE] * (len(_HEADER) - 2)
            lines.append(_line([label, name, *cells]))
    return "\n".join(lines) + "\n"


def source_line(path: Path = RESULTS, model: str = LOCAL_MODEL) -> str:
    """The README table's source line: the file, and the BENCHMARKS sections its rows cite."""
    rows = latest(load(path)[0], model).values()
    cited = sorted({r.section for r in rows if r.section}, key=lambda s: int(s.lstrip("§")))
    return (f"Source: `bench/results.json` (rendered by `bench/results.py`, checked by cog); "
            f"each row names its command, commit and date, from BENCHMARKS.md "
            f"{', '.join(cited)}, where the runs are described with the machine's state. "
            f"Different question counts in one set are different subsets.\n")


def full_table(path: Path = RESULTS) -> str:
    """Every row of the file with where it comes from (BENCHMARKS.md's summary)."""
    rows, _ = load(path)
    header = [*_HEADER, "model", "date", "commit", "section", "note"]
    lines = [_line(header), _line(["---"] * len(header))]
    order = {key: i for i, key in enumerate(DATASETS)}
    for row in sorted(rows, key=lambda r: (order[r.dataset], AGENTS.index(r.agent)
                                           if r.agent in AGENTS else len(AGENTS), r.date)):
        lines.append(_line([DATASETS[row.dataset], f"`{row.agent}`", *_metrics(row),
                            row.model, row.date, row.commit or NONE, row.section or NONE,
                            (row.note or "").replace("|", "/") or NONE]))
    return "\n".join(lines) + "\n"


def timing(what: str, path: Path = RESULTS) -> Timing:
    """The latest timing of ``what`` ("to the first cited answer", "the test suite")."""
    _, runs = load(path)
    found = [r for r in runs if r.what == what]
    if not found:
        raise ValueError(f"{path} holds no timing of {what!r}")
    return found[-1]


def minutes(seconds: float) -> str:
    """``173`` -> ``2 min 53 s``."""
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60:02d} s" if whole >= 60 else f"{whole} s"


def _source(t: Timing) -> str:
    where = f"BENCHMARKS.md section {t.section.lstrip('§')}" if t.section and \
        t.section.startswith("§") else (t.section or "")
    return ", ".join(x for x in (f"`{t.command}`", t.date,
                                 f"commit {t.commit}" if t.commit else "", where) if x)


def setup_text(path: Path = RESULTS) -> str:
    """The README's set-up times, from the latest timings of the file."""
    total = timing("to the first cited answer", path)
    answer = timing("the first answer", path)
    tests = timing("the test suite", path)
    fast = timing("the fast test tier", path)
    busy = f", and **{minutes(total.busy_s)}** with another process keeping a core busy" \
        if total.busy_s else ""
    fast_busy = f", {minutes(fast.busy_s)} with a core busy" if fast.busy_s else ""
    model = f"; {minutes(answer.quiet_s)}" + \
        (f" ({minutes(answer.busy_s)})" if answer.busy_s else "") + \
        " of that was the offline model's first answer"
    return (f"On a fresh 2-core machine (a new virtual environment, empty caches, no GPU) the "
            f"first command took **{minutes(total.quiet_s)}** to its first cited "
            f"answer{busy}{model} ({_source(total)}). The second installs what the slow "
            f"tests need and runs both test tiers: about {round(tests.quiet_s / 60)} minutes on "
            f"2 cores ({_source(tests)}); `python -m pytest` alone runs the fast tier in "
            f"**{minutes(fast.quiet_s)}**{fast_busy} ({_source(fast)}).\n")


# -- command line ---------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("record", help="score a `sleuth eval run` folder and record it")
    add.add_argument("--run", type=Path, required=True, help="the folder of predictions.jsonl")
    add.add_argument("--dataset", required=True, choices=list(DATASETS))
    add.add_argument("--agent", required=True)
    add.add_argument("--model", default=LOCAL_MODEL)
    add.add_argument("--run-command", dest="run_command", required=True,
                     help="the command that produced the run")
    add.add_argument("--section", help="the BENCHMARKS section that reports it")
    add.add_argument("--note")
    add_timing = sub.add_parser("timing", help="record a set-up timing (a test tier)")
    add_timing.add_argument("--what", required=True,
                            help='"the test suite", "the fast test tier", ...')
    add_timing.add_argument("--quiet-s", dest="quiet_s", type=float, required=True)
    add_timing.add_argument("--busy-s", dest="busy_s", type=float)
    add_timing.add_argument("--run-command", dest="run_command", required=True)
    add_timing.add_argument("--section")
    sub.add_parser("table", help="print the README's table")
    sub.add_parser("full", help="print every row with its source")
    args = parser.parse_args(argv)
    if args.command == "record":
        row = record(row_from_predictions(
            args.run, dataset=args.dataset, agent=args.agent, model=args.model,
            command=args.run_command, section=args.section, note=args.note))
        sys.stdout.write(json.dumps(_compact(asdict(row)), ensure_ascii=False) + "\n")
    elif args.command == "timing":
        done = record_timing(Timing(args.what, args.quiet_s, args.busy_s,
                                    datetime.now(UTC).strftime("%Y-%m-%d"), _head(),
                                    args.run_command, args.section))
        sys.stdout.write(json.dumps(asdict(done), ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(table() if args.command == "table" else full_table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
