"""The HTTP API (``sleuth serve http``): FastAPI over :class:`sleuth.service.service.Service`.

Routes parse, authenticate and render; every decision is the service's. API keys come as
``Authorization: Bearer KEY``, ``X-API-Key: KEY`` or ``?api_key=KEY`` (declared as the
document's security schemes); errors are JSON ``{"detail": "..."}`` with 401 (key), 403 (the
key may not do this), 404 (unknown tool, document, session), 400 (invalid request, over a
limit, bad tool arguments, text with a lone surrogate), 413 (body too large), 422 (malformed
body or parameter), 502 (the LLM failed), 503 with ``Retry-After`` (the workers and their queue
are full: nothing was done, send it again later; see :mod:`sleuth.service.pool`; or the LLM
cannot be reached) or 500 (a server-side failure, such as a file that cannot be written). Each
route's OpenAPI entry lists the statuses it answers with. Every answer carries an
``X-Request-Id``; a failure of the LLM or a bug names it and keeps its detail for the
operator's log (:mod:`sleuth.server.failures`).

Every tool gets its own route, ``POST /v1/tools/<name>``, whose body schema is the tool's
argument schema within this server's limits (:mod:`sleuth.server.schemas`); the routes are
made from the tool registry when the app is created, so a registered tool appears with no
further edit. ``POST /v1/tools/{name}`` stays for clients that pick the tool at run time.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Annotated, Any

from sleuth._version import __version__
from sleuth.errors import (
    Busy,
    ConfigError,
    ForbiddenError,
    MissingDependency,
    RequestError,
    SleuthError,
    out_of_files,
)
from sleuth.server.apidocs import docs_router
from sleuth.server.auth import KeyCheck, Unauthorized, authenticate
from sleuth.server.bodies import TextBodies
from sleuth.server.chat import OPENAI_PATHS, chat_router
from sleuth.server.events import ask_events
from sleuth.server.failures import RequestIds, told
from sleuth.server.guard import Guard, allowed_hosts
from sleuth.server.library import library_router
from sleuth.server.openapi import (
    BEARER,
    GROUPS_PATTERN,
    HEADER_KEY,
    NAME_PATTERN,
    NOT_BLANK,
    PATH_ID_MAX,
    PATH_ID_PATTERN,
    QUERY_KEY,
    SESSION_PATTERN,
    ToolAnswer,
    check_pattern,
    check_session_id,
    responses,
    status_for,
)
from sleuth.server.runs import runs_router, viewer_router
from sleuth.server.schemas import ArgumentCheck, ask_schema
from sleuth.server.webapp import app_router
from sleuth.service.callers import LOCAL, Caller, KeyRing, load_api_keys
from sleuth.service.pool import RateLimit
from sleuth.service.service import Service
from sleuth.settings import DEFAULT_AGENT
from sleuth.text.access import check_name, parse_groups
from sleuth.tools import TOOLS, Tool

try:
    from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
    from fastapi import Path as PathParameter
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response, StreamingResponse
    from pydantic import BaseModel, ConfigDict, Field, ValidationError
    from pydantic_core import to_json
    from starlette.datastructures import UploadFile
    from starlette.exceptions import HTTPException as StarletteHTTPException
    from starlette.routing import BaseRoute, Match
except ImportError as exc:  # pragma: no cover - the serve extra is missing
    raise MissingDependency(exc.name or "fastapi", "serve") from None

Name = Annotated[str, Field(pattern=NAME_PATTERN)]


class AddPaths(BaseModel):
    """Server-side files or folders to index."""

    # no NUL (checked here); not blank (checked by the service, which says so)
    paths: list[Annotated[str, Field(pattern=r"^[^\x00]*$", json_schema_extra={
        "pattern": rf"^[^\x00]*{NOT_BLANK}[^\x00]*$"})]] = Field(
        ..., min_length=1, description="Files or folders on the server")
    collection: Name | None = Field(None, description="Collection (tenant) to index into; a "
                                    "tenant's key always writes to its own")
    groups: list[Name] = Field(default_factory=list, description="Access groups of the "
                               "documents (none: open to the whole collection)")


class AskRequest(BaseModel):
    """The body of ``/v1/ask``; its published schema is :func:`ask_schema`."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(..., description="The question to answer")
    agent: str = Field(DEFAULT_AGENT, description="Agent variant (`sleuth agents`)")
    session: str | None = Field(None, description="Session id: follow-ups see earlier turns")


