"""What every ``sleuth`` command shares: the common options, settings from flags, and how
results are printed (JSON, status lines on stderr, progress bars, answers, tool results,
the files an index run skipped).

Kept apart from :mod:`sleuth.cli.main` so the generated tool commands
(:mod:`sleuth.cli.tools`) and the hand-written ones print the same way.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Self, TypeVar

import click

from sleuth.settings import Settings

if TYPE_CHECKING:
    from sleuth.ingest import Skipped

F = TypeVar("F", bound=Callable[..., Any])

_COMMON: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("--index", "--store", "index_dir"),
     {"default": None, "envvar": "SLEUTH_INDEX", "show_envvar": True,
      "help": "Index folder (default ./.sleuth) or store URL "
              "(postgresql://user@host/db?schema=NAME)."}),
    (("--json", "as_json"), {"is_flag": True, "help": "Machine-readable JSON on stdout."}),
    (("--config", "config"),
     {"type": click.Path(dir_okay=False), "default": None,
      "help": "Config file (YAML or TOML; A-RAG layout accepted)."}),
)


def common(func: F) -> F:
    """``--index``, ``--json`` and ``--config`` on every command."""
    for decls, attrs in reversed(_COMMON):
        func = click.option(*decls, **attrs)(func)
    return func


def common_options() -> list[click.Option]:
    """The options of :func:`common`, for commands built without decorators."""
    return [click.Option(list(decls), **attrs) for decls, attrs in _COMMON]


def load_settings(config: str | None, index_dir: str | None, **overrides: Any) -> Settings:
    return Settings.load(config, index=index_dir, **overrides)


def int_list(text: str, option: str) -> list[int]:
    """``"2,5,10"`` → ``[2, 5, 10]``, or a usage error naming the option."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"{option} expects integers like 2,5 (got {text!r})") from None
    if not values or min(values) < 1:
        raise click.BadParameter(f"{option} expects positive integers (got {text!r})")
    return values


