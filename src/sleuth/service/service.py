"""The service layer behind ``sleuth serve``: the one place the HTTP API and MCP server call.

A :class:`Service` owns one open index and answers every request the servers accept:
status, adding and deleting documents, listing and calling tools, asking the agent and
managing sessions. Servers only parse, authenticate and render; request limits
(``settings.serve``) are checked here so both servers enforce the same ones.

:func:`~sleuth.service.calls.run_tool` is the one way a tool call from outside the agent
runs (the CLI, the HTTP API, the MCP server, the tool processes): the tool looked up in the
registry, the serving limits its definition declares, then the call, in a session when one is
named (its reference ids are kept).

Every method takes the :class:`Caller` making the request. An admin caller (the local CLI, a
plain API key) sees the whole index; a tenant's key reads through ``index.scoped(access)``
(its collection, its groups), writes only into its collection, and keeps its sessions apart.
Whatever it may not see reads exactly as if it did not exist (404, empty results).

Reads run concurrently (the index is thread-safe for reads); index writes and session
updates are serialized with locks.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from sleuth._version import __version__
from sleuth.agent.loop import StepCallback
from sleuth.agent.run import nothing_indexed
from sleuth.errors import (
    ForbiddenError,
    LLMUnavailable,
    LLMUnreachable,
    NotFoundError,
    RequestError,
    SleuthError,
    StoreError,
    out_of_files,
)
from sleuth.index.read import ReadIndex
from sleuth.index.write import AddReport, Index
from sleuth.ingest import IngestReport, ReadLimits, iter_documents
from sleuth.ingest.sandbox import Sandbox
from sleuth.ingest.sandbox import stop_all as stop_parsers
from sleuth.llm import LLM
from sleuth.service.callers import LOCAL, TENANT_LIMITS, Caller
from sleuth.service.calls import arguments_of as _arguments
from sleuth.service.calls import check_session_id as _check_session_id
from sleuth.service.calls import run_tool
from sleuth.service.library import (
    LIST_LIMIT,
    PageImages,
    PageSource,
    check_title,
    file_statuses,
    list_documents,
    page_source,
    passage,
    read_each,
    remove_uploads,
    unsupported,
    upload_answer,
    without_folder,
)
from sleuth.service.pool import FairLock, Quota, WorkPool
from sleuth.service.roots import check_paths
from sleuth.service.sessions import Session, bound_history, history_budget
from sleuth.service.toolprocs import ToolProcesses
from sleuth.settings import DEFAULT_AGENT, Settings
from sleuth.text.access import DEFAULT_COLLECTION, check_name, parse_groups, scope_name
from sleuth.text.threads import server_running, thread_policy
from sleuth.text.tokens import count_tokens
from sleuth.tools import TOOLS, ToolResult
from sleuth.tools.base import check_text

log = logging.getLogger(__name__)
T = TypeVar("T")
# Seconds a server leaves an LLM endpoint it found unreachable before trying it again
LLM_PAUSE = 15

_UPLOAD_NAME = re.compile(r"[^\w.-]+")
# Saved upload names stay well under the 255-byte limit file systems put on a name.
UPLOAD_NAME_BYTES = 120


def _upload_name(filename: str) -> str:
    """The name an upload is saved (and indexed) under: the base name of ``filename`` with
    characters other than letters, digits, ``.``, ``-`` and ``_`` replaced and no leading
    dot ("" when nothing is left). A name over :data:`UPLOAD_NAME_BYTES` bytes of UTF-8 is
    shortened, keeping its suffix and adding a hash of the whole name, so names stay unique
    and the same upload always gets the same name."""
    name = _UPLOAD_NAME.sub("_", Path(filename or "upload.txt").name).lstrip(".")
    if len(name.encode()) <= UPLOAD_NAME_BYTES:
        return name
    suffix = Path(name).suffix if len(Path(name).suffix) <= 16 else ""
    tag = "-" + hashlib.sha256(name.encode()).hexdigest()[:12]
    budget = UPLOAD_NAME_BYTES - len(tag) - len(suffix.encode())
    stem = name[: len(name) - len(suffix)].encode()[:budget].decode("utf-8", "ignore")
    return stem + tag + suffix


class Service:
    """Everything the servers can do with one index; see the module docstring."""

    def __init__(self, index_path: str | Path | None = None, settings: Settings | None = None,
                 *, llm: LLM | None = None) -> None:
        self.settings = settings or Settings.load()
        self.index = Index.open(index_path, settings=self.settings)
        server_running(True)
        self.limits = self.settings.serve
        # three fair pools (keys take turns, one worker kept for other keys: see
        # sleuth.service.pool), none waiting behind another: tool calls (CPU-bound: the
        # cores), indexing (two, niced; the store writes in turns) and agent runs (the LLM)
        self.pool = WorkPool(self.limits.workers, self.limits.queue,
                             per_key=self.limits.calls_per_key, spare=1)
        self.writes = WorkPool(2, self.limits.queue, name="writer", nice=10, spare=1)
        self.asks = WorkPool(self.limits.ask_workers, 0, name="ask")
        self.ask_quota = Quota(self.limits.asks_per_key, "questions", "serve.asks_per_key",
                               lambda: self.asks.seconds, share="asks")
        self.write_quota = Quota(self.limits.uploads_per_key, "indexing requests",
                                 "serve.uploads_per_key", lambda: self.writes.seconds,
                                 share="uploads")
        self._llm = llm
        self._llm_down: tuple[float, str] | None = None  # (until, why): see _check_llm
        self._write_lock = FairLock()  # index writes, keys in turn
        # one parsing child for the server's uploads, started ahead (see _warm)
        self.parser = Sandbox(ReadLimits.of(self.settings.ingest))
        self.pages = PageImages(ReadLimits.of(self.settings.ingest))  # drawn in a child too
        self.tool_processes = ToolProcesses(index_path, self.settings, self.pool.workers) \
            if self.limits.tool_processes else None
        self._session_locks = SessionLocks()
        self._views: dict[str, ReadIndex] = {}
        self._closed = False
        self.warm = threading.Event()  # set once _warm has loaded what requests will need
        threading.Thread(target=self._warm, name="sleuth-warm", daemon=True).start()

    def _warm(self) -> None:
        """Load what the first search would (PostgreSQL: its approximate index), so the
        first request does not wait for it; a failure is logged, and that search loads.
        Then see whether a configured LLM endpoint answers at all (see :meth:`_check_llm`)."""
        try:
            self.index.store.warm()
            self.parser.start()
            self.index.embedder  # noqa: B018 - the first semantic search or upload needs it
            count_tokens("warm")  # the tokenizer every tool answer is counted with (≈1 s)
            if self.tool_processes is not None:
                self.tool_processes.start()
        except Exception:  # noqa: BLE001 - only a head start: searches load it themselves
            if not self._closed:
                log.warning("could not load the index ahead of the first search",
                            exc_info=True)
        self._probe_llm()
        self.warm.set()

    def _probe_llm(self) -> None:
        """Mark the configured endpoint unreachable when it refuses connections now (one
        request, a few seconds at most); the offline model is never started for this."""
        cfg = self.settings.llm
        if self._llm is not None or not cfg.configured or not cfg.base_url:
            return
        import httpx

        try:
            httpx.get(cfg.base_url.rstrip("/") + "/models", timeout=3.0)
        except httpx.TransportError as exc:
            self._llm_unreachable(f"cannot reach the LLM endpoint at {cfg.base_url} "
                                  f"({type(exc).__name__}); check SLEUTH_BASE_URL and that "
                                  "the server is running")

    def _llm_unreachable(self, why: str) -> None:
        self._llm_down = (time.monotonic() + LLM_PAUSE, why)

    def _check_llm(self) -> None:
        """LLMUnavailable (503, Retry-After) while the endpoint was found unreachable less
        than :data:`LLM_PAUSE` seconds ago: questions fail at once instead of each waiting
        through the client's retries."""
        down = self._llm_down
        if down is None:
            return
        left = down[0] - time.monotonic()
        if left <= 0:
            self._llm_down = None
            return
        raise LLMUnavailable(f"{down[1]}; not tried again for {math.ceil(left)} s",
                             math.ceil(left))

    def close(self) -> None:
        """Stop at once: running calls are abandoned (their threads are not waited for),
        parsing children killed, the index closed. Nothing committed is lost, and an
        indexing request cut short resumes when it is sent again."""
        self._closed = True
        server_running(False)
        for pool in (self.pool, self.writes, self.asks):
            pool.close()
        if self.tool_processes is not None:
            self.tool_processes.close()
        self.pages.close()
        stop_parsers()
        self.index.close()

    def start_ask(self, work: Callable[[], T], caller: Caller) -> Future[T]:
        """Run ``work`` (an agent run of ``caller``) on the agents' pool: TooMany (429) when
        the key already has ``serve.asks_per_key`` going, Busy (503) when the pool is
        full."""
        give_back = self.ask_quota.take(caller)
        try:
            future = self.asks.start(work, caller)
        except BaseException:
            give_back()
            raise
        future.add_done_callback(lambda _: give_back())
        return future

    async def write(self, work: Callable[[], T], caller: Caller) -> T:
        """Run ``work`` (an indexing request of ``caller``) on the writers' pool, held to
        ``serve.uploads_per_key`` per key."""
        give_back = self.write_quota.take(caller)
        try:
            return await self.writes.run(work, caller)
        finally:
            give_back()

    def view(self, caller: Caller) -> ReadIndex:
        """The index as ``caller`` may see it (views are kept per access and refresh their
        caches after writes)."""
        access = caller.access
        if access is None:
            return self.index
        view = self._views.get(access.key)
        if view is None:
            view = self._views[access.key] = self.index.scoped(access)
        return view

    # -- index -------------------------------------------------------------------------

    def status(self, caller: Caller = LOCAL) -> dict[str, Any]:
        """What the index holds for ``caller`` and the limits its requests are held to; an
        admin also sees the server's own settings, workers, threads and index location (a
        tenant never: no paths, hosts or ports, nothing of other keys' work)."""
        stats = self.view(caller).stats()
        out = {"version": __version__, "documents": stats.documents, "chunks": stats.chunks,
               "sentences": stats.sentences,
               "embedder": (stats.manifest.get("embedder") or {}).get("name"),
               "tools": sorted(TOOLS),
               "limits": self.limits.model_dump(include=set(TENANT_LIMITS)),
               "warm": self.warm.is_set(),
               "caller": {"name": caller.name, "collection": caller.collection,
                          "groups": list(caller.groups), "admin": caller.admin}}
        if caller.admin:
            out["limits"] = self.limits.model_dump(exclude={"api_keys", "document_roots"})
            out.update(workers=self.pool.status(), threads=thread_policy().to_dict(),
                       index=self.index.location)
            if self.tool_processes is not None:
                out["tool_processes"] = self.tool_processes.status()
        return out

    def add_documents(self, paths: Sequence[str | Path], caller: Caller = LOCAL, *,
                      collection: str | None = None,
                      groups: Sequence[str] | str | None = None) -> dict[str, Any]:
        """Index server-side files or folders (new and changed documents; nothing deleted)
        into ``collection`` with access ``groups``. Paths must lie under the caller's
        roots and never touch the server's own folders (:mod:`sleuth.service.roots`).

        Returns the counts of ``sleuth index --json`` plus ``added_ids`` and ``updated_ids``.
        """
        if not paths:
            raise RequestError("no paths given: send a list of files or folders to index")
        if any(not str(p).strip() for p in paths):  # "" would be the server's own folder
            raise RequestError("an empty path was given: name each file or folder to index")
        within = check_paths(paths, caller, self.limits.document_roots,
                             [self.index.folder, self.limits.runs])
        return self._add_report(list(paths), caller, collection, groups, within)[0]

    def _add_report(self, paths: Sequence[str | Path], caller: Caller,
                    collection: str | None, groups: Sequence[str] | str | None,
                    within: Sequence[Path] | None = None, *,
                    each: bool = False) -> tuple[dict[str, Any], AddReport]:
        """Read ``paths`` (bounded, in the parsing child, before the write lock is taken:
        a hostile file costs its own request, not every writer's; with ``each``, uploads,
        one file's failure is its own, :func:`read_each`), then store what was read as
        ``caller``, who may write only what it could read: chunked and embedded outside the
        write lock, which each batch's write takes in ``caller``'s turn (keys in turn)."""
        target, wanted = self._write_target(caller, collection, groups)
        if each:
            docs, ingest = read_each([Path(p) for p in paths], self.parser)
        else:
            ingest = IngestReport(skipped=[], duplicates=[])
            docs = list(iter_documents(paths, report=ingest, within=within,
                                       limits=self.parser.limits, sandbox=self.parser))
        report = self.index.add_documents(docs, collection=target, groups=wanted,
                                          writer=caller.access, ingest=ingest,
                                          turn=lambda: self._write_lock.hold(caller.name))
        return {**report.to_dict(), "added_ids": report.added, "updated_ids": report.updated,
                "collection": target, "groups": list(wanted)}, report

    @staticmethod
    def _write_target(caller: Caller, collection: str | None,
                      groups: Sequence[str] | str | None) -> tuple[str, tuple[str, ...]]:
        """The collection and groups a write of ``caller`` goes to: a tenant writes into
        its own collection, with groups it holds."""
        wanted = parse_groups(groups)
        if caller.collection is None:
            return check_name("collection", collection or DEFAULT_COLLECTION), wanted
        if collection not in (None, caller.collection):
            raise ForbiddenError(f"this key writes only to collection {caller.collection!r}")
        foreign = sorted(set(wanted) - set(caller.groups))
        if foreign:
            raise ForbiddenError(f"this key does not hold group {foreign[0]!r}; documents "
                                 f"may only be given groups it holds: "
                                 f"{', '.join(caller.groups) or '(none)'}")
        return caller.collection, wanted

    def add_uploads(self, files: Sequence[tuple[str, bytes]], caller: Caller = LOCAL, *,
                    collection: str | None = None,
                    groups: Sequence[str] | str | None = None) -> dict[str, Any]:
        """Save uploaded ``(filename, content)`` pairs under ``<index>/uploads/<collection>``
        (names made safe and short by :func:`_upload_name`) and index them; a file uploaded
        again under the same name updates that document. A file that cannot be saved raises
        :class:`StoreError` (HTTP 500). ``files`` in the answer says what became of each
        (:func:`sleuth.service.library.file_statuses`); one of a type the indexer does not read, a
        second one of the same name or one without a usable name is not saved. A file that
        cannot be read is reported with its reason and removed; the others are indexed."""
        if not files:
            raise RequestError("no files uploaded: send one or more multipart 'files' parts")
        target, wanted = self._write_target(caller, collection, groups)
        # resolved: documents keep an absolute path, whatever folder the server started in
        folder = (self.index.folder / "uploads" / scope_name(target, wanted)).resolve()
        outcome: list[tuple[str, Path | str]] = []
        taken: set[str] = set()
        for filename, content in files:
            name = _upload_name(filename)
            if not name:
                outcome.append((filename, f"invalid file name {filename!r}: give the file a "
                                          "name with letters or digits"))
            elif name in taken:
                outcome.append((filename, f"another file of this upload is also named "
                                          f"{name!r}: give each file its own name"))
            else:
                taken.add(name)
                outcome.append((filename, unsupported(name) or
                                self._save(folder / name, content)))
        saved = [p for _, p in outcome if isinstance(p, Path)]
        if not saved:  # nothing the indexer reads: nothing to index
            return {**AddReport().to_dict(), "added_ids": [], "updated_ids": [],
                    "collection": target, "groups": list(wanted),
                    "files": file_statuses(self.view(caller), outcome, AddReport())}
        try:
            answer, report = self._add_report(saved, caller, target, groups, each=True)
        except SleuthError as err:  # no file gave a document, one is no corpus: say which
            remove_uploads(saved)
            raise type(err)(without_folder(str(err), folder)) from None
        except BaseException:
            remove_uploads(saved)
            raise
        return upload_answer(answer, outcome, file_statuses(self.view(caller), outcome, report),
                             folder)

    @staticmethod
    def _save(path: Path, content: bytes) -> Path:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        except OSError as err:  # no descriptor left: OutOfFiles (503), else StoreError
            reason = err.strerror or type(err).__name__
            raise out_of_files(err) or StoreError(f"cannot save upload {path.name!r} on the "
                                                  f"server: {reason}") from None
        return path

    def delete_documents(self, doc_ids: Sequence[str], caller: Caller = LOCAL) -> dict[str, Any]:
        """Delete documents ``caller`` can see (any other id is "no document")."""
        view = self.view(caller)
        missing = [d for d in doc_ids if view.document(d) is None]
        if missing:
            raise NotFoundError(f"no document {missing[0]!r} in the index")
        access = caller.access
        if access is not None:
            held = self.index.store.document_access()
            denied = [d for d in doc_ids if not access.may_write(*held[d])]
            if denied:
                raise ForbiddenError(f"this key may not delete {denied[0]!r}: the document "
                                     "has groups the key does not hold")
        with self._write_lock:
            self.index.delete(list(doc_ids))
        return {"deleted": list(doc_ids)}

    # -- the library: what the browser app reads ---------------------------------------

    def documents(self, caller: Caller = LOCAL, *, collection: str | None = None,
                  q: str | None = None, limit: int = LIST_LIMIT,
                  offset: int = 0) -> dict[str, Any]:
        """The documents ``caller`` sees (:func:`sleuth.service.library.list_documents`)."""
        return list_documents(self.view(caller), collection=collection, q=q, limit=limit,
                              offset=offset)

    def passage(self, caller: Caller = LOCAL, *, doc: str | None = None,
                chunk: str | None = None, lines: str | None = None,
                page: int | None = None, support: str | None = None) -> dict[str, Any]:
        """A passage of a document ``caller`` sees (:func:`sleuth.service.library.passage`),
        with the sentences that back ``support`` marked."""
        return passage(self.view(caller), doc=doc, chunk=chunk, lines=lines, page=page,
                       support=support)

    def page_source(self, doc_id: str, page: int, caller: Caller = LOCAL) -> PageSource:
        """Where a PDF page ``caller`` sees is drawn from; ``self.pages`` draws it (PNG)."""
        return page_source(self.view(caller), doc_id, page)

    # -- tools -------------------------------------------------------------------------

    def tools(self, caller: Caller = LOCAL) -> list[dict[str, Any]]:
        """Every tool as the agent sees it: name, description and JSON input schema (with
        this server's limits)."""
        return [{"name": t.name, "description": t.description,
                 "input_schema": t.input_schema(self.limits)} for t in TOOLS.values()]

    def call_tool(self, name: str, arguments: Mapping[str, Any] | str | None = None,
                  caller: Caller = LOCAL, *, session: str | Session | None = None) -> ToolResult:
        """Run tool ``name`` for ``caller`` through :func:`run_tool`; with ``session`` (the
        id of one of the caller's saved sessions, or a live one such as an MCP
        connection's), in that session, so its reference ids are remembered."""
        index = self.view(caller)
        if session is None:
            return run_tool(index, name, arguments, limits=self.limits)
        with self._session_locks.hold(session, _owner(caller)):
            return run_tool(index, name, arguments, limits=self.limits, session=session,
                            owner=_owner(caller))

    def tool_answer(self, name: str, arguments: Mapping[str, Any] | str | None = None,
                    caller: Caller = LOCAL, *, session: str | Session | None = None
                    ) -> dict[str, Any]:
        """:meth:`call_tool`'s result as the servers send it (text, data, retrieved tokens),
        run in a tool process (:mod:`sleuth.service.toolprocs`) when there is one and the
        call is in no session; else on this thread."""
        if session is None and self.tool_processes is not None:
            answer = self.tool_processes.call(caller.access, name, _arguments(arguments))
            if answer is not None:
                return answer
        result = self.call_tool(name, arguments, caller, session=session)
        return {"text": result.text, "data": result.data,
                "retrieved_tokens": result.retrieved_tokens}

    # -- the agent ---------------------------------------------------------------------

    @property
    def llm(self) -> LLM:
        if self._llm is None:
            from sleuth.llm.factory import llm_from_settings

            self._llm = llm_from_settings(self.settings)
        return self._llm

    def check_ask(self, question: str, agent: str) -> None:
        """Raise RequestError for an empty or too long question or an unknown agent."""
        from sleuth.agent.router import AUTO
        from sleuth.agent.variants import VARIANTS

        if not question.strip():
            raise RequestError("question is empty")
        check_text("question", question, self.limits)
        if agent not in VARIANTS and agent != AUTO:
            raise RequestError(f"unknown agent {agent!r}; choose one of: "
                               f"{', '.join(sorted([*VARIANTS, AUTO]))}")

    def ask(self, question: str, agent: str = DEFAULT_AGENT, session: str | None = None,
            on_step: StepCallback | None = None, caller: Caller = LOCAL,
            history: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        """Answer ``question`` with ``agent`` (in ``session`` when given); the A-RAG record.
        ``on_step`` may be a :class:`~sleuth.agent.run.Listener`, which also hears the
        answer's tokens and the context events. ``history``: earlier turns a client keeps
        itself (user and assistant messages, as a chat client resends them), for a question
        asked outside a saved session."""

        self.check_ask(question, agent)
        empty = nothing_indexed(self.view(caller), question, agent, on_step)
        if empty is not None:  # said without the model, whatever its state
            return empty.to_record()
        self._check_llm()
        try:
            return self._ask(question, agent, session, on_step, caller, history)
        except LLMUnreachable as exc:
            self._llm_unreachable(str(exc))
            raise

    def _ask(self, question: str, agent: str, session: str | None,
             on_step: StepCallback | None, caller: Caller,
             history: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        from sleuth.agent.variants import build_agent

        if session is None:
            answer = build_agent(agent, self.view(caller), self.llm, self.settings).run(
                question, on_step=on_step,
                history=bound_history(history, history_budget(self.settings)))
            return answer.to_record()
        if history:
            raise RequestError("a saved session keeps its own history: send a session id or "
                               "earlier turns, not both")
        with self._session_locks.hold(session, _owner(caller)):
            conversation = self._session(session, caller, create=True, agent=agent,
                                         llm=self.llm)
            return conversation.ask(question, on_step=on_step).to_record()

    # -- sessions ----------------------------------------------------------------------

    def sessions(self, caller: Caller = LOCAL) -> list[dict[str, Any]]:
        """``caller``'s saved sessions (a tenant key sees only its own, as it may now read
        them: :meth:`Session.shown_turns`)."""
        return Session.saved(self.view(caller), _owner(caller))

    def session(self, session_id: str, caller: Caller = LOCAL) -> dict[str, Any]:
        """A saved session: id, agent, created, and its turns (question, answer, citations),
        those that drew on documents ``caller`` may no longer read withheld."""
        conversation = self._session(session_id, caller)
        return {"id": conversation.id, "agent": conversation.agent_name,
                "title": conversation.shown_title, "created": conversation.created,
                "turns": conversation.shown_turns()}

    def rename_session(self, session_id: str, title: str,
                       caller: Caller = LOCAL) -> dict[str, Any]:
        """Give ``caller``'s session ``session_id`` a title (1 to 200 characters)."""
        title = check_title(title)
        with self._session_locks.hold(session_id, _owner(caller)):
            conversation = self._session(session_id, caller)
            conversation.title = title
            conversation.save()
        return {"id": session_id, "title": title}

    def delete_session(self, session_id: str, caller: Caller = LOCAL) -> dict[str, Any]:
        _check_session_id(session_id)
        with self._session_locks.hold(session_id, _owner(caller)):
            if not Session.delete(self.index, session_id, _owner(caller)):
                raise NotFoundError(f"no session {session_id!r}")
        return {"deleted": session_id}

    def _session(self, session_id: str, caller: Caller, *, create: bool = False,
                 agent: str | None = None, llm: LLM | None = None) -> Session:
        """Session ``session_id`` of ``caller``: a tenant key's sessions live apart, and it
        reads through the key's view of the index."""
        _check_session_id(session_id)
        owner = _owner(caller)
        if not create and not Session.exists(self.index, session_id, owner):
            raise NotFoundError(f"no session {session_id!r}")
        return Session.open(self.view(caller), session_id, create=create, agent=agent,
                            settings=self.settings, llm=llm, owner=owner)


class SessionLocks:
    """One lock per session: calls in the same session (saved, by owner and id, or live, such
    as an MCP connection's) run one at a time, so its turns and reference ids stay in
    order; calls in different sessions run in parallel on the worker pool."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._saved: dict[tuple[str | None, str], threading.RLock] = {}
        self._live: weakref.WeakKeyDictionary[Session, threading.RLock] = \
            weakref.WeakKeyDictionary()

    def hold(self, session: str | Session, owner: str | None) -> threading.RLock:
        """The lock of ``session`` (created on first use), to be held with ``with``."""
        with self._guard:
            if isinstance(session, str):
                return self._saved.setdefault((owner, session), threading.RLock())
            return self._live.setdefault(session, threading.RLock())


def _owner(caller: Caller) -> str | None:
    """The sessions owner of ``caller``: None (shared) for admins, else the key's name."""
    return None if caller.admin else caller.name

