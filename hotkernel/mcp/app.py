"""The MCP server: every hotkernel capability as a typed tool over stdio (``hotkernel``, ``hotkernel serve``).

A thin layer over the library. Each tool body imports the library module it wraps lazily, so the server starts
fast and never imports torch. Anticipated failures (``HotkernelError``, bad arguments) become ``ToolError``
with the library's one-line text in ``_tool`` (the single wrapper every tool goes through). Calls that run the
user's interpreter run as jobs (``hotkernel.mcp.jobs``): they report progress, can be cancelled (the job's whole
process tree is killed), and return a job id when they outlast ``wait_s`` so clients with a 60 s tool timeout
can poll.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field, ValidationError, create_model

from hotkernel import __version__
from hotkernel.errors import HotkernelError
from hotkernel.insight.calibration import CalibrationEntry
from hotkernel.insight.disasm import DisasmResult
from hotkernel.insight.gpu_info import GpuInfo
from hotkernel.insight.profile import ProfileResult
from hotkernel.insight.roofline import RooflineResult
from hotkernel.insight.top_kernels import TopKernels
from hotkernel.insight.torch_trace import TraceResult
from hotkernel.mcp.base import (
    DEFAULT_WAIT_S,
    TOOLS,
    Role,
    ServerState,
    TargetName,
    WaitS,
    inside,
    known_target,
    load_manifest,
    rel,
    render,
    start_dir,
    tool,
    workspace_of,
)
from hotkernel.mcp.tools import targets as _targets  # noqa: F401  (declares the target tools)
from hotkernel.reconcile.models import Plan, SyncReport
from hotkernel.run.models import BenchResult, VerifyResult
from hotkernel.store.models import HistoryEntry, LeaderboardRow, Record, RecordResult
from hotkernel.workspace.paths import MANIFEST_NAME, TARGET_NAME_RE, Workspace, find_workspace

log = logging.getLogger("hotkernel.mcp.app")

INSTRUCTIONS = (
    "hotkernel measures and verifies GPU kernel speedups. Loop: bench the baseline (the number to beat), "
    "torch_trace/profile to find the dominant kernel, roofline for its floor, one change to the candidate, "
    "verify, record (win or lose). Long calls (bench, verify, sync, profile, calibrate, torch_trace) "
    "return a job id when they outlast wait_s: poll it with job_status."
)
POLL_S = 0.1


class JobInfo(BaseModel):
    """Where a long call stands."""

    job_id: str = Field(description="id to pass to job_status / cancel_job")
    op: str = Field(description="the tool that started it")
    state: Literal["running", "done", "failed", "cancelled"] = Field(
        description="running; done (result is set); failed (error says why); cancelled"
    )
    elapsed_s: float = Field(description="seconds since the job started (until it finished)")
    progress: float = Field(description="last progress value the job reported (units of total)")
    total: float | None = Field(default=None, description="total the progress counts towards, when known")
    message: str | None = Field(default=None, description="last progress message")
    error: str | None = Field(default=None, description="one-line reason when failed or cancelled")


class JobStatus(BaseModel):
    """job_status: the job and, once done, the result of the tool that started it."""

    job: JobInfo = Field(description="where the job stands")
    result: dict[str, Any] | None = Field(
        default=None,
        description="the started tool's result (same fields as that tool's result) once state is done",
    )


class JobList(BaseModel):
    """list_jobs: every job this server process remembers."""

    jobs: list[JobInfo] = Field(description="oldest first; jobs are forgotten when the server restarts")


def _outcome_model(result_model: type[BaseModel], name: str) -> type[BaseModel]:
    """``{job, result}``: the result when the job finished within wait_s, else only the job to poll."""
    return create_model(
        name,
        __doc__=f"The job and, once it is done, its {result_model.__name__}.",
        job=(
            JobInfo,
            Field(description="where the job stands; poll job_status with job.job_id while running"),
        ),
        result=(
            result_model | None,
            Field(
                default=None,
                description="set when job.state is 'done'; None while running or after a failure",
            ),
        ),
    )


BenchOutcome = _outcome_model(BenchResult, "BenchOutcome")
VerifyOutcome = _outcome_model(VerifyResult, "VerifyOutcome")
SyncOutcome = _outcome_model(SyncReport, "SyncOutcome")


# ---- the one wrapper: errors and registration --------------------------------------------------------------


def _tool_error(name: str, err: BaseException) -> ToolError:
    """Turn an anticipated failure into the one-line ToolError the model reads."""
    if isinstance(err, ToolError):
        return err
    if isinstance(err, HotkernelError):
        return ToolError(str(err))
    if isinstance(err, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}"
            for e in err.errors(include_url=False)
        )
        return ToolError(f"invalid value ({problems})")
    log.exception("tool %s crashed", name)
    return ToolError(f"internal error {type(err).__name__}: {err} (a hotkernel bug: please report it)")


def wrapped(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with every anticipated failure turned into a ToolError (the one place that does it)."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except Exception as err:
                raise _tool_error(fn.__name__, err) from None

        return run_async

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as err:
            raise _tool_error(fn.__name__, err) from None

    return run


def build_server(root: str | os.PathLike[str] | None = None) -> MCPServer:
    """A server whose tools work on the workspace at (or above) ``root``.

    ``root`` defaults to ``HOTKERNEL_WORKSPACE``, then ``CLAUDE_PROJECT_DIR``, then the current directory.
    """
    start = (
        root or os.environ.get("HOTKERNEL_WORKSPACE") or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    )
    state = ServerState(root=Path(start).resolve())

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[ServerState]:
        yield state

    level = os.environ.get("HOTKERNEL_LOG_LEVEL", "WARNING").upper()
    server = MCPServer(
        "hotkernel",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level=level if level in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL") else "WARNING",
        lifespan=lifespan,
    )
    for fn, hints in TOOLS:
        server.add_tool(wrapped(fn), annotations=hints, structured_output=True)
    return server


def serve() -> None:
    """Serve MCP on stdio until the client closes the pipe; running jobs are killed on the way out."""
    import signal

    from hotkernel.mcp import jobs

    def stop(signum: int, _frame: object) -> None:  # SIGTERM/SIGHUP: no job outlives the server
        jobs.cancel_all_jobs()
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    server = build_server()
    try:
        server.run("stdio")
    except KeyboardInterrupt:
        pass
    finally:
        jobs.cancel_all_jobs()


# ---- helpers -----------------------------------------------------------------------------------------------


def _target_script(ws: Workspace, target: str, path: str, param: str) -> Path:
    """``path`` resolved inside the workspace, and a .py file in targets/<target>/ (else a ToolError naming it)."""
    resolved = inside(ws, path, param)
    folder = ws.target_dir(target).resolve()
    if resolved.suffix != ".py" or resolved.parent != folder or not resolved.is_file():
        raise ToolError(f"{param} {path!r} must be an existing .py file in targets/{target}/ (e.g. "
                        f"'targets/{target}/candidate.py')")
    return resolved


def _job_info(job: Any) -> JobInfo:
    with job.lock:
        return JobInfo(
            job_id=job.id,
            op=job.op,
            state=job.state,
            elapsed_s=job.elapsed_s,
            progress=job.progress,
            total=job.total,
            message=job.message,
            error=job.error,
        )


async def _follow(ctx: Context, job: Any, wait_s: float, *, kill_on_cancel: bool = True) -> None:
    """Relay the job's progress until it ends or ``wait_s`` passes; a cancelled call kills the job."""
    from hotkernel.mcp import jobs

    deadline = time.monotonic() + wait_s
    seen_updates = 0
    reported = 0.0

    async def relay() -> None:
        nonlocal seen_updates, reported
        if job.updates != seen_updates:
            seen_updates = job.updates
            with job.lock:
                progress, total, message = job.progress, job.total, job.message
            reported = progress if progress > reported else reported + 1e-3
            await ctx.report_progress(reported, total, message)

    try:
        while job.state == "running" and time.monotonic() < deadline:
            await relay()
            await anyio.sleep(POLL_S)
        await relay()  # the last update, when the job ended between two polls
    except BaseException:
        # The call that started the job was cancelled (client timeout, notifications/cancelled, shutdown):
        # nothing may be left running. A cancelled job_status poll leaves the job alone.
        if kill_on_cancel:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(jobs.cancel_job, job)
        raise


