"""Run a command under Nsight Compute (ncu) or Nsight Systems (nsys): the report path and its top kernels.

ncu runs with ``--clock-control none`` by default (the clocks the program really gets), a kernel-name regex
and a launch count to keep it fast, and a cache-control choice. Known failures come back as a ``Diagnosis``
with the fix and the fallback: tool not installed, performance counters not permitted (ERR_NVGPUCTRPERM), no
kernel matched, nsys that writes a ``.qdstrm`` it cannot import (the lent H200 does this), a timeout.
"""

from __future__ import annotations

import glob
import os
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from hotkernel._util.procs import find_executable, run_command
from hotkernel.errors import HotkernelError
from hotkernel.insight.base import CLI_ONLY, Cli, Hints, InsightContext
from hotkernel.insight.ncu_report import find_ncu
from hotkernel.insight.top_kernels import TopKernels, top_kernels
from hotkernel.insight.top_kernels import summary_lines as top_lines
from hotkernel.manifest.python import user_python
from hotkernel.workspace.paths import MAX_PATH, TARGET_NAME_RE

DEFAULT_TIMEOUT_S = 600.0
CACHE_CONTROL = ("all", "none")
CLOCK_CONTROL = ("none", "base", "boost", "reset")
TRACE_FALLBACK = "torch_trace (`hotkernel trace SCRIPT`: torch.profiler, needs no Nsight and no counter permission)"
NCU_FALLBACK = "`hotkernel profile --tool ncu -- CMD` (Nsight Compute) or " + TRACE_FALLBACK


class Diagnosis(BaseModel):
    """Why a profile did not produce a report, what fixes it, and what to use meanwhile."""

    code: str = Field(
        description="not_installed | counters_not_permitted | no_kernels | nsys_import_failed | timeout | "
        "cancelled | command_failed"
    )
    message: str
    fix: str
    fallback: str

    def one_line(self) -> str:
        return f"{self.message}; fix: {self.fix}; meanwhile: {self.fallback}"


class ProfileResult(BaseModel):
    ok: bool
    tool: str
    tool_path: str | None
    command: list[str]
    report: str | None = Field(default=None, description=".ncu-rep / .nsys-rep written")
    summary: TopKernels | None = None
    diagnosis: Diagnosis | None = None
    returncode: int | None = None
    wall_s: float | None = None
    logs: dict[str, str] = {}
    notes: list[str] = []


def find_nsys() -> Path | None:
    """nsys on PATH, under CUDA_HOME, in an Nsight Systems install, or the copy bundled with ncu."""
    extra = sorted(glob.glob("/opt/nvidia/nsight-systems/*/bin"), reverse=True)
    extra += ["/usr/local/cuda/bin"]
    extra += sorted(glob.glob("/opt/nvidia/nsight-compute/*/host/target-linux-x64"), reverse=True)
    return find_executable("nsys", env_homes=("CUDA_HOME", "CUDA_PATH"), extra_dirs=extra)


def ncu_argv(
    ncu: str,
    command: Sequence[str],
    report_base: Path,
    *,
    kernel_regex: str | None,
    launch_count: int | None,
    launch_skip: int | None,
    cache_control: str,
    clock_control: str,
    section_set: str | None,
    metrics: Sequence[str] | None = None,
) -> list[str]:
    """The ncu command line (``-o`` report, every child process, clocks untouched unless asked).

    ``metrics`` are collected on top of ``section_set`` (ncu collects only them when no set is named).
    """
    argv = [
        ncu,
        "--clock-control",
        clock_control,
        "--cache-control",
        cache_control,
        "--target-processes",
        "all",
    ]
    argv += ["-f", "-o", str(report_base)]
    if kernel_regex:
        argv += [
            "--kernel-name",
            kernel_regex if kernel_regex.startswith("regex:") else f"regex:{kernel_regex}",
        ]
    if launch_skip:
        argv += ["--launch-skip", str(launch_skip)]
    if launch_count:
        argv += ["--launch-count", str(launch_count)]
    if section_set:
        argv += ["--set", section_set]
    if metrics:
        argv += ["--metrics", ",".join(metrics)]
    return argv + list(command)


