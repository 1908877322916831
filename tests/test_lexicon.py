"""One owner per vocabulary: the core's word lists, tokenizer and normaliser live in
:mod:`sleuth.text.lexicon`, and a list for one kind of corpus lives in its pack.

The scan reads the source (the AST of every module of the core), so a list written anywhere
else in the core fails here: a set, frozenset, tuple or list literal of five or more
lower-case words, or a ``wordset("...")`` / ``frozenset(...)`` of as many. Packs
(:data:`PACKS`) may hold lists of their own kind of document; ``__all__`` is no word list.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from sleuth.text import lexicon
from sleuth.text.lexicon import (
    QUESTION_WORDS,
    REQUEST_WORDS,
    STOPWORDS,
    fold,
    name_key,
    plain,
    stem,
    word_matches,
    words,
)
from sleuth.text.querytext import content_words, question_keywords, relation_cues

SRC = Path(__file__).resolve().parents[1] / "src" / "sleuth"
PACKS = ("facts", "statements", "writing")  # packs: one kind of document each
OWNER = SRC / "text" / "lexicon.py"
WORD = re.compile(r"[a-z][a-z'’-]+")  # a lower-case word of two letters or more
PHRASE = re.compile(r"[a-z][a-z'’-]*(?: [a-z][a-z'’-]*)+ ?")  # lower-case words, spaced
LEAST = 5


def _strings(node: ast.AST) -> list[str] | None:
    """The strings a literal or a set-making call holds, or None where it holds others."""
    if isinstance(node, ast.Set | ast.List | ast.Tuple):
        found = [e.value for e in node.elts
                 if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return found if len(found) == len(node.elts) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in ("frozenset", "set", "wordset") and node.args:
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value.split()
        return _strings(first)
    return None


def word_lists(path: Path) -> list[tuple[int, list[str]]]:
    """(line, words) of each literal list of :data:`LEAST` or more lower-case words in a
    module, ``__all__`` aside."""
    tree = ast.parse(path.read_text("utf-8"), str(path))
    exported = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)}
    out = []
    for node in ast.walk(tree):  # parents before children: a call before its argument
        if id(node) in exported:
            continue
        found = _strings(node)
        if found and all(PHRASE.fullmatch(s) for s in found):  # "father mother son", ...
            found = [w for s in found for w in s.split()]
        if found and sum(bool(WORD.fullmatch(s)) for s in found) >= LEAST:
            out.append((getattr(node, "lineno", 0), found))
            if isinstance(node, ast.Call):
                exported.add(id(node.args[0]))  # the set a frozenset() call holds: once
    return out


# the answer machinery: what reads questions, passages and answers (ingestion's HTML tags,
# the stores' column names and the servers' JSON fields are no words of text)
CORE = ("text", "agent", "tools", "graph", "index", "service", "eval", "retrieval.py")


def core_modules() -> list[Path]:
    """Every module of :data:`CORE` but the lexicon."""
    found = []
    for part in CORE:
        path = SRC / part
        found += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return [p for p in found if p != OWNER]


# names the scan would read as words that are not words of text
NOT_TEXT = {
    ("index/indexing.py", "html"),  # input formats
    ("eval/retrieval.py", "keyword"),  # tool names
    ("tools/__init__.py", "index"),  # option names the faces reserve
}


def test_the_core_defines_no_word_list_of_its_own() -> None:
    found = []
    for path in core_modules():
        where = path.relative_to(SRC).as_posix()
        for line, listed in word_lists(path):
            if (where, listed[0]) not in NOT_TEXT:
                found.append(f"{where}:{line}: {' '.join(listed[:8])} ...")
    assert not found, "word lists outside sleuth.text.lexicon (move them there, or into the " \
        "pack of the one kind of document they are for):\n" + "\n".join(found)


def test_the_scan_finds_a_list_written_in_the_core(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('NAMES = frozenset({"of", "the", "de", "von", "van"})\n'
                      'OTHER = wordset("give shown response question details")\n'
                      '__all__ = ["alpha", "beta", "gamma", "delta", "epsilon"]\n'
                      'PAIR = {"and", "or"}\n'
                      'GROUPS = tuple(wordset(g) for g in ("father mother son ",\n'
                      '                                    "director directed"))\n')
    assert [line for line, _ in word_lists(module)] == [1, 2, 5]


def test_the_lexicon_holds_the_lists_the_scan_looks_for() -> None:
    """The scan is not blind: it finds the lexicon's own lists."""
    assert len(word_lists(OWNER)) >= 10


