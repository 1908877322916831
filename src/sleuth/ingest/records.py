"""JSON and JSONL sources: corpus records ``[{id, title, text}]`` and A-RAG ``chunks.json``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sleuth.ingest.reading import BadStructure, SkipSource
from sleuth.ingest.textfiles import derived_title, one_line, with_title
from sleuth.types import DocType, Document

_WRAPPER_KEYS = ("documents", "docs", "data", "records", "items", "corpus", "chunks", "passages")
# Deeper metadata is refused: storing or serving it would hit Python's recursion limit.
MAX_METADATA_DEPTH = 100
TOO_DEEP = "JSON nested too deeply to parse (more than about {} levels)"


@dataclass(frozen=True)
class JsonFields:
    """Which keys JSON/JSONL records use for the id, title and text."""

    id: str = "id"
    title: str = "title"
    text: str = "text"


@dataclass(frozen=True)
class RecordSkip:
    """A record that was skipped: ``where`` is ``file[index]`` or ``file:line``."""

    where: str
    reason: str


RecordItem = Document | RecordSkip


def json_records(path: Path, text: str, fields: JsonFields) -> Iterator[RecordItem]:
    """Documents of a ``.json`` file (a list of strings or of records).

    Raises :class:`BadStructure` for invalid JSON, JSON nested too deeply to parse, or a
    value of the wrong shape. A file holding one JSON object per line (JSONL under a
    ``.json`` name) is read as JSONL.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        if err.msg == "Extra data" and text.lstrip().startswith("{"):
            return jsonl_records(path, text, fields)
        raise BadStructure(
            f"invalid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
        ) from None
    except RecursionError:
        raise BadStructure(_too_deep()) from None
    items = _unwrap(value)
    if not items:
        raise SkipSource("JSON list is empty: no records")
    kind = _element_kind(items)
    if kind == "string":
        return _chunk_strings(path, items)
    has_title = any(fields.title in item for item in items)
    return _dict_records(path, items, fields, "corpus" if has_title else "chunks")


def _unwrap(value: Any) -> list[Any]:
    """The list of records in ``value``: the value itself, or a list under a wrapper key."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        lists = [k for k in _WRAPPER_KEYS if isinstance(value.get(k), list)]
        if len(lists) == 1:
            found: list[Any] = value[lists[0]]
            return found
        keys = ", ".join(sorted(map(str, value))[:8])
        raise BadStructure(
            "expected a JSON list of records or of 'id:text' strings, "
            f"got an object (keys: {keys or 'none'})"
        )
    raise BadStructure(
        f"expected a JSON list of records or of 'id:text' strings, got {_json_type(value)}"
    )


def _element_kind(items: list[Any]) -> str:
    """``"string"`` or ``"object"``; raises :class:`BadStructure` for mixed or other elements."""
    kind: str | None = None
    for i, item in enumerate(items):
        if isinstance(item, str):
            this = "string"
        elif isinstance(item, dict):
            this = "object"
        else:
            raise BadStructure(
                f"element {i} is {_json_type(item)}; expected objects "
                '({"id", "title", "text"}) or \'id:text\' strings'
            )
        if kind is None:
            kind = this
        elif this != kind:
            raise BadStructure(f"element {i} is {_json_type(item)} but element 0 is a {kind}")
    return kind or "object"


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, bool | dict | list | str):
        return names[type(value)]
    return "a number"


def _chunk_strings(path: Path, items: list[Any]) -> Iterator[RecordItem]:
    """A-RAG ``chunks.json``: ``"id:text"`` strings, split at the first colon. An entry
    with no id before a colon is reported and skipped (A-RAG's loader drops it silently):
    an invented id would not match the ids its questions' evidence names."""
    for i, item in enumerate(items):
        head, colon, rest = str(item).partition(":")
        doc_id, body = head.strip(), rest.strip()
        if not colon or not doc_id:
            yield RecordSkip(f"{path}[{i}]", "entry has no 'id:' prefix (A-RAG chunks are "
                             f"'id:text' strings): {_preview(str(item))}")
            continue
        if not body:
            yield RecordSkip(f"{path}[{i}]", f"entry {doc_id!r} has no text")
            continue
        yield _untitled(doc_id, body, "chunks", path, {"index": i})


def _preview(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")


def _untitled(
    doc_id: str, body: str, kind: DocType, path: Path, metadata: dict[str, Any]
) -> Document:
    """A document titled by its first line, text unchanged."""
    return Document(doc_id, derived_title(body), body, kind, str(path), metadata)


def _dict_records(
    path: Path, items: list[Any], fields: JsonFields, kind: DocType
) -> Iterator[RecordItem]:
    for i, item in enumerate(items):
        try:
            yield record_document(item, i, path, fields, kind)
        except SkipSource as err:
            yield RecordSkip(f"{path}[{i}]", str(err))


def record_document(
    record: dict[str, Any], index: int, path: Path, fields: JsonFields, kind: DocType
) -> Document:
    """One record as a document; raises :class:`SkipSource` when it has no usable text."""
    doc_id = _record_id(record.get(fields.id), path, index)
    body = record.get(fields.text)
    if not isinstance(body, str):
        what = "missing" if body is None else f"not a string ({_json_type(body)})"
        raise SkipSource(f"record {doc_id!r}: {fields.text!r} field is {what}")
    body = body.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not body:
        raise SkipSource(f"record {doc_id!r}: {fields.text!r} field is empty")
    metadata = {k: v for k, v in record.items() if k not in (fields.id, fields.text, fields.title)}
    if _nested_over(metadata, MAX_METADATA_DEPTH):
        raise SkipSource(f"record {doc_id!r}: other fields nested more than "
                         f"{MAX_METADATA_DEPTH} levels deep")
    metadata["index"] = index
    raw_title = record.get(fields.title)
    title = one_line(raw_title) if isinstance(raw_title, str) else ""
    if not title:
        return _untitled(doc_id, body, kind, path, metadata)
    return Document(doc_id, title, with_title(title, body), kind, str(path), metadata)


def _nested_over(value: Any, limit: int) -> bool:
    """Whether lists and objects in ``value`` nest more than ``limit`` levels (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _too_deep() -> str:
    return TOO_DEEP.format(sys.getrecursionlimit())


def _record_id(value: Any, path: Path, index: int) -> str:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return f"{path.stem}:{index}"


def jsonl_records(path: Path, text: str, fields: JsonFields) -> Iterator[RecordItem]:
    """Documents of a JSONL file; malformed lines are skipped and reported as ``file:line``."""
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            yield RecordSkip(where, f"invalid JSON ({err.msg} at column {err.colno})")
            continue
        except RecursionError:
            yield RecordSkip(where, _too_deep())
            continue
        if not isinstance(record, dict):
            yield RecordSkip(where, f"expected a JSON object, got {_json_type(record)}")
            continue
        try:
            doc = record_document(record, lineno - 1, path, fields, "jsonl")
        except SkipSource as err:
            yield RecordSkip(where, str(err))
            continue
        yield replace(doc, metadata={**doc.metadata, "line": lineno})
