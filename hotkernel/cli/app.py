"""The ``hotkernel`` command line: a thin typer layer. Bare ``hotkernel`` serves MCP on stdio.

Each workspace verb is a module in ``commands/`` defining ``register(app: typer.Typer) -> None``; the insight
verbs are one command per entry of the insight registry (``commands/insight.py`` builds them); then ``serve``.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys

import typer

from hotkernel.cli.commands.insight import register_tools
from hotkernel.cli.commands.serve import register as register_serve
from hotkernel.cli.commands.serve import serve
from hotkernel.errors import HotkernelError
from hotkernel.insight.registry import REGISTRY

COMMAND_MODULES = (
    "init",
    "new",
    "import_",
    "plan",
    "sync",
    "bench",
    "verify",
    "record",
    "leaderboard",
    "history",
    "audit",
)

app = typer.Typer(
    name="hotkernel",
    help="Profile, verify and record GPU kernel speedups. Bare `hotkernel` starts the MCP server on stdio.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback(invoke_without_command=True)
def _root(ctx: typer.Context) -> None:
    if ctx.invoked_subcommand is None:
        serve()


def reflowed(doc: str) -> str:
    """A docstring as help text: its paragraphs kept, the line breaks inside each joined, since typer prints
    them as they are (a line starting with '-', '*' or an indent stays a line of its own)."""
    paragraphs = []
    for paragraph in inspect.cleandoc(doc).split("\n\n"):
        lines: list[str] = []
        for line in paragraph.split("\n"):
            if lines and not line.startswith(("-", "*", " ")):
                lines[-1] += " " + line.strip()
            else:
                lines.append(line)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


for _name in COMMAND_MODULES:
    importlib.import_module(f"hotkernel.cli.commands.{_name}").register(app)
register_tools(app, list(REGISTRY.values()))
register_serve(app)
for _info in app.registered_commands:
    _doc = _info.help or (_info.callback.__doc__ if _info.callback else None)
    if _doc:
        _info.help = reflowed(_doc)


def main() -> None:
    """Console entry point: run the app; anticipated failures print one line and exit non-zero."""
    try:
        code = app(standalone_mode=False)  # click returns a typer.Exit's code here instead of raising it
    except HotkernelError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(err.exit_code)
    except typer.Exit as err:
        sys.exit(err.exit_code)
    except typer.Abort:
        print("aborted", file=sys.stderr)
        sys.exit(130)
    except typer.TyperException as err:  # click's usage errors (unknown option, missing argument): exit 2
        err.show()  # type: ignore[attr-defined]
        sys.exit(err.exit_code)  # type: ignore[attr-defined]
    except Exception as err:
        if os.environ.get("HOTKERNEL_DEBUG"):
            raise
        print(
            f"error: internal error: {type(err).__name__}: {err} (a bug in hotkernel: rerun with "
            "HOTKERNEL_DEBUG=1 for the traceback and report it)",
            file=sys.stderr,
        )
        sys.exit(3)
    sys.exit(code if isinstance(code, int) else 0)
