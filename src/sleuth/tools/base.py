"""One definition per tool: a typed function whose docstring is the model-facing description.

``@tool`` turns ``def name(ctx: ToolContext, arg: T = default, ...) -> ToolResult`` into a
:class:`Tool` with a JSON schema derived from the signature (``Annotated[..., Field(...)]``
adds constraints; the ``Args:`` section of the docstring gives each parameter its
description). Sleuth's own metadata sits beside the type as an :class:`Arg`: which arguments
are query text or a result count (the serving limits of ``settings.serve`` apply to them) and
how an argument reads on the command line.

Every face derives from that one definition: the schema the agent, the HTTP API and the MCP
server show (:meth:`Tool.schema`, serving limits included), the limits a call from outside
the agent is held to (:meth:`Tool.check_limits`) and the CLI command
(:mod:`sleuth.cli.tools`). The agent calls :meth:`Tool.run`; the CLI and the servers
call it through :func:`sleuth.service.calls.run_tool`.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, get_origin, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from sleuth.errors import RequestError, ToolError
from sleuth.settings import ServeSettings
from sleuth.text.tokens import count_tokens

if TYPE_CHECKING:
    from sleuth.index.read import ReadIndex
    from sleuth.tools.tracker import Tracker


@dataclass
class ToolContext:
    """What a tool call may touch: the index and this session's tracker."""

    index: ReadIndex
    tracker: Tracker
    full_chunks: bool = False  # searches return whole chunks (the no-read ablation)
    token_budget: int | None = None  # the caller's context budget; big outputs stay under it

    def output_cap(self, cap: int) -> int:
        """``cap`` tokens, or a quarter of the caller's context budget when that is less."""
        return min(cap, self.token_budget // 4) if self.token_budget else cap


@dataclass(frozen=True)
class ToolResult:
    """``text`` goes to the model; ``data`` to programs; ``tokens`` counts retrieved text."""

    text: str
    data: dict[str, Any] = field(default_factory=dict)
    tokens: int | None = None

    @property
    def retrieved_tokens(self) -> int:
        return count_tokens(self.text) if self.tokens is None else self.tokens

    @property
    def chunk_ids(self) -> list[str]:
        """The chunks a search returned, best first (chunk searches list ``hits``, document
        searches ``results``, each with the chunk of its best passage)."""
        found = self.data.get("hits") or self.data.get("results") or []
        return [h["chunk_id"] for h in found if isinstance(h, dict) and h.get("chunk_id")]


ToolFunction = Callable[..., ToolResult]
# How a tool applies to a whole question: its arguments, or None when it does not apply.
FromQuestion = Callable[[str, int], "dict[str, Any] | None"]


@dataclass(frozen=True)
class Arg:
    """Sleuth's metadata on a tool argument, declared in its ``Annotated[...]``.

    ``query``: query text; each string is held to the serving limit on text length
    (``serve.max_query_chars``) and a list to the queries per call (``serve.max_queries``).
    ``top_k``: a number of results, held to ``serve.max_top_k``. ``flag``: on the command
    line the argument is a flag ``--FLAG`` that sets it to the value FLAG (find's
    ``--semantic``) instead of an option taking a value.
    """

    query: bool = False
    top_k: bool = False
    flag: str | None = None


QUERY = Arg(query=True)
TOP_K = Arg(top_k=True)


class Limits(Protocol):
    """The serving limits a call from outside the agent is held to (``settings.serve``)."""

    @property
    def max_query_chars(self) -> int: ...

    @property
    def max_top_k(self) -> int: ...

    @property
    def max_queries(self) -> int: ...


DEFAULT_LIMITS: Limits = ServeSettings()


@dataclass(frozen=True)
class Cli:
    """How a tool reads on the command line. Every tool is ``sleuth tool NAME``; ``command``
    adds a shorter path (``"search keyword"``); ``session`` is the default ``--session`` of
    its commands (None: each call starts afresh), for tools whose reference ids must
    survive between invocations."""

    command: str | None = None
    session: str | None = None


@dataclass(frozen=True)
class Tool:
    """A retrieval tool: name, description, argument model and the function itself."""

    name: str
    description: str
    args: type[BaseModel]
    function: ToolFunction
    cli: Cli = Cli()
    # the arguments that answer a whole question with this tool, or None where it does not
    # apply (``compare_dates`` on "who was born first, A or B?"); default: the question as
    # its query (:meth:`question_arguments`). A pack's tool decides per document whether
    # the pages it found are of its kind: a result whose ``data["applies"]`` is False (the
    # names' pages are no entity's own) touched nothing and is left out of the run
    from_question: FromQuestion | None = None

    def arg(self, name: str) -> Arg:
        """The Sleuth metadata of argument ``name`` (an empty :class:`Arg` when none)."""
        info = self.args.model_fields.get(name)
        found = [m for m in info.metadata if isinstance(m, Arg)] if info else []
        return found[0] if found else Arg()

    def question_arguments(self, question: str, top_k: int) -> dict[str, Any] | None:
        """The arguments that search for ``question`` itself with ``top_k`` results (its
        query argument, a list of one where it takes several), for a retrieval made before
        the model's first call; the tool's own :attr:`from_question` where it has one (None:
        the tool does not apply to this question). A ValueError when the tool takes no
        query."""
        if self.from_question is not None:
            return self.from_question(question, top_k)
        arguments: dict[str, Any] = {}
        for name, info in self.args.model_fields.items():
            meta = self.arg(name)
            if meta.query:
                several = get_origin(info.annotation) is list
                arguments[name] = [question] if several else question
            elif meta.top_k:
                arguments[name] = top_k
        if not any(self.arg(name).query for name in arguments):
            raise ValueError(f"tool {self.name!r} takes no query")
        return arguments

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments under the default serving limits."""
        return self.input_schema()

    def input_schema(self, limits: Limits | None = None) -> dict[str, Any]:
        """The JSON schema of the arguments, carrying the serving ``limits`` (default: the
        defaults of ``settings.serve``) as ``maxItems``, ``maxLength`` and ``maximum``."""
        schema = _clean_schema(self.args.model_json_schema())
        for name, prop in schema.get("properties", {}).items():
            _tighten(prop, self.arg(name), limits or DEFAULT_LIMITS)
        schema["additionalProperties"] = False  # an argument it does not take is an error
        return schema

    def schema(self, limits: Limits | None = None) -> dict[str, Any]:
        """The OpenAI function-tool definition (see :meth:`input_schema`)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema(limits),
            },
        }

    def check_limits(self, arguments: Mapping[str, Any], limits: Limits | None = None) -> None:
        """Raise RequestError when ``arguments`` exceed the serving ``limits``: the checks
        :meth:`input_schema` announces, before the arguments are validated."""
        limits = limits or DEFAULT_LIMITS
        for name, value in arguments.items():
            meta = self.arg(name)
            if meta.top_k and _is_int(value) and value > limits.max_top_k:
                raise RequestError(f"{name} {value} is over this server's limit of "
                                   f"{limits.max_top_k}")
            if not meta.query:
                continue
            if isinstance(value, list) and len(value) > limits.max_queries:
                raise RequestError(f"{name}: {len(value)} given, this server accepts at most "
                                   f"{limits.max_queries} items per call")
            for text in value if isinstance(value, list) else [value]:
                check_text(name, text, limits)

    def parse(self, arguments: str | Mapping[str, Any] | None) -> BaseModel:
        """Validate raw model arguments; a ToolError explains what was wrong."""
        if arguments is None or arguments == "":
            arguments = {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError as exc:
                raise ToolError(
                    f"arguments for {self.name} are not valid JSON ({exc.msg} at char "
                    f"{exc.pos}); call it again with a JSON object matching its schema"
                ) from None
        if not isinstance(arguments, Mapping):
            raise ToolError(f"arguments for {self.name} must be a JSON object")
        try:
            return self.args.model_validate(dict(arguments))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors()
            )
            raise ToolError(f"invalid arguments for {self.name}: {problems}") from None

    def run(self, ctx: ToolContext, arguments: str | Mapping[str, Any] | None) -> ToolResult:
        """Validate ``arguments`` and call the tool. The agent calls this directly, within
        the tool's own bounds; calls from outside go through
        :func:`sleuth.service.calls.run_tool`, which checks the serving limits first."""
        parsed = self.parse(arguments)
        return self.function(ctx, **parsed.model_dump())


