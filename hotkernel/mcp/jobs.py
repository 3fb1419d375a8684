"""Long tool calls as child processes: start one, poll it, cancel it (its whole process tree is killed).

The MCP server runs every call that spawns the user's interpreter (bench, verify, sync, profile, calibrate,
torch_trace) as ``python -m hotkernel.mcp.jobs OP`` with ``{"root": ..., "args": {...}}`` on stdin. The child
calls the library and writes JSON lines on its stdout: ``{"progress": p, "total": t, "message": m}`` while it
works and one final ``{"result": {...}}`` or ``{"error": "one line"}``. Anything else it prints goes to
stderr.

Why a child process rather than a thread: a thread cannot be interrupted, while a process tree can be frozen
and killed as a whole, including the workers the runner starts in sessions of their own. The server stays
responsive, and a job can outlive the call that started it (start-then-poll for clients that time out at 60
s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hotkernel._util.procs import descendants, kill_tree  # noqa: F401 (jobs.kill_tree: the job's whole tree)
from hotkernel.errors import HotkernelError, quote
from hotkernel.insight.base import InsightContext, InsightTool
from hotkernel.insight.registry import REGISTRY
from hotkernel.reconcile.sync import sync
from hotkernel.run.bench import bench
from hotkernel.run.verify import verify
from hotkernel.workspace.paths import find_workspace

JobState = str  # "running" | "done" | "failed" | "cancelled"
MAX_FINISHED_JOBS = 64
STDERR_TAIL_LINES = 40
KILL_WAIT_S = 5.0
ProgressFn = Callable[..., None]


@dataclass
class Job:
    """One long call running (or finished) in a child process of the server."""

    id: str
    op: str
    args: dict[str, Any]
    process: subprocess.Popen
    started: float = field(default_factory=time.monotonic)
    state: JobState = "running"
    progress: float = 0.0
    total: float | None = None
    message: str | None = None
    updates: int = 0
    result: dict[str, Any] | None = None
    error: str | None = None
    finished: float | None = None
    recorded: str | None = None  # a verify job: the record written from it (one record per verify)
    stderr_tail: deque = field(default_factory=lambda: deque(maxlen=STDERR_TAIL_LINES))
    lock: threading.Lock = field(default_factory=threading.Lock)
    done_event: threading.Event = field(default_factory=threading.Event)

    @property
    def elapsed_s(self) -> float:
        end = self.finished if self.finished is not None else time.monotonic()
        return round(end - self.started, 3)

    @property
    def pid(self) -> int:
        return self.process.pid


_JOBS: dict[str, Job] = {}
_JOBS_LOCK = threading.Lock()


def start_job(op: str, root: Path, args: dict[str, Any], *, python: str | None = None) -> Job:
    """Start ``op`` (a key of OPERATIONS) on the workspace at ``root`` in a new session; returns at once."""
    if op not in OPERATIONS:
        raise HotkernelError(f"unknown job operation {op!r}: expected one of {', '.join(sorted(OPERATIONS))}")
    request = json.dumps({"root": str(root), "args": args})
    process = subprocess.Popen(
        [python or sys.executable, "-m", "hotkernel.mcp.jobs", op],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    job = Job(id=f"{op}-{uuid.uuid4().hex[:10]}", op=op, args=args, process=process)
    threading.Thread(target=_feed_stdin, args=(process, request), daemon=True).start()
    threading.Thread(target=_read_stderr, args=(job,), daemon=True).start()
    threading.Thread(target=_read_stdout, args=(job,), daemon=True).start()
    with _JOBS_LOCK:
        _JOBS[job.id] = job
        _forget_old_jobs()
    return job


def get_job(job_id: str) -> Job:
    """The job with this id, or a HotkernelError listing the ids this server knows."""
    with _JOBS_LOCK:
        job = _JOBS.get(job_id)
        known = sorted(_JOBS)
    if job is None:
        listing = ", ".join(known[-10:]) if known else "none"
        raise HotkernelError(
            f"job_id {quote(job_id)} is not a job of this server (known: {listing}); jobs live only as long as "
            f"the "
            "server process: start the call again"
        )
    return job


def list_jobs() -> list[Job]:
    """Every job this server still remembers, oldest first."""
    with _JOBS_LOCK:
        return sorted(_JOBS.values(), key=lambda j: j.started)


def latest_job(op: str, predicate: Callable[[Job], bool] = lambda job: True) -> Job | None:
    """The newest finished-ok job of ``op`` that satisfies ``predicate``."""
    for job in reversed(list_jobs()):
        if job.op == op and job.state == "done" and predicate(job):
            return job
    return None


def cancel_job(job: Job) -> None:
    """Kill the job's whole process tree (frozen first, so nothing escapes) and mark it cancelled.

    A job that already ended changes nothing: its pid may belong to another process by now.
    """
    with job.lock:
        if job.process.poll() is not None:
            return
        if job.state == "running":
            job.state = "cancelled"
            job.error = "cancelled"
        kill_tree(job.pid)
    try:
        job.process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    job.done_event.wait(timeout=5)


def cancel_all_jobs() -> None:
    """Kill every running job (server shutdown)."""
    for job in list_jobs():
        if job.state == "running":
            cancel_job(job)


def _forget_old_jobs() -> None:
    finished = [j for j in sorted(_JOBS.values(), key=lambda j: j.started) if j.state != "running"]
    for job in finished[: max(0, len(finished) - MAX_FINISHED_JOBS)]:
        _JOBS.pop(job.id, None)


def _feed_stdin(process: subprocess.Popen, request: str) -> None:
    try:
        assert process.stdin is not None
        process.stdin.write(request.encode())
        process.stdin.close()
    except (BrokenPipeError, OSError):
        pass


def _read_stderr(job: Job) -> None:
    assert job.process.stderr is not None
    for raw in job.process.stderr:
        job.stderr_tail.append(raw.decode("utf-8", errors="replace").rstrip())


def _read_stdout(job: Job) -> None:
    """Apply each protocol line to the job; at EOF, reap the child and settle the final state."""
    assert job.process.stdout is not None
    final_seen = False
    for raw in job.process.stdout:
        try:
            line = json.loads(raw)
        except json.JSONDecodeError:
            job.stderr_tail.append(raw.decode("utf-8", errors="replace").rstrip())
            continue
        with job.lock:
            if "progress" in line:
                job.progress = float(line["progress"])
                job.total = line.get("total")
                job.message = line.get("message")
                job.updates += 1
            elif "result" in line and job.state == "running":
                job.result = line["result"]
                job.state = "done"
                final_seen = True
            elif "error" in line and job.state == "running":
                job.error = str(line["error"])
                job.state = "failed"
                final_seen = True
    code = job.process.wait()
    with job.lock:
        if job.state == "running" and not final_seen:
            tail = " | ".join(line for line in list(job.stderr_tail)[-5:] if line)
            job.state = "failed"
            job.error = f"the {job.op} job process exited with code {code} before answering" + (
                f": {tail}" if tail else ""
            )
        job.finished = time.monotonic()
    job.done_event.set()


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value


def main(argv: list[str]) -> int:
    """``python -m hotkernel.mcp.jobs OP``: read the request on stdin, run OPERATIONS[OP], answer on stdout."""
    wire = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # whatever the library or its children print lands on stderr, not on the wire
    sys.stdout = sys.stderr

    def progress(done: float | None = None, total: float | None = None, message: str | None = None) -> None:
        wire.write(json.dumps({"progress": done or 0, "total": total, "message": message}) + "\n")

    if len(argv) != 2 or argv[1] not in OPERATIONS:
        wire.write(json.dumps({"error": f"usage: python -m hotkernel.mcp.jobs {{{','.join(sorted(OPERATIONS))}}}"}))
        return 2
    try:
        request = json.loads(sys.stdin.read())
        result = OPERATIONS[argv[1]](Path(request["root"]), request["args"], progress)
        payload: dict[str, Any] = {"result": _jsonable(result)}
    except HotkernelError as err:
        payload = {"error": str(err)}
    except KeyboardInterrupt:
        payload = {"error": "interrupted"}
    except Exception as err:  # a bug: say so in one line, keep the traceback on stderr for the server log
        traceback.print_exc()
        payload = {"error": f"internal error in {argv[1]}: {type(err).__name__}: {err} (a hotkernel bug: report it)"}
    wire.write(json.dumps(payload) + "\n")
    wire.flush()
    return 0


# ---- the operations a job may run: (workspace root, tool arguments, progress) -> result --------------------


def _workspace(root: Path) -> Any:
    return find_workspace(root)


def op_bench(root: Path, args: dict[str, Any], progress: ProgressFn) -> Any:
    """bench the target's baseline or candidate (or a given script inside the workspace)."""
    ws = _workspace(root)
    script = args.get("script") or ws.target_dir(args["target"]) / f"{args['role']}.py"
    return bench(
        ws,
        script,
        n=args["n"],
        warmup=args["warmup"],
        role=args["role"],
        timeout_s=args["timeout_s"],
        progress=progress,
    )


