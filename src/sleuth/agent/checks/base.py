"""What an answer check is, the registry of them, and the pipeline that runs them in order.

A check (:class:`AnswerCheck`) reads a :class:`~sleuth.agent.draft.Draft` and may return a
revised one; ``agent.checks`` lists the checks that run, in order (the one switch of each),
and a model profile (``agent.profile``) gives the list where the setting does not. Like
smolagents' ``final_answer_checks``, the list is plain: a check that does not apply is
passed over, one that applies runs and may revise, and the next reads what it left. A check
runs at one of two moments (its ``when``): on each ``answer`` the model gives inside the
tool loop, where a firing sends the loop on (the bridge: the model is shown the passages of
the entity its answer stopped at), or on the ``draft`` once an answering stage has written
it. Each check that applies leaves a :class:`~sleuth.types.CheckNote` on the answer (changed,
flagged, the LLM calls it made, its note); the steps a check records (``run.observe``) are
its own.

``NAME:flag`` in the list runs a check in flag mode: where it would replace the answer, the
answer stands, flagged with the check's note (``Answer.flags``) and one step that says so.

The built-in checks register through :mod:`sleuth.plugins` (entry ``core`` of
``sleuth.checks``, :mod:`sleuth.agent.checks.builtin`), as an installed package's would;
in-process, :func:`register_check`.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from sleuth.agent.draft import Draft
from sleuth.errors import ConfigError
from sleuth.plugins import CHECKS as CHECK_PLUGINS
from sleuth.plugins import Registry
from sleuth.settings import AgentSettings
from sleuth.text.ids import is_ref, strip_citations
from sleuth.types import CheckNote

if TYPE_CHECKING:
    from sleuth.agent.run import Run
    from sleuth.index.read import ReadIndex
    from sleuth.tools import Tool, ToolContext

When = Literal["answer", "draft"]
FLAG = "flag"  # the mode suffix: ``"unfounded:flag"``


class AnswerCheck(Protocol):
    """One check of a draft answer. ``calls_model``: whether it may call the model (a cost
    the profile weighs); ``verdicts``: whether it also reads a tool's settled verdict (an
    answer no model wrote; most checks read only the model's)."""

    @property
    def name(self) -> str: ...

    @property
    def when(self) -> When: ...

    @property
    def calls_model(self) -> bool: ...

    @property
    def verdicts(self) -> bool: ...

    def applies(self, draft: Draft, ctx: CheckContext) -> bool:
        """Whether the check reads this draft (cheap: no model call, no search)."""
        ...

    def check(self, draft: Draft, ctx: CheckContext) -> Draft | None:
        """The draft revised (:meth:`Draft.revise`), or None: it stands."""
        ...