async def _run_job(
    ctx: Context, op: str, ws: Workspace, args: dict[str, Any], wait_s: float
) -> tuple[JobInfo, Any]:
    """Start ``op`` as a job, follow it up to ``wait_s``; (job info, result dict or None)."""
    from hotkernel.mcp import jobs

    job = jobs.start_job(op, ws.root, args)
    await ctx.report_progress(0.0, None, f"{op} started as job {job.id}")
    await _follow(ctx, job, wait_s)
    info = _job_info(job)
    if info.state == "failed":
        raise ToolError(info.error or f"the {op} job failed without a reason")
    if info.state == "cancelled":
        raise ToolError(f"{op} job {job.id} was cancelled")
    return info, job.result if info.state == "done" else None


# ---- jobs --------------------------------------------------------------------------------------------------


@tool(read_only=True, destructive=False, idempotent=False)
async def job_status(
    ctx: Context,
    job_id: Annotated[str, Field(description="job id a long tool returned (job.job_id)", min_length=1)],
    wait_s: WaitS = DEFAULT_WAIT_S,
) -> JobStatus:
    """Poll a job that bench, verify, sync, profile, calibrate or torch_trace started.

    Waits up to wait_s for it to finish, reporting progress meanwhile, then returns its state and, when done,
    the result (the same fields the starting tool returns). A failed job is a tool error with the reason. Use
    list_jobs to find ids, cancel_job to stop one.
    """
    from hotkernel.mcp import jobs

    job = jobs.get_job(job_id)
    await _follow(ctx, job, wait_s, kill_on_cancel=False)
    info = _job_info(job)
    if info.state == "failed":
        raise ToolError(f"job {job_id} ({info.op}) failed: {info.error}")
    return JobStatus(job=info, result=job.result if info.state == "done" else None)


