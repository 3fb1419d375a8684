"""The insight verbs (``gpu``, ``roofline``, ``calibrate``, ``trace``, ``profile``, ``profile diff``, ``top``,
``disasm``): a command for an entry of ``hotkernel.insight.registry.REGISTRY``, its options generated from the
tool's ``Params``.

A field's ``Cli`` marker gives its flags; a field without one is MCP-only. ``--json`` prints the result model. A
``CLI_NAME`` of two words (``profile diff``) is a subcommand of the first word's command.
"""

from __future__ import annotations

import inspect
import os
import types
import typing
from typing import Any, Literal

import click
import typer
from pydantic import BaseModel, ValidationError
from typer.core import TyperCommand

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
    if typing.get_origin(annotation) is list:
        return list[str]  # a repeated option
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


class CommandWithSubcommands(TyperCommand):
    """A command whose first argument may name a subcommand (``profile diff ...``); otherwise it runs itself.

    ``hotkernel profile -- CMD`` stays a profile of CMD: only a bare first argument selects a subcommand.
    """

    subcommands: dict[str, click.Command] = {}
    _CHOSEN = "hotkernel.subcommand"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] in self.subcommands:
            ctx.meta[self._CHOSEN] = (args[0], list(args[1:]))
            return []
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        chosen = ctx.meta.pop(self._CHOSEN, None)
        if chosen is None:
            return super().invoke(ctx)
        name, rest = chosen
        sub = self.subcommands[name]
        with sub.make_context(name, rest, parent=ctx) as sub_ctx:
            return sub.invoke(sub_ctx)


def _click_command(tool: InsightTool, name: str) -> click.Command:
    """``tool``'s command as a click command called ``name`` (a subcommand)."""
    single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    callback, takes_rest = make_command(tool)
    settings = {"allow_extra_args": True, "ignore_unknown_options": True} if takes_rest else {}
    single.command(name, context_settings=settings)(callback)
    return typer.main.get_command(single)


def register_tool(app: typer.Typer, tool: InsightTool, subtools: list[InsightTool] | None = None) -> None:
    """Add ``tool``'s command to the CLI (trace and profile take the rest of the command line), with the tools
    of ``subtools`` as its subcommands."""
    callback, takes_rest = make_command(tool)
    settings: dict[str, Any] = {"allow_extra_args": True, "ignore_unknown_options": True} if takes_rest else {}
    if not subtools:
        app.command(tool.CLI_NAME, context_settings=settings)(callback)
        return
    names = {sub.CLI_NAME.split(" ", 1)[1]: sub for sub in subtools}
    cls = type(
        f"{tool.CLI_NAME.title()}Command",
        (CommandWithSubcommands,),
        {"subcommands": {name: _click_command(sub, name) for name, sub in names.items()}},
    )
    epilog = "Subcommands: " + ", ".join(f"`hotkernel {sub.CLI_NAME}` (see its --help)" for sub in subtools)
    app.command(tool.CLI_NAME, context_settings=settings, cls=cls, epilog=epilog)(callback)


def register_tools(app: typer.Typer, tools: list[InsightTool]) -> None:
    """One command per tool; a tool named ``parent sub`` becomes a subcommand of ``parent``."""
    subtools: dict[str, list[InsightTool]] = {}
    for tool in tools:
        if " " in tool.CLI_NAME:
            subtools.setdefault(tool.CLI_NAME.split(" ", 1)[0], []).append(tool)
    parents = {tool.CLI_NAME for tool in tools}
    orphans = sorted(name for name in subtools if name not in parents)
    if orphans:
        raise HotkernelError(f"insight registry: subcommands of {orphans} have no parent command")
    for tool in tools:
        if " " not in tool.CLI_NAME:
            register_tool(app, tool, subtools.get(tool.CLI_NAME))