def op_verify(root: Path, args: dict[str, Any], progress: ProgressFn) -> Any:
    """verify the target's candidate (or a given candidate script) against its baseline."""
    ws = _workspace(root)
    directory = ws.target_dir(args["target"])
    candidate = args.get("candidate") or directory / "candidate.py"
    return verify(ws, directory / "baseline.py", candidate, n=args["n"], timeout_s=args["timeout_s"], progress=progress)


def op_sync(root: Path, args: dict[str, Any], progress: ProgressFn) -> Any:
    """reconcile the workspace (optionally only some targets)."""
    return sync(
        _workspace(root),
        args.get("names"),
        from_scratch=args.get("from_scratch", False),
        n=args.get("n"),
        progress=progress,
        gpus=args.get("gpus"),
        executor=args.get("executor", "local"),
        address=args.get("address"),
        budget_s=args.get("budget_s"),
        serial=args.get("serial", False),
    )


def insight_operation(tool: InsightTool) -> Callable[[Path, dict[str, Any], ProgressFn], Any]:
    """The job operation of a long-running insight tool: its ``run`` on the validated arguments."""

    def operation(root: Path, args: dict[str, Any], progress: ProgressFn) -> Any:
        return tool.run(tool.Params.model_validate(args), InsightContext.at(root, confined=True, progress=progress))

    operation.__doc__ = f"the insight tool {tool.NAME} (hotkernel.insight.registry)"
    return operation


OPERATIONS: dict[str, Callable[[Path, dict[str, Any], ProgressFn], Any]] = {
    "bench": op_bench,
    "verify": op_verify,
    "sync": op_sync,
    **{name: insight_operation(tool) for name, tool in REGISTRY.items() if tool.LONG_RUNNING},
}

if __name__ == "__main__":
    sys.exit(main(sys.argv))
