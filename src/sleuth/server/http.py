"""The HTTP API (``sleuth serve http``): FastAPI over :class:`sleuth.service.Service`.

Routes parse, authenticate and render; every decision is the service's. API keys come as
``Authorization: Bearer KEY``, ``X-API-Key: KEY`` or ``?api_key=KEY``; errors are JSON
``{"detail": "..."}`` with 401 (key), 404 (unknown tool, document, session), 400 (invalid
request, over a limit, bad tool arguments), 413 (body too large), 422 (malformed body),
503 with ``Retry-After`` (the workers and their queue are full: nothing was done, send it
again later; see :mod:`sleuth.server.pool`) or 500 (a server-side failure, such as a file
that cannot be written).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

from sleuth._version import __version__
from sleuth.errors import (
    Busy,
    ConfigError,
    ForbiddenError,
    IngestError,
    LLMError,
    MissingDependency,
    NotFoundError,
    RequestError,
    SleuthError,
    ToolError,
)
from sleuth.server.runs import runs_router
from sleuth.service import (
    LOCAL,
    Caller,
    KeyRing,
    Service,
    caller_for_key,
    load_api_keys,
    presented_key,
)

try:
    from fastapi import APIRouter, Body, Depends, FastAPI, HTTPException, Request
    from fastapi.responses import JSONResponse, StreamingResponse
    from pydantic import BaseModel, Field
    from starlette.datastructures import UploadFile
except ImportError as exc:  # pragma: no cover - the serve extra is missing
    raise MissingDependency(exc.name or "fastapi", "serve") from None

STATUS = {NotFoundError: 404, ForbiddenError: 403, RequestError: 400, ToolError: 400,
          IngestError: 400, LLMError: 502, Busy: 503}


class AddPaths(BaseModel):
    """Server-side files or folders to index."""

    paths: list[str] = Field(..., min_length=1, description="Files or folders on the server")
    collection: str | None = Field(None, description="Collection (tenant) to index into; a "
                                   "tenant's key always writes to its own")
    groups: list[str] = Field(default_factory=list, description="Access groups of the "
                              "documents (none: open to the whole collection)")


class AskRequest(BaseModel):
    question: str = Field(..., description="The question to answer")
    agent: str = Field("full", description="Agent variant (`sleuth agents`)")
    session: str | None = Field(None, description="Session id: follow-ups see earlier turns")


_DOCUMENTS_BODY = {"requestBody": {"required": True, "content": {
    "application/json": {"schema": AddPaths.model_json_schema()},
    "multipart/form-data": {"schema": {"type": "object", "required": ["files"], "properties": {
        "files": {"type": "array", "minItems": 1,
                  "items": {"type": "string", "format": "binary"}},
        "collection": {"type": "string"},
        "groups": {"type": "string", "description": "Comma-separated access groups"}}}},
}}}


class ErrorBody(BaseModel):
    detail: str = Field(..., description="What was wrong, and what to do about it")


_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text} for code, text in (
        (400, "Invalid request, over a limit, or bad tool arguments"),
        (401, "Missing or invalid API key"),
        (403, "The key may not do this"),
        (404, "Unknown tool, document or session"),
        (413, "Request body too large"),
        (503, "Workers and their queue are full; send it again after Retry-After seconds"),
    )}


def status_for(exc: SleuthError) -> int:
    for kind, code in STATUS.items():
        if isinstance(exc, kind):
            return code
    return 500


def create_app(service: Service, *, auth: bool = True) -> FastAPI:
    """The FastAPI app serving ``service`` and the run viewer over ``serve.runs``;
    ``auth=False`` (``--no-auth``) for local use only."""
    keys = load_api_keys(service.settings.serve)
    if auth and not keys:
        raise ConfigError("no API keys configured: set serve.api_keys (SLEUTH_SERVE__API_KEYS, "
                          "a {name: key} mapping or a key file) or pass --no-auth for local use")
    app = FastAPI(title="Sleuth", version=__version__,
                  description="Agentic retrieval over a document index: tools, ask, sessions.")
    _install_errors(app, service.limits.max_body_bytes)
    caller = _authenticate(keys) if auth else _anonymous
    router = APIRouter(prefix="/v1", dependencies=[Depends(caller)], responses=_ERRORS)
    _index_routes(router, service)
    _tool_routes(router, service)
    _agent_routes(router, service)
    _session_routes(router, service)
    app.include_router(router)
    # eval runs and the run viewer: /v1/runs..., /v1/chunks/{id}, /viewer. Runs hold text
    # from the whole index, so a tenant's key gets 403 there.
    async def admin(request: Request) -> Caller:
        who = await caller(request)
        if not who.admin:
            raise ForbiddenError("eval runs and the run viewer need an admin key")
        return who

    app.include_router(runs_router(Path(service.settings.serve.runs), lambda: service.index,
                                   auth=admin))
    return app


# Dependencies are async: they only look at headers, so they run on the event loop rather
# than taking a thread each.
async def _anonymous(request: Request) -> Caller:
    return LOCAL


def _authenticate(keys: KeyRing) -> Callable[[Request], Awaitable[Caller]]:
    """The dependency that maps a request's API key to its Caller, or answers 401."""

    async def caller(request: Request) -> Caller:
        presented = presented_key(request.headers) or request.query_params.get("api_key")
        found = caller_for_key(keys, presented)
        if found is None:
            raise _Unauthorized("missing API key: send Authorization: Bearer KEY or X-API-Key"
                                if not presented else "invalid API key")
        request.state.caller = found
        return found

    return caller


