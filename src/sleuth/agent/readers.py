"""Question readers: what a pack reads in a question before it is answered.

A reader (:class:`QuestionReader`) looks at the question alone and may choose the prompt of
its first answer (the writing pack's: ``compose`` for "Draft an advisory on ...",
:mod:`sleuth.writing`). Readers register through :mod:`sleuth.plugins` (group
``sleuth.readers``), the in-tree packs' as an installed package's; the first reader that
chooses a prompt gives it, and with none the question gets the agent's own.
"""

from __future__ import annotations

from typing import Any, Protocol

from sleuth.plugins import READERS as READER_PLUGINS
from sleuth.plugins import Registry
from sleuth.settings import AgentSettings


class QuestionReader(Protocol):
    """One reader of questions: its ``name``, and the name of a bundled prompt for a
    question's first answer (None: not a question it reads). It reads its own switch from
    the agent's settings."""

    @property
    def name(self) -> str: ...

    def prompt(self, question: str, settings: AgentSettings) -> str | None: ...


def register_reader(reader: Any) -> QuestionReader:
    """Make ``reader`` one the agent asks (a later registration of a name replaces the
    earlier)."""
    READERS.load()  # the plugins first, so this registration wins over theirs
    READERS[reader.name] = reader
    return reader  # type: ignore[no-any-return]


# filled on first use: the in-tree packs' readers, then installed packages'
READERS: Registry[QuestionReader] = Registry(READER_PLUGINS, register_reader)


def first_prompt(question: str, settings: AgentSettings, default: str) -> str:
    """The prompt of ``question``'s first answer: the first reader's choice, else
    ``default``."""
    for reader in READERS.values():
        chosen = reader.prompt(question, settings)
        if chosen:
            return str(chosen)
    return default
