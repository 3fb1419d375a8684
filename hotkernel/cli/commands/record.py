"""``hotkernel record TARGET RESULT_JSON``: keep a verify result, regenerate LEADERBOARD.md."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from pydantic import ValidationError

from hotkernel.cli.commands.bench import console, print_json
from hotkernel.errors import HotkernelError
from hotkernel.reconcile.sync import record_and_keep
from hotkernel.run.models import VerifyResult
from hotkernel.store.models import RecordResult
from hotkernel.workspace.paths import find_workspace


def read_verify_result(source: str) -> object:
    """Parse the JSON ``hotkernel verify --json`` wrote, from a file or ``-`` (stdin)."""

    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as err:
        raise HotkernelError(f"{source}: cannot read ({err.strerror}); pass the file `verify --json` wrote") from None
    try:
        return VerifyResult.model_validate(json.loads(text))
    except (json.JSONDecodeError, ValidationError) as err:
        first = str(err).splitlines()[0]
        raise HotkernelError(
            f"{source}: not a verify result ({first}); save one with "
            "`hotkernel verify BASELINE CANDIDATE --json > result.json`"
        ) from None


def register(app: typer.Typer) -> None:
    """Add the ``record`` command to the CLI."""

    @app.command("record")
    def record_command(
        target: str = typer.Argument(..., help="target name, e.g. rmsnorm"),
        result_json: str = typer.Argument(..., help="file `hotkernel verify --json` wrote, or - for stdin"),
        who: str = typer.Option(..., "--who", help="honest author of the candidate (person, or agent + model)"),
        note: str = typer.Option(..., "--note", help="one line: what the candidate changed"),
        as_json: bool = typer.Option(False, "--json", help="print the RecordResult as JSON"),
    ) -> None:
        """Write results/TARGET/<UTC time>.json and regenerate LEADERBOARD.md; say if it beats the best."""

        ws = find_workspace()
        result = record_and_keep(ws, target, read_verify_result(result_json), note=note, who=who)
        if as_json:
            print_json(result)
            return
        best = best_line(result)
        speed = f" {result.speedup:.3f}x" if result.speedup is not None else ""
        console().print(f"recorded {result.path}: {result.verdict}{speed}; {best}")


def best_line(result: RecordResult) -> str:
    """Whether the record beats the best so far, and when it does only by the two verifies' noise, what to do."""
    if not result.beats_best:
        return "does not beat the best so far"
    if result.clear_of_best or not result.previous_best_interval or result.previous_best is None:
        return "beats the best so far"
    low, high = result.previous_best_interval
    return (
        f"beats the best so far only inside the two verifies' noise (previous best {result.previous_best:.3f}x "
        f"[{low:.3f}, {high:.3f}], {result.previous_best_path}): verify it once more and keep it only when "
        "that verify beats the previous best again"
    )