def nsys_argv(nsys: str, command: Sequence[str], report_base: Path) -> list[str]:
    return [nsys, "profile", "-o", str(report_base), "-f", "true", "--trace", "cuda,nvtx", *command]


def diagnose(
    tool: str,
    output: str,
    *,
    returncode: int | None,
    timed_out: bool = False,
    cancelled: bool = False,
    report_dir: Path | None = None,
    timeout_s: float | None = None,
) -> Diagnosis | None:
    """The known failure behind ``output`` (stdout + stderr of the profiler), or None when none matched."""
    if cancelled:
        return Diagnosis(
            code="cancelled",
            message=f"{tool} was cancelled; its process group was killed",
            fix="run it again",
            fallback=TRACE_FALLBACK,
        )
    if timed_out:
        return Diagnosis(
            code="timeout",
            message=f"{tool} ran past {timeout_s or '?'} s and was killed (its whole process group)",
            fix="narrow it: --kernel-regex NAME --launch-count 1 (ncu replays every kernel many times), "
            "a shorter command, or a larger --timeout",
            fallback=TRACE_FALLBACK,
        )
    if "ERR_NVGPUCTRPERM" in output:
        return Diagnosis(
            code="counters_not_permitted",
            message="ncu may not read the GPU performance counters here (ERR_NVGPUCTRPERM)",
            fix="run as root, or load the driver with NVreg_RestrictProfilingToAdminUsers=0 "
            "(see https://developer.nvidia.com/ERR_NVGPUCTRPERM); in a container add CAP_SYS_ADMIN",
            fallback=TRACE_FALLBACK,
        )
    if "Unable to retrieve the importer version" in output or (
        tool == "nsys"
        and report_dir is not None
        and list(report_dir.glob("*.qdstrm"))
        and not list(report_dir.glob("*.nsys-rep"))
    ):
        return Diagnosis(
            code="nsys_import_failed",
            message="nsys wrote a raw .qdstrm but cannot import it into an .nsys-rep ('Unable to retrieve "
            "the importer version': an nsys without its QdstrmImporter, like the one bundled with ncu)",
            fix="install the full Nsight Systems package and use its nsys (or run QdstrmImporter on the "
            ".qdstrm elsewhere)",
            fallback=NCU_FALLBACK,
        )
    if "No kernels were profiled" in output:
        return Diagnosis(
            code="no_kernels",
            message="ncu profiled no kernel",
            fix="check --kernel-regex (it matches the kernel's function name, e.g. 'rmsnorm'), "
            "--launch-skip, and that the command launches CUDA kernels",
            fallback=TRACE_FALLBACK,
        )
    if returncode not in (0, None):
        last = next((line.strip() for line in reversed(output.splitlines()) if line.strip()), "no output")
        return Diagnosis(
            code="command_failed",
            message=f"{tool} exited {returncode}: {last[:300]}",
            fix="read the log named in logs; run the command alone to see that it works",
            fallback=TRACE_FALLBACK,
        )
    return None


