"""What the faces publish and check beyond a tool's own definition: each tool's argument
schema as a face validates it (:class:`ArgumentCheck`), and the arguments of ``ask``.

A tool's schema within this server's limits is :meth:`sleuth.tools.Tool.input_schema`
(``serve.max_top_k``, ``serve.max_queries``, ``serve.max_query_chars`` written into it from
the argument metadata), the same for the OpenAPI document and the MCP tool list.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from sleuth.errors import ToolError
from sleuth.server.openapi import NOT_BLANK, SESSION_ID
from sleuth.settings import DEFAULT_AGENT, ServeSettings


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
    :meth:`sleuth.service.service.Service.check_ask` accepts."""
    from sleuth.agent.router import AUTO
    from sleuth.agent.variants import VARIANTS

    return {"type": "object", "required": ["question"], "additionalProperties": False,
            "properties": {
                "question": {"type": "string", "minLength": 1, "pattern": NOT_BLANK,
                             "maxLength": limits.max_query_chars,
                             "description": "The question to answer"},
                "agent": {"type": "string", "enum": sorted([*VARIANTS, AUTO]),
                          "default": DEFAULT_AGENT,
                          "description": "Agent variant (`sleuth agents`)"},
                "session": {"anyOf": [SESSION_ID, {"type": "null"}], "default": None,
                            "description": "Session id: follow-up questions see earlier "
                            "turns"}}}
