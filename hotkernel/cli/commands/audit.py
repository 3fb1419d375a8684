"""``hotkernel audit TARGET``: re-run the counted best's files with verify and say whether it reproduces."""

from __future__ import annotations

import typer

from hotkernel.cli.commands.bench import manifest_defaults, print_json, progress_display
from hotkernel.store.audit import audit, audit_lines
from hotkernel.workspace.paths import find_workspace


def register(app: typer.Typer) -> None:
    """Add the ``audit`` command to the CLI."""

    @app.command("audit")
    def audit_command(
        target: str = typer.Argument(..., help="target name, e.g. rmsnorm"),
        device: str | None = typer.Option(None, "--device", help="the device of the best to audit (GPU name)"),
        n: int | None = typer.Option(None, "-n", "--rounds", help="rounds planned (default: the record's)"),
        as_json: bool = typer.Option(False, "--json", help="print the AuditResult as JSON"),
    ) -> None:
        """Re-run TARGET's counted best (the same baseline, candidate and contract bytes) with verify and compare
        its interval with the record's.

        Refused when a file changed since the record. Exit 0 when it reproduces (faster, intervals overlap), 1
        when it does not.
        """

        ws = find_workspace()
        with progress_display(f"audit {target}", enabled=not as_json) as progress:
            result = audit(ws, target, device=device, n=n, timeout_s=manifest_defaults(ws).timeout_s, progress=progress)
        if as_json:
            print_json(result)
        else:
            for line in audit_lines(result):  # on stdout: `hotkernel audit rmsnorm 2>/dev/null` shows them
                typer.echo(line)
        if not result.reproduces:
            raise typer.Exit(1)
