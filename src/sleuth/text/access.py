"""Tenants and document access control.

Every document belongs to one **collection** (a tenant; ``default`` unless given at
ingestion) and carries zero or more **access groups**. A caller's :class:`Access` names the
collections it may read and the groups it holds:

* a document is visible when its collection is one of the caller's and it either has no
  groups (open to the whole collection) or shares at least one group with the caller;
* ``None`` for collections or groups means *all* (the local CLI and admin keys).

Stores apply an :class:`Access` inside their queries, before anything is ranked or counted,
so a caller never sees a title, a score, a count or the existence of a chunk id outside it.

Document ids carry their *scope*, the collection and groups they were written with: an open
document of ``acme`` is ``acme:<id>``, one with groups ``acme~hr:<id>`` (groups sorted, joined by
``~``), and an open document of ``default`` keeps its bare id (``default~hr:<id>`` with groups).
Two tenants, or two group scopes of one tenant, indexing a file of the same name never write
the same document: a write can only reach an id whose groups the writer gives, hence holds.
Writing is also checked directly (:func:`may_write`): a caller may add, change or delete a
document only when it holds every group of the stored one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sleuth.errors import ConfigError

DEFAULT_COLLECTION = "default"
_NAME = re.compile(r"^[A-Za-z0-9][\w.-]{0,63}$")


def check_name(kind: str, name: str) -> str:
    """``name`` when it is a valid collection or group name, else a ConfigError."""
    if not _NAME.match(name):
        raise ConfigError(f"invalid {kind} name {name!r}: use letters, digits, '.', '-' and "
                          "'_' (at most 64, starting with a letter or digit)")
    return name


def parse_groups(groups: str | Iterable[str] | None) -> tuple[str, ...]:
    """Groups from a comma-separated string or a list: checked, deduplicated, sorted."""
    if groups is None:
        return ()
    items = groups.split(",") if isinstance(groups, str) else list(groups)
    return tuple(sorted({check_name("group", g.strip()) for g in items if g.strip()}))


def encode_groups(groups: Sequence[str]) -> str:
    """The stored form of a document's groups (a JSON list; ``[]`` is open)."""
    return json.dumps(sorted(groups))


def decode_groups(stored: str | None) -> tuple[str, ...]:
    return tuple(json.loads(stored)) if stored else ()


def scope_name(collection: str, groups: Sequence[str] = ()) -> str:
    """The scope of documents written to ``collection`` with ``groups``: ``acme``,
    ``acme~hr``, ``acme~finance~hr``. Names hold no ``~`` or ``:``, so a scope is read back
    unambiguously from the start of an id."""
    return "~".join([collection, *sorted(groups)])


def scoped_doc_id(collection: str, doc_id: str, groups: Sequence[str] = ()) -> str:
    """The stored id of ``doc_id`` ingested into ``collection`` with ``groups`` (see the
    module docstring)."""
    if collection == DEFAULT_COLLECTION and not groups:
        return doc_id
    return f"{scope_name(collection, groups)}:{doc_id}"


# An id that reads as a scoped one (``name:...`` or ``name~group:...``): a caller writing into
# the default collection, whose ids are bare, may not give one (it would name another scope).
_SCOPED = re.compile(r"^[A-Za-z0-9][\w.-]{0,63}(?:~[A-Za-z0-9][\w.-]{0,63})*:")


def looks_scoped(doc_id: str) -> bool:
    """Whether ``doc_id`` starts like a scoped id (``acme:``, ``acme~hr:``)."""
    return _SCOPED.match(doc_id) is not None


def scope_of(doc_id: str) -> tuple[str, tuple[str, ...]]:
    """The collection and groups a stored document id was written with (read back from its
    scope; a bare id is an open document of ``default``), for deciding whether a caller may
    read it even where the document is gone."""
    if not looks_scoped(doc_id):
        return DEFAULT_COLLECTION, ()
    collection, *groups = doc_id.split(":", 1)[0].split("~")
    return collection, tuple(groups)


@dataclass(frozen=True)
class Access:
    """What a caller may read: see the module docstring."""

    collections: frozenset[str] | None = None
    groups: frozenset[str] | None = None

    @classmethod
    def of(cls, collections: Iterable[str] | str | None = None,
           groups: Iterable[str] | str | None = None) -> Access:
        """An access from names (a comma-separated string or a list); ``None`` is all."""
        cols = None if collections is None else frozenset(
            check_name("collection", c) for c in parse_groups(collections))
        grps = None if groups is None else frozenset(parse_groups(groups))
        return cls(cols, grps)

    def may_write(self, collection: str, groups: Sequence[str]) -> bool:
        """Whether a document of ``collection`` with ``groups`` may be changed or deleted:
        the caller reads the collection and holds *every* group of the document (reading
        needs only one)."""
        if self.collections is not None and collection not in self.collections:
            return False
        return self.groups is None or set(groups) <= self.groups

    @property
    def unrestricted(self) -> bool:
        return self.collections is None and self.groups is None

    def allows(self, collection: str, groups: Sequence[str]) -> bool:
        """Whether a document of ``collection`` with ``groups`` is visible."""
        if self.collections is not None and collection not in self.collections:
            return False
        if not groups or self.groups is None:
            return True
        return not self.groups.isdisjoint(groups)

    @property
    def key(self) -> str:
        """A stable text key (caches of visible rows are kept per key)."""
        def part(names: frozenset[str] | None) -> str:
            return "*" if names is None else ",".join(sorted(names))
        return f"{part(self.collections)}|{part(self.groups)}"

    def describe(self) -> str:
        cols = "all collections" if self.collections is None else \
            "collection " + ", ".join(sorted(self.collections))
        grps = "all groups" if self.groups is None else \
            ("groups " + ", ".join(sorted(self.groups)) if self.groups else "no groups")
        return f"{cols}; {grps}"


EVERYTHING = Access()


def restricted(access: Access | None) -> Access | None:
    """``access`` when it hides anything, else None (the fast, unfiltered path)."""
    return None if access is None or access.unrestricted else access
