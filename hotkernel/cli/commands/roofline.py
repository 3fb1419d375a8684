"""``hotkernel roofline``: ridge point, bound and attainable time of (flops, bytes) on a GPU."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``roofline`` command to the CLI."""

    @app.command("roofline")
    def roofline_command(
        flops: float = typer.Option(0.0, "--flops", help="floating-point operations of one call"),
        bytes_moved: float = typer.Option(0.0, "--bytes", help="bytes read + written by one call"),
        gpu: str = typer.Option(None, "--gpu", help="GPU name or table key (default: the first GPU here)"),
        dtype: str = typer.Option("bf16", "--dtype", help="bf16 | fp16 | fp8 | fp32"),
        measured_gbps: float = typer.Option(
            None, "--measured-gbps", help="measured bandwidth (default: this workspace's calibration)"
        ),
        list_gpus: bool = typer.Option(False, "--list", help="print the GPU table with its sources"),
        as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
    ) -> None:
        """Where a kernel sits on the roofline: intensity, ridge point, memory- or compute-bound,
        attainable TFLOP/s and attainable_ms (spec), attainable_ms_measured (calibrated bandwidth)."""
        from hotkernel.cli.commands.gpu import emit
        from hotkernel.errors import HotkernelError
        from hotkernel.insight.roofline import roofline, summary_lines, table_lines
        from hotkernel.insight.specs import gpu_table

        if list_gpus:
            table = gpu_table()
            if as_json:
                import json

                typer.echo(json.dumps([spec.model_dump() for spec in table], indent=2))
            else:
                typer.echo("\n".join(table_lines()))
            return
        workspace = None
        try:
            from hotkernel.workspace.paths import find_workspace

            workspace = find_workspace().root
        except HotkernelError:
            workspace = None
        result = roofline(
            flops, bytes_moved, gpu=gpu, dtype=dtype, measured_gbps=measured_gbps, workspace=workspace
        )
        emit(result, summary_lines(result), as_json)