@tool(read_only=False, destructive=True, idempotent=True)
async def cancel_job(
    job_id: Annotated[str, Field(description="job id to stop (job.job_id from a long tool)", min_length=1)],
) -> JobInfo:
    """Stop a running job: its process and every process it started (workers, judge, profiler) are killed.

    Nothing is recorded for a cancelled job. Cancelling a finished job changes nothing. Use job_status to wait
    for a job instead.
    """
    from hotkernel.mcp import jobs

    job = jobs.get_job(job_id)
    await anyio.to_thread.run_sync(jobs.cancel_job, job)
    return _job_info(job)


@tool(read_only=True, destructive=False, idempotent=True)
def list_jobs() -> JobList:
    """List the jobs this server process started (running and recently finished), oldest first.

    Use job_status to wait for one, cancel_job to stop one.
    """
    from hotkernel.mcp import jobs

    return JobList(jobs=[_job_info(job) for job in jobs.list_jobs()])


# ---- measuring ---------------------------------------------------------------------------------------------


@tool(read_only=False, destructive=False, idempotent=False)
async def bench(
    ctx: Context,
    target: TargetName,
    role: Role = "baseline",
    n: Annotated[
        int, Field(description="timed runs (separate processes), 1 to 100; default 5", ge=1, le=100)
    ] = 5,
    warmup: Annotated[
        int, Field(description="untimed runs before the timed ones, 0 to 10; default 1", ge=0, le=10)
    ] = 1,
    script: Annotated[
        str | None,
        Field(
            description="optional workspace-relative path of another script to time instead of the role's "
            "rendered file (e.g. 'targets/rmsnorm/candidate_v2.py'); default None"
        ),
    ] = None,
    timeout_s: Annotated[
        float, Field(description="per-run limit in seconds, 1 to 3600; default 600", ge=1, le=3600)
    ] = 600,
    wait_s: WaitS = DEFAULT_WAIT_S,
) -> BenchOutcome:  # type: ignore[valid-type]
    """Time one script of a target: its median ms over n separate runs (each its own process), checked by the
    judge.

    Use it on the baseline first: that is the number to beat. It renders the target from hotkernel.yaml first
    (an edited candidate.py is never overwritten) and otherwise writes only scratch files. To compare a candidate with
    the baseline use verify (interleaved, with a verdict); to keep a result use record.
    """
    ws = workspace_of(ctx)
    known_target(ws, target)
    args: dict[str, Any] = {"target": target, "role": role, "n": n, "warmup": warmup, "timeout_s": timeout_s}
    if script is not None:
        args["script"] = str(_target_script(ws, target, script, "script"))
    render(ws, target)
    info, result = await _run_job(ctx, "bench", ws, args, wait_s)
    return BenchOutcome(job=info, result=result)


