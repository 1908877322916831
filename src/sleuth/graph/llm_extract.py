"""Knowledge-graph extraction by an LLM: JSON entities and relations per chunk, cached.

:class:`LLMExtractor` asks the configured model (any :class:`~sleuth.llm.LLM`) for the
entities and relations of each chunk as one JSON object (prompt ``graph_extract.md``). The
reply is parsed tolerantly (code fences, text around the object) and validated; a malformed
or invalid reply is sent back with the problem, at most ``max_reasks`` times, after which
the chunk is listed in ``failures`` and left out, so the next build retries it. Provenance
comes from the text, not the model: each entity is found in the chunk (case-insensitively)
and gets the span of every occurrence in document coordinates; a name that does not occur
gets the span of the sentence sharing most words with it, or is dropped when none shares
any (a hallucinated entity). A relation gets the span of the sentence holding both its
ends (else, for the document's title as subject, the object's; else the subject's). An
``LLMError`` (after the client's retries) propagates and stops the build. Validated
replies are cached in SQLite (``graph-llm-cache.db`` in the index folder), keyed by model,
prompt, title and chunk text, so rebuilding the graph costs no LLM call. Requests
run on a thread pool (remote endpoints are I/O bound); results keep input order.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sleuth.llm.base import LLM, Usage
from sleuth.llm.jsontools import json_objects
from sleuth.prompts import prompt
from sleuth.store.graphs import Extraction, Mention, Triple
from sleuth.text.lexicon import STOPWORDS, words
from sleuth.types import Chunk, Sentence

__all__ = ["CACHE_FILE", "ExtractionReply", "LLMExtractor", "parse_reply", "to_extraction"]

CACHE_FILE = "graph-llm-cache.db"
VERSION = "v1"  # part of the extractor name: bump it to re-extract every chunk
_MAX_PROBLEMS = 3  # validation errors quoted back to the model


class _Entity(BaseModel):
    model_config = ConfigDict(str_strip_whitespace=True)

    name: str = Field(min_length=1, max_length=300)
    type: str = Field("MISC", max_length=40)

    @field_validator("type", mode="after")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper().replace(" ", "_") or "MISC"


class _Relation(BaseModel):
    model_config = ConfigDict(str_strip_whitespace=True)

    subject: str = Field(min_length=1, max_length=300)
    relation: str = Field(min_length=1, max_length=100)
    object: str = Field(min_length=1, max_length=300)
    qualifiers: dict[str, str] = Field(default_factory=dict)

    @field_validator("relation", mode="after")
    @classmethod
    def _label(cls, value: str) -> str:
        return " ".join(value.lower().replace("_", " ").split())

    @field_validator("qualifiers", mode="before")
    @classmethod
    def _plain(cls, value: Any) -> Any:
        """Scalars as text; empty values dropped (models write ``null`` or ``""``)."""
        if value is None:
            return {}
        if isinstance(value, dict):
            return {str(k): str(v) for k, v in value.items()
                    if v not in (None, "") and isinstance(v, str | int | float)}
        return value


class ExtractionReply(BaseModel):
    """The JSON object the model must reply with (what the cache stores)."""

    entities: list[_Entity]
    relations: list[_Relation] = Field(default_factory=list)


def parse_reply(text: str) -> ExtractionReply:
    """The validated reply; ``ValueError`` says what is wrong with it (for the re-ask)."""
    objects = list(json_objects(text))
    if not objects:
        raise ValueError("the reply is not one JSON object")
    try:
        return ExtractionReply.model_validate(objects[0])
    except ValidationError as err:
        problems = [f"{'.'.join(map(str, e['loc'])) or 'the object'}: {e['msg']}"
                    for e in err.errors()[:_MAX_PROBLEMS]]
        raise ValueError("; ".join(problems)) from None


@dataclass
class _Outcome:
    reply: ExtractionReply | None
    problem: str
    calls: int
    usage: Usage


class LLMExtractor:
    """Entities and relations of each chunk from an LLM's JSON reply (see the module)."""

    def __init__(self, llm: LLM, cache: str | Path, *, workers: int = 4,
                 max_reasks: int = 2) -> None:
        self.llm = llm
        self.name = f"llm:{llm.model}:{VERSION}"
        self.system = prompt("graph_extract")
        self.cache = Path(cache)
        self.workers = max(1, workers)
        self.max_reasks = max(0, max_reasks)
        self.calls = 0  # chat requests sent (re-asks included)
        self.cached = 0  # chunks answered from the cache
        self.usage = Usage()
        self.failures: list[tuple[str, str]] = []  # (chunk id, why), not stored
        self._prompt_hash = hashlib.sha256(self.system.encode()).hexdigest()

    def extract(self, chunks: Sequence[Chunk], titles: dict[str, str]
                ) -> Iterator[tuple[Chunk, Extraction]]:
        """Each chunk with its extraction, in input order; failed chunks are left out."""
        with closing(self._open_cache()) as db:
            keys = {c.chunk_id: self._key(c, titles) for c in chunks}
            hits: dict[str, ExtractionReply] = {}
            for chunk in chunks:
                row = db.execute("SELECT reply FROM replies WHERE key=?",
                                 (keys[chunk.chunk_id],)).fetchone()
                if row is not None:
                    hits[chunk.chunk_id] = ExtractionReply.model_validate_json(row[0])
            missing = [c for c in chunks if c.chunk_id not in hits]
            pool = ThreadPoolExecutor(max_workers=min(self.workers, max(1, len(missing))))
            futures: dict[str, Future[_Outcome]] = {
                c.chunk_id: pool.submit(self._ask, c, _title(c, titles)) for c in missing}
            try:
                for chunk in chunks:
                    reply = hits.get(chunk.chunk_id)
                    if reply is not None:
                        self.cached += 1
                    else:
                        reply = self._collect(futures[chunk.chunk_id].result(), chunk, db,
                                              keys[chunk.chunk_id])
                        if reply is None:
                            continue
                    yield chunk, to_extraction(chunk, _title(chunk, titles), reply)
            finally:
                pool.shutdown(wait=True, cancel_futures=True)

    def _collect(self, outcome: _Outcome, chunk: Chunk, db: sqlite3.Connection,
                 key: str) -> ExtractionReply | None:
        self.calls += outcome.calls
        self.usage += outcome.usage
        if outcome.reply is None:
            self.failures.append((chunk.chunk_id, outcome.problem))
            return None
        db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?)",
                   (key, outcome.reply.model_dump_json()))
        return outcome.reply

    def _ask(self, chunk: Chunk, title: str) -> _Outcome:
        """One chunk's validated reply, re-asking with the problem when it is malformed."""
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": f"Title: {title or '(none)'}\n\nPassage:\n{chunk.text}"},
        ]
        usage = Usage()
        problem = ""
        for attempt in range(self.max_reasks + 1):
            response = self.llm.chat(messages)
            usage += response.usage
            text = response.content or ""
            try:
                return _Outcome(parse_reply(text), "", attempt + 1, usage)
            except ValueError as err:
                problem = str(err)
            messages = [*messages, {"role": "assistant", "content": text},
                        {"role": "user", "content": f"That reply was not valid: {problem}. "
                         "Reply again with only the JSON object, as instructed."}]
        tries = self.max_reasks + 1
        return _Outcome(None, f"malformed reply after {tries} attempt{'s' * (tries > 1)}: "
                        f"{problem}", tries, usage)

    def _key(self, chunk: Chunk, titles: dict[str, str]) -> str:
        parts = (self.llm.model, self._prompt_hash, _title(chunk, titles), chunk.text)
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def _open_cache(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.cache, isolation_level=None)
        db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, "
                   "reply TEXT NOT NULL)")
        return db


