"""``hotkernel import kernelbench DIR`` / ``hotkernel import gpumode TASK_DIR``: one target per problem of a
suite (``hotkernel.suites.importer.import_suite``; the MCP tool ``import_suite`` calls the same function)."""

from __future__ import annotations

import json

import typer

from hotkernel.cli.commands.new import workspace_for_new
from hotkernel.errors import HotkernelError, quote
from hotkernel.manifest.model import DEVICES, normalise_dtype
from hotkernel.suites.importer import SuiteImport, import_suite

__all__ = ["register"]


def parse_numbers(text: str | None) -> list[int] | None:
    """``"19,23,40"`` -> ``[19, 23, 40]``."""
    if text is None:
        return None
    try:
        numbers = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise HotkernelError(f"--problems {quote(text)}: write numbers separated by commas, e.g. 19,23,40") from None
    if not numbers:
        raise HotkernelError("--problems: give at least one problem number, e.g. 19,23,40")
    return numbers


def summary(result: SuiteImport) -> list[str]:
    """Lines: one per target added, one per flag of a target, one per problem skipped and why, and the totals."""
    lines = [
        f"added {item.target} ({item.problem}: {', '.join(item.shapes)}"
        + (f", {item.cases[0]}" if item.cases and result.suite == "kernelbench" else "")
        + ")"
        for item in result.imported
    ]
    lines += [f"flagged {item.target}: {flag}" for item in result.imported for flag in item.flags]
    lines += [f"skipped {item.problem}: {item.reason}" for item in result.skipped]
    lines.append(f"{len(result.imported)} imported, {len(result.skipped)} skipped, into {result.manifest}")
    return lines


def register(app: typer.Typer) -> None:
    """Add the ``import`` command to the CLI."""

    @app.command("import")
    def import_command(
        suite: str = typer.Argument(..., help="kernelbench or gpumode", metavar="kernelbench|gpumode"),
        directory: str = typer.Argument(
            ...,
            help="KernelBench: a level folder (or the folder holding level1/...); "
            "GPU MODE: a task folder (reference-kernels/problems/pmpp/vectoradd_py), a suite folder "
            "(problems/pmpp) or problems/ itself",
        ),
        level: int | None = typer.Option(
            None, "--level", help="KernelBench level (default: the folder's name, level2 -> 2, else 1)"
        ),
        problems: str | None = typer.Option(None, "--problems", help="KernelBench problem numbers, e.g. 19,23"),
        dtype: str | None = typer.Option(
            None, "--dtype", help="target dtype (KernelBench default fp32; GPU MODE: the reference's output dtype)"
        ),
        scale: float | None = typer.Option(
            None,
            "--scale",
            help="KernelBench: shrink the batch and every dimension constant above 64 by this factor, e.g. 0.25",
        ),
        device: str | None = typer.Option(None, "--device", help="cuda or cpu (default: defaults.device)"),
        cases: str = typer.Option(
            "benchmarks",
            "--cases",
            help="GPU MODE: the shapes from task.yml's benchmarks (timed sizes) or tests (smaller correctness "
            "sizes, e.g. for a CPU)",
        ),
        as_json: bool = typer.Option(False, "--json", help="print the SuiteImport as JSON"),
    ) -> None:
        """Add one target per problem of a KernelBench level or a GPU MODE task to hotkernel.yaml."""
        if suite not in ("kernelbench", "gpumode"):
            raise HotkernelError(f"hotkernel import {quote(suite)}: the suite is kernelbench or gpumode")
        if device is not None and device not in DEVICES:
            raise HotkernelError(f"--device {quote(device)}: use one of {', '.join(DEVICES)}")
        try:
            dtype_name = normalise_dtype(dtype) if dtype is not None else None
        except ValueError as err:
            raise HotkernelError(f"--dtype: {err}") from None
        result = import_suite(
            workspace_for_new(),
            suite,
            directory,
            level=level,
            problems=parse_numbers(problems),
            dtype=dtype_name,
            scale=scale,
            device=device,
            cases=cases,
        )  # type: ignore[arg-type]
        if as_json:
            typer.echo(json.dumps(result.model_dump(mode="json"), indent=2, sort_keys=True))
            return
        for line in summary(result):
            typer.echo(line)