_DOCUMENTS_BODY = {"requestBody": {"required": True, "content": {
    "application/json": {"schema": AddPaths.model_json_schema()},
    "multipart/form-data": {"schema": {"type": "object", "required": ["files"], "properties": {
        "files": {"type": "array", "minItems": 1,
                  "items": {"type": "string", "format": "binary"}},
        "collection": {"type": "string", "pattern": NAME_PATTERN},
        "groups": {"type": "string", "pattern": GROUPS_PATTERN,
                   "description": "Comma-separated access groups"}}}},
}}}
SessionQuery = Annotated[str | None, Query(
    description="Session id: the call runs in that session, so reference ids from earlier "
    "calls in it stay valid", json_schema_extra={"pattern": SESSION_PATTERN})]
SessionPath = Annotated[str, PathParameter(
    description="Session id", json_schema_extra={"pattern": SESSION_PATTERN,
                                                 "maxLength": 64})]
DocumentId = Annotated[str, PathParameter(min_length=1, max_length=PATH_ID_MAX,
                                          pattern=PATH_ID_PATTERN, description="Document id")]


def create_app(service: Service, *, auth: bool = True) -> FastAPI:
    """The FastAPI app serving ``service`` and the run viewer over ``serve.runs``;
    ``auth=False`` (``--no-auth``) for local use only."""
    keys = load_api_keys(service.settings.serve)
    if auth and not keys:
        raise ConfigError("no API keys configured: set serve.api_keys (SLEUTH_SERVE__API_KEYS, "
                          "a {name: key} mapping or a key file) or pass --no-auth for local use")
    app = FastAPI(title="Sleuth", version=__version__, docs_url=None, redoc_url=None,
                  description="Agentic retrieval over a document index: tools, ask, sessions.")
    if auth:  # added first, so innermost: yet before anything reads a body (see KeyCheck)
        app.add_middleware(KeyCheck, keys=keys, rate=RateLimit(
            service.limits.rate_per_key, service.limits.burst_per_key), openai=OPENAI_PATHS)
    _install_errors(app, service.limits.max_body_bytes)
    caller = _authenticate(keys) if auth else _anonymous
    denied = (401, 429) if auth else ()  # 429: past the key's rate, on any route
    router = APIRouter(prefix="/v1", dependencies=[Depends(caller)],
                       responses=responses(*denied, 400, 500))
    _index_routes(router, service)
    _tool_routes(router, service)
    _agent_routes(router, service)
    _session_routes(router, service)
    app.include_router(router)
    app.include_router(chat_router(service, caller, auth))  # /v1/models, /v1/chat/completions
    app.include_router(library_router(service, caller, denied))  # the app's documents

    # eval runs and the run viewer: /v1/runs..., /v1/chunks/{id}, /viewer. Runs hold text
    # from the whole index, so a tenant's key gets 403 there.
    app.include_router(runs_router(Path(service.settings.serve.runs), lambda: service.index,
                                   auth=[caller, _admin], responses=responses(*denied, 400,
                                                                              403, 500)))
    app.include_router(viewer_router())  # the run viewer's page, at /viewer
    app.include_router(app_router())  # the page people ask from, at /
    app.include_router(docs_router(app.title, app.openapi_url or "/openapi.json"))  # /docs
    # outermost: other sites' pages and host names are refused before anything else runs
    app.add_middleware(Guard, hosts=allowed_hosts(service.settings.serve),
                       uploads=["/v1/documents"])
    return app


# Dependencies are async: they only look at headers, so they run on the event loop rather
# than taking a thread each.
async def _anonymous(request: Request) -> Caller:
    return LOCAL


def _authenticate(keys: KeyRing) -> Callable[..., Awaitable[Caller]]:
    """The dependency that maps a request's API key to its Caller, or answers 401. Its three
    sub-dependencies only declare the security schemes; the key is read here."""

    async def caller(request: Request, bearer: Bearer, header: HeaderKey,
                     query: QueryKey) -> Caller:
        found: Caller | None = getattr(request.state, "caller", None)  # KeyCheck's
        if found is None:
            found = authenticate(keys, request.headers, request.query_params.get("api_key"))
        request.state.caller = found
        return found

    return caller


async def _who(request: Request) -> Caller:
    caller: Caller = getattr(request.state, "caller", LOCAL)
    return caller


async def _admin(request: Request) -> None:
    if not (await _who(request)).admin:
        raise ForbiddenError("eval runs and the run viewer need an admin key")


