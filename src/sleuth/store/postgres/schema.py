"""The index schema: the tables one index creates, the location that names its schema, the
schema pgvector lives in, and how vectors cross the wire (binary ``vector`` as numpy rows).
"""

from __future__ import annotations

import re
import struct
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import numpy as np
import psycopg
from psycopg.abc import Buffer
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format

from sleuth.errors import StoreError

DEFAULT_SCHEMA = "sleuth"
MAX_TOKEN_CHARS = 256  # stored tokens are cut to this length (GIN keys must fit a page)
_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")

TABLES = """
CREATE TABLE manifest (id boolean PRIMARY KEY DEFAULT true CHECK (id), data jsonb NOT NULL);
CREATE TABLE documents (
    doc_id text COLLATE "C" PRIMARY KEY, title text NOT NULL, type text NOT NULL, path text,
    hash text NOT NULL, metadata jsonb NOT NULL, text text NOT NULL, n_chunks int NOT NULL,
    collection text NOT NULL DEFAULT 'default', groups text[] NOT NULL DEFAULT '{{}}');
CREATE INDEX documents_collection ON documents (collection);
CREATE INDEX documents_groups ON documents USING gin (groups);
CREATE TABLE chunks (
    id bigserial NOT NULL, chunk_id text COLLATE "C" NOT NULL,
    doc_id text COLLATE "C" NOT NULL REFERENCES documents ON DELETE CASCADE,
    position int NOT NULL, start int NOT NULL, "end" int NOT NULL, n_tokens int NOT NULL,
    n_words int NOT NULL, text text NOT NULL, tokens text[] NOT NULL, has_long bool NOT NULL,
    PRIMARY KEY (doc_id, id), UNIQUE (doc_id, chunk_id));
CREATE INDEX chunks_id ON chunks (id);
CREATE INDEX chunks_chunk_id ON chunks (chunk_id);
CREATE INDEX chunks_doc ON chunks (doc_id, position);
CREATE INDEX chunks_tokens ON chunks USING gin (tokens);
CREATE INDEX chunks_long ON chunks (id) WHERE has_long;
CREATE TABLE sentences (
    id bigserial NOT NULL,
    doc_id text COLLATE "C" NOT NULL REFERENCES documents ON DELETE CASCADE,
    chunk bigint NOT NULL, start int NOT NULL, "end" int NOT NULL,
    embedding vector({dim}) NOT NULL);
CREATE INDEX sentences_id ON sentences (id);
CREATE INDEX sentences_chunk ON sentences (chunk);
CREATE TABLE summaries (
    doc_id text COLLATE "C" PRIMARY KEY REFERENCES documents ON DELETE CASCADE,
    text text NOT NULL, vector vector({dim}) NOT NULL);
CREATE TABLE terms (term text COLLATE "C" PRIMARY KEY);
CREATE TABLE generation (id boolean PRIMARY KEY DEFAULT true CHECK (id), value bigint NOT NULL);
"""
GENERATION = ("CREATE TABLE IF NOT EXISTS generation (id boolean PRIMARY KEY DEFAULT true "
              "CHECK (id), value bigint NOT NULL)")
# the last statement of every transaction that changes a read (readers compare the value)
BUMP = ("INSERT INTO generation (value) VALUES (1) "
        "ON CONFLICT (id) DO UPDATE SET value = generation.value + 1")

Connection = psycopg.Connection[tuple[Any, ...]]


class _VectorDumper(Dumper):
    """A float32 numpy row as pgvector's binary ``vector`` (the oid is set per database)."""

    format = Format.BINARY

    def dump(self, obj: Any) -> Buffer:
        row = np.asarray(obj, dtype=">f4").ravel()
        return struct.pack(">HH", len(row), 0) + row.tobytes()


class _VectorLoader(Loader):
    """pgvector's binary ``vector`` as a float32 numpy row."""

    format = Format.BINARY

    def load(self, data: Buffer) -> np.ndarray:
        return np.frombuffer(bytes(data), dtype=">f4", offset=4).astype(np.float32)


class _VectorTextLoader(Loader):
    """pgvector's text ``vector`` (``[0.1,0.2]``) as a float32 numpy row."""

    format = Format.TEXT

    def load(self, data: Buffer) -> np.ndarray:
        return np.array(bytes(data)[1:-1].split(b","), dtype=np.float32)

def parse_location(location: str) -> tuple[str, str]:
    """``(libpq conninfo, schema)`` of a ``postgresql://…[?schema=NAME]`` location."""
    parts = urlsplit(location)
    schema, rest = DEFAULT_SCHEMA, []
    for item in filter(None, parts.query.split("&")):  # the rest goes to libpq as written
        key, _, value = item.partition("=")
        if unquote(key) == "schema":
            schema = unquote(value)
        else:
            rest.append(item)
    if not _SCHEMA_NAME.match(schema):
        raise StoreError(f"invalid schema name {schema!r} in the index location: use letters, "
                         "digits and '_' (at most 63, not starting with a digit)")
    return urlunsplit(("postgresql", parts.netloc, parts.path, "&".join(rest),
                       parts.fragment)), schema


def _extension_schema(conn: Connection) -> str:
    """The schema holding pgvector's types and operators (``public`` before it exists)."""
    row = conn.execute("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
                       "ON n.oid = e.extnamespace WHERE e.extname = 'vector'").fetchone()
    return str(row[0]) if row else "public"


def _redacted(location: str) -> str:
    """The location without its password, for messages."""
    parts = urlsplit(location)
    if parts.password is None:
        return location
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))
