"""The command-line face of the tools: one click command per registered tool, built from
its definition when the command line is asked for it.

Required arguments become positional arguments (a list takes several values); the others
become options named after them (``top_k`` → ``--top-k``) with the argument model's type,
default, range and choices (a ``Literal``), repeatable for a list, and the argument's
description as help; ``Arg(flag=...)`` makes a flag instead. Every tool is
``sleuth tool NAME``; ``@tool(command="search keyword")`` adds a shorter path in a group of
:mod:`sleuth.cli.main`. A command runs the call through :func:`sleuth.service.calls.run_tool`, the
servers' own path (serving limits and sessions included), and prints the tool's text, or
with ``--json`` the call and its data.
"""

from __future__ import annotations

import difflib
import types
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types as at
import click
from pydantic.fields import FieldInfo

from sleuth.cli.console import common_options, load_settings, print_result
from sleuth.tools import TOOLS
from sleuth.tools.base import Tool


class ToolGroup(click.Group):
    """A group whose commands include the tools whose ``Cli.command`` path lies in it
    (``tool_path``: "" for the top level, else the group's name), looked up from the registry
    each time, so a tool registered after import is there too. Hand-written commands win."""

    def __init__(self, *args: Any, tool_path: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tool_path = (self.name or "") if tool_path is None else tool_path

    def tool_commands(self) -> dict[str, click.Command]:
        out = {}
        for t in TOOLS.values():
            *parent, leaf = (t.cli.command or "").split() or [""]
            if leaf and " ".join(parent) == self.tool_path:
                out[leaf] = command(t, leaf)
        return out

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.tool_commands()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, cmd_name) or self.tool_commands().get(cmd_name)


class AllTools(click.Group):
    """``sleuth tool NAME``: every registered tool under its own name."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(TOOLS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = TOOLS.get(cmd_name)
        return command(found, cmd_name) if found else None


def command(tool: Tool, name: str) -> click.Command:
    """The click command that runs ``tool``."""
    fields = tool.args.model_fields

    def callback(index_dir: str | None, as_json: bool, config: str | None,
                 session_id: str | None, **values: Any) -> None:
        arguments = {n: _value(tool, n, info, values[n]) for n, info in fields.items()}
        run(tool.name, arguments, session_id, index_dir, config, as_json)

    params: list[click.Parameter] = [_param(tool, n, info) for n, info in fields.items()]
    params.append(click.Option(
        ["--session", "session_id"], default=tool.cli.session, show_default=True,
        help="Session whose reference ids are used and extended (kept with the index: its "
             "folder, or the sessions table of a PostgreSQL index)"
             + ("." if tool.cli.session else "; none: the call starts afresh.")))
    return click.Command(name, callback=callback, params=[*params, *common_options()],
                         help=_help(tool))


def run(name: str, arguments: dict[str, Any], session: str | None, index_dir: str | None,
        config: str | None, as_json: bool) -> None:
    """Run tool ``name`` on the index the flags name and print the result."""
    from sleuth.index.write import Index
    from sleuth.service.calls import run_tool

    settings = load_settings(config, index_dir)
    with Index.open(settings=settings) as index:
        result = run_tool(index, name, arguments, limits=settings.serve, session=session)
    print_result(name, arguments, result, as_json)


def _help(tool: Tool) -> str:
    """The tool's description, then what each positional argument is."""
    described = [(n, f.description) for n, f in tool.args.model_fields.items()
                 if f.is_required() and f.description]
    if not described:
        return tool.description
    lines = [f"  {n.upper()}: {text}" for n, text in described]
    return tool.description + "\n\n\b\n" + "\n".join(lines)


def _param(tool: Tool, name: str, info: FieldInfo) -> click.Parameter:
    flag = tool.arg(name).flag
    kind, many = _kind(info.annotation)
    if flag:
        return click.Option([f"--{flag}", name], is_flag=True,
                            help=f"{name} {flag!r} instead of {info.default!r}: "
                                 f"{info.description}")
    if info.is_required():
        return click.Argument([name], nargs=-1 if many else 1, required=True,
                              type=_type(kind, info))
    option = "--" + name.replace("_", "-")
    if kind is bool:
        return click.Option([f"{option}/--no-{option[2:]}", name], default=info.default,
                            show_default=True, help=info.description)
    return click.Option([option, name], type=_type(kind, info), multiple=many,
                        default=info.default, show_default=info.default not in (None, []),
                        help=info.description)


def _value(tool: Tool, name: str, info: FieldInfo, value: Any) -> Any:
    """A parsed command-line value as the tool takes it."""
    flag = tool.arg(name).flag
    if flag:
        return flag if value else info.default
    return list(value) if isinstance(value, tuple) else value


def _kind(annotation: Any) -> tuple[Any, bool]:
    """The scalar type of an argument (``X | None`` unwrapped) and whether it is a list."""
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    if get_origin(annotation) is list:
        return (get_args(annotation) or (str,))[0], True
    return annotation, False


def _type(kind: Any, info: FieldInfo) -> click.ParamType[Any, Any]:
    if get_origin(kind) is Literal:
        return click.Choice([str(v) for v in get_args(kind)])
    if kind in (int, float):
        low = next((m.ge for m in info.metadata if isinstance(m, at.Ge)), None)
        high = next((m.le for m in info.metadata if isinstance(m, at.Le)), None)
        if kind is int:
            return click.IntRange(low, high)  # type: ignore[arg-type]
        return click.FloatRange(low, high)  # type: ignore[arg-type]
    return click.STRING


class SearchGroup(ToolGroup):
    """``sleuth search QUERY...`` means ``sleuth search docs QUERY...``; a first word that
    is a subcommand's name mistyped (``keywrod``) is a usage error naming the subcommand,
    not a query."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        commands = self.list_commands(ctx)
        if args and args[0] not in commands and args[0] not in ("-h", "--help"):
            close = difflib.get_close_matches(args[0].lower(), commands, n=1, cutoff=0.75)
            if close and len(args) > 1:
                raise click.UsageError(
                    f"no such subcommand {args[0]!r} (did you mean {close[0]!r}?); to "
                    f"search the documents for it, `sleuth search docs {args[0]} ...`", ctx)
            args = ["docs", *args]
        return super().parse_args(ctx, args)