async def _who(request: Request) -> Caller:
    caller: Caller = getattr(request.state, "caller", LOCAL)
    return caller


Who = Annotated[Caller, Depends(_who)]


class _BodyLimit:
    """413 for a request body over ``limit`` bytes: at once from its Content-Length, and for
    a chunked body (no length) as soon as the bytes read pass the limit."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length", b"")
        if length.isdigit() and int(length) > self.limit:
            response = JSONResponse({"detail": f"request body of {int(length)} bytes is over "
                                     f"the limit of {self.limit}"}, status_code=413)
            await response(scope, receive, send)
            return
        read = 0

        async def counted() -> Any:
            nonlocal read
            message = await receive()
            read += len(message.get("body", b""))
            if read > self.limit:  # FastAPI passes HTTPExceptions from body parsing through
                raise HTTPException(413, f"request body is over the limit of {self.limit} "
                                         "bytes")
            return message

        await self.app(scope, counted, send)


def _install_errors(app: FastAPI, limit: int) -> None:
    app.add_middleware(_BodyLimit, limit=limit)

    @app.exception_handler(SleuthError)
    async def sleuth_error(request: Request, exc: SleuthError) -> JSONResponse:
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, Busy) else None
        return JSONResponse({"detail": str(exc)}, status_code=status_for(exc), headers=headers)

    @app.exception_handler(OSError)
    async def os_error(request: Request, exc: OSError) -> JSONResponse:
        # handled here, an I/O failure answers JSON and the client's connection stays open
        reason = exc.strerror or type(exc).__name__
        return JSONResponse({"detail": f"server I/O error: {reason}"}, status_code=500)

    @app.exception_handler(_Unauthorized)
    async def unauthorized(request: Request, exc: _Unauthorized) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=401,
                            headers={"WWW-Authenticate": "Bearer"})


def _index_routes(router: APIRouter, service: Service) -> None:
    pool = service.pool  # CPU-bound work: a bounded pool, 503 when its queue is full

    @router.get("/status", tags=["index"])
    async def status(who: Who) -> dict[str, Any]:
        """Index size, embedder, tools, this server's limits, workers and threads."""
        return await pool.run(lambda: service.status(who))

    @router.post("/documents", tags=["index"], openapi_extra=_DOCUMENTS_BODY)
    async def add_documents(request: Request, who: Who) -> dict[str, Any]:
        """Index documents: a JSON ``{"paths": [...]}`` of server-side files or folders, or a
        multipart upload of ``files``. New and changed documents are (re)indexed."""
        if request.headers.get("content-type", "").startswith("multipart/form-data"):
            form = await request.form()
            files = [(f.filename or "upload.txt", await f.read())
                     for f in form.getlist("files") if isinstance(f, UploadFile)]
            collection, groups = form.get("collection"), form.get("groups")
            return await pool.run(
                lambda: service.add_uploads(
                    files, who, collection=collection if isinstance(collection, str) else None,
                    groups=groups if isinstance(groups, str) else None))
        try:
            body = AddPaths.model_validate(await request.json())
        except ValueError as exc:
            raise RequestError(f"expected JSON {{\"paths\": [...]}} or a multipart upload of "
                               f"'files': {exc}") from None
        return await pool.run(
            lambda: service.add_documents(body.paths, who, collection=body.collection,
                                          groups=body.groups))

    @router.delete("/documents/{doc_id:path}", tags=["index"])
    async def delete_document(doc_id: str, who: Who) -> dict[str, Any]:
        """Remove a document and its chunks from the index."""
        return await pool.run(lambda: service.delete_documents([doc_id], who))


