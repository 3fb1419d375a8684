"""``hotkernel init [DIR] [--force] [--no-ci]``: a new workspace (manifest, schema copy, .gitignore, CI check)."""

from __future__ import annotations

from pathlib import Path

import typer

from hotkernel.cli.output import emit
from hotkernel.manifest.init import init_lines, init_workspace


def register(app: typer.Typer) -> None:
    """Add the ``init`` command to the CLI."""

    @app.command("init")
    def init_command(
        directory: Path = typer.Argument(Path("."), help="the workspace root (default: the current directory)"),
        force: bool = typer.Option(False, "--force", help="overwrite an existing hotkernel.yaml and workflow"),
        ci: bool = typer.Option(True, "--ci/--no-ci", help="write .github/workflows/hotkernel.yml (sync --check)"),
        as_json: bool = typer.Option(False, "--json", help="print what was written as JSON"),
    ) -> None:
        """Start a workspace: hotkernel.yaml with a schema line that resolves (.hotkernel/hotkernel.schema.json),
        .gitignore lines for scratch state, and a CI workflow running `hotkernel sync --check`.

        Refuses to overwrite an existing hotkernel.yaml or workflow without --force.
        """
        result = init_workspace(directory, force=force, ci=ci)
        emit(result, init_lines(result), as_json)
