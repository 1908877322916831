"""The HTTP routes the browser app reads besides asking: the document list, a passage of a
document, the image of a PDF page, and renaming a session.

Like every ``/v1`` route they parse, authenticate and render; the decisions are the
service's (:mod:`sleuth.service.library` through
:class:`~sleuth.service.service.Service`), made on the caller's view of the index, so a document
another tenant owns is 404 exactly like one that
does not exist.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from sleuth.errors import MissingDependency
from sleuth.server.openapi import (
    NAME_PATTERN,
    NOT_BLANK,
    PATH_ID_MAX,
    PATH_ID_PATTERN,
    SESSION_PATTERN,
    check_session_id,
    responses,
)
from sleuth.service.callers import LOCAL, Caller
from sleuth.service.library import LIST_LIMIT, LIST_MAX, SUPPORT_MAX, TITLE_MAX
from sleuth.service.service import Service

try:
    from fastapi import APIRouter, Depends, Query, Request
    from fastapi import Path as PathParameter
    from fastapi.responses import Response
    from pydantic import BaseModel, ConfigDict, Field
except ImportError as exc:  # pragma: no cover - the serve extra is missing
    raise MissingDependency(exc.name or "fastapi", "serve") from None

# One line of text without control characters, not blank (as sleuth.service.library.check_title
# checks it): NOT_BLANK's class less the control characters it lets through.
TITLE_PATTERN = (r"^[^\x00-\x1f\x7f]*"
                 + NOT_BLANK.replace("[^", r"[^\x00-\x08\x0e-\x1b\x7f", 1)
                 + r"[^\x00-\x1f\x7f]*$")
LINES_PATTERN = r"^[0-9]{1,9}(-[0-9]{1,9})?$"

# The passage's query parameters, published as one exploded object (OpenAPI's way to say that
# a query needs doc or chunk); FastAPI still reads each (hidden from its own document)
_PASSAGE_QUERY = {"type": "object", "additionalProperties": False, "properties": {
    "doc": {"type": "string", "minLength": 1, "maxLength": PATH_ID_MAX,
            "pattern": PATH_ID_PATTERN, "description": "Document id"},
    "chunk": {"type": "string", "minLength": 1, "maxLength": PATH_ID_MAX,
              "pattern": PATH_ID_PATTERN, "description": "Chunk id: the passage is that chunk, "
              "highlighted, with lines around it"},
    "lines": {"type": "string", "pattern": LINES_PATTERN, "description": "Lines to "
              "highlight, `a-b` or `a` (0-based, inclusive), shown with lines around them"},
    "page": {"type": "integer", "minimum": 1, "description": "A PDF's page (1-based): the "
             "passage is that whole page"},
    "support": {"type": "string", "maxLength": SUPPORT_MAX, "description": "The claim a "
                "citation of `chunk` backs (the answer's sentence): `support` in the answer "
                "is then the chunk's sentence(s) sharing the most words with it"}},
    "anyOf": [{"required": ["doc"]}, {"required": ["chunk"]}]}
_PASSAGE_PARAMETERS = {"parameters": [{
    "name": "passage", "in": "query", "style": "form", "explode": True, "required": True,
    "description": "doc, chunk or both; lines or page; support", "schema": _PASSAGE_QUERY}]}
DocQuery = Annotated[str | None, Query(min_length=1, max_length=PATH_ID_MAX,
                                       pattern=PATH_ID_PATTERN, include_in_schema=False)]
ChunkQuery = Annotated[str | None, Query(min_length=1, max_length=PATH_ID_MAX,
                                         pattern=PATH_ID_PATTERN, include_in_schema=False)]
LinesQuery = Annotated[str | None, Query(pattern=LINES_PATTERN, include_in_schema=False)]
PageQuery = Annotated[int | None, Query(ge=1, include_in_schema=False)]
SupportQuery = Annotated[str | None, Query(max_length=SUPPORT_MAX, include_in_schema=False)]
SessionPath = Annotated[str, PathParameter(
    description="Session id", json_schema_extra={"pattern": SESSION_PATTERN,
                                                 "maxLength": 64})]


async def _caller(request: Request) -> Caller:
    """The caller the router's auth dependency found (it runs first); LOCAL without auth."""
    caller: Caller = getattr(request.state, "caller", LOCAL)
    return caller