@tool(read_only=False, destructive=False, idempotent=False)
async def verify(
    ctx: Context,
    target: TargetName,
    n: Annotated[
        int,
        Field(
            description="ABBA rounds, 2 to 50; each runs baseline and candidate once; default 7", ge=2, le=50
        ),
    ] = 7,
    candidate: Annotated[
        str | None,
        Field(
            description="optional workspace-relative path of the candidate script; default None = "
            "targets/<target>/candidate.py"
        ),
    ] = None,
    timeout_s: Annotated[
        float, Field(description="per-run limit in seconds, 1 to 3600; default 600", ge=1, le=3600)
    ] = 600,
    wait_s: WaitS = DEFAULT_WAIT_S,
) -> VerifyOutcome:  # type: ignore[valid-type]
    """Compare the candidate with the baseline: correctness judged on fresh inputs, then a verdict.

    The verdict is faster / slower / inconclusive (a paired statistical rule over interleaved rounds),
    incorrect (a correctness check failed: the reason names it) or invalid (the contract was broken). A
    mismatch is a result, not a tool error. The target is rendered from hotkernel.yaml first (candidate.py is
    never overwritten). Then call record to keep it (win or lose). To time one script alone use bench.
    """
    ws = workspace_of(ctx)
    known_target(ws, target)
    args: dict[str, Any] = {"target": target, "n": n, "timeout_s": timeout_s}
    if candidate is not None:
        args["candidate"] = str(_target_script(ws, target, candidate, "candidate"))
    render(ws, target)
    info, result = await _run_job(ctx, "verify", ws, args, wait_s)
    return VerifyOutcome(job=info, result=result)


@tool(read_only=False, destructive=False, idempotent=False)
def record(
    ctx: Context,
    target: TargetName,
    note: Annotated[
        str,
        Field(description="one line saying what the candidate changed (max 300 characters)", max_length=300),
    ],
    who: Annotated[
        str,
        Field(
            description="honest author of the candidate: a person, or the agent and its model (e.g. "
            "'claude-opus-4 via Claude Code'); max 120 characters",
            min_length=1,
            max_length=120,
        ),
    ],
    verify_job_id: Annotated[
        str | None,
        Field(
            description="job id of the verify whose result to keep; default None = the latest finished "
            "verify of "
            "this target in this server"
        ),
    ] = None,
) -> RecordResult:
    """Keep a verify result as results/<target>/<UTC time>.json and regenerate LEADERBOARD.md.

    Record every verify, win or lose: the record says whether it beats the best so far (beats_best). Keep the
    change only when it does; otherwise revert the candidate. Only a verify this server ran can be recorded (a
    result cannot be typed in). To re-run and record everything out of date use sync instead.
    """
    from hotkernel.mcp import jobs
    from hotkernel.reconcile.sync import record_and_keep as record_result

    ws = workspace_of(ctx)
    known_target(ws, target)
    if verify_job_id is not None:
        job = jobs.get_job(verify_job_id)
        if job.op != "verify" or job.state != "done" or job.args.get("target") != target:
            raise ToolError(
                f"verify_job_id {verify_job_id!r} is not a finished verify of target {target!r} (it is a "
                f"{job.op} job, state {job.state}); pass the job id of a verify of {target!r} that is done"
            )
    else:
        job = jobs.latest_job("verify", lambda j: j.args.get("target") == target)
        if job is None:
            raise ToolError(f"no finished verify of target {target!r} in this server: call verify first")
    with job.lock:
        if job.recorded:
            raise ToolError(f"the verify job {job.id} of {target!r} is already recorded as {job.recorded}: "
                            "one record per verify; run verify again to record another experiment")
        result = record_result(ws, target, VerifyResult.model_validate(job.result), note=note, who=who)
        job.recorded = result.path
    return result


