"""``hotkernel sync [NAMES...]``: render what is missing, then verify and record what is out of date."""

from __future__ import annotations

import sys
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from hotkernel._util.procs import TerminationRaises
from hotkernel.cli.commands.bench import progress_display
from hotkernel.errors import HotkernelError
from hotkernel.reconcile.budget import duration_text, parse_budget
from hotkernel.reconcile.interrupt import interrupt_report
from hotkernel.reconcile.plan import check_exit_code, plan_lines
from hotkernel.reconcile.sync import sync
from hotkernel.store.leaderboard import store_problems
from hotkernel.workspace.paths import find_workspace


def register(app: typer.Typer) -> None:
    """Add the ``sync`` command to the CLI."""

    @app.command("sync")
    def sync_command(
        names: list[str] = typer.Argument(None, help="targets to reconcile (default: all)"),
        check: bool = typer.Option(
            False, "--check", help="run nothing: exit 0 when up to date, 2 when out of date, 1 on error"
        ),
        from_scratch: bool = typer.Option(
            False, "--from-scratch", help="re-run every selected target into new records"
        ),
        n: int = typer.Option(None, "-n", "--rounds", help="verify rounds per target (default: defaults.n)"),
        wait: float = typer.Option(
            0.0, "--wait", help="seconds to wait for another sync holding the workspace lock (0 = refuse)"
        ),
        who: str = typer.Option(
            None,
            "--who",
            help="author recorded for the candidates (default: $HOTKERNEL_WHO or git user.name)",
        ),
        gpus: str = typer.Option(
            None,
            "--gpus",
            help="run one verify per GPU of this host at a time: 'all' or indices like '0,1' (default: one at a "
            "time on the visible GPU, a CPU lane beside it for cpu targets where the host has CPUs to spare)",
        ),
        serial: bool = typer.Option(
            False,
            "--serial",
            help="one verify at a time in this process, cpu targets too (no CPU lane beside the GPU's)",
        ),
        executor: str = typer.Option(
            "local", "--executor", help="'local' (this host) or 'ray' (each verify a Ray task on one GPU)"
        ),
        address: str = typer.Option(
            None, "--address", help="Ray cluster address for --executor ray (default: start a local Ray instance)"
        ),
        budget: str = typer.Option(
            None,
            "--budget",
            help="stop after this long (90s, 10m, 1h): most out-of-date targets first; a verify still running "
            "then is cancelled unrecorded, and the report says what is left",
        ),
        as_json: bool = typer.Option(False, "--json", help="print the SyncReport as JSON"),
    ) -> None:
        """Bring the workspace up to date: render, verify, record, regenerate LEADERBOARD.md.

        Targets never recorded run first, then the others by the age of their newest record. A faster result
        that would be a new best is verified a second time and both are recorded. Results go to stdout,
        progress to stderr. A failing target is reported and the others go on; exit 1 at the end when any
        target failed or recorded an incorrect/invalid verdict. cuda targets on a machine without an NVIDIA
        GPU are skipped. Ctrl-C or SIGTERM stops it (exit 130 or 143) after the report of what it finished
        and what is left (with --json: the report with "interrupted": true and "signal").
        """

        ws = find_workspace()
        try:
            budget_s = parse_budget(budget)
        except HotkernelError as err:
            raise typer.BadParameter(str(err).split(": ", 1)[-1], param_hint="--budget") from None
        if check:
            report = sync(ws, names or None, check=True)
            if as_json:
                typer.echo(report.model_dump_json(indent=2))
            else:
                for line in plan_lines(report.plan):
                    typer.echo(line)
                for entry in report.headline:
                    typer.echo(f"  best: {entry.target}: {headline_text(entry)}")
            raise SystemExit(check_exit_code(report))
        try:
            # SIGTERM/SIGHUP raise from the start (sync holds them raising too), so the report below goes out
            with TerminationRaises(), progress_display("sync", enabled=not as_json) as progress:
                report = sync(
                    ws,
                    names or None,
                    from_scratch=from_scratch,
                    n=n,
                    wait_s=wait,
                    who=who,
                    progress=progress,
                    gpus=gpus,
                    executor=executor,
                    address=address,
                    budget_s=budget_s,
                    serial=serial,
                )
        except (KeyboardInterrupt, SystemExit) as stop:  # Ctrl-C, SIGTERM, SIGHUP: report, then exit as signalled
            partial = interrupt_report(stop, names or None)
            if partial is None:
                raise
            print(
                "sync interrupted: the records written before it are kept, the lock and LEADERBOARD.md agree "
                "with them; `hotkernel sync` goes on with what is left",
                file=sys.stderr,
            )
            if as_json:
                typer.echo(partial.model_dump_json(indent=2))
            else:
                print_report(partial, [])  # the store's problems are not read again on the way out
            raise
        if as_json:
            typer.echo(report.model_dump_json(indent=2))
        else:
            print_report(report, store_problems(ws))
        if report.failed:
            raise SystemExit(1)


