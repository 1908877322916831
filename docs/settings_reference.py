"""The configuration reference of ``docs/configuration.md``, generated from
:class:`sleuth.settings.Settings` by cog (``cog -r docs/configuration.md``): every section
and field with its environment variable, type, default and description, so the page cannot
say what the code does not. ``tests/test_docs.py`` runs ``cog --check`` on it."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from sleuth.settings import ApiKey, Settings

# the endpoint's shorter names, read before the sectioned ones (settings._endpoint_env)
SHORT = {("llm", "base_url"): "SLEUTH_BASE_URL", ("llm", "api_key"): "SLEUTH_API_KEY",
         ("llm", "model"): "SLEUTH_MODEL"}


def type_name(annotation: Any) -> str:
    """A field's type as a reader writes it: ``int``, ``'auto' | 'on'``, ``list[str]``."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is not None:
        inner = ", ".join(type_name(a) for a in args)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    if annotation is type(None):
        return "None"
    if isinstance(annotation, type):
        return "path" if issubclass(annotation, Path) else annotation.__name__
    return str(annotation)


def type_cell(annotation: Any) -> str:
    """A field's type for a table cell, with no pipe in it (Markdown tables split on it):
    "one of `auto`, `on`, `off`", "`int` or none"."""
    args = typing.get_args(annotation)
    optional = type(None) in args and typing.get_origin(annotation) in (typing.Union,
                                                                          types.UnionType)
    parts = [a for a in args if a is not type(None)] if optional else [annotation]
    if len(parts) == 1 and typing.get_origin(parts[0]) is typing.Literal:
        cell = "one of " + ", ".join(f"`{v}`" for v in typing.get_args(parts[0]))
    else:
        cell = " or ".join(f"`{type_name(p).replace(' | ', ' or ')}`" for p in parts)
    return f"{cell} or none" if optional else cell


def default_of(field: FieldInfo) -> str:
    """A field's default as the configuration would write it."""
    value = field.default
    if value is PydanticUndefined:
        if field.default_factory is None:
            return "(required)"
        value = field.default_factory()  # type: ignore[call-arg]
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Path):
        return str(value)
    return str(value)


def _cell(text: str) -> str:
    """One table cell: one line, pipes escaped, Sphinx roles as code."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", " ".join(text.split()))
    return text.replace("``", "`").replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{text}`".replace("|", "\\|")


def _rows(section: str | None, model: type[BaseModel]) -> list[str]:
    lines = ["| setting | variable | type | default | description |",
             "|---|---|---|---|---|"]
    for name, field in model.model_fields.items():
        if section is None and isinstance(field.default_factory, type) and \
                issubclass(field.default_factory, BaseModel):
            continue  # a section: its own heading below
        key = f"{section}.{name}" if section else name
        variable = f"SLEUTH_{section.upper()}__{name.upper()}" if section else \
            f"SLEUTH_{name.upper()}"
        short = SHORT.get((section or "", name))
        names = f"{_code(short)}, {_code(variable)}" if short else _code(variable)
        lines.append(f"| {_code(key)} | {names} | {type_cell(field.annotation)} | "
                     f"{_code(default_of(field))} | {_cell(field.description or '')} |")
    return lines


def sections() -> list[tuple[str, type[BaseModel]]]:
    """The sections of :class:`Settings`, in their order."""
    out = []
    for name, field in Settings.model_fields.items():
        factory = field.default_factory
        if isinstance(factory, type) and issubclass(factory, BaseModel):
            out.append((name, factory))
    return out


def reference() -> str:
    """The whole reference, as Markdown."""
    lines = ["## Top level", "", *_rows(None, Settings), ""]
    for name, model in sections():
        lines += [f"## {name}", "", _cell(model.__doc__ or ""), "", *_rows(name, model), ""]
        if name == "serve":
            lines += [_cell(ApiKey.__doc__ or "") + " Its fields, under "
                      "its name in `serve.api_keys`:", "", "| field | type | description |",
                      "|---|---|---|",
                      *[f"| {_code(n)} | {type_cell(f.annotation)} | "
                        f"{_cell(f.description or '')} |"
                        for n, f in ApiKey.model_fields.items()], ""]
    return "\n".join(lines).rstrip() + "\n"
