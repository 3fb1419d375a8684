"""``hotkernel profile --tool ncu|nsys -- CMD...``: a report and its top kernels, or a diagnosis."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``profile`` command to the CLI."""

    @app.command("profile", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def profile_command(
        ctx: typer.Context,
        tool: str = typer.Option("ncu", "--tool", help="ncu (per-kernel metrics) or nsys (timeline)"),
        kernel_regex: str = typer.Option(None, "--kernel-regex", "-k", help="profile only kernels matching"),
        launch_count: int = typer.Option(None, "--launch-count", "-c", help="stop after N profiled launches"),
        launch_skip: int = typer.Option(
            None, "--launch-skip", "-s", help="skip the first N matching launches"
        ),
        cache_control: str = typer.Option("all", "--cache-control", help="all (flush caches) or none"),
        clock_control: str = typer.Option("none", "--clock-control", help="none (default), base, boost"),
        section_set: str = typer.Option(None, "--set", help="ncu section set (default: ncu's basic)"),
        timeout: float = typer.Option(600.0, "--timeout", help="seconds before the profiler is killed"),
        out_dir: str = typer.Option(
            None,
            "--out",
            help="directory for the report (default: "
            ".hotkernel/profiles/<time> in a workspace, else a temp dir)",
        ),
        top: int = typer.Option(10, "-n", "--top", help="kernels to list"),
        as_json: bool = typer.Option(False, "--json", help="print the ProfileResult as JSON"),
    ) -> None:
        """Run CMD (after `--`) under Nsight Compute or Nsight Systems. Exit 1 with the diagnosis (fix and
        fallback) when the profiler is missing, lacks counter permission, matched no kernel, timed out, or
        (nsys) could not import its capture."""
        import time
        from pathlib import Path

        from hotkernel.cli.commands.gpu import emit
        from hotkernel.errors import HotkernelError
        from hotkernel.insight.profile import profile, summary_lines
        from hotkernel.workspace.paths import find_workspace

        command = list(ctx.args)
        directory = Path(out_dir) if out_dir else None
        if directory is None:
            try:
                directory = find_workspace().state_dir / "profiles" / time.strftime("%Y%m%d-%H%M%S")
            except HotkernelError:
                directory = None
        result = profile(
            command,
            tool=tool,
            kernel_regex=kernel_regex,
            launch_count=launch_count,
            launch_skip=launch_skip,
            cache_control=cache_control,
            clock_control=clock_control,
            section_set=section_set,
            timeout_s=timeout,
            out_dir=directory,
            top=top,
        )
        emit(result, summary_lines(result), as_json)
        if not result.ok:
            raise SystemExit(1)
