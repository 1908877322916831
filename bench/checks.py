"""What each answer check does to a capable model's answers and to a model answering from
memory, on every dev set, measured with scripted readers instead of a model (issue 63).

The default agent (``hybrid``) answers a sample of each dev set's questions with the scripted
server's readers (:mod:`sleuth.testing.readers`) as its endpoint: the *oracle* (answers a gold
answer where a passage shown holds it, citing that passage; otherwise "The documents do not
say") and *from-memory* (a fluent, plausible wrong answer citing a shown chunk that does not
hold it), under each model profile (``small``: the JSON tool protocol with the model's facts
first, as the local model runs; ``capable``: native tool calls). Each (set, reader, profile)
runs:

- ``profile``: the profile's checks (``src/sleuth/configs/<profile>.yaml``), every question;
- ``none``: no checks (``agent.checks=[]``), every question;
- ``minus:C`` for each check C of the profile that fired: the profile's checks without C,
  on the questions where C fired (elsewhere the run is the same: the readers and the search
  are deterministic, and a check that did not apply changed nothing);
- ``plus:C`` for each ``--add C`` (a check not in the profile, e.g. ``grounded:flag``): the
  profile's checks and C, every question (a check the profile has is measured by
  ``minus:C``).

Comparing a question's answer with and without a check gives the check's effect on it:
fires (it applied), changes (the answer's text), right → wrong, wrong → right, withheld
(right / wrong: the answer became an abstention), abstention → wrong, flagged (right /
wrong: the answer stands with the check's note) and the model calls it added. "Right" is
Contain-correct and not an abstention; "wrong" is answered (not abstained) and not right.
Per (set, profile, reader) the table gives the answers right, wrong and abstained, those
given without a model (a tool's settled verdict: no reader wrote them), and the targets of
issue 63: for the oracle, the right answers a check withheld or turned wrong (capable: 0);
for from-memory, the share of the wrong answers it gave without checks that the profile
withholds or flags (≥ 70 %).

Records are JSONL, one per question and run, under ``--out``; a run interrupted resumes
where it stopped (done questions are skipped). ``--record`` writes the tables' numbers to
``bench/checks.json``, which BENCHMARKS.md's generated section renders (cog, checked by
``tests/test_docs.py``)::

    python bench/checks.py --sets medical,2wiki --limit 100            # run (resumable)
    python bench/checks.py --sets medical --add grounded:flag          # a candidate check
    python bench/checks.py --report                                    # tables of what ran
    python bench/checks.py --record && cog -r BENCHMARKS.md            # into BENCHMARKS

Indexes come from ``_common.dev_index`` (built once and cached); ``--index 2wiki=PATH``
uses another.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sleuth.agent.checks.base import choose  # noqa: E402
from sleuth.errors import SleuthError  # noqa: E402
from sleuth.eval.datasets import Question, load_dataset  # noqa: E402
from sleuth.eval.metrics import abstains, contain_match  # noqa: E402
from sleuth.settings import Settings  # noqa: E402
from sleuth.text.ids import strip_citations  # noqa: E402

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OUT = BENCH / "out" / "checks"
RECORD = BENCH / "checks.json"
AGENT = "hybrid"
READERS = ("oracle", "from-memory")
PROFILES = ("small", "capable")
MAX_BUGS = 3  # questions of one run that raise before it stops (the code is broken)
TARGET_CAUGHT = 0.70  # of the from-memory reader's wrong answers, withheld or flagged


# The sets in the tables' order, with how they name them; each one's questions and corpus
# are ``_common.DEV_SETS``'s (one place says what a dev set is)
SETS: dict[str, str] = {
    "2wiki": "2Wiki, as written",
    "2wiki-natural": "2Wiki, as people type it",
    "pgdocs": "PostgreSQL 15 manual",
    "javadoc": "Commons Lang's Javadoc",
    "gitdocs": "Git's manual",
    "medical": "GraphRAG-Bench medical",
    "novel": "GraphRAG-Bench novel",
    "financebench": "FinanceBench",
}


# --- one question's record --------------------------------------------------------------

def scored(question: Question, answer: Any) -> dict[str, Any]:
    """The record of one answer: its text, whether it is right (Contain, not an
    abstention), wrong (answered, answerable, not right) or an abstention, its model calls
    and each check's note."""
    text = str(answer.answer or "")
    plain = strip_citations(text)
    abstained = bool(answer.abstained) or abstains(plain)
    right = question.answerable and not abstained and bool(contain_match(plain, question.answers))
    return {"id": question.id, "answer": text[:1500], "answerable": question.answerable,
            "abstained": abstained, "right": right,
            "wrong": question.answerable and not abstained and not right and bool(plain.strip()),
            "calls": answer.llm_calls, "notes": [n.to_dict() for n in answer.check_notes],
            "error": None}


