"""``hotkernel plan [--json]``: which targets are out of date and why (terraform-style); runs nothing."""

from __future__ import annotations

import typer

from hotkernel.reconcile.plan import plan, plan_exit_code, plan_lines
from hotkernel.workspace.paths import find_workspace


def register(app: typer.Typer) -> None:
    """Add the ``plan`` command to the CLI."""

    @app.command("plan")
    def plan_command(
        names: list[str] = typer.Argument(None, help="targets to look at (default: all)"),
        as_json: bool = typer.Option(False, "--json", help="print the Plan as JSON"),
    ) -> None:
        """List out-of-date targets: '+ name: new', '~ name: candidate changed', then a summary line.

        Imports no torch and runs nothing; `hotkernel sync` brings the listed targets up to date. Exits 0 when
        everything is up to date, 2 when a target, a competitor or the board is out of date or results/ has a
        problem line.
        """

        result = plan(find_workspace(), names=names or None)
        if as_json:
            typer.echo(result.model_dump_json(indent=2))
        else:
            for line in plan_lines(result):
                typer.echo(line)
        code = plan_exit_code(result)
        if code:
            raise typer.Exit(code)
