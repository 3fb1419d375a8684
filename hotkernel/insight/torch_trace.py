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

from pydantic import BaseModel, Field

from hotkernel._util.procs import run_command
from hotkernel.errors import HotkernelError

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
        raise HotkernelError(
            f"trace: script {os.fspath(script)!r} not found; give the path of a .py file to run"
        )
    if top < 1:
        raise HotkernelError(f"trace: top={top} must be at least 1")
    if python is None:
        from hotkernel.manifest.python import user_python

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
        cwd=cwd if cwd is not None else path.resolve().parent,
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
        lines.append(
            f"top GPU kernels ({result.kernel_count} distinct, {result.total_kernel_ms:.3f} ms total):"
        )
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
    lines.extend(
        f"{label}: {path}" for label, path in result.files.items() if label in ("table", "chrome_trace")
    )
    return lines


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
