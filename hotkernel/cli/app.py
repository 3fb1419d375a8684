"""The ``hotkernel`` command line: a thin typer layer. One module per verb lives in ``commands/``.

Each command module defines ``register(app: typer.Typer) -> None``. Bare ``hotkernel`` serves MCP on stdio.
"""

from __future__ import annotations

import importlib
import os
import sys

import typer

from hotkernel.errors import HotkernelError

COMMAND_MODULES = (
    "new", "plan", "sync", "bench", "verify", "record", "leaderboard", "history",
    "gpu", "roofline", "calibrate", "trace", "profile", "top", "disasm", "serve",
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
        from hotkernel.mcp.app import serve

        serve()


for _name in COMMAND_MODULES:
    try:
        importlib.import_module(f"hotkernel.cli.commands.{_name}").register(app)
    except ModuleNotFoundError as _err:  # a command still being written must not break the others
        if _err.name != f"hotkernel.cli.commands.{_name}":
            raise


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
    except Exception as err:  # click usage errors and the like
        import click

        if isinstance(err, click.ClickException):
            err.show()
            sys.exit(err.exit_code)
        if os.environ.get("HOTKERNEL_DEBUG"):
            raise
        print(f"error: internal error: {type(err).__name__}: {err} (a bug in hotkernel: rerun with "
              "HOTKERNEL_DEBUG=1 for the traceback and report it)", file=sys.stderr)
        sys.exit(3)
    sys.exit(code if isinstance(code, int) else 0)
