"""One loader for everything that registers: backends, tools, agents, answer checks and
question readers.

Five entry-point groups; an entry's value is ``"module:attribute"``, imported when the group
is first needed:

- ``sleuth.backends``: the name is a URL scheme (``""``: a local folder), the attribute a
  store factory (:func:`sleuth.store.base.register_backend`);
- ``sleuth.tools``: a :class:`~sleuth.tools.Tool` or a sequence of them;
- ``sleuth.agents``: a :class:`~sleuth.agent.variants.Variant` or a sequence of them;
- ``sleuth.checks``: an answer check (:class:`~sleuth.agent.checks.base.AnswerCheck`) or a
  sequence of them, which ``agent.checks`` may then name;
- ``sleuth.readers``: a question reader (:class:`~sleuth.agent.readers.QuestionReader`),
  which may choose the first answer's prompt for a question, or a sequence of them.

Sleuth's own backends, tools, agents, checks and readers are listed in :data:`BUILTIN` in the same
form and go through the same loader, first, so an installed package's entry of the same name
replaces a built-in one. A group loads when its registry is first read (a
:class:`Registry`), not when Sleuth is imported, so a plugin may import any part of Sleuth.
``plugins.disabled`` (``SLEUTH_PLUGINS__DISABLED='["facts"]'``) names entries not to load.
The in-tree packs, each for one kind of document and each applied per document, never per
index, are such entries, and the core works without any of them: ``facts`` (encyclopedia
pages, :mod:`sleuth.facts`), ``statements`` (filings, :mod:`sleuth.statements`) and
``writing`` (requests to write something, :mod:`sleuth.writing`).
This module imports nothing of Sleuth but its errors and settings.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeVar

from sleuth.errors import ConfigError

BACKENDS, TOOLS, AGENTS = "sleuth.backends", "sleuth.tools", "sleuth.agents"
CHECKS, READERS = "sleuth.checks", "sleuth.readers"
GROUPS = (BACKENDS, TOOLS, AGENTS, CHECKS, READERS)


def _entries(group: str, pairs: Iterable[tuple[str, str]]) -> list[EntryPoint]:
    return [EntryPoint(name, value, group) for name, value in pairs]


BUILTIN: dict[str, list[EntryPoint]] = {
    BACKENDS: _entries(BACKENDS, [("", "sleuth.store.local.store:LocalStore"),
                                  ("postgresql", "sleuth.store.postgres.store:PostgresStore"),
                                  ("postgres", "sleuth.store.postgres.store:PostgresStore")]),
    TOOLS: _entries(TOOLS, [("core", "sleuth.tools.builtin:TOOLS"),
                            ("facts", "sleuth.facts:TOOLS"),
                            ("statements", "sleuth.statements:TOOLS")]),
    AGENTS: _entries(AGENTS, [("core", "sleuth.agent.builtin:VARIANTS")]),
    CHECKS: _entries(CHECKS, [("core", "sleuth.agent.checks.builtin:CHECKS")]),
    READERS: _entries(READERS, [("writing", "sleuth.writing:READERS")]),
}
log = logging.getLogger("sleuth")


def disabled() -> frozenset[str]:
    """The entry names ``plugins.disabled`` turns off (settings file or environment)."""
    from sleuth.settings import Settings

    return frozenset(Settings.load().plugins.disabled)


def entries(group: str) -> list[EntryPoint]:
    """The group's entries in load order: the built-ins, then installed packages', minus the
    disabled ones."""
    if group not in GROUPS:
        raise ValueError(f"unknown plugin group {group!r}; one of {', '.join(GROUPS)}")
    off = disabled()
    found = [*BUILTIN[group], *entry_points(group=group)]
    return [entry for entry in found if entry.name not in off]


def load(entry: EntryPoint) -> Any:
    """What an entry names, imported; a ConfigError naming the entry when it cannot be."""
    try:
        return entry.load()
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"plugin {entry.name or '<folder>'!r} of {entry.group} "
                          f"({entry.value}) does not load: {exc}") from exc


def register_all(group: str, register: Callable[[Any], object]) -> None:
    """Load every entry of ``group`` and hand each thing it names (a sequence: each item) to
    ``register``. A package that fails to load is logged and skipped, so one broken plugin
    does not take the tools or agents of the others with it; a built-in that fails raises."""
    builtin = {id(e) for e in BUILTIN[group]}
    for entry in entries(group):
        try:
            found = load(entry)
        except ConfigError as exc:
            if id(entry) in builtin:
                raise
            log.warning("%s", exc)
            continue
        items = found if isinstance(found, list | tuple) else [found]
        for item in items:
            register(item)


T = TypeVar("T")


class Registry(dict[str, T]):
    """A name → thing registry filled from a plugin group when it is first read or written
    to (``register`` puts one item in; it may check it). A registration in-process after
    that replaces a plugin's of the same name."""

    def __init__(self, group: str, register: Callable[[Any], object]) -> None:
        super().__init__()
        self.group, self._register, self._loaded = group, register, False

    def load(self) -> None:
        """Load the group, once (a plugin that registers more while loading is not a loop)."""
        if not self._loaded:
            self._loaded = True
            register_all(self.group, self._register)

    def __getitem__(self, name: str) -> T:
        self.load()
        return super().__getitem__(name)

    def __contains__(self, name: object) -> bool:
        self.load()
        return super().__contains__(name)

    def __iter__(self) -> Iterator[str]:
        self.load()
        return super().__iter__()

    def __len__(self) -> int:
        self.load()
        return super().__len__()

    def get(self, name: str, default: T | None = None) -> T | None:  # type: ignore[override]
        self.load()
        return super().get(name, default)

    def keys(self) -> Any:
        self.load()
        return super().keys()

    def values(self) -> Any:
        self.load()
        return super().values()

    def items(self) -> Any:
        self.load()
        return super().items()
