"""``hotkernel verify BASELINE CANDIDATE``: interleaved ABBA rounds, one verdict with its reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from hotkernel.cli.commands.bench import console, manifest_defaults, print_json, progress_display
from hotkernel.run.verify import verify
from hotkernel.workspace.paths import find_workspace


def register(app: typer.Typer) -> None:
    """Add the ``verify`` command to the CLI."""

    @app.command("verify")
    def verify_command(
        baseline: str = typer.Argument(..., help="baseline script, e.g. targets/rmsnorm/baseline.py"),
        candidate: str = typer.Argument(..., help="candidate script, e.g. targets/rmsnorm/candidate.py"),
        n: int = typer.Option(None, "-n", "--rounds", help="rounds planned, one run per side each (default 7)"),
        max_rounds: int = typer.Option(
            None,
            "--max-rounds",
            help="rounds it may run when the answer is still open after -n (default 2n; -n again: never more)",
        ),
        as_json: bool = typer.Option(
            False, "--json", help="print the VerifyResult as JSON (its run_id is what `hotkernel record` takes)"
        ),
    ) -> None:
        """Verify CANDIDATE against BASELINE: faster / slower / inconclusive / incorrect / invalid.

        It stops at the first round that decides (from round 3 on); the result says how many rounds ran and why
        it stopped. Exit 0 for faster, slower and inconclusive; 1 for incorrect or invalid (or an error).
        """

        ws = find_workspace()
        defaults = manifest_defaults(ws)
        rounds = n if n is not None else defaults.n
        with progress_display("verify", enabled=not as_json) as progress:
            result = verify(
                ws,
                baseline,
                candidate,
                n=rounds,
                max_rounds=max_rounds,
                timeout_s=defaults.timeout_s,
                progress=progress,
            )
        if as_json:
            print_json(result)
        else:
            print_verify(result)
        if result.verdict in ("incorrect", "invalid"):
            raise SystemExit(1)


def print_verify(result: Any) -> None:
    """People-readable verdict."""
    out = console()
    colour = {"faster": "green", "slower": "yellow", "inconclusive": "cyan"}.get(result.verdict, "red")
    line = f"[bold {colour}]{result.verdict}[/bold {colour}]"
    if result.speedup is not None and result.interval:
        line += f" {result.speedup:.3f}x [{result.interval[0]:.3f}, {result.interval[1]:.3f}]"
    out.print(f"{line}  reason: {result.reason}")
    if result.stopped is not None:
        cap = f", up to {result.max_rounds}" if result.max_rounds and result.max_rounds != result.n else ""
        out.print(f"  {result.rounds_completed} rounds (planned {result.n}{cap}), stopped: {result.stopped}")
    if result.extended:
        out.print(f"  {result.extended}")
    if result.noisy:
        out.print(f"  {result.noisy}", markup=False, highlight=False)
    for side in (result.baseline, result.candidate):
        if side.stats.n:
            out.print(f"  {side.script}: median {side.stats.median_ms:.4f} ms (n={side.stats.n})")
    for line in run_lines(result):
        out.print(line, markup=False, highlight=False)


def run_lines(result: Any) -> list[str]:
    """The run-store id the verify was saved under and the command that records it (none without an id)."""
    if not result.run_id:
        return []
    target = result.target or Path(result.candidate.script).parent.name or "TARGET"
    return [f"run: {result.run_id}", f"next: hotkernel record {target} {result.run_id}"]
