"""``hotkernel bench SCRIPT``: run one script n times after warmup runs; mean, std, min, median, samples."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

from hotkernel.manifest import load_manifest
from hotkernel.run.bench import bench
from hotkernel.workspace.paths import find_workspace


def console() -> Any:
    """The rich console for progress and tables (stderr, so --json output stays clean on stdout)."""

    return Console(stderr=True, soft_wrap=True)


@contextlib.contextmanager
def progress_display(title: str, *, enabled: bool = True) -> Iterator[Callable[[int, int, str], None]]:
    """A rich progress bar on stderr, started at the first update (so an early error prints alone); off a
    terminal (CI logs) one plain line per update instead. Yields a ``progress(done, total, message)``."""
    out = console()
    if not enabled:
        yield lambda done, total, message: None
        return
    if not out.is_terminal:

        def plain(done: int, total: int, message: str) -> None:
            print(f"[{done}/{total}] {message}" if total else message, file=sys.stderr, flush=True)

        yield plain
        return

    bar = Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[message]}"),
        console=out,
        transient=False,
    )
    task: list[Any] = []

    def update(done: int, total: int, message: str) -> None:
        if not task:
            bar.start()
            task.append(bar.add_task(title, total=None, message=""))
        bar.update(task[0], completed=done, total=total or None, message=message)

    try:
        yield update
    finally:
        if task:
            bar.stop()


def print_json(model: Any) -> None:
    """A result model as indented JSON on stdout."""
    sys.stdout.write(model.model_dump_json(indent=2) + "\n")


def manifest_defaults(ws: Any) -> Any:
    """The manifest's ``defaults`` (n, warmup, timeout_s, python), or None when it cannot be read."""

    return load_manifest(ws.manifest).defaults


def register(app: typer.Typer) -> None:
    """Add the ``bench`` command to the CLI."""

    @app.command("bench")
    def bench_command(
        script: str = typer.Argument(..., help="script to run, e.g. targets/rmsnorm/candidate.py"),
        n: int = typer.Option(None, "-n", "--runs", help="timed runs (default: manifest defaults.n, 7)"),
        warmup: int = typer.Option(None, "--warmup", help="untimed runs first (default: defaults.warmup)"),
        as_json: bool = typer.Option(False, "--json", help="print the BenchResult as JSON on stdout"),
    ) -> None:
        """Run SCRIPT n times after warmup runs and report mean, std, min, median and every sample.

        Exit 1 when a run crashed, hung, printed no (or two) JSON lines, or failed a check.
        """

        ws = find_workspace()
        defaults = manifest_defaults(ws)
        role = "baseline" if script.endswith("baseline.py") else "candidate"
        with progress_display(f"bench {script}", enabled=not as_json) as progress:
            result = bench(
                ws,
                script,
                n=n if n is not None else defaults.n,
                warmup=defaults.warmup if warmup is None else warmup,
                role=role,
                timeout_s=defaults.timeout_s,
                progress=progress,
            )
        if as_json:
            print_json(result)
        else:
            print_bench(result)
        if result.status != "ok":
            raise SystemExit(1)


def print_bench(result: Any) -> None:
    """People-readable bench summary."""
    out = console()
    stats = result.stats
    if result.status != "ok":
        out.print(f"[red]{result.status}[/red]: {result.reason}")
    if stats.n:
        out.print(
            f"{result.script}: mean {stats.mean_ms:.4f} ms, std {stats.std_ms:.4f}, min {stats.min_ms:.4f}, "
            f"median {stats.median_ms:.4f} (n={stats.n}, device {result.device})"
        )
        out.print("samples (ms): " + ", ".join(f"{s:.4f}" for s in stats.samples_ms))
    if result.run_id:
        out.print(f"run: {result.run_id} (.hotkernel/runs/{result.run_id}.json)", markup=False, highlight=False)
