"""``hotkernel leaderboard [--check]``: regenerate LEADERBOARD.md from results/, or check it is current."""

from __future__ import annotations

import typer

from hotkernel.cli.commands.bench import console


def register(app: typer.Typer) -> None:
    """Add the ``leaderboard`` command to the CLI."""

    @app.command("leaderboard")
    def leaderboard_command(
        check: bool = typer.Option(
            False, "--check",
            help="write nothing; exit 1 when LEADERBOARD.md differs from what results/ produce",
        ),
    ) -> None:
        """Regenerate LEADERBOARD.md from every record under results/ (same records, same bytes)."""
        from hotkernel.store.leaderboard import leaderboard_difference, write_leaderboard
        from hotkernel.workspace.paths import find_workspace

        ws = find_workspace()
        if check:
            difference = leaderboard_difference(ws)
            if difference:
                console().print(difference, markup=False)
                raise SystemExit(1)
            console().print("LEADERBOARD.md is up to date")
            return
        path = write_leaderboard(ws)
        console().print(f"wrote {path.relative_to(ws.root)}")
