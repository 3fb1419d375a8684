"""Run a script under torch.profiler in the user's interpreter: the heaviest GPU kernels and aten ops.

The first tool to reach for: it needs no Nsight. The summary is short; the full key_averages table and the
chrome trace are written to files whose paths the result names.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from hotkernel._util.procs import run_command
from hotkernel.errors import HotkernelError
from hotkernel.insight.base import CLI_ONLY, Cli, Hints, InsightContext
from hotkernel.manifest.python import user_python
from hotkernel.workspace.paths import MAX_PATH

WRAPPER = Path(__file__).parent / "scripts" / "trace_wrapper.py"
DEFAULT_TIMEOUT_S = 600.0


class TraceKernel(BaseModel):
    name: str
    calls: int
    total_ms: float
    mean_us: float
    share_pct: float = Field(description="share of all kernel time in the trace")


class TraceOp(BaseModel):
    name: str
    input_shapes: list = []
    calls: int
    cpu_total_ms: float
    self_cpu_ms: float
    device_total_ms: float


class TraceResult(BaseModel):
    """Top kernels and ops of one profiled run; ``files`` names the full table and trace."""

    script: str
    python: str
    device: str
    torch: str | None = None
    cuda: bool
    wall_s: float
    kernel_count: int = Field(description="distinct kernels in the trace")
    total_kernel_ms: float
    kernels: list[TraceKernel]
    ops: list[TraceOp]
    ops_sorted_by: str
    files: dict[str, str]
    notes: list[str] = []


def default_out_dir(root: Path | None) -> Path:
    """``<workspace>/.hotkernel/traces/<timestamp>`` inside a workspace, else a fresh temporary directory."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    if root is not None:
        path = root / ".hotkernel" / "traces" / stamp
        suffix = 1
        while path.exists():
            path = root / ".hotkernel" / "traces" / f"{stamp}-{suffix}"
            suffix += 1
        path.mkdir(parents=True)
        return path
    return Path(tempfile.mkdtemp(prefix=f"hotkernel-trace-{stamp}-"))


