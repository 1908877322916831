"""Ingestion: files and folders to documents, documents to sentences and chunks."""

from __future__ import annotations

from sleuth.ingest.chunking import chunk_document, cut_sentence, document_sentences, iter_chunks
from sleuth.ingest.loaders import (
    SUPPORTED_SUFFIXES,
    IngestReport,
    JsonFields,
    ReadLimits,
    Skipped,
    count_sources,
    has_sources,
    iter_documents,
)
from sleuth.ingest.sentences import split_sentences

__all__ = [
    "SUPPORTED_SUFFIXES",
    "IngestReport",
    "JsonFields",
    "ReadLimits",
    "Skipped",
    "chunk_document",
    "count_sources",
    "cut_sentence",
    "document_sentences",
    "iter_chunks",
    "has_sources",
    "iter_documents",
    "split_sentences",
]
