"""The service layer behind ``sleuth serve``: the one place the HTTP API and MCP server call.

A :class:`Service` owns one open index and answers every request the servers accept:
status, adding and deleting documents, listing and calling tools, asking the agent and
managing sessions. Servers only parse, authenticate and render; request limits
(``settings.serve``) are checked here so both servers enforce the same ones. Every method
takes the :class:`Caller` making the request, so access control can be added in one place.

Reads run concurrently (the index is thread-safe for reads); index writes and session
updates are serialized with locks.
"""

from __future__ import annotations

import hmac
import json
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sleuth._version import __version__
from sleuth.agent.loop import StepCallback
from sleuth.agent.tracker import Tracker
from sleuth.errors import ConfigError, NotFoundError, RequestError
from sleuth.index import Index
from sleuth.llm import LLM
from sleuth.session import Session, sessions_folder
from sleuth.settings import ServeSettings, Settings
from sleuth.tools import TOOLS, ToolContext, ToolResult

# Arguments that carry query text: each string is length-limited, each list count-limited.
QUERY_ARGUMENTS = frozenset({"query", "queries", "keywords", "patterns", "entities", "name",
                             "entity", "source", "target"})
_SESSION_ID = re.compile(r"^[\w.-]{1,64}$")
_UPLOAD_NAME = re.compile(r"[^\w.-]+")


@dataclass(frozen=True)
class Caller:
    """Who makes a request: the name of the API key used (``local`` without auth)."""

    name: str = "local"


LOCAL = Caller()


