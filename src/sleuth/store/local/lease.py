"""Leases: which process owns a piece of work on an index folder, and whether it still lives.

A writer takes a lease before it reserves anything in the database: an exclusive ``flock``
on ``locks/<owner>.lock``, held as long as the store is open. The kernel drops the lock
when the process ends in any way, kill -9 included, so another process tells a live owner
from a dead one by trying the lock without waiting: a lock it gets belonged to a process
that is gone. Rows that record an owner (segments being written, builds) are cleaned up
only once their owner is proven gone. A probe opens the lock file read-only and never
creates one, so read-only commands write nothing.

:class:`Maintenance` is one more lock, ``locks/maintenance.lock``: one process at a time
compacts, cleans up and updates the approximate index; others skip it (the holder does
the work) unless they ask to wait (repair).

``flock`` is POSIX; where it is missing (Windows) every owner counts as alive, so files are
never cleaned up behind a writer's back, only later by a build that finds them unnamed.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCKS = "locks"
MAINTENANCE = "maintenance.lock"


def _flock(fd: int, wait: bool) -> bool:
    """Take an exclusive flock on ``fd``; False when another holds it (and not ``wait``)."""
    if fcntl is None:  # pragma: no cover - Windows
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


class Lease:
    """This process's lease on an index folder (taken on first use, released on close)."""

    def __init__(self, root: Path) -> None:
        self.folder = root / LOCKS
        self.owner = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self._fd: int | None = None
        self._taking = threading.Lock()  # threads of one process building at once

    def take(self) -> str:
        """Hold the lease (once); returns the owner name recorded in the database."""
        with self._taking:
            if self._fd is None:
                self.folder.mkdir(exist_ok=True)
                path = self.folder / f"{self.owner}.lock"
                tmp = path.with_name(path.name + ".tmp")  # locked before probes can see it
                fd = os.open(tmp, os.O_RDWR | os.O_CREAT, 0o644)
                _flock(fd, wait=True)  # a fresh name: no one else holds it
                tmp.replace(path)
                self._fd = fd
        return self.owner

    def others(self) -> list[str]:
        """The owners of the other lease files in the folder (live or not)."""
        if not self.folder.is_dir():
            return []
        return [p.name.removesuffix(".lock") for p in self.folder.glob("*.lock")
                if p.name != MAINTENANCE and p.name != f"{self.owner}.lock"]

    def alive(self, owner: str, *, remove: bool = False) -> bool:
        """Whether ``owner`` still holds its lease; ``remove``: delete a dead one's file."""
        if owner == self.owner:
            return self._fd is not None
        path = self.folder / f"{owner}.lock"
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            if not _flock(fd, wait=False):
                return True
            if remove:
                path.unlink(missing_ok=True)
            return fcntl is None
        finally:
            os.close(fd)  # closing drops the probe's lock

    def release(self) -> None:
        if self._fd is not None:
            (self.folder / f"{self.owner}.lock").unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None


class Maintenance:
    """The index's maintenance lock: ``with Maintenance(root) as held:`` where ``held``
    says whether this process got it (``wait``: block until it does)."""

    def __init__(self, root: Path, *, wait: bool = False) -> None:
        self.path = root / LOCKS / MAINTENANCE
        self.wait = wait
        self._fd: int | None = None

    def __enter__(self) -> bool:
        self.path.parent.mkdir(exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if not _flock(fd, self.wait):
            os.close(fd)
            return False
        self._fd = fd
        return True

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