def failed(question: Question, error: str) -> dict[str, Any]:
    return {"id": question.id, "answer": "", "answerable": question.answerable,
            "abstained": False, "right": False, "wrong": False, "calls": 0, "notes": [],
            "error": error}


def read_records(path: Path) -> dict[str, dict[str, Any]]:
    """The records of a run file by question id, the last of each (a line cut by a crash
    is left out, and so is a question that raised: it runs again)."""
    out: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("bug"):
            out.pop(str(record["id"]), None)
        else:
            out[str(record["id"])] = record
    return out


# --- running --------------------------------------------------------------------------

@dataclass
class Cell:
    """One (set, reader, profile): its questions, the index, the folder of its runs."""

    name: str
    reader: str
    profile: str
    questions: list[Question]
    known: list[Question]  # every question of the set: the readers' golds
    index: Path
    folder: Path
    workers: int = 2
    seconds: dict[str, float] = field(default_factory=dict)

    def checks(self) -> list[str]:
        """The profile's checks, as its preset lists them."""
        return list(Settings.from_name(self.profile).agent.checks or ())

    def run(self, variant: str, checks: Sequence[str], only: Iterable[str] | None = None,
            log: Any = print) -> dict[str, dict[str, Any]]:
        """Answer the questions (``only``: those ids) with ``checks``, into
        ``<variant>.jsonl``; questions already there are skipped."""
        from sleuth.index.write import Index
        from sleuth.llm.factory import llm_from_settings
        from sleuth.testing.fake import FakeLLMServer
        from sleuth.testing.readers import FromMemory, Oracle, golds

        path = self.folder / f"{variant.replace(':', '-')}.jsonl"
        done = read_records(path)
        wanted = set(only) if only is not None else None
        todo = [q for q in self.questions if q.id not in done and
                (wanted is None or q.id in wanted)]
        if not todo:
            return done
        choose(checks)  # an unknown check fails here, before any question
        reader = (Oracle if self.reader == "oracle" else FromMemory)(golds(self.known))
        started = time.perf_counter()
        self.folder.mkdir(parents=True, exist_ok=True)
        with FakeLLMServer([], reader=reader) as server, path.open("a") as out:
            settings = Settings.load(
                llm={"base_url": server.base_url, "model": "scripted-reader", "max_retries": 1,
                     "tool_mode": "json" if self.profile == "small" else "native"},
                agent={"profile": self.profile, "checks": list(checks)})
            llm = llm_from_settings(settings)
            with Index.open(self.index, settings=settings) as index:
                from sleuth.agent.variants import build_agent

                # built once first: the registries load on first use, and two threads that
                # both find them empty see no agents (sleuth.plugins.Registry.load)
                build_agent(AGENT, index, llm, settings)

                def one(q: Question) -> dict[str, Any]:
                    try:
                        answer = build_agent(AGENT, index, llm, settings).run(
                            q.question, question_id=q.id)
                    except SleuthError as exc:
                        return failed(q, f"{type(exc).__name__}: {exc}")
                    except Exception as exc:  # noqa: BLE001 - a bug: run again next time
                        return {**failed(q, f"unexpected {type(exc).__name__}: {exc}"),
                                "bug": True}
                    return scored(q, answer)

                bugs = 0
                with ThreadPoolExecutor(max(1, self.workers)) as pool:
                    for n, record in enumerate(pool.map(one, todo), 1):
                        out.write(json.dumps(record, ensure_ascii=False) + "\n")
                        out.flush()
                        done[record["id"]] = record
                        bugs += bool(record.get("bug"))
                        if bugs >= MAX_BUGS:
                            raise SystemExit(f"{self.name} {variant}: {bugs} questions "
                                             f"raised ({record['error']}); stopped")
                        if n % 20 == 0 or n == len(todo):
                            log(f"  {self.name} {self.reader} {self.profile} {variant}: "
                                f"{n}/{len(todo)} ({time.perf_counter() - started:.0f} s)")
            if server.reader_errors:
                log(f"  reader errors: {server.reader_errors[:3]}")
        self.seconds[variant] = self.seconds.get(variant, 0.0) + time.perf_counter() - started
        return done

    def measure(self, added: Sequence[str], log: Any = print) -> None:
        """The profile's run, the run without checks, each fired check left out on the
        questions it fired on, and each added check's run."""
        checks = self.checks()
        full = self.run("profile", checks, log=log)
        self.run("none", [], log=log)
        for spec in checks:
            name = spec.partition(":")[0]
            fired = [q for q, r in full.items() if any(n["name"] == name for n in r["notes"])]
            if fired:
                self.run(f"minus:{name}", [c for c in checks if c != spec], fired, log=log)
        names = {c.partition(":")[0] for c in checks}
        for spec in added:
            if spec.partition(":")[0] not in names:  # in the profile: measured by minus:C
                self.run(f"plus:{spec}", [*checks, spec], log=log)
        times = self.folder / "seconds.json"
        was = json.loads(times.read_text()) if times.is_file() else {}
        for key, value in self.seconds.items():
            was[key] = round(was.get(key, 0.0) + value, 1)
        times.write_text(json.dumps(was, indent=1) + "\n")


