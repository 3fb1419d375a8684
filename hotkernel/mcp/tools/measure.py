"""The measuring tools: bench, verify, record, sync and plan."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from hotkernel.errors import quote
from hotkernel.mcp import jobs
from hotkernel.mcp.base import (
    DEFAULT_WAIT_S,
    MAX_JOB_ID,
    Role,
    TargetName,
    WaitS,
    inside,
    known_target,
    load_manifest,
    outcome_model,
    render,
    run_job,
    tool,
    workspace_of,
)
from hotkernel.reconcile.models import Plan, SyncReport
from hotkernel.reconcile.plan import plan as make_plan
from hotkernel.reconcile.sync import record_and_keep as record_result
from hotkernel.run.models import BenchResult, VerifyResult
from hotkernel.store.models import RecordResult
from hotkernel.workspace.paths import MANIFEST_NAME, MAX_PATH, TARGET_NAME_RE, Workspace

BenchOutcome = outcome_model(BenchResult, "BenchOutcome")
VerifyOutcome = outcome_model(VerifyResult, "VerifyOutcome")
SyncOutcome = outcome_model(SyncReport, "SyncOutcome")
TimeoutS = Annotated[float, Field(description="per-run limit in seconds, 1 to 3600; default 600", ge=1, le=3600)]


def _target_script(ws: Workspace, target: str, path: str, param: str) -> Path:
    """``path`` resolved inside the workspace, and a .py file in targets/<target>/ (else a ToolError naming it)."""
    resolved = inside(ws, path, param)
    folder = ws.target_dir(target).resolve()
    if resolved.suffix != ".py" or resolved.parent != folder or not resolved.is_file():
        raise ToolError(
            f"{param} {quote(path)} must be an existing .py file in targets/{target}/ (e.g. "
            f"'targets/{target}/candidate.py')"
        )
    return resolved


@tool(read_only=False, destructive=False, idempotent=False)
async def bench(
    ctx: Context,
    target: TargetName,
    role: Role = "baseline",
    n: Annotated[int, Field(description="timed runs (separate processes), 1 to 100; default 5", ge=1, le=100)] = 5,
    warmup: Annotated[
        int, Field(description="untimed runs before the timed ones, 0 to 10; default 1", ge=0, le=10)
    ] = 1,
    script: Annotated[
        str | None,
        Field(
            description="optional workspace-relative path of another script to time instead of the role's "
            "rendered file (e.g. 'targets/rmsnorm/candidate_v2.py'); default None",
            max_length=MAX_PATH,
        ),
    ] = None,
    timeout_s: TimeoutS = 600,
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
    info, result = await run_job(ctx, "bench", ws, args, wait_s)
    return BenchOutcome(job=info, result=result)


@tool(read_only=False, destructive=False, idempotent=False)
async def verify(
    ctx: Context,
    target: TargetName,
    n: Annotated[
        int,
        Field(description="ABBA rounds, 2 to 50; each runs baseline and candidate once; default 7", ge=2, le=50),
    ] = 7,
    candidate: Annotated[
        str | None,
        Field(
            description="optional workspace-relative path of the candidate script; default None = "
            "targets/<target>/candidate.py",
            max_length=MAX_PATH,
        ),
    ] = None,
    timeout_s: TimeoutS = 600,
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
    info, result = await run_job(ctx, "verify", ws, args, wait_s)
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
            "this target in this server",
            max_length=MAX_JOB_ID,
        ),
    ] = None,
) -> RecordResult:
    """Keep a verify result as results/<target>/<UTC time>.json and regenerate LEADERBOARD.md.

    Record every verify, win or lose: the record says whether it beats the best so far (beats_best). Keep the
    change only when it does; otherwise revert the candidate. beats_best without clear_of_best: the two
    intervals overlap, so verify once more and keep the change only when it beats the previous best again.
    Only a verify this server ran can be recorded (a result cannot be typed in). To re-run and record
    everything out of date use sync instead.
    """
    ws = workspace_of(ctx)
    known_target(ws, target)
    if verify_job_id is not None:
        job = jobs.get_job(verify_job_id)
        if job.op != "verify" or job.state != "done" or job.args.get("target") != target:
            raise ToolError(
                f"verify_job_id {quote(verify_job_id)} is not a finished verify of target {target!r} (it is a "
                f"{job.op} job, state {job.state}); pass the job id of a verify of {target!r} that is done"
            )
    else:
        job = jobs.latest_job("verify", lambda j: j.args.get("target") == target)
        if job is None:
            raise ToolError(f"no finished verify of target {target!r} in this server: call verify first")
    with job.lock:
        if job.recorded:
            raise ToolError(
                f"the verify job {job.id} of {target!r} is already recorded as {job.recorded}: "
                "one record per verify; run verify again to record another experiment"
            )
        result = record_result(ws, target, VerifyResult.model_validate(job.result), note=note, who=who)
        job.recorded = result.path
    return result


@tool(read_only=False, destructive=False, idempotent=False)
async def sync(
    ctx: Context,
    targets: Annotated[
        list[Annotated[str, Field(pattern=TARGET_NAME_RE.pattern, max_length=64)]] | None,
        Field(description="target names to reconcile; default None = every out-of-date target", max_length=1000),
    ] = None,
    from_scratch: Annotated[bool, Field(description="re-run even targets that are up to date; default false")] = False,
    n: Annotated[
        int | None,
        Field(
            description="verify rounds per target, 2 to 50; default None = defaults.n in hotkernel.yaml",
            ge=2,
            le=50,
        ),
    ] = None,
    gpus: Annotated[
        str | None,
        Field(
            description="run one verify per GPU of this host at a time: 'all' or indices like '0,1'; default None "
            "= one at a time on the visible GPU",
            max_length=200,
            pattern=r"^(all|\d+(,\d+)*)$",
        ),
    ] = None,
    executor: Annotated[
        Literal["local", "ray"],
        Field(description="'local' (this host) or 'ray' (each verify a Ray task asking for one GPU); default local"),
    ] = "local",
    address: Annotated[
        str | None,
        Field(
            description="Ray cluster address for executor 'ray' (e.g. 'ray://head:10001'); default None = a local "
            "Ray instance",
            max_length=300,
        ),
    ] = None,
    budget_s: Annotated[
        float | None,
        Field(
            description="time budget in seconds, 10 to 86400: the most out-of-date targets run first, a verify "
            "still running at the end is cancelled unrecorded, and the result's 'left' lists what did not run; "
            "default None = no budget",
            ge=10,
            le=86400,
        ),
    ] = None,
    wait_s: WaitS = DEFAULT_WAIT_S,
) -> SyncOutcome:  # type: ignore[valid-type]
    """Reconcile the workspace: render, verify and record every out-of-date target (what plan lists).

    Writes targets/, results/, hotkernel.lock and LEADERBOARD.md; a target already up to date is left alone.
    Never-recorded targets run first, then the oldest records. A faster result that would be a new best is
    verified a second time (both recorded). Each item carries its speedup and interval whenever measured.
    With gpus, independent targets run in parallel, one per GPU; with executor 'ray', on a Ray cluster.
    Use plan first to see what it would do; use verify + record for one candidate you are iterating on.
    """
    ws = workspace_of(ctx)
    if targets:
        manifest = load_manifest(ws)
        unknown = [t for t in targets if t not in manifest.targets]
        if unknown:
            raise ToolError(
                f"targets {unknown} not in {MANIFEST_NAME}; known targets: {', '.join(sorted(manifest.targets))}"
            )
    if address is not None and executor != "ray":
        raise ToolError("address is for executor 'ray'; drop it or pass executor='ray'")
    if gpus is not None and executor == "ray":
        raise ToolError("gpus is for executor 'local'; Ray gives each task one GPU of the cluster")
    args = {
        "names": targets or None,
        "from_scratch": from_scratch,
        "n": n,
        "gpus": gpus,
        "executor": executor,
        "address": address,
        "budget_s": budget_s,
    }
    info, result = await run_job(ctx, "sync", ws, args, wait_s)
    return SyncOutcome(job=info, result=result)


@tool(read_only=True, destructive=False, idempotent=True)
def plan(ctx: Context) -> Plan:
    """Say which targets are out of date and why (new, manifest changed, candidate changed, no record on this
    GPU).

    Reads only. Then call sync to bring them up to date, or verify + record for one target.
    """
    return make_plan(workspace_of(ctx))