Who = Annotated[Caller, Depends(_who)]
Bearer = Annotated[Any, Depends(BEARER)]
HeaderKey = Annotated[Any, Depends(HEADER_KEY)]
QueryKey = Annotated[Any, Depends(QUERY_KEY)]


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
    app.add_middleware(TextBodies)  # 400 for a JSON body holding no text (lone surrogates)
    app.add_middleware(_BodyLimit, limit=limit)
    app.add_middleware(RequestIds)  # X-Request-Id, named by the errors told below

    @app.exception_handler(SleuthError)
    async def sleuth_error(request: Request, exc: SleuthError) -> JSONResponse:
        # the LLM's failures: a tenant gets a line naming the request, the log the detail
        exc = told(exc, getattr(request.state, "caller", None))
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, Busy) else None
        return JSONResponse({"detail": str(exc)}, status_code=status_for(exc), headers=headers)

    @app.exception_handler(RecursionError)
    async def too_deep(request: Request, exc: RecursionError) -> JSONResponse:
        # a body nested deeper than Python parses (json.loads recurses): the client's error
        return JSONResponse({"detail": "the request body is nested too deeply to read"},
                            status_code=400)

    @app.exception_handler(OSError)
    async def os_error(request: Request, exc: OSError) -> JSONResponse:
        # handled here, an I/O failure answers JSON and the client's connection stays open
        if (busy := out_of_files(exc)) is not None:  # no descriptor left: 503, not broken
            return await sleuth_error(request, busy)
        reason = exc.strerror or type(exc).__name__
        return JSONResponse({"detail": f"server I/O error: {reason}"}, status_code=500)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # every method of the path, not only the first route's
            headers["Allow"] = ", ".join(_methods(request.app, request.scope))
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code,
                            headers=headers)

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, exc: RequestValidationError) -> JSONResponse:
        # one line, like every other error ({"detail": "..."}), not FastAPI's list
        return JSONResponse({"detail": f"malformed request: {_problems(exc)}"},
                            status_code=422)

    @app.exception_handler(Unauthorized)
    async def unauthorized(request: Request, exc: Unauthorized) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=401,
                            headers={"WWW-Authenticate": "Bearer"})


