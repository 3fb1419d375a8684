"""``hotkernel gpu``: every GPU here via NVML (nvidia-smi as the fallback), with its roofline entry."""

from __future__ import annotations

import sys

import typer


def emit(model: object, lines: list[str], as_json: bool) -> None:
    """A result as JSON (``--json``) or as its summary lines, on stdout. Shared by the insight commands."""
    if as_json:
        sys.stdout.write(model.model_dump_json(indent=2) + "\n")  # type: ignore[attr-defined]
    else:
        sys.stdout.write("\n".join(lines) + "\n")


def register(app: typer.Typer) -> None:
    """Add the ``gpu`` command to the CLI."""

    @app.command("gpu")
    def gpu_command(
        as_json: bool = typer.Option(False, "--json", help="print the GpuInfo as JSON"),
    ) -> None:
        """Name, UUID, driver/CUDA version, memory, power limits, clocks, temperature and processes of
        every GPU, and its roofline entry. No GPU is a result (exit 0), not an error."""
        from hotkernel.insight.gpu_info import gpu_info, summary_lines

        info = gpu_info()
        emit(info, summary_lines(info), as_json)
