"""The draft answer and what it came from: what the agent's stages leave for its checks.

The ReAct agent (:mod:`sleuth.agent.loop`) builds one :class:`Draft` per question: the first
search fills in what it found (its text, the terms the corpus never holds, whether a tool of
the question applied), an answering stage (a tool's settled verdict, the first answer without
tools, or the tool loop) writes the answer with the model's facts under it and the passages it
came from, and then each declared check (:mod:`sleuth.agent.checks`) may return a revised
draft. A check that only flags leaves the answer as it was and says why in a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from sleuth.text.ids import cited_ids

Source = Literal["verdict", "first", "loop"]


@dataclass
class Draft:
    """One question's answer as it stands, and what the checks read to judge it."""

    question: str
    answer: str = ""
    # which stage wrote the answer: a tool's settled ``verdict`` (no model call), the
    # ``first`` answer without tools, or the tool ``loop``
    source: Source = "loop"
    shown: str = ""  # the text of the passages the answer came from (its request's)
    facts: str | None = None  # the model's facts under its answer (a facts-first JSON answer)
    abstained: bool = False  # the answer says the agent cannot answer
    first: str | None = None  # the first search's text, as the first answer reads it
    unseen: tuple[str, ...] = ()  # terms of the question the corpus never holds
    applied: bool = False  # a tool of the question (``also_first``) applied before the loop
    # the request the first answer came from (None: the loop's dialogue answered)
    answered: list[dict[str, Any]] | None = None
    bridged: bool = False  # the bridge entity's passages were shown (once per question)
    revised: tuple[str, ...] = ()  # the checks that revised the answer, in order
    notes: dict[str, str] = field(default_factory=dict)  # each check's note, by its name
    flags: tuple[str, ...] = ()  # the checks that flagged the answer rather than replace it

    @property
    def citations(self) -> list[str]:
        """The ids the answer cites, in order."""
        return cited_ids(self.answer)

    @property
    def flagged(self) -> bool:
        """Whether a check flagged the answer (the user sees its note)."""
        return bool(self.flags)

    def revise(self, by: str, note: str, **changes: Any) -> Draft:
        """A copy with ``changes`` (``answer``, ``facts``, ``abstained`` ...), revised by
        the check ``by``, which says why in ``note``."""
        return replace(self, **changes, revised=(*self.revised, by),
                       notes={**self.notes, by: note})

    def flag(self, by: str, note: str) -> Draft:
        """A copy with the answer as it is, flagged by the check ``by`` with ``note``."""
        return replace(self, flags=(*self.flags, by), notes={**self.notes, by: note})
