"""``hotkernel leaderboard [--check | --summary | --compact-records]``: regenerate LEADERBOARD.md, the roofline
charts and the README headline from results/, check them and results/, print the suite summary (fast_p), or first
rewrite the schema-1 records compactly."""

from __future__ import annotations

import typer

from hotkernel.cli.commands.bench import console
from hotkernel.cli.output import emit
from hotkernel.errors import HotkernelError
from hotkernel.store.compact_records import Compaction, compact_records, finish_interrupted
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
        compact: bool = typer.Option(
            False,
            "--compact-records",
            help="first rewrite in place every schema-1 record hotkernel.lock vouches for in the compact schema 2 "
            "(about a sixth of the bytes) and update its sha256 in the records index; refused, nothing written, "
            "when the board would change by a byte; files the index does not vouch for are left untouched",
        ),
    ) -> None:
        """Regenerate LEADERBOARD.md, roofline_<device>.svg and the README headline from the records
        hotkernel.lock vouches for (same records, same bytes)."""

        ws = find_workspace()
        if compact and (check or summary):
            raise HotkernelError("leaderboard: --compact-records rewrites records; run it without --check or --summary")
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
            for restored in finish_interrupted(ws):
                console().print(
                    f"put back {restored}: an interrupted --compact-records left it rewritten but not indexed",
                    markup=False,
                )
            for vouched in vouch_committed_records(ws) if vouch_committed else []:
                console().print(f"vouched for {vouched} (committed in git HEAD)", markup=False)
            if compact:
                _print_compaction(compact_records(ws))
            path = write_leaderboard(ws)
            problems = [p for p in store_problems(ws) if not p.startswith("LEADERBOARD.md")]
        for line in problems:
            console().print(line, markup=False)
        console().print(f"wrote {path.relative_to(ws.root)}")


def _print_compaction(done: Compaction) -> None:
    """One line per record rewritten, kept or left untouched, then the totals."""
    for item in done.rewritten:
        console().print(f"rewrote {item.path}: {item.before:,} -> {item.after:,} bytes", markup=False)
    for path, why in done.kept:
        console().print(f"kept {path} as schema 1: {why}", markup=False)
    for path, why in done.untouched:
        console().print(f"left {path} untouched: hotkernel.lock does not vouch for it ({why})", markup=False)
    if not done.rewritten:
        console().print("no schema-1 record to rewrite", markup=False)
        return
    console().print(
        f"rewrote {len(done.rewritten)} schema-1 records in schema 2: {done.bytes_before:,} -> "
        f"{done.bytes_after:,} bytes; hotkernel.lock's records index holds their new sha256 and the board is "
        "byte for byte the same",
        markup=False,
    )
