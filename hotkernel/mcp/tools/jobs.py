"""The job tools: poll, cancel and list the long calls (bench, verify, sync and the long insight tools)."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from hotkernel.mcp import jobs
from hotkernel.mcp.base import DEFAULT_WAIT_S, MAX_JOB_ID, JobInfo, WaitS, follow, job_info, tool


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


@tool(read_only=True, destructive=False, idempotent=False)
async def job_status(
    ctx: Context,
    job_id: Annotated[
        str, Field(description="job id a long tool returned (job.job_id)", min_length=1, max_length=MAX_JOB_ID)
    ],
    wait_s: WaitS = DEFAULT_WAIT_S,
) -> JobStatus:
    """Poll a job that bench, verify, sync, profile, calibrate or torch_trace started.

    Waits up to wait_s for it to finish, reporting progress meanwhile, then returns its state and, when done,
    the result (the same fields the starting tool returns). A failed job is a tool error with the reason. Use
    list_jobs to find ids, cancel_job to stop one.
    """
    job = jobs.get_job(job_id)
    await follow(ctx, job, wait_s, kill_on_cancel=False)
    info = job_info(job)
    if info.state == "failed":
        raise ToolError(f"job {job_id} ({info.op}) failed: {info.error}")
    return JobStatus(job=info, result=job.result if info.state == "done" else None)


@tool(read_only=False, destructive=True, idempotent=True)
async def cancel_job(
    job_id: Annotated[
        str, Field(description="job id to stop (job.job_id from a long tool)", min_length=1, max_length=MAX_JOB_ID)
    ],
) -> JobInfo:
    """Stop a running job: its process and every process it started (workers, judge, profiler) are killed.

    Nothing is recorded for a cancelled job. Cancelling a finished job changes nothing. Use job_status to wait
    for a job instead.
    """
    job = jobs.get_job(job_id)
    await anyio.to_thread.run_sync(jobs.cancel_job, job)
    return job_info(job)


@tool(read_only=True, destructive=False, idempotent=True)
def list_jobs() -> JobList:
    """List the jobs this server process started (running and recently finished), oldest first.

    Use job_status to wait for one, cancel_job to stop one.
    """
    return JobList(jobs=[job_info(job) for job in jobs.list_jobs()])
