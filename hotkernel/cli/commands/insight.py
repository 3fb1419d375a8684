"""The insight verbs (``gpu``, ``roofline``, ``calibrate``, ``trace``, ``profile``, ``top``, ``disasm``): a
command for an entry of ``hotkernel.insight.registry.REGISTRY``, its options generated from the tool's ``Params``.

A field's ``Cli`` marker gives its flags; a field without one is MCP-only. ``--json`` prints the result model.
"""

from __future__ import annotations

import inspect
import os
import types
import typing
from typing import Any, Literal

import typer
from pydantic import BaseModel, ValidationError

from hotkernel.cli.output import emit
from hotkernel.errors import HotkernelError, quote
from hotkernel.insight.base import Cli, InsightContext, InsightTool, cli_spec


def option_type(annotation: Any) -> Any:
    """The type typer parses a field as: a Literal or a list becomes str (pydantic validates it after)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return option_type(inner[0]) | None if len(inner) == 1 else str | None
    if typing.get_origin(annotation) is Literal:
        return str
    return annotation if annotation in (bool, int, float, str) else str


def cli_parameters(tool: InsightTool) -> tuple[list[inspect.Parameter], str | None]:
    """The typer parameters of a tool's command, and the field that takes the trailing arguments (if any)."""
    params: list[inspect.Parameter] = []
    trailing = None
    for name, info in tool.Params.model_fields.items():
        spec = cli_spec(tool.Params, name)
        if spec is None:
            continue
        if spec.trailing:
            trailing = name
            continue
        default = spec.default if spec.default is not ... else (None if info.is_required() else info.default)
        literal = typing.get_origin(info.annotation) is Literal
        help_text = spec.help + (f" ({' | '.join(typing.get_args(info.annotation))})" if literal else "")
        if spec.argument:
            marker: Any = typer.Argument(
                ... if info.is_required() else default, help=help_text, metavar=name.upper(), show_default=False
            )
        else:
            marker = typer.Option(default, *spec.flags, help=help_text)
        annotation = option_type(info.annotation)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=marker, annotation=annotation))
    return params, trailing


def flag_of(tool: InsightTool, field: str) -> str:
    """How the user wrote ``field`` on the command line: its first long flag, or its name in capitals."""
    spec: Cli | None = cli_spec(tool.Params, field) if field in tool.Params.model_fields else None
    if spec is None or spec.argument or spec.trailing:
        return field.upper()
    return next((f for f in spec.flags if f.startswith("--")), spec.flags[0])


def validated(tool: InsightTool, values: dict[str, Any]) -> BaseModel:
    """The tool's parameters, or a one-line error naming the flag and what it must be."""
    try:
        return tool.Params.model_validate(values)
    except ValidationError as err:
        problems = []
        for e in err.errors(include_url=False):
            field = str(e["loc"][0]) if e["loc"] else ""
            given = f" (got {quote(e['input'])})" if e["type"] != "missing" else ""
            problems.append(f"{flag_of(tool, field)}: {e['msg']}{given}")
        raise HotkernelError(f"{tool.CLI_NAME}: " + "; ".join(problems), exit_code=2) from None


def make_command(tool: InsightTool) -> Any:
    """The typer callback of ``tool``: parse, validate, run, print (exit 1 when the result says not ok)."""
    params, trailing = cli_parameters(tool)

    def command(ctx: typer.Context, as_json: bool = False, **values: Any) -> None:
        given = {k: v for k, v in values.items() if v is not None}
        if trailing is not None:
            given[trailing] = list(ctx.args)
        shortcut = getattr(tool, "cli_shortcut", None)
        text = shortcut(given, as_json) if shortcut is not None else None
        if text is not None:
            typer.echo(text)
            return
        result = tool.run(validated(tool, given), InsightContext.at(os.getcwd(), confined=False))
        emit(result, tool.summary_lines(result), as_json)
        if getattr(result, "ok", True) is False:
            raise typer.Exit(1)

    as_json = inspect.Parameter(
        "as_json",
        inspect.Parameter.KEYWORD_ONLY,
        default=typer.Option(False, "--json", help=f"print the {tool.RESULT.__name__} as JSON"),
        annotation=bool,
    )
    context = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    command.__signature__ = inspect.Signature([context, *params, as_json])  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in [context, *params, as_json]}
    command.__doc__ = tool.CLI_HELP
    command.__name__ = f"{tool.CLI_NAME}_command"
    return command, trailing is not None


def register_tool(app: typer.Typer, tool: InsightTool) -> None:
    """Add ``tool``'s command to the CLI (trace and profile take the rest of the command line)."""
    callback, takes_rest = make_command(tool)
    settings = {"allow_extra_args": True, "ignore_unknown_options": True} if takes_rest else {}
    app.command(tool.CLI_NAME, context_settings=settings)(callback)