def torch_trace(
    script: str | os.PathLike[str],
    *,
    script_args: Sequence[str] = (),
    python: str | None = None,
    top: int = 10,
    out_dir: str | os.PathLike[str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    chrome_trace: bool = True,
    cwd: str | os.PathLike[str] | None = None,
) -> TraceResult:
    """Profile ``script`` (run as ``__main__`` with ``script_args``) and summarise the top ``top`` entries."""
    path = Path(script)
    if not path.is_file():
        raise HotkernelError(f"trace: script {os.fspath(script)!r} not found; give the path of a .py file to run")
    if top < 1:
        raise HotkernelError(f"trace: top={top} must be at least 1")
    if python is None:
        python = user_python(None)
    directory = Path(out_dir) if out_dir is not None else default_out_dir(None)
    directory.mkdir(parents=True, exist_ok=True)
    argv = [python, str(WRAPPER), "--out", str(directory)]
    if not chrome_trace:
        argv.append("--no-chrome-trace")
    argv += ["--", str(path.resolve()), *script_args]
    proc = run_command(
        argv,
        timeout_s=timeout_s,
        out_dir=directory,
        name="script",
        cwd=cwd,  # None: the current directory, as `python script.py` runs
    )
    if proc.timed_out:
        raise HotkernelError(
            f"trace: {path} ran past {timeout_s:.0f} s under the profiler and was killed; make it run fewer "
            f"steps or raise the timeout (timeout_s; --timeout on the command line) (output: {proc.stdout_path})"
        )
    status_file = directory / "status.json"
    if not status_file.is_file():
        last = (proc.stderr(600).strip().splitlines() or ["no output"])[-1]
        raise HotkernelError(
            f"trace: the profiler wrapper in {python} failed before writing results (exit {proc.returncode}: "
            f"{last}); check that this interpreter has torch (log: {proc.stderr_path})"
        )
    status = json.loads(status_file.read_text())
    data = json.loads((directory / "ops.json").read_text())
    notes = []
    if not status.get("ok"):
        (directory / "traceback.txt").write_text(status.get("traceback") or "")
        notes.append(
            f"the script failed: {status.get('error')} (the profile covers the run up to the "
            f"failure; traceback in {directory / 'traceback.txt'})"
        )
    if not status.get("cuda"):
        notes.append("torch.cuda is not available in this interpreter: no GPU kernels, CPU ops only")
    elif not data["kernels"]:
        notes.append("no GPU kernels were recorded: did the script run anything on the GPU?")
    kernels, total_us = rank_kernels(data["kernels"], top)
    ops = [
        TraceOp(
            name=row["name"],
            input_shapes=row["input_shapes"],
            calls=row["calls"],
            cpu_total_ms=row["cpu_time_total_us"] / 1e3,
            self_cpu_ms=row["self_cpu_time_total_us"] / 1e3,
            device_total_ms=row["device_time_total_us"] / 1e3,
        )
        for row in data["ops"][:top]
    ]
    files = {
        "table": str(directory / "table.txt"),
        "ops": str(directory / "ops.json"),
        "stdout": str(proc.stdout_path),
        "stderr": str(proc.stderr_path),
    }
    if (directory / "trace.json").is_file():
        files["chrome_trace"] = str(directory / "trace.json")
    if not status.get("ok") and (directory / "traceback.txt").is_file():
        files["traceback"] = str(directory / "traceback.txt")
    return TraceResult(
        script=str(path),
        python=python,
        device=status.get("device", "?"),
        torch=status.get("torch"),
        cuda=bool(status.get("cuda")),
        wall_s=status.get("wall_s", proc.wall_s),
        kernel_count=len(data["kernels"]),
        total_kernel_ms=total_us / 1e3,
        kernels=kernels,
        ops=ops,
        ops_sorted_by=data.get("ops_sorted_by", ""),
        files=files,
        notes=notes,
    )


def rank_kernels(kernels: list[dict], top: int) -> tuple[list[TraceKernel], float]:
    """The ``top`` heaviest of ``[{name, calls, total_us}]`` with their share of all kernel time."""
    total_us = sum(k["total_us"] for k in kernels)
    ranked = sorted(kernels, key=lambda k: k["total_us"], reverse=True)[:top]
    return [
        TraceKernel(
            name=k["name"],
            calls=k["calls"],
            total_ms=k["total_us"] / 1e3,
            mean_us=k["total_us"] / max(k["calls"], 1),
            share_pct=100.0 * k["total_us"] / total_us if total_us else 0.0,
        )
        for k in ranked
    ], total_us


def summary_lines(result: TraceResult, *, name_width: int = 90) -> list[str]:
    lines = [f"{result.script} on {result.device} (torch {result.torch}, {result.wall_s:.1f} s)"]
    if result.kernels:
        lines.append(f"top GPU kernels ({result.kernel_count} distinct, {result.total_kernel_ms:.3f} ms total):")
        for k in result.kernels:
            lines.append(
                f"  {k.share_pct:5.1f}%  {k.total_ms:9.3f} ms  {k.calls:6d} calls  "
                f"{k.mean_us:9.2f} us/call  {_cut(k.name, name_width)}"
            )
    lines.append(f"top aten ops (by {result.ops_sorted_by}):")
    for op in result.ops:
        time_ms = op.device_total_ms if result.cuda else op.self_cpu_ms
        lines.append(f"  {time_ms:9.3f} ms  {op.calls:6d} calls  {op.name} {op.input_shapes}")
    lines.extend(f"note: {note}" for note in result.notes)
    lines.extend(f"{label}: {path}" for label, path in result.files.items() if label in ("table", "chrome_trace"))
    return lines


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


# ---- the insight tool (hotkernel.insight.base.InsightTool) -------------------------------------------------

NAME = "torch_trace"
CLI_NAME = "trace"
CLI_HELP = (
    "Profile SCRIPT with torch.profiler in the user's interpreter (no Nsight needed): top GPU kernels by device "
    "time (share, calls, mean) and top aten ops with input shapes; full table in a file. The script runs from "
    "the current directory, as `python SCRIPT` does; its arguments follow it."
)
DESCRIPTION = """Run a script under torch.profiler and rank its GPU kernels by total time (share of all kernel time).

Use it to find the kernel that dominates a model or op before optimising anything. Writes the full table
and a Chrome trace under .hotkernel/traces/. For hardware counters of one kernel use profile; for a
kernel's machine code use disasm.
"""
HINTS = Hints(read_only=False, destructive=False, idempotent=False)
LONG_RUNNING = True
RESULT = TraceResult
MAX_ARGS = 256


class Params(BaseModel):
    """torch_trace's parameters."""

    script: Annotated[
        str,
        Field(
            description="workspace-relative path of a Python script that runs the model or op to look at (it "
            "runs as __main__ under torch.profiler in the user's python)",
            min_length=1,
            max_length=MAX_PATH,
        ),
        Cli(argument=True, help="python script to run (its arguments follow it)"),
    ]
    script_args: Annotated[
        list[Annotated[str, Field(max_length=MAX_PATH)]] | None,
        Field(
            description="command-line arguments for the script (a list, never a shell string); default None",
            max_length=MAX_ARGS,
        ),
        Cli(trailing=True),
    ] = None
    top: Annotated[
        int,
        Field(description="kernels and ops to list, 1 to 200; default 10", ge=1, le=200),
        Cli(("-n", "--top"), "kernels and ops to list"),
    ] = 10
    timeout_s: Annotated[
        float,
        Field(description="time limit of the profiled run in seconds, 1 to 3600; default 600", ge=1, le=3600),
        Cli(("--timeout",), "seconds before the script is killed"),
    ] = DEFAULT_TIMEOUT_S
    python: Annotated[
        str | None,
        Field(description="interpreter with torch", max_length=MAX_PATH),
        CLI_ONLY,
        Cli(("--python",), "interpreter with torch (default: as bench)"),
    ] = None
    out: Annotated[
        str | None,
        Field(description="directory for the table and trace", max_length=MAX_PATH),
        CLI_ONLY,
        Cli(
            ("--out",),
            "directory for the table and trace (default: .hotkernel/traces/<time> in a workspace, else a temp dir)",
        ),
    ] = None
    no_chrome_trace: Annotated[
        bool,
        Field(description="skip the chrome trace file"),
        CLI_ONLY,
        Cli(("--no-chrome-trace",), "skip the chrome trace file"),
    ] = False


def run(params: Params, ctx: InsightContext) -> TraceResult:
    """Profile the script in the user's python; tables and trace under .hotkernel/traces/ in a workspace."""
    script = ctx.existing_file(
        params.script,
        "script",
        "give a .py path" + (f" relative to {ctx.workspace.root}" if ctx.confined and ctx.workspace else ""),
    )
    root = ctx.workspace.root if ctx.workspace else None
    out_dir = ctx.path(params.out, "out") if params.out else default_out_dir(root)
    ctx.progress(0, 1, f"profiling {script.name}")
    result = torch_trace(
        script,
        script_args=list(params.script_args or []),
        python=user_python(ctx.workspace, params.python),
        top=params.top,
        out_dir=out_dir,
        timeout_s=params.timeout_s,
        chrome_trace=not params.no_chrome_trace,
        cwd=ctx.start if ctx.confined else None,
    )
    ctx.progress(1, 1, "done")
    return result
