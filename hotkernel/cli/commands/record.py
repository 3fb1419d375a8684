"""``hotkernel record TARGET RUN_ID | --latest | --import FILE``: keep a verify result, regenerate LEADERBOARD.md.

The result comes from the workspace's run store (``.hotkernel/runs/``, written by ``verify``), by its id; a
result from elsewhere is recorded only through ``--import FILE`` and is labelled imported on the board. Either
way ``record`` refuses a result whose verdict, speedup or interval does not follow from its samples.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from pydantic import ValidationError

from hotkernel.cli.commands.bench import console, print_json
from hotkernel.errors import HotkernelError
from hotkernel.reconcile.keep import record_and_keep
from hotkernel.run.models import VerifyResult
from hotkernel.run.runstore import stored_verify, verify_runs
from hotkernel.store.models import RecordResult
from hotkernel.workspace.paths import Workspace, find_workspace


def read_verify_result(source: str) -> VerifyResult:
    """Parse the JSON ``hotkernel verify --json`` wrote, from a file or ``-`` (stdin): the ``--import`` path."""

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


def run_lines(ws: Workspace, target: str) -> list[str]:
    """One line per stored verify of ``target``, oldest first: id, verdict, speedup."""
    lines = []
    for stored in verify_runs(ws, target):
        result = stored.result
        speed = f" {result.speedup:.3f}x" if isinstance(result, VerifyResult) and result.speedup else ""
        lines.append(f"{stored.run_id}  {getattr(result, 'verdict', '?')}{speed}")
    return lines or [f"no stored verify of {target}: run `hotkernel verify` first"]


def register(app: typer.Typer) -> None:
    """Add the ``record`` command to the CLI."""

    @app.command("record")
    def record_command(
        target: str = typer.Argument(..., help="target name, e.g. rmsnorm"),
        run_id: str | None = typer.Argument(None, help="id of a verify in the run store (`--runs` lists them)"),
        who: str = typer.Option("", "--who", help="honest author of the candidate (person, or agent + model)"),
        note: str = typer.Option("", "--note", help="one line: what the candidate changed"),
        latest: bool = typer.Option(False, "--latest", help="record the newest stored verify of TARGET"),
        import_file: str | None = typer.Option(
            None, "--import", help="record a result from elsewhere (a `verify --json` file, - for stdin), labelled"
        ),
        confirms: str | None = typer.Option(
            None, "--confirms", help="the record (results/TARGET/....json) of the first verify this one confirms"
        ),
        runs: bool = typer.Option(False, "--runs", help="list TARGET's stored verifies and record nothing"),
        as_json: bool = typer.Option(False, "--json", help="print the RecordResult as JSON"),
    ) -> None:
        """Write results/TARGET/<UTC time>.json from a stored verify and regenerate LEADERBOARD.md; say whether
        it beats the best and whether a second verify confirms it yet."""

        ws = find_workspace()
        if runs:
            for line in run_lines(ws, target):
                console().print(line, markup=False, highlight=False)
            return
        found: str | None = None
        if import_file is not None:
            if run_id is not None or latest:
                raise HotkernelError("record: --import FILE takes no run id and no --latest")
            result = read_verify_result(import_file)
        else:
            stored = stored_verify(ws, target, run_id, latest)
            found, result = stored.run_id, stored.result
        imported = import_file is not None
        outcome = record_and_keep(
            ws, target, result, note=note, who=who, run_id=found, imported=imported, confirms=confirms
        )
        if as_json:
            print_json(outcome)
            return
        speed = f" {outcome.speedup:.3f}x" if outcome.speedup is not None else ""
        label = " (imported)" if imported else ""
        console().print(f"recorded {outcome.path}{label}: {outcome.verdict}{speed}; {best_line(outcome)}")


def best_line(result: RecordResult) -> str:
    """Whether the record beats the best so far, whether a second verify confirms it, and what to do."""
    if not result.beats_best:
        return "does not beat the best so far"
    if result.awaiting_confirmation:
        return (
            "beats the best so far, awaiting confirmation: it is crowned once a second verify of the same files is "
            "also faster with an overlapping interval (`hotkernel sync` runs it; or verify again and record with "
            f"--confirms {result.path})"
        )
    if result.clear_of_best or not result.previous_best_interval or result.previous_best is None:
        return "beats the best so far (confirmed)"
    low, high = result.previous_best_interval
    return (
        f"beats the best so far (confirmed), but only inside the two verifies' noise (previous best "
        f"{result.previous_best:.3f}x [{low:.3f}, {high:.3f}], {result.previous_best_path})"
    )