def test_the_tokenizer_is_the_indexes() -> None:
    from sleuth.store.keyword import tokenize

    text = "The io_combine_limit of Mecklenburg-Güstrow, don't 3.5x"
    assert words(text) == tokenize(text.lower()) == [
        "the", "io_combine_limit", "of", "mecklenburg", "güstrow", "don", "t", "3", "5x"]
    assert [m.group(0) for m in word_matches("Louis XV.")] == ["Louis", "XV"]


def test_the_normaliser_compares_without_case_accents_or_punctuation() -> None:
    assert plain("Louis Xv.") == plain("louis  XV") == "louis xv"
    assert plain("Nestlé's") == "nestle s" and fold("Pjer Žalica") == "Pjer Zalica"
    assert name_key("The Beatles!") == "beatles" and name_key("Théâtre") == "theatre"
    assert stem("directed") == stem("director") == "direct" and stem("does") == "does"


def test_stop_words_are_general_english() -> None:
    """Function words, question words and request words, nothing a question is about."""
    assert QUESTION_WORDS <= STOPWORDS and REQUEST_WORDS <= STOPWORDS
    for word in ("film", "director", "born", "cash", "statement", "manual", "postgres",
                 "respond", "explain", "describe", "time"):
        assert word not in STOPWORDS, word
    assert content_words("Please give details of the cash flow statement based on 2018") \
        == ["cash", "flow", "statement", "2018"]


def test_every_relation_word_reads_as_its_relation() -> None:
    """A word of a relation brings the whole relation: "dad" is none, "father" finds "son"."""
    _, cues = relation_cues("Where did the father of Edsel Ford die?")
    assert {stem("son"), stem("daughter"), stem("died")} <= cues
    for relation in lexicon.RELATIONS:
        assert relation.all and not relation.roles & relation.words


def test_a_lone_kind_or_relation_word_is_no_entity() -> None:
    assert question_keywords("Director of film Jaws was born where?") == ["Jaws"]
    assert question_keywords("Song of Bernadette: who directed it?") == ["Song of Bernadette"]


@pytest.mark.parametrize("path", sorted((SRC.parent.parent / "bench" / "sets").glob(
    "*/questions.json")), ids=lambda p: p.parent.name)
def test_no_stop_word_is_the_only_word_of_a_dev_question(path: Path) -> None:
    """Every question keeps words to search with (content words never all stop words)."""
    for record in json.loads(path.read_text("utf-8")):
        assert content_words(record["question"]), record["question"]


def test_the_writing_pack_reads_questions_through_the_plugin_loader(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Writing tasks are a pack (entry ``writing`` of ``sleuth.readers``): it chooses the
    ``compose`` prompt for a request to write, ``agent.writing_tasks`` or
    ``plugins.disabled`` turns it off, and the core answers every question short without it."""
    from sleuth.agent.readers import READERS, first_prompt
    from sleuth.plugins import READERS as GROUP
    from sleuth.plugins import Registry
    from sleuth.settings import AgentSettings

    task, question = "Draft a public health advisory on flu.", "What causes flu?"
    assert "writing" in READERS
    assert first_prompt(task, AgentSettings(), "naive_rag") == "compose"
    assert first_prompt(question, AgentSettings(), "naive_rag") == "naive_rag"
    assert first_prompt(task, AgentSettings(writing_tasks=False), "naive_rag") == "naive_rag"
    monkeypatch.setenv("SLEUTH_PLUGINS__DISABLED", '["writing"]')
    fresh: Registry[object] = Registry(GROUP, lambda r: fresh.__setitem__(r.name, r))
    assert "writing" not in fresh
