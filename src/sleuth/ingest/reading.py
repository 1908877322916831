"""Reading a source file as UTF-8 text, with one clear reason when it cannot be used."""

from __future__ import annotations

import codecs
import errno
from pathlib import Path

BINARY_PROBE = 8192


class SkipSource(Exception):
    """A file or record is unusable; ``str(err)`` is the reason. It is reported and skipped."""


class BadStructure(Exception):
    """A structured file (JSON) has the wrong shape: fatal when named, skipped in a walk."""


def read_text(path: Path) -> str:
    """Read ``path`` as UTF-8 text with newlines normalised to ``\\n``.

    Raises :class:`SkipSource` for unreadable, empty, whitespace-only, binary or non-UTF-8 files.
    """
    data = read_bytes(path)
    if not data:
        raise SkipSource("empty file (0 bytes)")
    text = decode_utf8(data)
    if not text.strip():
        raise SkipSource("file contains only whitespace")
    return normalise_newlines(text)


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except PermissionError:
        raise SkipSource("cannot read file: permission denied") from None
    except IsADirectoryError:
        raise SkipSource("is a folder, not a file") from None
    except OSError as err:
        reason = err.strerror or errno.errorcode.get(err.errno or 0, str(err))
        raise SkipSource(f"cannot read file: {reason}") from None


def decode_utf8(data: bytes) -> str:
    """Decode UTF-8 (with or without a BOM); refuse UTF-16, binary data and other encodings."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SkipSource("UTF-16 text is not supported (convert the file to UTF-8)")
    nul = data.find(b"\x00", 0, BINARY_PROBE)
    if nul != -1:
        raise SkipSource(f"binary file (NUL byte at offset {nul})")
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as err:
        offset = skip + err.start
        raise SkipSource(f"not UTF-8 text (byte 0x{data[offset]:02x} at offset {offset})") from None


def normalise_newlines(text: str) -> str:
    """Turn ``\\r\\n`` and lone ``\\r`` into ``\\n``."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")
