"""The measuring tools: bench, verify, record, sync and plan."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from hotkernel.errors import quote
from hotkernel.mcp.base import (
    DEFAULT_WAIT_S,
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
from hotkernel.reconcile.keep import record_and_keep as record_result
from hotkernel.reconcile.models import Plan, SyncReport
from hotkernel.reconcile.plan import plan as make_plan
from hotkernel.run.models import BenchResult, VerifyResult
from hotkernel.run.runstore import RUN_ID, stored_verify
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
    run_id: Annotated[
        str | None,
        Field(
            description="the run_id of the verify to keep, as verify's result gives it (the workspace's run store, "
            "e.g. '20261205T101500Z-1a2b3c4d'); default None: pass latest instead",
            pattern=RUN_ID.pattern,
            max_length=32,
        ),
    ] = None,
    latest: Annotated[
        bool, Field(description="keep the newest stored verify of this target (instead of run_id); default false")
    ] = False,
    confirms: Annotated[
        str | None,
        Field(
            description="the record (results/<target>/....json) of the first faster verify of the same files that "
            "this second verify confirms; default None",
            max_length=MAX_PATH,
        ),
    ] = None,
) -> RecordResult:
    """Keep a verify the runner stored as results/<target>/<UTC time>.json and regenerate LEADERBOARD.md.

    Record every verify, win or lose: the record says whether it beats the best so far (beats_best). A faster
    record is crowned only once a second verify of the same files is also faster with an overlapping interval
    (awaiting_confirmation until then): verify again and record it with confirms=<the first record's path>, or
    run sync. Keep the change only when it beats the best; otherwise revert the candidate. Only a verify from the
    workspace's run store can be recorded, by its run_id (a result cannot be typed in), and its verdict, speedup
    and interval must follow from its samples. To re-run and record everything out of date use sync instead.
    """
    ws = workspace_of(ctx)
    known_target(ws, target)
    stored = stored_verify(ws, target, run_id, latest)
    return record_result(ws, target, stored.result, note=note, who=who, run_id=stored.run_id, confirms=confirms)


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
            "= one at a time on the visible GPU, a CPU lane beside it for cpu targets where the host has CPUs to "
            "spare",
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
    serial: Annotated[
        bool,
        Field(description="one verify at a time in the sync process, cpu targets too (no CPU lane); default false"),
    ] = False,
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
    if serial and (gpus is not None or executor != "local"):
        raise ToolError("serial runs one verify at a time in the sync process; drop gpus / executor")
    args = {
        "names": targets or None,
        "from_scratch": from_scratch,
        "n": n,
        "gpus": gpus,
        "executor": executor,
        "address": address,
        "budget_s": budget_s,
        "serial": serial,
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