# --- counting ---------------------------------------------------------------------------

@dataclass
class Effect:
    """What one check did on one (set, reader, profile), against the same run without it."""

    check: str
    fires: int = 0
    changes: int = 0
    right_to_wrong: int = 0
    wrong_to_right: int = 0
    withheld_right: int = 0
    withheld_wrong: int = 0
    abstained_to_wrong: int = 0
    flagged_right: int = 0
    flagged_wrong: int = 0
    calls_added: int = 0
    compared: int = 0  # questions it fired on with a record of the run without it


def effect(spec: str, with_: Mapping[str, dict[str, Any]],
           without: Mapping[str, dict[str, Any]]) -> Effect:
    """The effect of check ``spec`` (``NAME`` or ``NAME:flag``): ``with_`` the run with
    it, ``without`` the same run without it (records by question id)."""
    name = spec.partition(":")[0]
    out = Effect(spec)
    for qid, record in with_.items():
        notes = [n for n in record["notes"] if n["name"] == name]
        if not notes:
            continue
        out.fires += 1
        out.changes += any(n["changed"] for n in notes)
        if any(n["flagged"] for n in notes):
            out.flagged_right += record["right"]
            out.flagged_wrong += record["wrong"]
        before = without.get(qid)
        if before is None or before.get("error") or record.get("error"):
            continue
        out.compared += 1
        out.calls_added += record["calls"] - before["calls"]
        if record["right"] and not before["right"]:
            out.wrong_to_right += 1
        elif before["right"] and record["wrong"]:
            out.right_to_wrong += 1
        elif before["right"] and record["abstained"]:
            out.withheld_right += 1
        elif before["wrong"] and record["abstained"]:
            out.withheld_wrong += 1
        elif before["abstained"] and record["wrong"]:
            out.abstained_to_wrong += 1
    return out


@dataclass
class Summary:
    """One (set, reader, profile): its answers with the profile's checks, and against the
    run without checks; each check's effect."""

    set: str
    reader: str
    profile: str
    n: int = 0
    unanswerable: int = 0
    right: int = 0
    wrong: int = 0
    abstained: int = 0
    no_model: int = 0  # answered without a model call (a tool's settled verdict)
    errors: int = 0
    calls: float = 0.0  # model calls per question, with the profile's checks
    calls_none: float = 0.0  # and without checks
    right_none: int = 0  # right without checks
    lost: int = 0  # right without checks, not right with them (withheld or wrong)
    wrong_none: int = 0  # the reader's wrong answers without checks (a model's, not a verdict)
    caught: int = 0  # of those, withheld, flagged or made right by the profile's checks
    effects: list[Effect] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def caught_share(self) -> float | None:
        return self.caught / self.wrong_none if self.wrong_none else None


