"""``hotkernel leaderboard [--check | --summary]``: regenerate LEADERBOARD.md, the roofline charts and the README
headline from results/, check them and results/, or print the suite summary (fast_p)."""

from __future__ import annotations

import typer

from hotkernel.cli.commands.bench import console
from hotkernel.cli.output import emit
from hotkernel.store.leaderboard import board_summary, store_problems, vouch_committed_records, write_leaderboard
from hotkernel.store.summary import summary_lines
from hotkernel.workspace.lockfile import workspace_lock
from hotkernel.workspace.paths import find_workspace


def register(app: typer.Typer) -> None:
    """Add the ``leaderboard`` command to the CLI."""

    @app.command("leaderboard")
    def leaderboard_command(
        check: bool = typer.Option(
            False,
            "--check",
            help="write nothing; exit 1 when LEADERBOARD.md is stale or a file under results/ is damaged, "
            "missing or unverified (one line each, with the file)",
        ),
        vouch_committed: bool = typer.Option(
            False,
            "--vouch-committed",
            help="first add to hotkernel.lock's records index every unindexed record that git HEAD holds unchanged "
            "(records made before the index existed); review the lock's diff before committing it",
        ),
        summary: bool = typer.Option(
            False,
            "--summary",
            help="write nothing; print per suite and device KernelBench's fast_p (p = 0, 1.0, 1.5, 2.0) and the "
            "geometric mean speedup of the faster targets (targets named kb<N>_... form suite 'kernelbench level N')",
        ),
        as_json: bool = typer.Option(False, "--json", help="with --summary: print it as JSON"),
    ) -> None:
        """Regenerate LEADERBOARD.md, roofline_<device>.svg and the README headline from the records
        hotkernel.lock vouches for (same records, same bytes)."""

        ws = find_workspace()
        if summary:
            result = board_summary(ws)
            emit(result, summary_lines(result.suites), as_json)
            return
        if check:
            problems = store_problems(ws)
            for line in problems:
                console().print(line, markup=False)
            if problems:
                raise SystemExit(1)
            console().print(
                "LEADERBOARD.md, the roofline charts and the README headline are up to date and every "
                "record under results/ is vouched for"
            )
            return
        with workspace_lock(ws, wait_s=10.0, command="hotkernel leaderboard"):
            for vouched in vouch_committed_records(ws) if vouch_committed else []:
                console().print(f"vouched for {vouched} (committed in git HEAD)", markup=False)
            path = write_leaderboard(ws)
            problems = [p for p in store_problems(ws) if not p.startswith("LEADERBOARD.md")]
        for line in problems:
            console().print(line, markup=False)
        console().print(f"wrote {path.relative_to(ws.root)}")