@tool(read_only=False, destructive=False, idempotent=False)
async def sync(
    ctx: Context,
    targets: Annotated[
        list[Annotated[str, Field(pattern=TARGET_NAME_RE.pattern)]] | None,
        Field(description="target names to reconcile; default None = every out-of-date target"),
    ] = None,
    from_scratch: Annotated[
        bool, Field(description="re-run even targets that are up to date; default false")
    ] = False,
    n: Annotated[
        int | None,
        Field(
            description="verify rounds per target, 2 to 50; default None = defaults.n in hotkernel.yaml",
            ge=2,
            le=50,
        ),
    ] = None,
    wait_s: WaitS = DEFAULT_WAIT_S,
) -> SyncOutcome:  # type: ignore[valid-type]
    """Reconcile the workspace: render, verify and record every out-of-date target (what plan lists).

    Writes targets/, results/, hotkernel.lock and LEADERBOARD.md; a target already up to date is left alone.
    Use plan first to see what it would do; use verify + record for one candidate you are iterating on.
    """
    ws = workspace_of(ctx)
    if targets:
        manifest = load_manifest(ws)
        unknown = [t for t in targets if t not in manifest.targets]
        if unknown:
            raise ToolError(
                f"targets {unknown} not in {MANIFEST_NAME}; "
                f"known targets: {', '.join(sorted(manifest.targets))}"
            )
    info, result = await _run_job(
        ctx, "sync", ws, {"names": targets or None, "from_scratch": from_scratch, "n": n}, wait_s
    )
    return SyncOutcome(job=info, result=result)


@tool(read_only=True, destructive=False, idempotent=True)
def plan(ctx: Context) -> Plan:
    """Say which targets are out of date and why (new, manifest changed, candidate changed, no record on this
    GPU).

    Reads only. Then call sync to bring them up to date, or verify + record for one target.
    """
    from hotkernel.reconcile.plan import plan as make_plan

    return make_plan(workspace_of(ctx))


# ---- workspace: targets ------------------------------------------------------------------------------------


# ---- results -----------------------------------------------------------------------------------------------


class Leaderboard(BaseModel):
    """leaderboard: LEADERBOARD.md regenerated from results/, and its rows."""

    path: str = Field(description="workspace-relative path of LEADERBOARD.md")
    markdown: str = Field(description="the file's content")
    rows: list[LeaderboardRow] = Field(description="one row per record, sorted by target, device, path")


class History(BaseModel):
    """history: every record of one target."""

    target: str = Field(description="target name")
    records: list[HistoryEntry] = Field(
        description="oldest first; invalidated records included (counted=false)"
    )


@tool(read_only=False, destructive=False, idempotent=True)
def leaderboard(ctx: Context) -> Leaderboard:
    """Regenerate LEADERBOARD.md from every record under results/ and return it with its rows.

    Deterministic: the same records give the same bytes. Use history for one target's records, show_target for
    its latest verdicts.
    """
    from hotkernel.store.leaderboard import current_protocol, leaderboard_rows, load_records, write_leaderboard

    ws = workspace_of(ctx)
    path = write_leaderboard(ws)
    rows = leaderboard_rows(load_records(ws.results_dir), current_protocol())
    return Leaderboard(path=rel(ws, path), markdown=path.read_text(encoding="utf-8"), rows=rows)


@tool(read_only=True, destructive=False, idempotent=True)
def history(ctx: Context, target: TargetName) -> History:
    """List every record of a target (oldest first), with verdict, speedup, who, note and whether it counts.

    Reads only. Use leaderboard for all targets, invalidate_record to discount a bad record.
    """
    from hotkernel.store.record import history as target_history

    ws = workspace_of(ctx)
    known_target(ws, target)
    return History(target=target, records=target_history(ws, target))


@tool(read_only=False, destructive=True, idempotent=True)
def invalidate_record(
    ctx: Context,
    path: Annotated[
        str,
        Field(
            description="workspace-relative path of the record, e.g. "
            "'results/rmsnorm/2026-11-30T03-00-00Z.json' "
            "(history lists them)",
            min_length=1,
        ),
    ],
    reason: Annotated[
        str,
        Field(
            description="one line saying why it no longer counts (max 300 characters)",
            min_length=3,
            max_length=300,
        ),
    ],
) -> Record:
    """Mark a record as not counted, with a reason; the raw record file stays (nothing is deleted).

    Use it for a record later found wrong (a broken GPU clock, a contract bug). LEADERBOARD.md is regenerated.
    Use history to find the path.
    """
    from hotkernel.store.leaderboard import write_leaderboard
    from hotkernel.store.record import invalidate_record as mark

    ws = workspace_of(ctx)
    record_path = inside(ws, path, "path")
    if ws.results_dir.resolve() not in record_path.parents:
        raise ToolError(f"path {path!r} is not under results/: give a record path that history lists")
    result = mark(ws, record_path, reason)
    write_leaderboard(ws)
    return result