def summarise(folder: Path, name: str, reader: str, profile: str,
              checks: Sequence[str]) -> Summary | None:
    """The summary of one cell's runs in ``folder`` (None: its profile run is missing)."""
    full = read_records(folder / "profile.jsonl")
    none = read_records(folder / "none.jsonl")
    if not full:
        return None
    out = Summary(name, reader, profile, n=len(full))
    for qid, r in full.items():
        out.unanswerable += not r["answerable"]
        out.right += r["right"]
        out.wrong += r["wrong"]
        out.abstained += r["abstained"]
        out.no_model += r["calls"] == 0 and not r.get("error")
        out.errors += bool(r.get("error"))
        base = none.get(qid)
        if base is None:
            continue
        out.right_none += base["right"]
        out.lost += base["right"] and not r["right"]
        if base["wrong"] and base["calls"]:
            out.wrong_none += 1
            flagged = any(n["flagged"] for n in r["notes"])
            out.caught += bool(r["abstained"] or flagged or r["right"])
    out.calls = sum(r["calls"] for r in full.values()) / len(full)
    if none:
        out.calls_none = sum(r["calls"] for r in none.values()) / len(none)
    for spec in checks:
        without = read_records(folder / f"minus-{spec.partition(':')[0]}.jsonl")
        out.effects.append(effect(spec, full, without))
    for path in sorted(folder.glob("plus-*.jsonl")):
        spec = path.stem[len("plus-"):].replace("-flag", ":flag")
        added = read_records(path)
        out.effects.append(effect(spec, added, full))
    times = folder / "seconds.json"
    if times.is_file():
        out.seconds = sum(json.loads(times.read_text()).values())
    return out


def summaries(out: Path, sets: Iterable[str] = SETS) -> list[Summary]:
    found = []
    for name in sets:
        for reader in READERS:
            for profile in PROFILES:
                folder = out / name / f"{reader}-{profile}"
                checks = Cell(name, reader, profile, [], [], Path(), folder).checks()
                summary = summarise(folder, name, reader, profile, checks)
                if summary is not None:
                    found.append(summary)
    return found


# --- the tables ---------------------------------------------------------------------------

def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "—"


def summary_table(rows: Sequence[Summary]) -> str:
    head = ("| set | profile | reader | questions | right | wrong | abstained | no model | "
            "calls / q (no checks) | right lost to checks | wrong caught |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for s in rows:
        n = f"{s.n - s.unanswerable} + {s.unanswerable}" if s.unanswerable else str(s.n)
        lost = f"{s.lost} of {s.right_none}" if s.reader == "oracle" else "—"
        caught = (f"{s.caught} of {s.wrong_none} ({_pct(s.caught, s.wrong_none)})"
                  if s.reader == "from-memory" else "—")
        lines.append(f"| {SETS.get(s.set, s.set)} | {s.profile} | {s.reader} | {n} | "
                     f"{s.right} | {s.wrong} | {s.abstained} | {s.no_model} | "
                     f"{s.calls:.2f} ({s.calls_none:.2f}) | {lost} | {caught} |")
    return "\n".join(lines)


def checks_table(rows: Sequence[Summary], profile: str) -> str:
    head = ("| check | set | reader | fires | changes | right → wrong | wrong → right | "
            "withheld right / wrong | abstention → wrong | flagged right / wrong | "
            "calls added |\n|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    order = {c: i for i, c in enumerate(dict.fromkeys(
        e.check for s in rows if s.profile == profile for e in s.effects))}
    items = sorted(((e, s) for s in rows if s.profile == profile for e in s.effects),
                   key=lambda p: (order[p[0].check], list(SETS).index(p[1].set),
                                  READERS.index(p[1].reader)))
    fired = {(e.check, s.set) for e, s in items if e.fires}
    quiet: dict[str, list[str]] = {}
    for e, s in items:
        if e.fires == 0:
            if (e.check, s.set) not in fired and s.reader == READERS[0]:
                quiet.setdefault(e.check, []).append(SETS.get(s.set, s.set))
            continue
        lines.append(f"| {e.check} | {SETS.get(s.set, s.set)} | {s.reader} | {e.fires} | "
                     f"{e.changes} | {e.right_to_wrong} | {e.wrong_to_right} | "
                     f"{e.withheld_right} / {e.withheld_wrong} | {e.abstained_to_wrong} | "
                     f"{e.flagged_right} / {e.flagged_wrong} | {e.calls_added:+d} |")
    if quiet:
        lines += ["", "A row where the check fired on no question is left out; it fired on "
                  "none with either reader: " +
                  "; ".join(f"`{c}`: {', '.join(sets)}" for c, sets in quiet.items()) + "."]
    return "\n".join(lines)


