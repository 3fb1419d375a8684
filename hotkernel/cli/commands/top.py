"""``hotkernel top REPORT``: the heaviest kernels of a saved nsys/ncu report or torch.profiler trace."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``top`` command to the CLI."""

    @app.command("top")
    def top_command(
        report: str = typer.Argument(
            ...,
            help="nsys cuda_gpu_kern_sum CSV, ncu details/raw CSV, .ncu-rep, "
            "or a torch.profiler chrome trace .json",
        ),
        n: int = typer.Option(10, "-n", help="kernels to list"),
        as_json: bool = typer.Option(False, "--json", help="print the TopKernels as JSON"),
    ) -> None:
        """The n heaviest kernels: share of GPU time, calls, avg/med/min/max/std; from ncu also occupancy,
        DRAM and SM throughput, registers and a memory/compute/latency-bound hint."""
        from hotkernel.cli.commands.gpu import emit
        from hotkernel.insight.top_kernels import summary_lines, top_kernels

        result = top_kernels(report, n=n)
        emit(result, summary_lines(result), as_json)