def profile(
    command: Sequence[str],
    *,
    tool: str = "ncu",
    kernel_regex: str | None = None,
    launch_count: int | None = None,
    launch_skip: int | None = None,
    cache_control: str = "all",
    clock_control: str = "none",
    section_set: str | None = None,
    metrics: Sequence[str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    out_dir: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    top: int = 10,
    keep_qdstrm: bool = False,
    cancel: threading.Event | None = None,
) -> ProfileResult:
    """Profile ``command`` (an argument list) with ``tool``; bad arguments raise, tool failures diagnose."""
    command = [str(part) for part in command]
    if not command:
        raise HotkernelError("profile: no command given; put it after `--`, e.g. `hotkernel profile -- python x.py`")
    if tool not in ("ncu", "nsys"):
        raise HotkernelError(f"profile: tool {tool!r} unknown; use ncu (kernel metrics) or nsys (timeline)")
    if cache_control not in CACHE_CONTROL:
        raise HotkernelError(f"profile: cache_control {cache_control!r} must be one of {', '.join(CACHE_CONTROL)}")
    if clock_control not in CLOCK_CONTROL:
        raise HotkernelError(f"profile: clock_control {clock_control!r} must be one of {', '.join(CLOCK_CONTROL)}")
    for label, value in (("launch_count", launch_count), ("launch_skip", launch_skip)):
        if value is not None and value < 0:
            raise HotkernelError(f"profile: {label}={value} must be >= 0")
    if timeout_s <= 0:
        raise HotkernelError(f"profile: timeout {timeout_s} must be > 0 seconds")
    found = find_ncu() if tool == "ncu" else find_nsys()
    if found is None:
        where = "ncu (Nsight Compute)" if tool == "ncu" else "nsys (Nsight Systems)"
        return ProfileResult(
            ok=False,
            tool=tool,
            tool_path=None,
            command=command,
            diagnosis=Diagnosis(
                code="not_installed",
                message=f"{where} not found on PATH, under CUDA_HOME or /opt/nvidia",
                fix="install the CUDA toolkit (it ships ncu and nsys) or put the tool on PATH",
                fallback=TRACE_FALLBACK if tool == "ncu" else NCU_FALLBACK,
            ),
        )
    if out_dir is not None:
        directory = Path(out_dir)
        directory.mkdir(parents=True, exist_ok=True)
    else:
        directory = Path(tempfile.mkdtemp(prefix=f"hotkernel-profile-{time.strftime('%Y%m%d-%H%M%S')}-"))
    report_base = directory / "report"
    if tool == "ncu":
        argv = ncu_argv(
            str(found),
            command,
            report_base,
            kernel_regex=kernel_regex,
            launch_count=launch_count,
            launch_skip=launch_skip,
            cache_control=cache_control,
            clock_control=clock_control,
            section_set=section_set,
            metrics=metrics,
        )
    else:
        argv = nsys_argv(str(found), command, report_base)
    proc = run_command(argv, timeout_s=timeout_s, cwd=cwd, out_dir=directory, name=tool, cancel=cancel)
    logs = {"stdout": str(proc.stdout_path), "stderr": str(proc.stderr_path)}
    base = dict(
        tool=tool,
        tool_path=str(found),
        command=argv,
        returncode=proc.returncode,
        wall_s=proc.wall_s,
        logs=logs,
    )
    output = proc.output(20000)
    report = report_base.with_suffix(".ncu-rep" if tool == "ncu" else ".nsys-rep")
    diagnosis = diagnose(
        tool,
        output,
        returncode=proc.returncode,
        timed_out=proc.timed_out,
        cancelled=proc.cancelled,
        report_dir=directory,
        timeout_s=timeout_s,
    )
    if diagnosis is not None and not (diagnosis.code == "command_failed" and report.is_file()):
        notes = _drop_qdstrm(directory) if diagnosis.code == "nsys_import_failed" and not keep_qdstrm else []
        return ProfileResult(
            ok=False,
            diagnosis=diagnosis,
            report=str(report) if report.is_file() else None,
            notes=notes,
            **base,
        )
    if not report.is_file():
        return ProfileResult(
            ok=False,
            diagnosis=Diagnosis(
                code="command_failed",
                message=f"{tool} finished (exit {proc.returncode}) but wrote no {report.name}",
                fix="read the log named in logs",
                fallback=TRACE_FALLBACK,
            ),
            **base,
        )
    notes = []
    if diagnosis is not None:
        notes.append(f"the profiled command failed ({diagnosis.message}); the report covers what ran")
    summary_source = report if tool == "ncu" else _nsys_stats(found, report, directory, notes)
    summary = None
    if summary_source is not None:
        try:
            summary = top_kernels(summary_source, n=top)
        except HotkernelError as err:
            notes.append(f"report written but not summarised: {err}")
    return ProfileResult(ok=True, report=str(report), summary=summary, notes=notes, **base)


def _nsys_stats(nsys: Path, report: Path, directory: Path, notes: list[str]) -> Path | None:
    """``nsys stats --report cuda_gpu_kern_sum --format csv``; the CSV path, or None with a note."""
    proc = run_command(
        [
            str(nsys),
            "stats",
            "--report",
            "cuda_gpu_kern_sum",
            "--format",
            "csv",
            "--force-export",
            "true",
            "--output",
            str(directory / "stats"),
            str(report),
        ],
        timeout_s=DEFAULT_TIMEOUT_S,
        out_dir=directory,
        name="nsys-stats",
    )
    csvs = sorted(directory.glob("stats*cuda_gpu_kern_sum*.csv"))
    if not csvs:
        last = (proc.output(2000).strip().splitlines() or ["no output"])[-1]
        notes.append(f"nsys stats wrote no cuda_gpu_kern_sum CSV ({last}); open {report} in Nsight Systems")
        return None
    return csvs[0]


def _drop_qdstrm(directory: Path) -> list[str]:
    """Remove the unimportable raw capture (it runs to gigabytes); say what was removed."""
    notes = []
    for raw in directory.glob("*.qdstrm"):
        size = raw.stat().st_size
        raw.unlink()
        notes.append(f"removed {raw} ({size / 2**30:.1f} GiB) that nsys could not import (keep_qdstrm keeps it)")
    return notes


def summary_lines(result: ProfileResult) -> list[str]:
    if not result.ok and result.diagnosis is not None:
        lines = [
            f"{result.tool} failed: {result.diagnosis.message}",
            f"fix: {result.diagnosis.fix}",
            f"meanwhile: {result.diagnosis.fallback}",
        ]
    else:
        lines = [f"{result.tool} report: {result.report} ({result.wall_s:.1f} s)"]
        if result.summary is not None:
            lines += top_lines(result.summary)
    lines += [f"note: {note}" for note in result.notes]
    if result.logs:
        lines.append(f"log: {result.logs.get('stderr')}")
    return lines


# ---- the insight tool (hotkernel.insight.base.InsightTool) -------------------------------------------------

NAME = "profile"
CLI_NAME = "profile"
CLI_HELP = (
    "Run CMD (after `--`) under Nsight Compute or Nsight Systems. Exit 1 with the diagnosis (fix and fallback) "
    "when the profiler is missing, lacks counter permission, matched no kernel, timed out, or (nsys) could not "
    "import its capture."
)
DESCRIPTION = """Run a target's script (or a workspace script) under Nsight Compute or Nsight Systems and summarise its
heaviest kernels with hardware counters: DRAM/SM throughput %, occupancy, registers, Nsight's advice.

Use it once torch_trace found the dominant kernel, to see why it is slow. Needs a GPU and Nsight; when one
is missing (or counters are not permitted) the tool error says the fix and the fallback (torch_trace).
Reports go under .hotkernel/profiles/; re-read one with top_kernels.
"""
HINTS = Hints(read_only=False, destructive=False, idempotent=False)
LONG_RUNNING = True
RESULT = ProfileResult
MAX_ARGS = 256


class Params(BaseModel):
    """profile's parameters: a target's script or a script (MCP), or a command after ``--`` (CLI)."""

    target: Annotated[
        str | None,
        Field(
            description="profile this target's rendered script (see role); give target or script; default None",
            pattern=TARGET_NAME_RE.pattern,
            max_length=64,
        ),
    ] = None
    role: Annotated[
        Literal["baseline", "candidate"],
        Field(description="which rendered script of the target: 'baseline' (the number to beat) or 'candidate'"),
    ] = "candidate"
    script: Annotated[
        str | None,
        Field(
            description="instead of a target: a workspace-relative .py script to run in the user's python",
            max_length=MAX_PATH,
        ),
    ] = None
    script_args: Annotated[
        list[Annotated[str, Field(max_length=MAX_PATH)]] | None,
        Field(description="arguments for script (a list, never a shell string); default None", max_length=MAX_ARGS),
    ] = None
    tool: Annotated[
        Literal["ncu", "nsys"],
        Field(description="'ncu' (Nsight Compute: per-kernel counters, default) or 'nsys' (Nsight Systems)"),
        Cli(("--tool",), "ncu (per-kernel metrics) or nsys (timeline)"),
    ] = "ncu"
    kernel_regex: Annotated[
        str | None,
        Field(
            description="ncu only: profile kernels whose name matches this regex (e.g. 'rms|norm'); default None = all",
            max_length=200,
        ),
        Cli(("--kernel-regex", "-k"), "profile only kernels matching"),
    ] = None
    launch_count: Annotated[
        int | None,
        Field(description="ncu only: launches to profile, 1 to 1000; default None = 5 when no regex", ge=1, le=1000),
        Cli(("--launch-count", "-c"), "stop after N profiled launches"),
    ] = None
    cache_control: Annotated[
        Literal["all", "none"],
        Field(description="ncu: 'all' flushes caches before each launch (cold, default), 'none' keeps them warm"),
        Cli(("--cache-control",), "all (flush caches) or none"),
    ] = "all"
    top: Annotated[
        int,
        Field(description="kernels to summarise, 1 to 100; default 10", ge=1, le=100),
        Cli(("-n", "--top"), "kernels to list"),
    ] = 10
    timeout_s: Annotated[
        float,
        Field(description="time limit in seconds, 1 to 3600; default 600", ge=1, le=3600),
        Cli(("--timeout",), "seconds before the profiler is killed"),
    ] = DEFAULT_TIMEOUT_S
    launch_skip: Annotated[
        int | None,
        Field(description="skip the first N matching launches", ge=0, le=10**6),
        CLI_ONLY,
        Cli(("--launch-skip", "-s"), "skip the first N matching launches"),
    ] = None
    clock_control: Annotated[
        Literal["none", "base", "boost", "reset"],
        Field(description="ncu clock control"),
        CLI_ONLY,
        Cli(("--clock-control",), "none (default), base, boost"),
    ] = "none"
    section_set: Annotated[
        str | None,
        Field(description="ncu section set", max_length=200),
        CLI_ONLY,
        Cli(("--set",), "ncu section set (default: ncu's basic)"),
    ] = None
    out: Annotated[
        str | None,
        Field(description="directory for the report", max_length=MAX_PATH),
        CLI_ONLY,
        Cli(
            ("--out",), "directory for the report (default: .hotkernel/profiles/<time> in a workspace, else a temp dir)"
        ),
    ] = None
    command: Annotated[
        list[str] | None,
        Field(description="the command to profile"),
        CLI_ONLY,
        Cli(trailing=True),
    ] = None


def command_of(params: Params, ctx: InsightContext) -> list[str]:
    """What to run: the CLI's command, or the user's python on a target's script or a workspace script."""
    if params.command:
        return list(params.command)
    if (params.target is None) == (params.script is None):
        raise HotkernelError("give exactly one of target (a target's rendered script) or script (a workspace .py file)")
    if params.target is not None:  # through the workspace's contract: a candidate file need not call main()
        ws = ctx.require_workspace("profile")
        path = ws.target_dir(params.target) / f"{params.role}.py"
        return [user_python(ws, None), str(ws.contract_file), "run", str(path)]
    path = ctx.existing_file(params.script or "", "script")
    return [user_python(ctx.workspace, None), str(path), *(params.script_args or [])]


def run(params: Params, ctx: InsightContext) -> ProfileResult:
    """Profile the command; under MCP a failed profiler is an error with the diagnosis, on the CLI a result."""
    command = command_of(params, ctx)
    out_dir: Path | None = ctx.path(params.out, "out") if params.out else None
    if out_dir is None and ctx.workspace is not None:
        out_dir = ctx.workspace.state_dir / "profiles" / time.strftime("%Y%m%d-%H%M%S")
    launch_count = params.launch_count
    if ctx.confined and launch_count is None and not params.kernel_regex:
        launch_count = 5
    ctx.progress(0, 1, f"{params.tool} {Path(command[1] if len(command) > 1 else command[0]).name}")
    result = profile(
        command,
        tool=params.tool,
        kernel_regex=params.kernel_regex,
        launch_count=launch_count,
        launch_skip=params.launch_skip,
        cache_control=params.cache_control,
        clock_control=params.clock_control,
        section_set=params.section_set,
        timeout_s=params.timeout_s,
        out_dir=out_dir,
        cwd=ctx.start if ctx.confined else None,
        top=params.top,
    )
    if ctx.confined and not result.ok and result.diagnosis is not None:
        raise HotkernelError(f"profile: {result.diagnosis.one_line()}")
    ctx.progress(1, 1, "done")
    return result