def emit(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def status(message: str) -> None:
    click.echo(message, err=True)


def print_result(name: str, arguments: dict[str, Any], result: Any, as_json: bool) -> None:
    """A tool's text, or with ``--json`` the call and the tool's data."""
    if as_json:
        emit({"tool": name, "arguments": arguments, **result.data,
              "retrieved_tokens": result.retrieved_tokens})
    else:
        click.echo(result.text)


def print_answer(answer: Any) -> None:
    click.echo(answer.answer)
    if answer.citations:
        click.echo("\nSources:")
        for c in answer.citations:
            click.echo(f"  [{c.ref or c.chunk_id or c.doc_id}] {c.title}"
                       f"{f', {c.where}' if c.where else ''}{source_note(c)}")
    if answer.control is not None:
        status(control_line(answer.control.to_dict()))
    status(summary_line(answer))


def source_note(citation: Any) -> str:
    """`` (found by hybrid_search, score 0.82)``: the search that showed a citation and the
    score it was found with, relative to that search's best hit (nothing where neither is
    known; never a made-up number)."""
    parts = [f"found by {citation.tool}"] if citation.tool else []
    if citation.score is not None:
        parts.append(f"score {citation.score:.2f}")
    return f" ({', '.join(parts)})" if parts else ""


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary_line(answer: Any) -> str:
    """``(2 steps and 1 check, 1 LLM call, 812 retrieved tokens, $0.0000, 3.1 s)``: the
    steps and checks counted as :func:`print_step` printed them."""
    checks = sum(1 for s in answer.trajectory if s.kind == "check")
    steps = _count(len(answer.trajectory) - checks, "step") + \
        (f" and {_count(checks, 'check')}" if checks else "")
    forced = f", forced by {answer.forced}" if answer.forced else ""
    summaries = sum(1 for e in answer.context_events if e.get("event") == "summarize")
    summarized = f", context summarized {summaries}x" if summaries else ""
    return (f"({steps}, {_count(answer.llm_calls, 'LLM call')}, "
            f"{answer.total_retrieved_tokens} retrieved tokens, ${answer.total_cost:.4f}, "
            f"{answer.seconds:.1f} s{forced}{summarized})")


def control_line(control: Any) -> str:
    """``verified at attempt 2 (stage ppr); gate 0.61 >= 0.25`` for a2rag / --verify runs."""
    attempts = control.get("attempts") or []
    stages = [a["stage"] for a in attempts if a.get("stage")]
    stage = f" (stage {stages[-1]})" if stages else ""
    parts = [f"{control.get('outcome') or 'no outcome'} after {len(attempts)} attempt"
             f"{'' if len(attempts) == 1 else 's'}{stage}"]
    gate = control.get("gate")
    if gate:
        parts.append(f"gate {gate['score']:.2f} {'>=' if gate['passed'] else '<'} "
                     f"{gate['threshold']:.2f}")
    if control.get("proposed"):
        parts.append(f"{control['proposed']} triple(s) proposed for `sleuth graph review`")
    return "; ".join(parts)


def print_step(step: Any) -> None:
    """A tool call or retrieval as ``step N: tool(args) -> T tokens``; an answer check's
    step as ``check: NAME — what it did``."""
    if step.kind == "check":
        why = " ".join(str(step.reasoning).split())
        status(f"  check: {step.tool_name} — {why[:200] or 'applied'}")
        return
    args = json.dumps(step.tool_input, ensure_ascii=False)
    flag = f"  ! {step.error}" if step.error else ""
    status(f"  step {step.step}: {step.tool_name}({args[:160]}) -> "
           f"{step.retrieved_tokens} tokens{flag}")


class Watch:
    """What ``sleuth ask`` shows while the agent works, on stderr: each step
    (:func:`print_step`) and, before each model call, what the model reads and how long
    that takes here ("reading 5 passages (about 40 s here)"); on a terminal the line then
    counts the seconds until the next event. Pass it as ``on_step``."""

    TICK = 1.0

    def __init__(self) -> None:
        import threading

        from sleuth.agent.run import Listener

        self.listener = Listener(step=self.step, progress=self.progress)
        self.live = sys.stderr.isatty()
        self.lock = threading.Lock()
        self.waiting: Any = None  # (line, started, stop event) of the live line

    def step(self, step: Any) -> None:
        self.stop()
        print_step(step)

    def progress(self, reading: dict[str, Any]) -> None:
        import threading

        self.stop()
        line = f"  {reading['text']} ..."
        if not self.live:
            status(line)
            return
        stop = threading.Event()
        with self.lock:
            self.waiting = (line, time.monotonic(), stop)
        click.echo(line, err=True, nl=False)
        threading.Thread(target=self._tick, args=(line, stop), daemon=True).start()

    def _tick(self, line: str, stop: Any) -> None:
        started = time.monotonic()
        while not stop.wait(self.TICK):
            with self.lock:
                if not stop.is_set():
                    click.echo(f"\r{line} {time.monotonic() - started:.0f} s", err=True,
                               nl=False)

    def stop(self) -> None:
        """End the live line (with the seconds it took) before anything else is printed."""
        with self.lock:
            waiting, self.waiting = self.waiting, None
            if waiting is None:
                return
            line, started, stop = waiting
            stop.set()
            click.echo(f"\r{line} {time.monotonic() - started:.0f} s", err=True)


@contextlib.contextmanager
def watching(show: bool) -> Iterator[Any]:
    """A :class:`Watch`'s listener for ``on_step`` while the block runs (None when not
    ``show``), its live line ended however the block ends."""
    watch = Watch() if show else None
    try:
        yield watch.listener if watch else None
    finally:
        if watch:
            watch.stop()


def print_problems(problems: Sequence[Any]) -> None:
    for p in problems:
        status(f"damaged: {p.part} {p.problem}; repair: {p.repair}")


def table(heads: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def pace(done: int, took: float, total: int | None) -> str:
    """How fast work goes, as a person reads it: "115.5/s" when more than one a second
    finishes, else the seconds each takes ("52.0 s each": 0.0/s says nothing), and the time
    left where the total is known ("about 31 min left")."""
    if not done:
        return "none finished yet"
    rate = done / took
    said = f"{rate:,.1f}/s" if rate >= 1 else f"{took / done:,.1f} s each"
    if total and done < total:
        left = (total - done) / rate
        said += ", about " + (f"{left:.0f} s" if left < 90 else f"{left / 60:.0f} min"
                              if left < 5400 else f"{left / 3600:.1f} h") + " left"
    return said


class Bar:
    """Progress on stderr: a tqdm bar on a terminal; elsewhere (a log file, a pipe, CI) one
    plain line every :data:`PLAIN_EVERY` seconds and one at the end, with the rate.
    Subclasses map progress."""

    PLAIN_EVERY = 10.0

    def __init__(self, enabled: bool, desc: str, unit: str) -> None:
        from tqdm import tqdm

        self.plain = enabled and not sys.stderr.isatty()
        self.bar = tqdm(desc=desc, unit=unit, disable=not enabled or self.plain,
                        file=sys.stderr)
        self.desc, self.unit = desc, unit.strip()
        self.done = 0
        self.postfix: dict[str, Any] = {}
        self.started = self.said = time.monotonic()
        self.closed = False

    def advance(self, done: int, **postfix: Any) -> None:
        self.bar.update(done - self.done)
        self.done = done
        self.bar.set_postfix(refresh=False, **postfix)
        self.postfix = postfix
        if self.plain and time.monotonic() - self.said >= self.PLAIN_EVERY:
            self._say()

    def _say(self) -> None:
        self.said = time.monotonic()
        took = max(self.said - self.started, 1e-9)
        total = f" of {self.bar.total:,}" if self.bar.total else ""
        unit = f"{self.unit}s" if self.unit in ("file", "doc") else self.unit
        share = f" ({100 * self.done / self.bar.total:.0f}%)" if self.bar.total else ""
        extra = "".join(f", {k} {v}" for k, v in self.postfix.items())
        status(f"{self.desc}: {self.done:,}{total} {unit}{share} in {took:.0f} s "
               f"({pace(self.done, took, self.bar.total)}){extra}")

    def __enter__(self) -> Self:
        return self

    def close(self) -> None:
        """End the bar, with a last plain line of where it got to (once)."""
        if self.plain and self.done and not self.closed:
            self._say()
        self.closed = True
        self.bar.close()

    def __exit__(self, *exc: object) -> None:
        self.close()


class IndexBar(Bar):
    """Files read of the files to read (counted before reading: the bar's total, its
    percentage and the time left), with documents, chunks and embedded sentences
    alongside; where the documents come from no files or one (a corpus file's records),
    the documents read, with no total."""

    def __init__(self, enabled: bool) -> None:
        super().__init__(enabled, "indexing", " file")

    def update(self, progress: Any) -> None:
        total = progress.files_total if (progress.files_total or 0) > 1 else None
        if total and self.bar.total != total:
            self.bar.total = total
            self.bar.refresh()
        elif not total and self.unit == "file":
            self.unit = self.bar.unit = "doc"
        done = min(progress.files, total) if total else progress.documents_seen
        self.advance(done, docs=progress.documents_seen, new=progress.documents_indexed,
                     unchanged=progress.documents_unchanged, chunks=progress.chunks,
                     sentences=progress.sentences)


class RunBar(Bar):
    """Questions finished, with running answer rate, contain-accuracy and cost."""

    def __init__(self, enabled: bool, desc: str = "questions") -> None:
        super().__init__(enabled, desc, "q")
        self.stopping = False

    def update(self, stats: Any) -> None:
        if stats.stopping is not None and not self.stopping:
            self.stopping = True
            status(f"\nstopping: no new question starts; the {stats.stopping} in flight "
                   "finish and are saved (Ctrl-C again stops them now; what is finished "
                   "stays saved)")
        if self.bar.total is None:
            self.bar.total = stats.total - stats.skipped
        scored = max(stats.done - stats.errors, 1)
        self.advance(stats.done, answered=f"{stats.answered / scored:.0%}",
                     contain=f"{stats.contain_acc:.1%}", errors=stats.errors,
                     cost=f"${stats.cost:.4f}")


# Files skipped for one reason listed one by one up to this many; more are one line
SKIPS_LISTED = 3


def skipped_lines(skipped: Sequence[Skipped]) -> list[str]:
    """One line per skipped file, ``skipped PATH: REASON``, except that a reason more than
    :data:`SKIPS_LISTED` files share is one line naming the first of them (a Javadoc
    build's 485 listing pages are not 485 lines; ``--json`` lists every file)."""
    by_reason: dict[str, list[str]] = {}
    for item in skipped:
        by_reason.setdefault(item.reason, []).append(item.path)
    lines = []
    for reason, paths in by_reason.items():
        if len(paths) <= SKIPS_LISTED:
            lines += [f"skipped {path}: {reason}" for path in paths]
        else:
            first = ", ".join(paths[:SKIPS_LISTED])
            lines.append(f"skipped {len(paths)} files: {reason} ({first} and "
                         f"{len(paths) - SKIPS_LISTED} more; --json lists them all)")
    return lines


def unsupported_line(counts: dict[str, int]) -> str:
    """``skipped 3 unsupported files (.bin ×2, .xyz ×1)``."""
    total = sum(counts.values())
    kinds = ", ".join(f"{suffix} ×{n}" for suffix, n in
                      sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    return f"skipped {total} unsupported file{'s' * (total != 1)} ({kinds})"


def index_status_lines(location: str, stats: Any, policy: Any) -> list[str]:
    """``sleuth status`` as a person reads it: what the index holds, how it was built, the
    threads, and any build running or interrupted (``--json`` keeps the record)."""
    m, build = stats.manifest, dict(stats.manifest.get("build") or {})
    lines = [f"{location}: {stats.documents} documents, {stats.chunks} chunks, "
             f"{stats.sentences} sentences",
             f"embedder {_embedder(m.get('embedder'))}, chunks of up to "
             f"{m.get('chunk_tokens')} tokens, index format {m.get('format_version')}, build "
             f"{build.get('state') or 'none yet'}",
             f"threads ({policy.cores} usable cores): query {policy.query}, batch "
             f"{policy.batch}, local model {policy.llm} generating / {policy.llm_batch} "
             "reading prompts"]
    lines += [f"running since {e['started']} (process {e['pid']} on {e['host']}): "
              f"{e['command']}" for e in build.get("running") or []]
    lines += [f"interrupted (started {e['started']}); resume it with: {e['command']}"
              for e in build.get("interrupted") or []]
    return lines


def _embedder(record: Any) -> str:
    """``minilm (384 dimensions, titles embedded with each sentence)``: a manifest's
    embedder record as a person reads it."""
    if not isinstance(record, dict):
        return str(record or "none")
    said = [f"{record['dim']} dimensions"] if record.get("dim") else []
    if record.get("title_context"):
        said.append("titles embedded with each sentence")
    return f"{record.get('name') or 'unknown'}" + (f" ({', '.join(said)})" if said else "")
