"""One definition per tool: a typed function whose docstring is the model-facing description.

``@tool`` turns ``def name(ctx: ToolContext, arg: T = default, ...) -> ToolResult`` into a
:class:`Tool` with a JSON schema derived from the signature (``Annotated[..., Field(...)]``
adds constraints; the ``Args:`` section of the docstring gives each parameter its
description). The agent, the CLI and the servers all call :meth:`Tool.run`.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from sleuth.errors import ToolError
from sleuth.tokens import count_tokens

if TYPE_CHECKING:
    from sleuth.index import Index
    from sleuth.tracker import Tracker


@dataclass
class ToolContext:
    """What a tool call may touch: the index and this session's tracker."""

    index: Index
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


ToolFunction = Callable[..., ToolResult]


@dataclass(frozen=True)
class Tool:
    """A retrieval tool: name, description, argument model and the function itself."""

    name: str
    description: str
    args: type[BaseModel]
    function: ToolFunction

    @property
    def parameters(self) -> dict[str, Any]:
        return _clean_schema(self.args.model_json_schema())

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool definition."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

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


def tool(function: ToolFunction) -> Tool:
    """Build a :class:`Tool` from a typed function (first parameter: the ToolContext)."""
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
    return Tool(function.__name__, description, model, function)


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
