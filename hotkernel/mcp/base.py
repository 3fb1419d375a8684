"""What every tool module shares: the registration decorator, the server state, parameter types, helpers.

Tool modules (``hotkernel.mcp.tools.*``) declare their tools with ``@tool(...)``; ``hotkernel.mcp.app`` wraps
each one (errors become ``ToolError`` there, in one place) and adds it to the server. The server's state (the
directory it works on) comes through the lifespan context, never a global.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, create_model

from hotkernel.errors import HotkernelError, quote
from hotkernel.manifest import load_manifest as load
from hotkernel.manifest import resolved_target
from hotkernel.mcp import jobs
from hotkernel.run.render import render_target
from hotkernel.workspace.paths import (
    MANIFEST_NAME,
    TARGET_NAME_RE,
    Workspace,
    check_path_length,
    find_workspace,
    safe_path,
)

DEFAULT_WAIT_S = 50.0
POLL_S = 0.1
MAX_JOB_ID = 64  # characters of a job id ("<op>-<10 hex digits>")

TOOLS: list[tuple[Callable[..., Any], ToolAnnotations]] = []


@dataclass(frozen=True)
class ServerState:
    """What the lifespan hands every tool call: the directory the server was started for."""

    root: Path


def tool(*, read_only: bool, destructive: bool, idempotent: bool, open_world: bool = False) -> Callable:
    """Declare a tool with truthful annotations; ``hotkernel.mcp.app`` registers it."""

    def declare(fn: Callable[..., Any]) -> Callable[..., Any]:
        hints = ToolAnnotations(
            read_only_hint=read_only,
            destructive_hint=destructive,
            idempotent_hint=idempotent,
            open_world_hint=open_world,
        )
        TOOLS.append((fn, hints))
        return fn

    return declare


# ---- shared parameter types --------------------------------------------------------------------------------

TargetName = Annotated[
    str,
    Field(
        description="target name as written in hotkernel.yaml: a Python identifier (letters, digits, '_', at "
        "most 64 characters); list_targets shows them",
        pattern=TARGET_NAME_RE.pattern,
        min_length=1,
        max_length=64,
    ),
]
WaitS = Annotated[
    float,
    Field(
        description="seconds (0 to 3600, default 50) to wait for the result in this call. When the job is "
        "still "
        "running after wait_s the call returns its job_id with state 'running' and the job keeps going: poll "
        "it with job_status. 0 starts the job and returns at once. Keep it under your client's tool timeout",
        ge=0,
        le=3600,
    ),
]
Role = Annotated[
    Literal["baseline", "candidate"],
    Field(description="which rendered script of the target: 'baseline' (the number to beat) or 'candidate'"),
]


# ---- helpers -----------------------------------------------------------------------------------------------


def start_dir(ctx: Context) -> Path:
    """The directory this server works on (from the lifespan context)."""
    state: ServerState = ctx.request_context.lifespan_context
    return state.root


def workspace_of(ctx: Context) -> Workspace:
    """The workspace this server works on; a ToolError that says how to make one when there is none."""
    try:
        return find_workspace(start_dir(ctx))
    except HotkernelError:
        raise ToolError(
            f"no {MANIFEST_NAME} in {start_dir(ctx)} or above: call new_target to start a workspace there, "
            f"or "
            "start the server in a workspace (HOTKERNEL_WORKSPACE / the client's working directory)"
        ) from None


def load_manifest(ws: Workspace) -> Any:
    return load(ws.manifest)


def known_target(ws: Workspace, name: str, param: str = "target") -> Any:
    """The manifest, after checking that ``name`` is one of its targets (else a ToolError listing them)."""
    manifest = load_manifest(ws)
    if name not in manifest.targets:
        known = ", ".join(sorted(manifest.targets)) or "none yet (add one with add_target or new_target)"
        raise ToolError(f"{param} {quote(name)} is not in {MANIFEST_NAME}; known targets: {known}")
    return manifest


def rel(ws: Workspace, path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ws.root.resolve()))
    except ValueError:
        return str(path)


def inside(ws: Workspace, user_path: str, param: str) -> Path:
    """``user_path`` resolved inside the workspace, or a ToolError naming the parameter (length checked first)."""
    try:
        check_path_length(user_path, param)
        return safe_path(ws.root, user_path, what=param)
    except HotkernelError as err:
        raise ToolError(str(err)) from None


def existing_file(ws: Workspace, user_path: str, param: str, hint: str) -> Path:
    """``user_path`` as an existing file inside the workspace, else a ToolError naming ``param`` and ``hint``."""
    path = inside(ws, user_path, param)
    if not path.is_file():
        raise ToolError(f"{param} {quote(user_path)} is not a file in the workspace: {hint}")
    return path


def render(ws: Workspace, name: str) -> tuple[list[str], list[str], dict[str, Any]]:
    """Render a target from the manifest: (written, kept, resolved spec)."""
    resolved = resolved_target(load_manifest(ws), name)
    rendered = render_target(ws, name, resolved)
    return list(rendered.written), list(rendered.kept), resolved


# ---- jobs: start, follow, report ----------------------------------------------------------------------------


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


def outcome_model(result_model: type[BaseModel], name: str) -> type[BaseModel]:
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


def job_info(job: Any) -> JobInfo:
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


async def follow(ctx: Context, job: Any, wait_s: float, *, kill_on_cancel: bool = True) -> None:
    """Relay the job's progress until it ends or ``wait_s`` passes; a cancelled call kills the job."""
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


async def run_job(ctx: Context, op: str, ws: Workspace, args: dict[str, Any], wait_s: float) -> tuple[JobInfo, Any]:
    """Start ``op`` as a job, follow it up to ``wait_s``; (job info, result dict or None)."""
    job = jobs.start_job(op, ws.root, args)
    await ctx.report_progress(0.0, None, f"{op} started as job {job.id}")
    await follow(ctx, job, wait_s)
    info = job_info(job)
    if info.state == "failed":
        raise ToolError(info.error or f"the {op} job failed without a reason")
    if info.state == "cancelled":
        raise ToolError(f"{op} job {job.id} was cancelled")
    return info, job.result if info.state == "done" else None
