"""``hotkernel history TARGET`` and ``hotkernel invalidate RECORD --reason R``."""

from __future__ import annotations

import json
import sys

import typer

from hotkernel.cli.commands.bench import console
from hotkernel.store.record import history, invalidate_record
from hotkernel.workspace.paths import find_workspace


def register(app: typer.Typer) -> None:
    """Add the ``history`` and ``invalidate`` commands to the CLI."""

    @app.command("history")
    def history_command(
        target: str = typer.Argument(..., help="target name"),
        as_json: bool = typer.Option(False, "--json", help="print the records as a JSON list"),
    ) -> None:
        """List every record of TARGET, oldest first: verdict, speedup, confirmed or awaiting confirmation, imported,
        who, note, whether it counts."""

        entries = history(find_workspace(), target)
        if as_json:
            sys.stdout.write(json.dumps([e.model_dump(mode="json") for e in entries], indent=2) + "\n")
            return
        if not entries:
            console().print(f"no records of {target} yet: run `hotkernel sync {target}`")
            return
        for e in entries:  # one plain line per record: readable in a terminal, greppable in a log
            speed = f" {e.speedup:.3f}x" if e.speedup is not None and e.verdict == "faster" else ""
            counted = "" if e.counted else f"  NOT COUNTED ({e.not_counted_reason})"
            state = " (confirmed)" if e.confirmed else " (awaiting confirmation)" if e.awaiting_confirmation else ""
            label = "  imported" if e.imported else ""
            typer.echo(f"{e.path}  {e.device}  {e.verdict}{speed}{state}{label}  who: {e.who}  note: {e.note}{counted}")

    @app.command("invalidate")
    def invalidate_command(
        record: str = typer.Argument(..., help="record path, e.g. results/rmsnorm/20261130T101500Z.json"),
        reason: str = typer.Option(..., "--reason", help="one line: why it must not count"),
    ) -> None:
        """Mark a record as not counted (it stays on disk with the reason) and regenerate LEADERBOARD.md."""

        invalidate_record(find_workspace(), record, reason)
        console().print(f"invalidated {record}: {reason}", markup=False)