def _problems(exc: ValidationError | RequestValidationError) -> str:
    """A validation error's problems on one line: ``where: what; ...``."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
                     for e in exc.errors())


def _methods(app: FastAPI, scope: MutableMapping[str, Any]) -> list[str]:
    """The methods some route of ``app`` serves at the path of ``scope``."""
    methods: set[str] = set()
    for route in app.routes:
        if isinstance(route, BaseRoute) and route.matches(scope)[0] != Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return sorted(methods)


def _index_routes(router: APIRouter, service: Service) -> None:

    @router.get("/status", tags=["index"])
    def status(who: Who) -> dict[str, Any]:
        """Index size, embedder, tools, this server's limits, workers and threads (answered
        outside the pools: it never waits behind tool calls, indexing or agent runs); for
        an index in PostgreSQL, ``replica``: whether it is read from a standby and how far
        its replay is behind (``stale``: "stale by N s", null when up to date)."""
        out = service.status(who)
        replication = getattr(service.index.store, "replication", None)  # PostgreSQL's
        if replication is not None:
            out["replica"] = replication().to_dict()
        return out

    @router.post("/documents", tags=["index"], openapi_extra=_DOCUMENTS_BODY,
                 responses=responses(400, 403, 409, 413, 415, 429, 503))
    async def add_documents(request: Request, who: Who) -> dict[str, Any]:
        """Index documents: a JSON ``{"paths": [...]}`` of server-side files or folders, or a
        multipart upload of ``files``. New and changed documents are (re)indexed."""
        if request.headers.get("content-type", "").startswith("multipart/form-data"):
            form = await request.form()
            files = [(f.filename or "upload.txt", await f.read())
                     for f in form.getlist("files") if isinstance(f, UploadFile)]
            collection, groups = form.get("collection"), form.get("groups")
            collection = collection if isinstance(collection, str) else None
            groups = groups if isinstance(groups, str) else None
            _check_names(collection, groups)
            return await service.write(lambda: service.add_uploads(
                files, who, collection=collection, groups=groups), who)
        try:
            body = AddPaths.model_validate(await request.json())
        except ValidationError as exc:
            raise RequestError(f"expected JSON {{\"paths\": [...]}} or a multipart upload of "
                               f"'files': {_problems(exc)}") from None
        except ValueError as exc:
            raise RequestError(f"expected JSON {{\"paths\": [...]}} or a multipart upload of "
                               f"'files': {exc}") from None
        _check_names(body.collection, body.groups)
        return await service.write(
            lambda: service.add_documents(body.paths, who, collection=body.collection,
                                          groups=body.groups), who)

    @router.delete("/documents/{doc_id:path}", tags=["index"],
                   responses=responses(403, 404, 409, 422, 429, 503))
    async def delete_document(doc_id: DocumentId, who: Who) -> dict[str, Any]:
        """Remove a document and its chunks from the index (a tenant's key: one whose
        every group it holds)."""
        return await service.write(lambda: service.delete_documents([doc_id], who), who)


def _check_names(collection: str | None, groups: str | list[str] | None) -> None:
    """A RequestError (400) for a collection or group name the document or the index would
    refuse."""
    check_pattern("collection name", collection, NAME_PATTERN)
    for group in [groups] if isinstance(groups, str) else groups or []:
        check_pattern("groups", group, GROUPS_PATTERN if isinstance(groups, str)
                      else NAME_PATTERN)
    try:
        if collection is not None:
            check_name("collection", collection)
        parse_groups(groups)
    except ConfigError as exc:
        raise RequestError(str(exc)) from None


def _tool_routes(router: APIRouter, service: Service) -> None:
    @router.get("/tools", tags=["tools"])
    def tools(who: Who) -> list[dict[str, Any]]:
        """Every retrieval tool with the description and JSON schema the agent sees."""
        return service.tools(who)

    schemas = {tool.name: tool.input_schema(service.limits) for tool in TOOLS.values()}
    for tool in TOOLS.values():  # before /tools/{name}, so that these match first
        _tool_route(router, service, tool, schemas[tool.name])

    # Any other name: a tool registered after the app was made, or 404 (a concrete path
    # matches before a template).
    async def call_tool(name: str, request: Request, who: Who, session: SessionQuery = None
                        ) -> Response:
        """Call a tool by name, the body being its arguments; for a client that picks the
        tool at run time. Each tool served from the start has its own route above, with its
        argument schema; this one serves the rest: tools registered later, and 404 for a
        name that is no tool."""
        check_session_id(session)
        return await _call(service, name, await _json_object(request), session, who)

    # Not in the OpenAPI document: it cannot say which body a name takes (each tool there
    # has its own route and schema); GET /v1/tools gives the schemas at run time.
    router.add_api_route("/tools/{name}", call_tool, methods=["POST"], tags=["tools"],
                         response_model=ToolAnswer, include_in_schema=False)


def _tool_route(router: APIRouter, service: Service, tool: Tool,
                schema: dict[str, Any]) -> None:
    """``POST /v1/tools/<name>``: the body is the tool's arguments, checked against
    ``schema``, the serving limits and the tool (400 when they are wrong)."""

    check = ArgumentCheck(tool.name, schema)

    async def call(request: Request, who: Who, session: SessionQuery = None) -> Response:
        check_session_id(session)
        arguments = await _json_object(request)
        tool.check_limits(arguments, service.limits)  # first: its messages name the limit
        check(arguments)
        return await _call(service, tool.name, arguments, session, who)

    router.add_api_route(
        f"/tools/{tool.name}", call, methods=["POST"], tags=["tools"],
        operation_id=f"tool_{tool.name}", summary=f"Call {tool.name}",
        description=tool.description + "\n\nCalls run on a bounded pool of workers, keys in "
        "turn: past a key's share the answer is 429, when the queue is full 503, both with "
        "Retry-After.",
        response_model=ToolAnswer, responses=responses(400, 404, 413, 415, 422, 429, 503),
        openapi_extra=_body(schema, required=bool(schema.get("required"))))


def _body(schema: dict[str, Any], *, required: bool) -> dict[str, Any]:
    return {"requestBody": {"required": required,
                            "content": {"application/json": {"schema": schema}}}}


async def _call(service: Service, name: str, arguments: dict[str, Any], session: str | None,
                who: Caller) -> Response:
    """The call and its answer's encoding (tokens counted, JSON written) on the pool, in
    ``who``'s turn: a key's many large answers cost its own share, not the event loop that
    every key's requests go through."""

    def call() -> bytes:
        return to_json(service.tool_answer(name, arguments, who, session=session))

    return Response(await service.pool.run(call, who), media_type="application/json")