# ---- insight -----------------------------------------------------------------------------------------------


@tool(read_only=True, destructive=False, idempotent=True)
def gpu_info() -> GpuInfo:
    """Report every NVIDIA GPU here: name, UUID, memory, clocks, power limit, compute capability, processes.

    Reads NVML (falling back to nvidia-smi). With no GPU it says so in 'message' (source 'none') rather than
    failing. Use it first to know what roofline and calibrate will measure against; use calibrate to measure
    the card's real streaming ceiling.
    """
    from hotkernel.insight.gpu_info import gpu_info as query

    return query()


@tool(read_only=True, destructive=False, idempotent=True)
def roofline(
    ctx: Context,
    flops: Annotated[float, Field(description="floating-point operations of one call (FLOP), >= 0", ge=0)],
    bytes_moved: Annotated[
        float,
        Field(
            description="bytes one call must read plus write (B), > 0; bench reports them as 'bytes'", gt=0
        ),
    ],
    gpu: Annotated[
        str | None,
        Field(
            description="GPU name from the spec table (e.g. 'H200', 'H100 SXM'); default None = the first "
            "GPU here"
        ),
    ] = None,
    dtype: Annotated[
        Literal["bf16", "fp16", "fp32", "fp8", "fp8_e4m3", "fp8_e5m2"],
        Field(description="element type that sets the peak FLOP rate; default bf16"),
    ] = "bf16",
    measured_gbps: Annotated[
        float | None,
        Field(
            description="measured streaming ceiling in GB/s (> 0); default None = the workspace's "
            "calibration for "
            "this GPU, if calibrate ran",
            gt=0,
        ),
    ] = None,
) -> RooflineResult:
    """Place a kernel on the roofline: memory- or compute-bound, and the fastest it could run (attainable_ms).

    attainable_ms uses the spec sheet; attainable_ms_measured uses the measured ceiling (calibrate), the floor
    a real kernel can get near: stop optimising within about 5% of it. Needs a GPU here unless gpu is given.
    Use gpu_info for the card itself, profile for what the kernel actually achieves.
    """
    from hotkernel.insight.roofline import roofline as place

    try:
        root: Path | None = find_workspace(start_dir(ctx)).root
    except HotkernelError:
        root = None
    return place(flops, bytes_moved, gpu=gpu, dtype=dtype, measured_gbps=measured_gbps, workspace=root)


CalibrateOutcome = _outcome_model(CalibrationEntry, "CalibrateOutcome")


@tool(read_only=False, destructive=False, idempotent=True)
async def calibrate(
    ctx: Context,
    device: Annotated[
        Literal["cuda", "cpu"], Field(description="device to measure: 'cuda' (default) or 'cpu' (for tests)")
    ] = "cuda",
    size_mib: Annotated[
        int,
        Field(
            description="buffer size in MiB, 0 to 65536; default 0 = sized by the probe (over 2x L2)",
            ge=0,
            le=65536,
        ),
    ] = 0,
    timeout_s: Annotated[
        float, Field(description="probe time limit in seconds, 1 to 3600; default 300", ge=1, le=3600)
    ] = 300,
    wait_s: WaitS = DEFAULT_WAIT_S,
) -> CalibrateOutcome:  # type: ignore[valid-type]
    """Measure the card's real streaming ceiling (copy and read GB/s) in the user's python; store it per GPU
    UUID.

    Writes .hotkernel/calibration.json. roofline then reports attainable_ms_measured, the floor to stop at.
    Run it once per machine, when the GPU is idle. Needs a GPU and torch in the user's python; use gpu_info
    first.
    """
    ws = workspace_of(ctx)
    args = {"device": device, "size_mib": size_mib, "timeout_s": timeout_s}
    info, result = await _run_job(ctx, "calibrate", ws, args, wait_s)
    return CalibrateOutcome(job=info, result=result)


