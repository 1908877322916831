"""The error tree. Library code raises these; only the CLI turns them into exit codes.

:func:`redact` keeps credentials out of their messages: an error that quotes a URL or what a
remote server said passes through it first.
"""

from __future__ import annotations

import re

# userinfo of a URL (user:password@, or a token standing as the user); scheme kept
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@]+@")
# a bearer token (an Authorization header's credentials)
_AUTHORIZATION = re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]{6,}")
# API keys by their vendors' prefixes: OpenAI, Anthropic, DeepSeek and others (sk-), Groq,
# xAI, Hugging Face, Replicate, Perplexity, NVIDIA, GitHub, Google, AWS
_KEY = re.compile(r"\b(?:(?:sk|gsk|xai|hf|r8|pplx|nvapi|ghp|gho|github_pat)[-_]"
                  r"[A-Za-z0-9_-]{6,}|AIza[A-Za-z0-9_-]{20,}|AKIA[A-Z0-9]{16})")
# a secret given as a name and value: api_key=..., "password": "...", ?key=...
_PAIR = re.compile(r"(?i)\b((?:(?:api[-_]?key|access[-_]?token|secret|password|passwd)"
                   r"[\"']?\s*[=:]|key=)\s*[\"']?)[^\s&\"',;)}\]]+")
MASK = "***"


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with credentials masked (``***``): each of ``secrets`` wherever it appears
    (those of 4 characters or more), a URL's userinfo, Authorization credentials, API keys
    by their vendors' prefixes, and values named as keys, tokens or passwords."""
    for secret in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    text = _USERINFO.sub(rf"\1{MASK}@", text)
    text = _AUTHORIZATION.sub(rf"\1\2{MASK}", text)
    text = _KEY.sub(MASK, text)
    return _PAIR.sub(rf"\1{MASK}", text)


class SleuthError(Exception):
    """Base for every error Sleuth raises on purpose. ``str(err)`` is one clear line."""


class ConfigError(SleuthError):
    """Settings are missing or inconsistent (no endpoint, unknown preset, bad value)."""


class IngestError(SleuthError):
    """A source cannot be read at all (missing path, malformed corpus file)."""


class StoreError(SleuthError):
    """The index is missing, from an unknown format version, or built by another embedder."""


class EmbedderError(SleuthError):
    """The embedding model cannot be loaded or the embeddings endpoint failed."""


class LLMError(SleuthError):
    """The LLM endpoint failed after retries, or answered something unusable."""


class ToolError(SleuthError):
    """A recoverable tool failure; its message goes back to the model as an observation."""


class MissingDependency(SleuthError):
    """An optional extra is not installed; the message says what to pip install."""

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(
            f"{module!r} is not installed; install it with: pip install 'sleuth-rag[{extra}]'"
        )


class IndexNotFound(StoreError):
    """No index exists at the given location."""


class ReadOnlyIndex(StoreError):
    """The index is read here from a copy that takes no writes (a PostgreSQL hot standby, a
    read-only role): searches work, documents are added and deleted on its primary (HTTP
    409)."""


class IndexDamaged(StoreError):
    """A part of an index is missing or does not match what was written; the message names
    the part and the command that repairs it."""


class RequestError(SleuthError):
    """A caller's request is invalid or over a serving limit; servers answer 4xx with it."""


class NotFoundError(RequestError):
    """A request names a tool, document or session that does not exist (HTTP 404)."""


class ForbiddenError(RequestError):
    """The caller's key may not do this (HTTP 403): a write outside its collection or groups,
    an admin-only action."""


class Busy(SleuthError):
    """A server's workers and waiting queue are full (HTTP 503 with ``Retry-After``): the
    request was refused at once, nothing was done, and it may be sent again after
    ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class DatabaseUnavailable(StoreError, Busy):
    """The index's database cannot be reached now (HTTP 503 with ``Retry-After``): the request
    was not done; the message names the database without its password."""


class TooMany(Busy):
    """One caller already has as many requests of a kind going as a server lets a key have
    (HTTP 429 with ``Retry-After``): nothing was done; send it again once one has ended."""


class OutOfFiles(Busy):
    """The process has no file descriptor left (EMFILE, ENFILE): HTTP 503 with
    ``Retry-After``, never a report of damage (:func:`out_of_files`)."""

    def __init__(self) -> None:
        super().__init__("server out of file descriptors (too many open files); the index "
                         "is intact: retry in 5 s", 5)


def out_of_files(exc: BaseException) -> OutOfFiles | None:
    """:class:`OutOfFiles` when ``exc`` says the process ran out of file descriptors: an
    OSError with EMFILE or ENFILE, or SQLite's "unable to open" (which carries no errno)
    while no descriptor can be opened; else None."""
    import errno

    if isinstance(exc, OSError):
        return OutOfFiles() if exc.errno in (errno.EMFILE, errno.ENFILE) else None
    if "unable to open" in str(exc) and descriptors_exhausted():  # SQLITE_CANTOPEN
        return OutOfFiles()
    return None


def descriptors_exhausted() -> bool:
    """Whether this process cannot open a file now for want of a descriptor (what a failure
    to read a file of the index is checked against before it is reported as damage)."""
    import errno
    import os

    try:
        os.close(os.open(os.devnull, os.O_RDONLY))
    except OSError as probe:
        return probe.errno in (errno.EMFILE, errno.ENFILE)
    return False


class ToolNotFound(ToolError, NotFoundError):
    """A tool call names something that does not exist: a reference id no search returned,
    an entity not in the graph, a graph not built. The model reads it as an observation;
    the servers answer 404."""


class LLMUnreachable(LLMError):
    """The LLM endpoint could not be reached (refused, timed out) after retries."""


class LLMUnavailable(Busy):
    """A server will not try an LLM endpoint it found unreachable moments ago (HTTP 503 with
    ``Retry-After``): the question was not asked; send it again later."""
