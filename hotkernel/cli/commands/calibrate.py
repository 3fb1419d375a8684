"""``hotkernel calibrate``: measure this GPU's streaming ceilings and store them per GPU UUID."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``calibrate`` command to the CLI."""

    @app.command("calibrate")
    def calibrate_command(
        python: str = typer.Option(
            None,
            "--python",
            help="interpreter with torch (default: HOTKERNEL_PYTHON, "
            "hotkernel.yaml defaults.python, python on PATH)",
        ),
        size_mib: int = typer.Option(0, "--mib", help="MiB per buffer (default: 8x L2, at least 256)"),
        device: str = typer.Option("cuda", "--device", help="cuda (default) or cpu (tests the probe only)"),
        timeout: float = typer.Option(300.0, "--timeout", help="seconds before the probe is killed"),
        as_json: bool = typer.Option(False, "--json", help="print the CalibrationEntry as JSON"),
    ) -> None:
        """Time a device copy (read + write) and a read-only reduction in the user's interpreter; store the
        GB/s under .hotkernel/calibration.json for this GPU's UUID (roofline and verify read it)."""
        from hotkernel.cli.commands.gpu import emit
        from hotkernel.errors import HotkernelError
        from hotkernel.insight.calibrate import calibrate, summary_lines
        from hotkernel.insight.calibration import calibration_path
        from hotkernel.workspace.paths import find_workspace

        if device not in ("cuda", "cpu"):
            raise HotkernelError(f"calibrate: --device {device!r} must be cuda or cpu")
        ws = find_workspace()
        entry = calibrate(ws, python=python, device=device, size_mib=size_mib, timeout_s=timeout)
        emit(entry, summary_lines(entry, calibration_path(ws)), as_json)