TraceOutcome = _outcome_model(TraceResult, "TraceOutcome")


@tool(read_only=False, destructive=False, idempotent=False)
async def torch_trace(
    ctx: Context,
    script: Annotated[
        str,
        Field(
            description="workspace-relative path of a Python script that runs the model or op to look at (it "
            "runs as __main__ under torch.profiler in the user's python)",
            min_length=1,
        ),
    ],
    script_args: Annotated[
        list[str] | None,
        Field(
            description="command-line arguments for the script (a list, never a shell string); default None"
        ),
    ] = None,
    top: Annotated[
        int, Field(description="kernels and ops to list, 1 to 200; default 10", ge=1, le=200)
    ] = 10,
    timeout_s: Annotated[
        float,
        Field(description="time limit of the profiled run in seconds, 1 to 3600; default 600", ge=1, le=3600),
    ] = 600,
    wait_s: WaitS = DEFAULT_WAIT_S,
) -> TraceOutcome:  # type: ignore[valid-type]
    """Run a script under torch.profiler and rank its GPU kernels by total time (share of all kernel time).

    Use it to find the kernel that dominates a model or op before optimising anything. Writes the full table
    and a Chrome trace under .hotkernel/traces/. For hardware counters of one kernel use profile; for a
    kernel's machine code use disasm.
    """
    ws = workspace_of(ctx)
    path = inside(ws, script, "script")
    if not path.is_file():
        raise ToolError(
            f"script {script!r} is not a file in the workspace: give a .py path relative to {ws.root}"
        )
    args = {"script": str(path), "script_args": list(script_args or []), "top": top, "timeout_s": timeout_s}
    info, result = await _run_job(ctx, "torch_trace", ws, args, wait_s)
    return TraceOutcome(job=info, result=result)


@tool(read_only=False, destructive=False, idempotent=True)
def disasm(
    ctx: Context,
    source: Annotated[
        str,
        Field(
            description="what to disassemble: 'triton-cache' (a kernel Triton compiled, found by name in "
            "~/.triton/cache) or a workspace-relative .cubin / .ptx / CUDA binary path",
            min_length=1,
        ),
    ],
    kernel: Annotated[
        str | None,
        Field(
            description="kernel name (or a unique part of it); with 'triton-cache' the newest matching kernel, "
            "and None there means the newest kernel in the cache; default None",
            max_length=512,
        ),
    ] = None,
    ptx: Annotated[bool, Field(description="show PTX instead of SASS; default false")] = False,
    max_lines: Annotated[
        int,
        Field(
            description="listing lines to return, 0 to 5000 (0 = summary only); default 200", ge=0, le=5000
        ),
    ] = 200,
) -> DisasmResult:
    """Disassemble a compiled kernel (SASS via cuobjdump, or PTX) with a summary to read first: registers,
    spills (local memory), shared memory, load/store widths, matrix (tensor-core) instructions, barriers.

    Use it after the first compile of a candidate to check what the compiler made of it (vector widths,
    spills, tensor cores). Works without a GPU. The full listing is saved under .hotkernel/disasm/. For timing
    use bench/verify; for runtime counters use profile.
    """
    from hotkernel.insight.disasm import TRITON_CACHE
    from hotkernel.insight.disasm import disasm as disassemble

    ws = workspace_of(ctx)
    if source != TRITON_CACHE:
        path = inside(ws, source, "source")
        if not path.is_file():
            raise ToolError(
                f"source {source!r} is not a file in the workspace (or use 'triton-cache' with kernel)"
            )
        source = str(path)
    out_dir = ws.state_dir / "disasm"
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = "".join(c if c.isalnum() or c in "_-" else "_" for c in (kernel or Path(source).stem or "newest"))[:80]
    out_path = out_dir / f"{stem}.{'ptx' if ptx else 'sass'}"
    return disassemble(source, kernel=kernel, ptx=ptx, max_lines=max_lines, out_path=out_path)


ProfileOutcome = _outcome_model(ProfileResult, "ProfileOutcome")


