"""Which server folders a caller may index by path (``POST /v1/documents`` with ``paths``).

- An admin key (and a server run with ``--no-auth``) indexes under ``serve.document_roots``
  when it is set, and anywhere when it is not.
- A tenant's key indexes only under its own ``document_roots`` (its entry in the key file);
  ``serve.document_roots`` is not for tenants, and a key without roots of its own indexes no
  server path at all (it uploads files). One tenant's folders are not another's.
- Whatever the roots say, the server's own folders are never indexable through the API:
  the index folder (its database, every tenant's uploads, the sessions) and the eval runs
  folder (runs hold text from the whole index). A path inside one of them, or holding one,
  is refused.

Paths are compared resolved (links followed, relative paths read from the server's working
folder), so a link cannot lead around a rule; inside a folder that is indexed, files are
read only where they resolve inside that folder and the roots
(:func:`sleuth.ingest.iter_documents`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sleuth.errors import ForbiddenError
from sleuth.service.callers import Caller


def allowed_roots(caller: Caller, server_roots: Sequence[Path] | None) -> list[Path] | None:
    """The folders ``caller`` may index under, resolved; None: anywhere (an admin on a
    server without ``serve.document_roots``); [] for a tenant's key without roots."""
    if not caller.admin:
        return [Path(r).expanduser().resolve() for r in caller.document_roots]
    if server_roots is None:
        return None
    return [Path(r).expanduser().resolve() for r in server_roots]


def check_paths(paths: Sequence[str | Path], caller: Caller,
                server_roots: Sequence[Path] | None,
                protected: Sequence[Path]) -> list[Path] | None:
    """The folders every file read for ``paths`` must resolve inside (None: any), after
    checking each path: ForbiddenError for a tenant's key without roots, a path outside the
    caller's roots, or one inside or holding a ``protected`` folder."""
    roots = allowed_roots(caller, server_roots)
    if roots == []:
        raise ForbiddenError("this key may not index server paths; upload the files "
                             "(multipart 'files') or ask the operator to give the key "
                             "document_roots in the key file")
    kept = [Path(p).expanduser().resolve() for p in protected]
    whose = "serve.document_roots" if caller.admin else "its document_roots in the key file"
    for path in paths:
        real = Path(path).expanduser().resolve()
        if any(_inside(real, folder) or _inside(folder, real) for folder in kept):
            raise ForbiddenError(f"{path} is or holds a folder of the server itself (the index, "
                                 "its uploads and sessions, the eval runs): it is never "
                                 "indexed through the API")
        if roots is not None and not any(_inside(real, root) for root in roots):
            raise ForbiddenError(f"{path} is outside the folders this key may index "
                                 f"({whose})")
    return roots


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies inside it (both resolved)."""
    return path == folder or folder in path.parents