def markdown(path: Path = RECORD) -> str:
    """The generated section's body from the recorded numbers (``bench/checks.json``)."""
    if not path.is_file():
        return "No run recorded yet: `python bench/checks.py --record`.\n"
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = [_summary_from(d) for d in data["summaries"]]
    parts = [f"Recorded {data['date']} at commit {data['commit']}: `{data['command']}` "
             f"(the first {data['limit']} questions of each set, or all of a smaller one; the "
             f"agent `{AGENT}`; indexes: {data['embedders']}).", "", summary_table(rows)]
    for profile in PROFILES:
        if any(s.profile == profile for s in rows):
            parts += ["", f"The `{profile}` profile's checks, one at a time (each against "
                      "the same run without it):", "", checks_table(rows, profile)]
    return "\n".join(parts) + "\n"


def _summary_from(data: dict[str, Any]) -> Summary:
    effects = [Effect(**e) for e in data.pop("effects")]
    return Summary(**data, effects=effects)


def record(out: Path, command: str, limit: int, embedders: str) -> Path:
    """Write the numbers of every run under ``out`` to ``bench/checks.json``."""
    import subprocess
    from datetime import UTC, datetime

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False, cwd=REPO).stdout.strip()
    data = {"date": datetime.now(UTC).strftime("%Y-%m-%d"), "commit": commit,
            "command": command, "limit": limit, "embedders": embedders,
            "summaries": [asdict(s) for s in summaries(out)]}
    RECORD.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return RECORD


# --- the command line -----------------------------------------------------------------------

def load_set(name: str, data: Path | None) -> list[Question]:
    from _common import dev_questions

    return load_dataset(dev_questions(name, data)).questions


def index_of(name: str, given: Mapping[str, Path], embedder: str | None) -> Path:
    from _common import DEV_SETS, dev_index

    corpus = DEV_SETS[name].corpus
    if corpus in given:
        return given[corpus]
    return dev_index(corpus, embedder=embedder)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default=",".join(SETS),
                        help=f"comma-separated, of: {', '.join(SETS)}")
    parser.add_argument("--readers", default=",".join(READERS))
    parser.add_argument("--profiles", default=",".join(PROFILES))
    parser.add_argument("--limit", type=int, default=100, help="the first N questions of a set")
    parser.add_argument("--add", default="", help="checks to add to each profile, measured "
                        "against it (comma-separated, e.g. grounded:flag)")
    parser.add_argument("--index", action="append", default=[], metavar="CORPUS=PATH",
                        help="an index to use for a dev corpus (2wiki, medical, ...)")
    parser.add_argument("--embedder", default=None, help="dev_index's embedder (default: "
                        "the one each corpus was measured with)")
    parser.add_argument("--data", type=Path, default=None, help="the benchmark data root")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--report", action="store_true", help="only print the tables")
    parser.add_argument("--record", action="store_true",
                        help="write the numbers to bench/checks.json (BENCHMARKS renders it)")
    args = parser.parse_args(argv)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [s for s in sets if s not in SETS]
    if unknown:
        parser.error(f"unknown sets {unknown}; choose from {', '.join(SETS)}")
    if args.record:
        command = "python bench/checks.py " + " ".join(sys.argv[1:] if argv is None else argv)
        print(record(args.out, command.replace(" --record", ""), args.limit,
                     args.embedder or "dev_index's defaults"))
        return 0
    if not args.report:
        given = {k: Path(v) for k, _, v in (i.partition("=") for i in args.index)}
        added = [a.strip() for a in args.add.split(",") if a.strip()]
        for name in sets:
            known = load_set(name, args.data)
            index = index_of(name, given, args.embedder)
            for reader in args.readers.split(","):
                for profile in args.profiles.split(","):
                    cell = Cell(name, reader, profile, known[:args.limit], known, index,
                                args.out / name / f"{reader}-{profile}", args.workers)
                    cell.measure(added)
    rows = summaries(args.out, sets)
    print(summary_table(rows))
    for profile in PROFILES:
        print(f"\n{profile}:\n" + checks_table(rows, profile))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