Who = Annotated[Caller, Depends(_caller)]
_PNG: dict[int | str, dict[str, Any]] = {200: {"description": "The page as a PNG image",
              "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}}}


class RenameRequest(BaseModel):
    """The body of ``PATCH /v1/sessions/{id}``."""

    model_config = ConfigDict(extra="forbid")

    # checked by the service (400 with its message), published here
    title: str = Field(..., description="The session's new title, one line", json_schema_extra={
        "minLength": 1, "maxLength": TITLE_MAX, "pattern": TITLE_PATTERN})


def library_router(service: Service, auth: Callable[..., Awaitable[Caller]],
                   denied: tuple[int, ...] = ()) -> APIRouter:
    """The routes of this module behind ``auth`` (the dependency that names the caller and
    answers ``denied``, 401 where keys are required)."""
    router = APIRouter(prefix="/v1", dependencies=[Depends(auth)],
                       responses=responses(*denied, 400, 500))
    pool = service.pool

    async def documents(
            caller: Who, collection: Annotated[str | None, Query(
                pattern=NAME_PATTERN, description="Only this collection's documents")] = None,
            q: Annotated[str | None, Query(max_length=200, description="Only documents whose "
                                           "title or id holds this (any case)")] = None,
            limit: Annotated[int, Query(ge=1, le=LIST_MAX)] = LIST_LIMIT,
            offset: Annotated[int, Query(ge=0)] = 0) -> dict[str, Any]:
        """The documents this key sees, sorted by title then id: id, title, collection, file
        type, pages (null: unpaged), chunks, access groups and the source file's last change
        (null when unknown); ``total`` counts them all."""
        return await pool.run(lambda: service.documents(
            caller, collection=collection, q=q, limit=limit, offset=offset), caller)

    async def passage(caller: Who, doc: DocQuery = None, chunk: ChunkQuery = None,
                      lines: LinesQuery = None, page: PageQuery = None,
                      support: SupportQuery = None) -> dict[str, Any]:
        """A window of a document's numbered lines (0-based): a chunk or lines highlighted
        with about 15 lines around them, a whole PDF page, or else the first 200 lines;
        ``image`` is the path of the page's image where one can be rendered. Name ``doc``,
        ``chunk``, or both; a chunk, line or page the document does not have is 404. With
        ``support``, the claim a citation of the chunk backs, ``support`` in the answer is the
        chunk's sentence that shares the most words with it (its ``lines``, per-line
        ``marks``, ``sentences`` and shared ``terms``); null where none shares a word, and
        the whole chunk stands."""
        return await pool.run(lambda: service.passage(
            caller, doc=doc, chunk=chunk, lines=lines, page=page, support=support), caller)

    async def page_image(caller: Who, doc: Annotated[str, Query(
            min_length=1, max_length=PATH_ID_MAX, pattern=PATH_ID_PATTERN,
            description="Document id of a PDF")], page: Annotated[int, Query(
            ge=1, description="Page (1-based)")]) -> Response:
        """A PDF page as a PNG, drawn from the original file in a child process held to the
        parsing limits (`ingest.parse_seconds`, `ingest.parse_memory_mb`) and kept. 404 when
        the document is no PDF, the file is gone or PyMuPDF is not installed; 400 when the
        page is too costly to draw (the same answer, without drawing it again, for ten
        minutes); 429 past a key's two pages being drawn; 503 when the queue is full."""
        # the file is found on the tool threads; it is drawn on the render thread
        source = await pool.run(lambda: service.page_source(doc, page, caller), caller)
        png = await service.pages.image(source, caller.name)
        return Response(png, media_type="image/png",
                        headers={"Cache-Control": "private, max-age=300"})

    def rename_session(session_id: SessionPath, body: RenameRequest,
                       caller: Who) -> dict[str, Any]:
        """Rename a saved session: ``{"title": "..."}``, 1 to 200 characters on one line."""
        check_session_id(session_id)
        return service.rename_session(session_id, body.title, caller)

    router.add_api_route("/documents", documents, methods=["GET"], tags=["index"],
                         responses=responses(422, 429, 503))
    router.add_api_route("/passage", passage, methods=["GET"], tags=["index"],
                         responses=responses(400, 404, 422, 429, 503),
                         openapi_extra=_PASSAGE_PARAMETERS)
    router.add_api_route("/page-image", page_image, methods=["GET"], tags=["index"],
                         response_class=Response,
                         responses={**_PNG, **responses(404, 422, 429, 503)})
    router.add_api_route("/sessions/{session_id}", rename_session, methods=["PATCH"],
                         tags=["sessions"], responses=responses(400, 404, 422))
    return router