async def _json_object(request: Request) -> dict[str, Any]:
    """The request's JSON object body ({} when there is none); 422 when it is not one."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise HTTPException(422, f"malformed request: the body is not JSON ({exc})") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise HTTPException(422, "malformed request: the body must be a JSON object of the "
                                 "tool's arguments")
    return value


class _EventStream(StreamingResponse):
    media_type = "text/event-stream"


_EVENT = {"type": "object", "required": ["event", "data"], "description": (
    "One event, in the order things happen: `step` (a tool call done: step, tool_name, "
    "tool_input, tool_output, reasoning, retrieved_tokens, error, seconds); `token` "
    "(`{text}`: the next piece of the answer as the model writes it; a `step` after tokens "
    "means that text was not the answer, which starts anew); `context` (`{used, budget, "
    "percent, action}`, action `warn` at 90 % of the context budget or `summarize` when it "
    "is full); `progress` before each model call (`{passages, tokens, seconds, text}`: what "
    "it reads and how long that takes here, seconds null until measured; text such as "
    "\"reading 5 passages (about 40 s here)\"); last `answer` (the record of /v1/ask) or "
    "`error` (`{detail, status}`)"),
    "properties": {"event": {"type": "string", "enum": ["step", "token", "context",
                                                        "progress", "answer", "error"]},
                   "data": {"type": "string", "contentMediaType": "application/json"}}}


def _agent_routes(router: APIRouter, service: Service) -> None:
    ask_body = _body(ask_schema(service.limits), required=True)

    @router.get("/agents", tags=["agent"])
    def agents() -> list[dict[str, Any]]:
        """The agents to ask with, as a person chooses one: ``name`` (what ``agent``
        takes), a plain ``label``, a one-line ``summary``, the ``description``, and
        ``default`` (the agent a question gets when it names none), the default first."""
        from sleuth.agent.variants import agent_list

        return agent_list()

    @router.post("/ask", tags=["agent"], openapi_extra=ask_body,
                 responses=responses(400, 413, 415, 422, 429, 502, 503))
    async def ask(body: AskRequest, who: Who) -> dict[str, Any]:
        """Answer a question with the agent; returns the full record (trajectory, citations).
        Runs on the agents' own pool: a key has at most ``serve.asks_per_key`` going (429
        beyond), the server ``serve.ask_workers`` (503 beyond)."""
        check_session_id(body.session)
        service.check_ask(body.question, body.agent)
        return await asyncio.wrap_future(service.start_ask(
            lambda: service.ask(body.question, body.agent, body.session, caller=who), who))

    @router.post("/ask/stream", tags=["agent"], openapi_extra=ask_body,
                 response_class=_EventStream, responses={
                     200: {"description": "Server-sent events", "content": {
                         "text/event-stream": {"schema": _EVENT}}},
                     **responses(400, 413, 415, 422, 429, 503)})
    async def ask_stream(body: AskRequest, who: Who) -> StreamingResponse:
        """Server-sent events as the agent works: ``step`` per tool call, ``token`` per piece
        of the answer's text (``{"text"}``), ``context`` per context-budget event (``{"used",
        "budget", "percent", "action"}``), then ``answer`` (the record) or ``error`` with
        ``{"detail", "status"}``."""
        check_session_id(body.session)
        service.check_ask(body.question, body.agent)
        events = ask_events(service, body.question, body.agent, caller=who,
                            session=body.session)
        return _EventStream(_sse_events(events), headers={"Cache-Control": "no-cache"})


def _session_routes(router: APIRouter, service: Service) -> None:
    @router.get("/sessions", tags=["sessions"])
    def sessions(who: Who) -> list[dict[str, Any]]:
        """Saved sessions: id, agent, number of turns, first question, title, last update."""
        return service.sessions(who)

    @router.get("/sessions/{session_id}", tags=["sessions"],
                responses=responses(400, 404, 422))
    def session(session_id: SessionPath, who: Who) -> dict[str, Any]:
        """One session with its title and turns (question, answer, citations)."""
        check_session_id(session_id)
        return service.session(session_id, who)

    @router.delete("/sessions/{session_id}", tags=["sessions"],
                   responses=responses(400, 404, 422))
    def delete_session(session_id: SessionPath, who: Who) -> dict[str, Any]:
        """Delete a saved session."""
        check_session_id(session_id)
        return service.delete_session(session_id, who)


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


async def _sse_events(events: AsyncIterator[tuple[str, Any]]) -> AsyncIterator[str]:
    """The agent's events as server-sent events (see :data:`_EVENT`)."""
    async for event, data in events:
        if event == "step":
            data = data.to_dict()
        elif event == "token":
            data = {"text": data}
        elif event == "error":
            data = _error_data(data)
        yield _sse(event, data)


def _error_data(exc: Exception) -> dict[str, Any]:
    """The ``error`` event of a run that failed: what happened (a failure of the LLM or a
    bug as :func:`~sleuth.server.failures.told` says it), and the HTTP status the same
    failure gets on ``/v1/ask``."""
    said = told(exc)
    return {"detail": str(said), "status": status_for(said)}
