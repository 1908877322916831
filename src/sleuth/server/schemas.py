"""Each tool's JSON schema as this server accepts it, for every face that publishes one.

A tool's own schema (:attr:`sleuth.tools.Tool.parameters`) says what the tool accepts; a
server may accept less (``serve.max_top_k``, ``serve.max_queries``,
``serve.max_query_chars``, checked by :meth:`sleuth.service.Service.check_limits`). The
OpenAPI document and the MCP tool list publish the narrower of the two, so that a request a
client validated against them is one the server takes. With the default limits the result
equals the tool's own schema wherever the definition already carries the same limits.
"""

from __future__ import annotations

import copy
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from sleuth.errors import ToolError
from sleuth.server.openapi import NOT_BLANK, SESSION_ID
from sleuth.service import QUERY_ARGUMENTS
from sleuth.settings import ServeSettings
from sleuth.tools import Tool


def served_parameters(tool: Tool, limits: ServeSettings) -> dict[str, Any]:
    """``tool``'s argument schema narrowed to what a server with ``limits`` accepts."""
    schema = copy.deepcopy(tool.parameters)
    properties: dict[str, Any] = schema.get("properties", {})
    if "top_k" in properties:
        _narrow(properties["top_k"], "maximum", limits.max_top_k)
    for name in QUERY_ARGUMENTS & properties.keys():
        _narrow_text(properties[name], limits)
    return schema


def _narrow_text(node: dict[str, Any], limits: ServeSettings) -> None:
    """Query text: strings at most ``max_query_chars``, lists at most ``max_queries`` long
    (also inside ``anyOf`` and list items)."""
    for option in node.get("anyOf", ()):
        _narrow_text(option, limits)
    if node.get("type") == "string":
        _narrow(node, "maxLength", limits.max_query_chars)
    elif node.get("type") == "array":
        _narrow(node, "maxItems", limits.max_queries)
        if isinstance(node.get("items"), dict):
            _narrow_text(node["items"], limits)


def _narrow(node: dict[str, Any], key: str, limit: int) -> None:
    node[key] = min(node.get(key, limit), limit)


class ArgumentCheck:
    """Validates a tool's arguments against the schema a face publishes for it, so that the
    face refuses exactly what its document forbids (a tool itself is lenient with models:
    one string for a list, ``false`` for ``0``)."""

    def __init__(self, name: str, schema: dict[str, Any]) -> None:
        self.name = name
        self.validator = Draft202012Validator(schema)

    def __call__(self, arguments: dict[str, Any]) -> None:
        """A ToolError (HTTP 400) naming the first problem of ``arguments``."""
        error = best_match(self.validator.iter_errors(arguments))
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path) or "arguments"
            raise ToolError(f"invalid arguments for {self.name}: {where}: {error.message}")


def ask_schema(limits: ServeSettings) -> dict[str, Any]:
    """The arguments of ``ask`` (HTTP ``/v1/ask``, the MCP tool): what
    :meth:`sleuth.service.Service.check_ask` accepts."""
    from sleuth.agent.router import AUTO
    from sleuth.agent.variants import VARIANTS

    return {"type": "object", "required": ["question"], "additionalProperties": False,
            "properties": {
                "question": {"type": "string", "minLength": 1, "pattern": NOT_BLANK,
                             "maxLength": limits.max_query_chars,
                             "description": "The question to answer"},
                "agent": {"type": "string", "enum": sorted([*VARIANTS, AUTO]),
                          "default": "full", "description": "Agent variant (`sleuth agents`)"},
                "session": {"anyOf": [SESSION_ID, {"type": "null"}], "default": None,
                            "description": "Session id: follow-up questions see earlier "
                            "turns"}}}