def _title(chunk: Chunk, titles: dict[str, str]) -> str:
    return titles.get(chunk.doc_id, "").strip()


def to_extraction(chunk: Chunk, title: str, reply: ExtractionReply) -> Extraction:
    """Mentions and triples with provenance located in the chunk's text."""
    found = Extraction()
    if title:  # the document's subject is mentioned by every chunk of it
        found.mentions.append(Mention(title, "TITLE", chunk.chunk_id, 0, len(title)))
    spans: dict[str, list[tuple[int, int]]] = {}
    types: dict[str, str] = {}

    def place(name: str, kind: str) -> bool:
        key = name.lower()
        if key not in spans:
            spans[key] = _locate(name, chunk, title)
            types[key] = kind
            found.mentions.extend(Mention(name, kind, chunk.chunk_id, start, end)
                                  for start, end in spans[key]
                                  if (start, end) != (0, len(title)) or key != title.lower())
        return bool(spans[key])

    for entity in reply.entities:
        place(entity.name, entity.type)
    seen: set[tuple[str, str, str]] = set()
    for r in reply.relations:
        subject, obj = r.subject.lower(), r.object.lower()
        if subject == obj or (subject, r.relation, obj) in seen:
            continue
        default = "TITLE" if subject == title.lower() else "MISC"
        if not place(r.subject, default) or not place(r.object, "MISC"):
            continue
        seen.add((subject, r.relation, obj))
        start, end = _sentence(chunk, spans[subject], spans[obj],
                               bool(title) and subject == title.lower())
        found.triples.append(Triple(r.subject, types[subject], r.relation or "related to",
                                    r.object, types[obj], chunk.chunk_id, start, end,
                                    dict(r.qualifiers)))
    return found


def _locate(name: str, chunk: Chunk, title: str) -> list[tuple[int, int]]:
    """Document spans of ``name`` in the chunk: every case-insensitive occurrence, else the
    title's own span (for the title), else the sentence sharing most words with it."""
    words = name.split()
    pattern = re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, words)) + r"(?!\w)", re.I)
    found = [(chunk.start + m.start(), chunk.start + m.end())
             for m in pattern.finditer(chunk.text)]
    if found:
        return found
    if title and name.lower() == title.lower():
        return [(0, len(title))]
    wanted = _words(name)
    best, score = None, 0
    for sentence in chunk.sentences:
        overlap = len(wanted & _words(sentence.text))
        if overlap > score:
            best, score = (sentence.start, sentence.end), overlap
    return [best] if best else []


def _words(text: str) -> set[str]:
    return {w for w in words(text) if len(w) > 1 and w not in STOPWORDS}


def _sentence(chunk: Chunk, subject: list[tuple[int, int]], obj: list[tuple[int, int]],
              about_title: bool) -> tuple[int, int]:
    """The span of the sentence holding both ends, else (when the subject is the document's
    title, which a sentence names by a pronoun) the object's, else the subject's, else the
    first sentence's."""
    def holding(spans: list[tuple[int, int]]) -> list[Sentence]:
        return [x for x in chunk.sentences
                if any(x.start <= start and end <= x.end for start, end in spans)]

    with_subject, with_object = holding(subject), holding(obj)
    both = [x for x in with_subject if x in with_object]
    chosen = both or (with_object if about_title else []) or with_subject or \
        list(chunk.sentences)
    return (chosen[0].start, chosen[0].end) if chosen else (chunk.start, chunk.end)