def _tool_routes(router: APIRouter, service: Service) -> None:
    pool = service.pool
    @router.get("/tools", tags=["tools"])
    def tools(who: Who) -> list[dict[str, Any]]:
        """Every retrieval tool with the description and JSON schema the agent sees."""
        return service.tools(who)

    @router.post("/tools/{name}", tags=["tools"])
    async def call_tool(name: str, who: Who,
                        arguments: Annotated[dict[str, Any] | None, Body()] = None,
                        session: str | None = None) -> dict[str, Any]:
        """Call a tool; the body is its arguments. ``?session=ID`` keeps reference ids.
        Calls run on a bounded pool of workers: when its queue is full the answer is 503
        with ``Retry-After``."""
        result = await pool.run(
            lambda: service.call_tool(name, arguments or {}, session=session, caller=who))
        return {"text": result.text, "data": result.data,
                "retrieved_tokens": result.retrieved_tokens}


def _agent_routes(router: APIRouter, service: Service) -> None:
    @router.post("/ask", tags=["agent"])
    def ask(body: AskRequest, who: Who) -> dict[str, Any]:
        """Answer a question with the agent; returns the full record (trajectory, citations)."""
        return service.ask(body.question, body.agent, body.session, caller=who)

    @router.post("/ask/stream", tags=["agent"])
    def ask_stream(body: AskRequest, who: Who) -> StreamingResponse:
        """Server-sent events: one ``step`` event per tool call, then ``answer`` (the record),
        or ``error`` with ``{"detail"}``."""
        service.check_ask(body.question, body.agent)
        return StreamingResponse(_ask_events(service, body, who),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})


def _session_routes(router: APIRouter, service: Service) -> None:
    @router.get("/sessions", tags=["sessions"])
    def sessions(who: Who) -> list[dict[str, Any]]:
        """Saved sessions: id, agent, number of turns, first question, last update."""
        return service.sessions(who)

    @router.get("/sessions/{session_id}", tags=["sessions"])
    def session(session_id: str, who: Who) -> dict[str, Any]:
        """One session with its turns (question, answer, citations)."""
        return service.session(session_id, who)

    @router.delete("/sessions/{session_id}", tags=["sessions"])
    def delete_session(session_id: str, who: Who) -> dict[str, Any]:
        return service.delete_session(session_id, who)


class _Unauthorized(Exception):
    """A request without a valid API key (HTTP 401)."""


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


async def _ask_events(service: Service, body: AskRequest, who: Caller) -> AsyncIterator[str]:
    """Run the agent in a worker thread and yield its steps as they happen."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    abandoned = threading.Event()  # the client went away: stop at the next step

    def put(event: str, data: Any) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, (event, data))

    def step(done: Any) -> None:
        if abandoned.is_set():
            raise _Abandoned
        put("step", done.to_dict())

    def work() -> None:
        try:
            record = service.ask(body.question, body.agent, body.session, on_step=step,
                                 caller=who)
            put("answer", record)
        except _Abandoned:
            return
        except SleuthError as exc:
            put("error", {"detail": str(exc), "status": status_for(exc)})
        except Exception as exc:  # a bug: still end the stream with a message
            put("error", {"detail": f"internal error: {type(exc).__name__}: {exc}",
                          "status": 500})

    threading.Thread(target=work, name="sleuth-ask", daemon=True).start()
    try:
        while True:
            event, data = await queue.get()
            yield _sse(event, data)
            if event in ("answer", "error"):
                return
    finally:  # also when the client disconnects and the response is cancelled
        abandoned.set()


class _Abandoned(Exception):
    """Raised in the agent's step callback once the streaming client has gone."""
