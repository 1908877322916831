"""What every ``sleuth`` command shares: the common options, settings from flags, and how
results are printed (JSON, status lines on stderr, progress bars, answers, tool results,
the files an index run skipped).

Kept apart from :mod:`sleuth.cli.main` so the generated tool commands
(:mod:`sleuth.cli.tools`) and the hand-written ones print the same way.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
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
            where = f", {c.where}" if c.where else ""
            click.echo(f"  [{c.ref or c.chunk_id}] {c.title}{where} "
                       f"(relevance {c.relevance:.2f})")
    if answer.control is not None:
        status(control_line(answer.control.to_dict()))
    forced = f", forced by {answer.forced}" if answer.forced else ""
    summaries = sum(1 for e in answer.context_events if e.get("event") == "summarize")
    summarized = f", context summarized {summaries}x" if summaries else ""
    status(f"({answer.loops} steps, {answer.llm_calls} LLM calls, "
           f"{answer.total_retrieved_tokens} retrieved tokens, ${answer.total_cost:.4f}, "
           f"{answer.seconds:.1f}s{forced}{summarized})")


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
    args = json.dumps(step.tool_input, ensure_ascii=False)
    flag = f"  ! {step.error}" if step.error else ""
    status(f"  step {step.step}: {step.tool_name}({args[:160]}) -> "
           f"{step.retrieved_tokens} tokens{flag}")


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
        extra = "".join(f", {k} {v}" for k, v in self.postfix.items())
        status(f"{self.desc}: {self.done:,}{total} {self.unit} in {took:.0f} s "
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
    """Embedded sentences, with documents and chunks alongside."""

    def __init__(self, enabled: bool) -> None:
        super().__init__(enabled, "embedding", " sent")

    def update(self, progress: Any) -> None:
        self.advance(progress.sentences, docs=progress.documents_seen,
                     new=progress.documents_indexed, unchanged=progress.documents_unchanged,
                     chunks=progress.chunks)


class RunBar(Bar):
    """Questions finished, with running answer rate, contain-accuracy and cost."""

    def __init__(self, enabled: bool, desc: str = "questions") -> None:
        super().__init__(enabled, desc, "q")

    def update(self, stats: Any) -> None:
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