@dataclass
class CheckContext:
    """What a check may read and use besides the draft: the run (its books, tracker and
    listener, ``run.chat`` for a model call, ``run.observe`` for a step), the index, the
    loop's dialogue and the tools offered in it, the tool context the loop's tools ran in,
    and the agent's settings."""

    run: Run
    index: ReadIndex
    messages: list[dict[str, Any]]
    tools: Sequence[Tool]
    tool_context: ToolContext
    settings: AgentSettings

    @property
    def retrieved(self) -> list[str]:
        """The chunks any search of the run returned, in order."""
        return list(self.run.tracker.retrieved)

    def cited(self, draft: Draft) -> list[str | None]:
        """The chunk ids ``draft`` cites, as the model wrote them: references resolved to
        their chunks (None: a reference to no chunk; one the run never gave stays as
        written)."""
        refs = self.run.tracker.refs
        return [refs[c].chunk_id if is_ref(c) and c in refs else c for c in draft.citations]

    def common(self, term: str) -> bool:
        """Whether ``term`` is the corpus's common vocabulary: in a tenth of its chunks
        ("PostgreSQL" in the PostgreSQL manual) or more, at least 20."""
        common = max(20, self.index.stats().chunks // 10)
        return len(self.index.keyword_search(term, common)) >= common


def register_check(check: AnswerCheck) -> AnswerCheck:
    """Make ``check`` available by its name to ``agent.checks`` (a later registration
    replaces an earlier)."""
    CHECKS.load()  # the plugins first, so this registration wins over theirs
    CHECKS[check.name] = check
    return check


# filled on first use: the built-in checks, then installed packages'
CHECKS: Registry[AnswerCheck] = Registry(CHECK_PLUGINS, register_check)


@dataclass(frozen=True)
class Chosen:
    """A check as ``agent.checks`` names it: the check, and whether it only flags."""

    check: AnswerCheck
    flag: bool = False

    @property
    def spec(self) -> str:
        return f"{self.check.name}:{FLAG}" if self.flag else self.check.name


def choose(names: Sequence[str], setting: str = "agent.checks") -> tuple[Chosen, ...]:
    """The checks ``names`` lists (``NAME`` or ``NAME:flag``), in order; an unknown name or
    mode is a ConfigError naming the nearest known one."""
    out = []
    for spec in names:
        name, _, mode = spec.partition(":")
        if mode not in ("", FLAG):
            raise ConfigError(f"{setting}: {spec!r} has an unknown mode {mode!r}; the one "
                              f"mode is '{FLAG}' ({name}:{FLAG})")
        check = CHECKS.get(name)
        if check is None:
            raise ConfigError(f"{setting}: unknown check {name!r}{nearest(name, CHECKS)}; "
                              f"the checks: {', '.join(sorted(CHECKS))}")
        if mode == FLAG and check.when != "draft":
            raise ConfigError(f"{setting}: {name!r} reads the model's answers inside the "
                              "loop and cannot flag; name it without ':flag'")
        out.append(Chosen(check, mode == FLAG))
    return tuple(out)


def nearest(name: str, known: Sequence[str] | Any) -> str:
    """", did you mean 'x'?" for the known name nearest ``name``, or "" when none is near."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def run_checks(chosen: Sequence[Chosen], draft: Draft, ctx: CheckContext) -> Draft:
    """The draft after each ``draft`` check of ``chosen`` in order; each that applies
    leaves its note on the run's answer."""
    for one in chosen:
        if one.check.when == "draft":
            draft = _run_one(one, draft, ctx)
    return draft


def sends_on(chosen: Sequence[Chosen], draft: Draft, ctx: CheckContext) -> Draft | None:
    """For an answer the model gave inside the loop (``draft.answer``), the draft revised by
    the first ``answer`` check that fires (it has written what the model reads next into the
    dialogue: the loop goes on), or None: the answer is the loop's."""
    for one in chosen:
        if one.check.when == "answer":
            revised = _run_one(one, draft, ctx)
            if revised is not draft:
                return revised
    return None


def _run_one(one: Chosen, draft: Draft, ctx: CheckContext) -> Draft:
    check = one.check
    if (draft.source == "verdict" and not check.verdicts) or not check.applies(draft, ctx):
        return draft
    calls = ctx.run.answer.llm_calls
    ctx.run.checking = check.name  # its steps are the check's (kind "check")
    try:
        revised = check.check(draft, ctx)
    finally:
        ctx.run.checking = None
    if revised is not None and not revised.answer and draft.answer:
        revised = None  # a check never leaves an answer empty that was not
    note = "" if revised is None else revised.notes.get(check.name, "")
    changed = revised is not None and revised.answer != draft.answer
    if one.flag and changed and revised is not None:
        ctx.run.checking = check.name
        try:
            ctx.run.observe("flag", {"check": check.name},
                            strip_citations(revised.answer).strip()[:600],
                            f"{check.name} would replace the answer with this step's output "
                            f"({note}): in flag mode the answer stands, flagged")
        finally:
            ctx.run.checking = None
        revised = draft.flag(check.name, note)
    ctx.run.answer.check_notes.append(CheckNote(
        check.name, changed and not one.flag, one.flag and changed,
        ctx.run.answer.llm_calls - calls, note))
    return draft if revised is None else revised
