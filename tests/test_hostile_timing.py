"""A tenant's search costs the same whatever the documents it cannot see hold.

A search for a word only another tenant's documents held used to read, count and match
those documents before dropping them, and took twice as long as a search for a word
nobody held: the time told a tenant whether the others' documents held the word (issue 61,
item 7). Timings live in ``bench/timing_channel.py``; here the work itself is compared,
deterministically: every statement the folder store runs on its SQLite connection (with
its parameters) and every row SQLite hands back to Python, for a word held by many hidden
chunks and for one held by none (or by one: a substring is looked up in the vocabulary,
which lists every tenant's words, so its pair differs only in how many hidden chunks hold
it). Both must be the same, up to the word itself.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sleuth import Index
from sleuth.index.read import ReadIndex
from sleuth.text.access import Access

MANY = "zorblatine"  # in every hidden document
ONE = "zorblefane"  # in one hidden document
NONE = "zorblitane"  # in no document
CJK_MANY, CJK_ONE = "機密計画", "極秘資料"  # a script without spaces: matched as substrings
HIDDEN = 12  # documents of the other tenant


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    """acme's open documents (none holds the words), acme's hr document and globex's
    documents (all hold them: hidden from an acme key without the hr group)."""
    root = tmp_path_factory.mktemp("timing")
    folders = {name: root / name for name in ("acme", "hr", "globex")}
    for folder in folders.values():
        folder.mkdir()
    for i in range(3):
        (folders["acme"] / f"open-{i}.md").write_text(
            f"# Acme note {i}\n\nThe works council meets on the first Monday. The plan "
            f"for year {i} stays with the board of the company.\n")
    (folders["hr"] / "salaries.md").write_text(
        f"# Salaries\n\nThe {MANY} bonus is paid in March. The {MANY} plan pays the "
        f"{CJK_MANY} team.\n")
    for i in range(HIDDEN):
        extra = f" The {ONE} memo and {CJK_ONE} stay here." if i == 0 else ""
        (folders["globex"] / f"secret-{i}.md").write_text(
            f"# Globex file {i}\n\nThe {MANY} works are near the {MANY} river, {CJK_MANY} "
            f"{CJK_MANY}.{extra} The board of the company meets in Cypress Creek.\n")
    with Index.open(root / "idx", create=True) as built:
        built.add([folders["acme"]], collection="acme")
        built.add([folders["hr"]], collection="acme", groups=["hr"])
        built.add([folders["globex"]], collection="globex")
        yield built


class Work:
    """What the store does on its read connection during one call: the statements it runs
    (as SQLite expands them) and how many rows SQLite hands back to Python."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self.statements: list[str] = []
        self.rows = 0

    def __call__(self, call: Callable[[], Any], word: str) -> Any:
        def counted(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> tuple[Any, ...]:
            self.rows += 1
            return row

        self.statements, self.rows = [], 0
        self.connection.set_trace_callback(
            lambda sql: self.statements.append(sql.replace(word, "<word>")))
        self.connection.row_factory = counted
        try:
            return call()
        finally:
            self.connection.set_trace_callback(None)
            self.connection.row_factory = None


def _same_work(index: Index, search: Callable[[ReadIndex, str], Any],
               held: str, other: str) -> tuple[Work, Work]:
    """The work of acme's ``search`` for ``held`` and for ``other`` (each after a first,
    unmeasured call: caches are warm alike)."""
    tenant = index.scoped(Access.of("acme", []))
    connection = index.store.db  # this thread's read connection: the one the calls use
    works = []
    for word in (held, other):
        search(tenant, word)
        work = Work(connection)
        hits = work(lambda word=word: search(tenant, word), word)
        assert all(hit.doc_id.startswith("acme:") for hit in hits), "a hidden hit shows"
        works.append(work)
    return works[0], works[1]


SEARCHES: dict[str, tuple[Callable[[ReadIndex, str], Any], str, str]] = {
    "word": (lambda ix, w: ix.keyword_search([w], top_k=5), MANY, NONE),
    "phrase": (lambda ix, w: ix.keyword_search([f"the {w}"], top_k=5), MANY, NONE),
    "two keywords": (lambda ix, w: ix.keyword_search([w, "board"], top_k=1), MANY, NONE),
    "substring": (lambda ix, w: ix.keyword_search([w], top_k=5, mode="substring"),
                  MANY, ONE),
    "unspaced script": (lambda ix, w: ix.keyword_search([w], top_k=5), CJK_MANY, CJK_ONE),
    "bm25": (lambda ix, w: ix.bm25_search(f"{w} river board", top_k=5), MANY, NONE),
}


@pytest.mark.parametrize("kind", list(SEARCHES))
def test_hidden_documents_cost_a_search_nothing(index: Index, kind: str) -> None:
    search, held, other = SEARCHES[kind]
    assert any(not hit.doc_id.startswith("acme:")  # unscoped, the hidden chunks are found
               for hit in search(index, held))
    many, few = _same_work(index, search, held, other)
    assert many.statements == few.statements
    assert many.rows == few.rows