@tool(read_only=False, destructive=False, idempotent=False)
async def profile(
    ctx: Context,
    target: Annotated[
        str | None,
        Field(
            description="profile this target's rendered script (see role); give target or script; default "
            "None",
            pattern=TARGET_NAME_RE.pattern,
        ),
    ] = None,
    role: Role = "candidate",
    script: Annotated[
        str | None,
        Field(description="instead of a target: a workspace-relative .py script to run in the user's python"),
    ] = None,
    script_args: Annotated[
        list[str] | None,
        Field(description="arguments for script (a list, never a shell string); default None"),
    ] = None,
    tool: Annotated[
        Literal["ncu", "nsys"],
        Field(description="'ncu' (Nsight Compute: per-kernel counters, default) or 'nsys' (Nsight Systems)"),
    ] = "ncu",
    kernel_regex: Annotated[
        str | None,
        Field(
            description="ncu only: profile kernels whose name matches this regex (e.g. 'rms|norm'); default "
            "None "
            "= all",
            max_length=200,
        ),
    ] = None,
    launch_count: Annotated[
        int | None,
        Field(
            description="ncu only: launches to profile, 1 to 1000; default None = 5 when no regex",
            ge=1,
            le=1000,
        ),
    ] = None,
    cache_control: Annotated[
        Literal["all", "none"],
        Field(
            description="ncu: 'all' flushes caches before each launch (cold, default), 'none' keeps them warm"
        ),
    ] = "all",
    top: Annotated[int, Field(description="kernels to summarise, 1 to 100; default 10", ge=1, le=100)] = 10,
    timeout_s: Annotated[
        float, Field(description="time limit in seconds, 1 to 3600; default 600", ge=1, le=3600)
    ] = 600,
    wait_s: WaitS = DEFAULT_WAIT_S,
) -> ProfileOutcome:  # type: ignore[valid-type]
    """Run a target's script (or a workspace script) under Nsight Compute or Nsight Systems and summarise its
    heaviest kernels with hardware counters: DRAM/SM throughput %, occupancy, registers, Nsight's advice.

    Use it once torch_trace found the dominant kernel, to see why it is slow. Needs a GPU and Nsight; when one
    is missing (or counters are not permitted) the tool error says the fix and the fallback (torch_trace).
    Reports go under .hotkernel/profiles/; re-read one with top_kernels.
    """
    ws = workspace_of(ctx)
    if (target is None) == (script is None):
        raise ToolError(
            "give exactly one of target (a target's rendered script) or script (a workspace .py file)"
        )
    if target is not None:
        known_target(ws, target)
        path = ws.target_dir(target) / f"{role}.py"
        render(ws, target)
    else:
        path = inside(ws, script or "", "script")
        if not path.is_file():
            raise ToolError(f"script {script!r} is not a file in the workspace")
    args = {
        "script": str(path),
        "script_args": list(script_args or []),
        "tool": tool,
        "kernel_regex": kernel_regex,
        "launch_count": launch_count if launch_count is not None or kernel_regex else 5,
        "cache_control": cache_control,
        "top": top,
        "timeout_s": timeout_s,
    }
    info, result = await _run_job(ctx, "profile", ws, args, wait_s)
    return ProfileOutcome(job=info, result=result)


@tool(read_only=True, destructive=False, idempotent=True)
def top_kernels(
    ctx: Context,
    report: Annotated[
        str,
        Field(
            description="workspace-relative path of a saved report: .ncu-rep, an ncu/nsys CSV export, or a "
            "torch_trace Chrome trace (.json); profile and torch_trace print where theirs went",
            min_length=1,
        ),
    ],
    n: Annotated[int, Field(description="kernels to list, 1 to 200; default 10", ge=1, le=200)] = 10,
) -> TopKernels:
    """Rank the kernels of a saved profiler report by total time, with counters when the report has them.

    Reads only; runs nothing on the GPU. Use it to re-read a profile or torch_trace result, or a report you
    exported yourself. To make a new report use profile (counters) or torch_trace (no Nsight needed).
    """
    from hotkernel.insight.top_kernels import top_kernels as rank

    ws = workspace_of(ctx)
    path = inside(ws, report, "report")
    if not path.is_file():
        raise ToolError(f"report {report!r} is not a file in the workspace")
    return rank(path, n)