def print_report(report: Any, problems: list[str]) -> None:
    """One line per target (pre-commit style) with its verdict, ratio and interval, or its newest record; what
    is still torn (``problems``, read after the sync); what the budget or an interrupt left; then the
    leaderboard's best rows.
    On stdout: the results are the command's output (progress went to stderr)."""
    out = Console(soft_wrap=True)
    width = max((len(i.name) for i in report.items), default=10) + 4
    colours = {"recorded": "green", "up to date": "dim", "skipped": "yellow", "failed": "red", "not run": "yellow"}
    for item in report.items:
        colour = "red" if item.verdict in ("incorrect", "invalid") else colours[item.status]
        name = item.name.ljust(width, ".")
        out.print(f"{name} [{colour}]{item.status}[/{colour}]{item_detail(item, report)}", highlight=False)
    for line in problems:
        out.print(f"! {line}", markup=False, highlight=False)
    for line in report.repaired:
        out.print(f"repaired: {line}", markup=False, highlight=False)
    counts: dict[str, int] = {}
    for item in report.items:
        counts[item.status] = counts.get(item.status, 0) + 1
    interrupted = getattr(report, "interrupted", False)
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    out.print(
        f"Sync: {summary or ('nothing done' if interrupted else 'nothing to do')}.", markup=False, highlight=False
    )
    if "," in getattr(report, "lanes", ""):
        out.print(f"Lanes side by side: {report.lanes}.", markup=False, highlight=False)
    stopped = f"sync was interrupted ({report.signal})" if interrupted and report.signal else "sync was interrupted"
    for note in report.plan.notes if interrupted and not report.items else []:  # stopped before its plan
        out.print(note, markup=False, highlight=False)
    if report.left:
        spent = f"the {duration_text(report.budget_s)} budget" if report.budget_s else "the budget"
        when = stopped if interrupted else f"{spent} was spent"
        out.print(
            f"Left when {when}: {', '.join(dict.fromkeys(report.left))}; run `hotkernel sync` again "
            "to continue (most out-of-date first)",
            markup=False,
            highlight=False,
        )
    elif interrupted:
        out.print(f"{stopped} with nothing left to run", markup=False, highlight=False)
    if report.headline:
        out.print("Best so far (LEADERBOARD.md):")
        for entry in report.headline:
            out.print(f"  {entry.target}: {headline_text(entry)}", markup=False, highlight=False)
    else:
        out.print(
            "Best so far: no counted faster record yet (LEADERBOARD.md); edit targets/<name>/candidate.py, "
            "then `hotkernel sync`",
            markup=False,
            highlight=False,
        )


def item_detail(item: Any, report: Any) -> str:
    """': faster 1.530x [1.498, 1.563], beats the best so far (results/...)' for a recorded item; the reason
    and the newest record for the others (rich markup escaped)."""
    if item.status == "recorded":
        detail = f": {item.verdict}{ratio_text(item.speedup, item.interval)}"
        if item.confirms:
            detail += f", confirms {item.confirms}"
        elif item.beats_best:
            detail += ", beats the best so far"
            detail += " (inside the two verifies' noise)" if not item.clear_of_best else ""
        detail += f" ({item.record})"
        if item.verdict in ("incorrect", "invalid"):
            detail += f" reason: {item.reason}"
        if item.noisy:
            detail += f"; {item.noisy}"
    else:
        detail = f" ({item.reason})" if item.reason else ""
        latest = report.latest.get(item.name)
        detail += f"; last record: {row_text(latest)}" if latest else "; no record of this protocol yet"
    return escape(detail)


def ratio_text(speedup: float | None, interval: list[float] | None) -> str:
    """' 1.530x [1.498, 1.563]', whatever the verdict ('' when nothing was measured)."""
    text = f" {speedup:.3f}x" if speedup is not None else ""
    return text + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")


def headline_text(entry: Any) -> str:
    """'1.570x on NVIDIA H200, the median of 4 runs of its files (1.568-1.571x; results/...)': the board's
    headline for a crowned candidate (its best record's text where the files are unknown)."""
    if entry.median is None:
        return row_text(entry.best)
    runs = entry.same_files_runs
    low, high = entry.same_files_point_low, entry.same_files_point_high
    spread = f"{low:.3f}-{high:.3f}x; " if low is not None and high is not None else ""
    return (
        f"{entry.median:.3f}x on {entry.device}, the median of {runs} run{'s' if runs != 1 else ''} of its files "
        f"({spread}{entry.best.path})"
    )


def row_text(row: Any) -> str:
    """'faster 1.530x [1.498, 1.563] on NVIDIA H200 (results/...)' for a leaderboard row."""
    return f"{row.verdict}{ratio_text(row.speedup, row.interval)} on {row.device} ({row.path})"
