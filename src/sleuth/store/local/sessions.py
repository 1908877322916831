"""A folder index's sessions: JSON files in its ``sessions/`` folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError
from sleuth.store.sessions import check_session_id


class FileSessions:
    """Sessions as JSON files in a folder: ``<id>.json`` for the shared sessions,
    ``keys/<owner>/<id>.json`` for those of one tenant API key (so no other key can open or
    overwrite them)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _folder(self, owner: str | None) -> Path:
        return self.folder if owner is None else self.folder / "keys" / owner

    def path(self, owner: str | None, session_id: str) -> Path:
        return self._folder(owner) / f"{check_session_id(session_id)}.json"

    def where(self, owner: str | None, session_id: str | None = None) -> str:
        if session_id is None:
            return str(self._folder(owner))
        return str(self.path(owner, session_id))

    def exists(self, owner: str | None, session_id: str) -> bool:
        return self.path(owner, session_id).is_file()

    def load(self, owner: str | None, session_id: str) -> dict[str, Any] | None:
        path = self.path(owner, session_id)
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"session file {path} is unreadable ({exc}); delete it "
                              "or start a new session") from None
        return data if isinstance(data, dict) else {}

    def save(self, owner: str | None, session_id: str, data: dict[str, Any]) -> None:
        path = self.path(owner, session_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)

    def list(self, owner: str | None) -> list[dict[str, Any]]:
        out = []
        for path in sorted(self._folder(owner).glob("*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue
            if not isinstance(data, dict):
                continue
            turns = data.get("turns") or []
            out.append({"id": path.stem, "agent": data.get("agent"), "turns": len(turns),
                        "first_question": turns[0]["question"] if turns else "",
                        "title": data.get("title"), "updated": data.get("updated")})
        return out

    def delete(self, owner: str | None, session_id: str) -> bool:
        try:
            self.path(owner, session_id).unlink()
        except FileNotFoundError:
            return False
        return True

    def owners(self) -> tuple[str | None, ...]:
        keys = self.folder / "keys"
        names = sorted(p.name for p in keys.iterdir() if p.is_dir()) if keys.is_dir() else []
        return (None, *names)
