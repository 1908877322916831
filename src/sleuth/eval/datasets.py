"""Question sets: the ``../shared/data/<name>/`` layout, A-RAG's ``questions.json`` +
``chunks.json``, and custom JSON / JSONL question files.

Questions marked ``"doc_available": false`` (FinanceBench: their filing is not in the
corpus) are left out of runs and scores; :attr:`Dataset.unanswerable` counts them. Questions
the corpus does not answer on purpose (no gold answer, or ``"answerable": false``, as in
``bench/sets/pgdocs``) are run like the others and scored by whether the agent abstains
(:attr:`Question.answerable`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sleuth.errors import IngestError

_ID_KEYS = ("id", "_id", "question_id", "qid")
_QUESTION_KEYS = ("question", "query", "q")
_ANSWER_KEYS = ("answer", "answers", "gold_answer", "gold_answers")
_ALIAS_KEYS = ("answer_aliases", "aliases")
_TYPE_KEYS = ("type", "question_type", "category")
_GOLD_KEYS = ("supporting_passage_ids", "gold_ids", "evidence_ids", "supporting_ids")
_CORPUS_FILES = ("corpus.json", "chunks.json", "corpus.jsonl")


@dataclass(frozen=True)
class Question:
    """One evaluation question with its gold answers and gold evidence ids."""

    id: str
    question: str
    answers: tuple[str, ...] = ()
    type: str | None = None
    gold_ids: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def answerable(self) -> bool:
        """Whether the corpus answers the question: it has a gold answer and is not marked
        ``"answerable": false``. The right reply to any other is an abstention."""
        return bool(self.answers) and self.metadata.get("answerable") is not False

    @property
    def gold_docs(self) -> tuple[str, ...]:
        """Gold evidence at document level: the question's ``doc_name`` when it names one
        (FinanceBench), else its gold ids as documents (see :func:`doc_key`)."""
        name = self.metadata.get("doc_name")
        if name:
            return (doc_key(str(name)),)
        return tuple(dict.fromkeys(doc_key(g) for g in self.gold_ids))


_PAGE_SUFFIX = re.compile(r"#p\d+$")
_FILE_SUFFIX = re.compile(r"\.(?:pdf|docx|md|markdown|txt|text|rst|html?|json|jsonl)$",
                          re.IGNORECASE)


def doc_key(identifier: str) -> str:
    """The document an id belongs to: a page id ``<DOC>#p<N>`` (FinanceBench) or a file
    name ``<DOC>.pdf`` both give ``<DOC>``."""
    return _FILE_SUFFIX.sub("", _PAGE_SUFFIX.sub("", identifier))


@dataclass(frozen=True)
class Dataset:
    name: str
    questions: list[Question]
    corpus: Path | None  # the file to index, when the dataset ships one
    # questions left out because their document is not in the corpus (not those without an
    # answer: they are run, see Question.answerable)
    unanswerable: int = 0


def load_dataset(path: str | Path, questions: str | Path | None = None) -> Dataset:
    """A dataset folder (questions + corpus) or a question file; ``questions`` overrides
    which question file of a folder is used (e.g. a held-out split)."""
    root = Path(path).expanduser()
    if not root.exists():
        raise IngestError(f"dataset not found: {root}")
    if root.is_dir():
        qfile = Path(questions) if questions else _first(root, ("questions.json",
                                                                "questions.jsonl"))
        corpus = _first(root, _CORPUS_FILES, required=False)
        name = root.name
    else:
        qfile, corpus, name = Path(questions) if questions else root, None, root.stem
    if qfile is None or not qfile.is_file():
        raise IngestError(f"no questions file in {root} (expected questions.json or .jsonl)")
    everything = load_questions(qfile)
    kept = [q for q in everything if q.metadata.get("doc_available") is not False]
    return Dataset(name, kept, corpus, len(everything) - len(kept))


def _first(root: Path, names: tuple[str, ...], required: bool = True) -> Path | None:
    for name in names:
        if (root / name).is_file():
            return root / name
    if required:
        raise IngestError(f"{root} has none of {', '.join(names)}")
    return None


def load_questions(path: Path) -> list[Question]:
    """Questions from a JSON list (or ``{"questions": [...]}``) or JSONL file. An id used
    again (GraphRAG-Bench novel asks one question of two novels under one id) keeps both
    records: the later one becomes ``<id>~2`` (then ``~3``), its metadata ``id_repeated``
    naming the original."""
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix in (".jsonl", ".ndjson"):
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
            records = data.get("questions", data) if isinstance(data, dict) else data
    except json.JSONDecodeError as exc:
        raise IngestError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(records, list):
        raise IngestError(f"{path}: expected a list of question records")
    out, seen = [], set()
    for i, record in enumerate(records):
        q = _question(record, i, path)
        if q.id in seen:
            n = 2
            while f"{q.id}~{n}" in seen:
                n += 1
            q = replace(q, id=f"{q.id}~{n}", metadata={**q.metadata, "id_repeated": q.id})
        seen.add(q.id)
        out.append(q)
    return out


def _get(record: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    return next((record[k] for k in keys if record.get(k) not in (None, "")), None)


def _strings(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [str(v) for v in value if v not in (None, "")]
    return [str(value)]


def _question(record: Any, index: int, path: Path) -> Question:
    if not isinstance(record, Mapping):
        raise IngestError(f"{path}: record {index} is not an object")
    text = _get(record, _QUESTION_KEYS)
    if not text:
        raise IngestError(f"{path}: record {index} has no question text")
    qid = _get(record, _ID_KEYS)
    answers = _strings(_get(record, _ANSWER_KEYS)) + _strings(_get(record, _ALIAS_KEYS))
    known = set(_ID_KEYS + _QUESTION_KEYS + _ANSWER_KEYS + _ALIAS_KEYS + _TYPE_KEYS + _GOLD_KEYS)
    return Question(
        id=str(qid) if qid is not None else f"{path.stem}-{index}",
        question=str(text),
        answers=tuple(dict.fromkeys(answers)),
        type=(str(t) if (t := _get(record, _TYPE_KEYS)) is not None else None),
        gold_ids=tuple(_strings(_get(record, _GOLD_KEYS))),
        metadata={k: v for k, v in record.items() if k not in known},
    )
