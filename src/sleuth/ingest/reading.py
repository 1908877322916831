"""Reading a source file as UTF-8 text, with one clear reason when it cannot be used."""

from __future__ import annotations

import codecs
import errno
import os
import stat
from pathlib import Path

BINARY_PROBE = 8192
# NUL bytes in the probe, per byte, above which a file is binary; fewer, in a file that is
# UTF-8 otherwise, are stray characters of a text (Javadoc writes the NUL character it
# documents into the page, Commons Lang's CharUtils.html) and are dropped
BINARY_NUL_SHARE = 0.01


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
    """The bytes of ``path``, which must be a regular file (checked before it is opened)."""
    check_regular(path)
    try:
        return path.read_bytes()
    except OSError as err:
        raise SkipSource(_os_reason(err)) from None


def check_regular(path: Path) -> None:
    """Raise :class:`SkipSource` unless ``path`` (a link followed) is a regular file.

    Only ``os.stat`` is called: a FIFO, socket or device is never opened, since reading one
    can block forever or have side effects.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        raise SkipSource(_os_reason(err)) from None
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise SkipSource("is a folder, not a file")
    raise SkipSource(f"not a regular file ({_file_kind(mode)})")


def _os_reason(err: OSError) -> str:
    if isinstance(err, PermissionError):
        return "cannot read file: permission denied"
    if isinstance(err, IsADirectoryError):
        return "is a folder, not a file"
    reason = err.strerror or errno.errorcode.get(err.errno or 0, str(err))
    return f"cannot read file: {reason}"


def _file_kind(mode: int) -> str:
    """What a file that is neither regular nor a folder is, in words."""
    kinds = ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"),
             (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"))
    return next((name for test, name in kinds if test(mode)), f"file type {stat.S_IFMT(mode):#o}")


def decode_utf8(data: bytes) -> str:
    """Decode UTF-8 (with or without a BOM) without its NUL characters; refuse UTF-16,
    binary data (NUL bytes in the first :data:`BINARY_PROBE` bytes, more than
    :data:`BINARY_NUL_SHARE` of them or in what is not UTF-8) and other encodings."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SkipSource("UTF-16 text is not supported (convert the file to UTF-8)")
    nul = data.find(b"\x00", 0, BINARY_PROBE)
    probe = min(len(data), BINARY_PROBE)
    if nul != -1 and data.count(b"\x00", 0, probe) > BINARY_NUL_SHARE * probe:
        raise SkipSource(f"binary file (NUL byte at offset {nul})")
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[skip:].decode("utf-8")
    except UnicodeDecodeError as err:
        if nul != -1:
            raise SkipSource(f"binary file (NUL byte at offset {nul})") from None
        offset = skip + err.start
        raise SkipSource(f"not UTF-8 text (byte 0x{data[offset]:02x} at offset {offset})") from None
    return text.replace("\x00", "") if "\x00" in text else text


def normalise_newlines(text: str) -> str:
    """Turn ``\\r\\n`` and lone ``\\r`` into ``\\n``."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")