_ARG_LINE = re.compile(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def _split_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Description (text before ``Args:``) and per-argument descriptions."""
    doc = inspect.cleandoc(doc)
    head, _, rest = doc.partition("\nArgs:\n")
    params: dict[str, str] = {}
    current = None
    for line in rest.splitlines():
        match = _ARG_LINE.match(line)
        if match and line.startswith("    ") and not line.startswith("        "):
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif current and line.strip():
            params[current] += " " + line.strip()
        elif not line.strip():
            current = None
    description = re.sub(r"(?<!\n)\n(?!\n)", " ", head.strip())
    return description, params


def check_text(what: str, text: object, limits: Limits) -> None:
    """Raise RequestError when ``text`` is a string over the serving limit on text length."""
    if isinstance(text, str) and len(text) > limits.max_query_chars:
        raise RequestError(f"{what}: {len(text)} characters, this server accepts at most "
                           f"{limits.max_query_chars}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# Text with a character str.strip() keeps: not empty, not only white space (as a JSON Schema
# pattern, unanchored: ASCII escapes that ECMA 262, Python and Rust read alike).
NOT_BLANK = r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


def _tighten(prop: dict[str, Any], meta: Arg, limits: Limits) -> None:
    """Write the serving limits that apply to one argument into its schema node, and what
    query text must be (a list of at least one text with a character that is not blank)."""
    for node in prop.get("anyOf", [prop]):  # ``str | None`` is an anyOf
        kind = node.get("type")
        if meta.top_k and kind == "integer":
            node["maximum"] = min(node.get("maximum", limits.max_top_k), limits.max_top_k)
        if not meta.query:
            continue
        if kind == "array":
            node["maxItems"] = min(node.get("maxItems", limits.max_queries), limits.max_queries)
            node["minItems"] = max(node.get("minItems", 1), 1)
            node = node.get("items", {})
            kind = node.get("type")
        if kind == "string":
            node["maxLength"] = min(node.get("maxLength", limits.max_query_chars),
                                    limits.max_query_chars)
            node["minLength"] = max(node.get("minLength", 1), 1)
            node.setdefault("pattern", NOT_BLANK)


@overload
def tool(function: ToolFunction, /) -> Tool: ...


@overload
def tool(*, command: str | None = None, session: str | None = None,
         from_question: FromQuestion | None = None) -> Callable[[ToolFunction], Tool]: ...


def tool(function: ToolFunction | None = None, /, *, command: str | None = None,
         session: str | None = None, from_question: FromQuestion | None = None
         ) -> Tool | Callable[[ToolFunction], Tool]:
    """Build a :class:`Tool` from a typed function (first parameter: the ToolContext);
    ``@tool(command=..., session=...)`` sets how it reads on the command line (:class:`Cli`)
    and ``from_question`` how it applies to a whole question (:attr:`Tool.from_question`)."""
    if function is None:
        return lambda f: _build(f, Cli(command, session), from_question)
    return _build(function, Cli())


def _build(function: ToolFunction, cli: Cli, from_question: FromQuestion | None = None
           ) -> Tool:
    description, docs = _split_docstring(function.__doc__ or "")
    hints = get_type_hints(function, include_extras=True)
    fields: dict[str, Any] = {}
    for i, (name, param) in enumerate(inspect.signature(function).parameters.items()):
        if i == 0:
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (hints[name], Field(default, description=docs.get(name)))
    model = create_model(
        f"{function.__name__}_args", __config__=ConfigDict(extra="forbid"), **fields
    )
    return Tool(function.__name__, description, model, function, cli, from_question)


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's ``title`` noise; keep types, constraints, defaults, descriptions."""
    def clean(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: clean(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [clean(v) for v in node]
        return node

    out: dict[str, Any] = clean(schema)
    out.setdefault("required", [])
    return out