def load_api_keys(serve: ServeSettings) -> dict[str, str]:
    """API keys by name from ``serve.api_keys`` (a mapping, or a YAML/JSON file of one)."""
    keys = serve.api_keys
    if keys is None:
        return {}
    if isinstance(keys, Path):
        try:
            keys = yaml.safe_load(keys.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read API key file {serve.api_keys}: {exc}") from None
        if not isinstance(keys, dict) or not all(
                isinstance(v, str) and v for v in keys.values()):
            raise ConfigError(f"API key file {serve.api_keys} must map names to key strings")
    return {str(name): key for name, key in keys.items()}


def caller_for_key(keys: Mapping[str, str], presented: str | None) -> Caller | None:
    """The caller whose key is ``presented`` (compared in constant time), else None."""
    if not presented:
        return None
    found = None
    for name, key in keys.items():
        if hmac.compare_digest(key.encode(), presented.encode()):
            found = Caller(name)
    return found


class Service:
    """Everything the servers can do with one index; see the module docstring."""

    def __init__(self, index_path: str | Path | None = None, settings: Settings | None = None,
                 *, llm: LLM | None = None) -> None:
        self.settings = settings or Settings.load()
        self.index = Index.open(index_path, settings=self.settings)
        self.limits = self.settings.serve
        self._llm = llm
        self._write_lock = threading.Lock()
        self._session_lock = threading.RLock()

    def close(self) -> None:
        self.index.close()

    # -- index -------------------------------------------------------------------------

    def status(self, caller: Caller = LOCAL) -> dict[str, Any]:
        stats = self.index.stats()
        return {"version": __version__, "index": self.index.location,
                "documents": stats.documents, "chunks": stats.chunks,
                "sentences": stats.sentences,
                "embedder": (stats.manifest.get("embedder") or {}).get("name"),
                "tools": sorted(TOOLS), "limits": self.limits.model_dump(exclude={"api_keys"})}

    def add_documents(self, paths: Sequence[str | Path],
                      caller: Caller = LOCAL) -> dict[str, Any]:
        """Index server-side files or folders (new and changed documents; nothing deleted).

        Returns the counts of ``sleuth index --json`` plus ``added_ids`` and ``updated_ids``.
        """
        if not paths:
            raise RequestError("no paths given: send a list of files or folders to index")
        with self._write_lock:
            report = self.index.add(list(paths), delete_missing=False)
        return {**report.to_dict(), "added_ids": report.added, "updated_ids": report.updated}

    def add_uploads(self, files: Sequence[tuple[str, bytes]],
                    caller: Caller = LOCAL) -> dict[str, Any]:
        """Save uploaded ``(filename, content)`` pairs under ``<index>/uploads`` and index them."""
        if not files:
            raise RequestError("no files uploaded: send one or more multipart 'files' parts")
        folder = Path(self.index.location) / "uploads"
        folder.mkdir(parents=True, exist_ok=True)
        saved = []
        for filename, content in files:
            name = _UPLOAD_NAME.sub("_", Path(filename or "upload.txt").name).lstrip(".")
            if not name:
                raise RequestError(f"invalid upload file name {filename!r}")
            path = folder / name
            path.write_bytes(content)
            saved.append(path)
        return self.add_documents(saved, caller)

    def delete_documents(self, doc_ids: Sequence[str], caller: Caller = LOCAL) -> dict[str, Any]:
        missing = [d for d in doc_ids if self.index.document(d) is None]
        if missing:
            raise NotFoundError(f"no document {missing[0]!r} in the index")
        with self._write_lock:
            self.index.delete(list(doc_ids))
        return {"deleted": list(doc_ids)}

    # -- tools -------------------------------------------------------------------------

    def tools(self, caller: Caller = LOCAL) -> list[dict[str, Any]]:
        """Every tool as the agent sees it: name, description and JSON input schema."""
        return [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in TOOLS.values()]

    def call_tool(self, name: str, arguments: Mapping[str, Any] | str | None = None,
                  session: str | None = None, caller: Caller = LOCAL) -> ToolResult:
        """Run tool ``name`` (limits checked first); with ``session``, in that session so
        its reference ids are remembered. Bad arguments raise ToolError."""
        tool = TOOLS.get(name)
        if tool is None:
            raise NotFoundError(f"unknown tool {name!r}; choose one of: {', '.join(TOOLS)}")
        args = self._arguments(arguments)
        self.check_limits(args)
        if session is None:
            return tool.run(ToolContext(self.index, Tracker()), args)
        with self._session_lock:
            return self._session(session, create=True).run_tool(name, args)

    def check_limits(self, arguments: Mapping[str, Any]) -> None:
        """Raise RequestError when ``arguments`` exceed the serving limits."""
        limits = self.limits
        top_k = arguments.get("top_k")
        if isinstance(top_k, int) and top_k > limits.max_top_k:
            raise RequestError(f"top_k {top_k} is over this server's limit of "
                               f"{limits.max_top_k}")
        for key in QUERY_ARGUMENTS & arguments.keys():
            value = arguments[key]
            if isinstance(value, list) and len(value) > limits.max_queries:
                raise RequestError(f"{key}: {len(value)} given, this server accepts at most "
                                   f"{limits.max_queries} per call")
            for text in value if isinstance(value, list) else [value]:
                self._check_text(key, text)

    def _check_text(self, what: str, text: object) -> None:
        if isinstance(text, str) and len(text) > self.limits.max_query_chars:
            raise RequestError(f"{what}: {len(text)} characters, this server accepts at most "
                               f"{self.limits.max_query_chars}")

    @staticmethod
    def _arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
        if arguments is None or arguments == "":
            return {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError as exc:
                raise RequestError(f"tool arguments are not valid JSON: {exc.msg}") from None
        if not isinstance(arguments, Mapping):
            raise RequestError("tool arguments must be a JSON object")
        return dict(arguments)

    # -- the agent ---------------------------------------------------------------------

    @property
    def llm(self) -> LLM:
        if self._llm is None:
            from sleuth.agent.variants import llm_from_settings

            self._llm = llm_from_settings(self.settings)
        return self._llm

    def check_ask(self, question: str, agent: str) -> None:
        """Raise RequestError for an empty or too long question or an unknown agent."""
        from sleuth.agent.router import AUTO
        from sleuth.agent.variants import VARIANTS

        if not question.strip():
            raise RequestError("question is empty")
        self._check_text("question", question)
        if agent not in VARIANTS and agent != AUTO:
            raise RequestError(f"unknown agent {agent!r}; choose one of: "
                               f"{', '.join(sorted([*VARIANTS, AUTO]))}")

    def ask(self, question: str, agent: str = "full", session: str | None = None,
            on_step: StepCallback | None = None, caller: Caller = LOCAL) -> dict[str, Any]:
        """Answer ``question`` with ``agent`` (in ``session`` when given); the A-RAG record."""
        from sleuth.agent.variants import build_agent

        self.check_ask(question, agent)
        if session is None:
            answer = build_agent(agent, self.index, self.llm, self.settings).run(
                question, on_step=on_step)
            return answer.to_record()
        with self._session_lock:
            conversation = self._session(session, create=True, agent=agent, llm=self.llm)
            return conversation.ask(question, on_step=on_step).to_record()

    # -- sessions ----------------------------------------------------------------------

    def sessions(self, caller: Caller = LOCAL) -> list[dict[str, Any]]:
        return Session.saved(self.index)

    def session(self, session_id: str, caller: Caller = LOCAL) -> dict[str, Any]:
        """A saved session: id, agent, created, and its turns (question, answer, citations)."""
        conversation = self._session(session_id)
        return {"id": conversation.id, "agent": conversation.agent_name,
                "created": conversation.created, "turns": conversation.turns}

    def delete_session(self, session_id: str, caller: Caller = LOCAL) -> dict[str, Any]:
        with self._session_lock:
            path = self._session(session_id).path
            path.unlink()
        return {"deleted": session_id}

    def _session(self, session_id: str, *, create: bool = False, agent: str | None = None,
                 llm: LLM | None = None) -> Session:
        if not _SESSION_ID.match(session_id):
            raise RequestError(f"invalid session id {session_id!r}: use letters, digits, '.', "
                               "'-' and '_' (at most 64)")
        path = sessions_folder(self.index) / f"{session_id}.json"
        if not create and not path.is_file():
            raise NotFoundError(f"no session {session_id!r}")
        return Session.open(self.index, session_id, create=create, agent=agent,
                            settings=self.settings, llm=llm)

