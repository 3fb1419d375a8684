"""``hotkernel trace SCRIPT``: run a script under torch.profiler; top GPU kernels and aten ops."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``trace`` command to the CLI."""

    @app.command("trace", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def trace_command(
        ctx: typer.Context,
        script: str = typer.Argument(..., help="python script to run (its arguments follow it)"),
        top: int = typer.Option(10, "-n", "--top", help="kernels and ops to list"),
        python: str = typer.Option(None, "--python", help="interpreter with torch (default: as bench)"),
        out_dir: str = typer.Option(
            None,
            "--out",
            help="directory for the table and trace (default: "
            ".hotkernel/traces/<time> in a workspace, else a temp dir)",
        ),
        timeout: float = typer.Option(600.0, "--timeout", help="seconds before the script is killed"),
        no_chrome_trace: bool = typer.Option(False, "--no-chrome-trace", help="skip the chrome trace file"),
        as_json: bool = typer.Option(False, "--json", help="print the TraceResult as JSON"),
    ) -> None:
        """Profile SCRIPT with torch.profiler in the user's interpreter (no Nsight needed): top GPU kernels
        by device time (share, calls, mean) and top aten ops with input shapes; full table in a file."""
        from pathlib import Path

        from hotkernel.cli.commands.gpu import emit
        from hotkernel.errors import HotkernelError
        from hotkernel.insight.torch_trace import default_out_dir, summary_lines, torch_trace
        from hotkernel.manifest.python import user_python
        from hotkernel.workspace.paths import find_workspace

        try:
            ws = find_workspace()
        except HotkernelError:
            ws = None
        directory = Path(out_dir) if out_dir else default_out_dir(ws.root if ws else None)
        result = torch_trace(
            script,
            script_args=list(ctx.args),
            python=user_python(ws, python),
            top=top,
            out_dir=directory,
            timeout_s=timeout,
            chrome_trace=not no_chrome_trace,
        )
        emit(result, summary_lines(result), as_json)
