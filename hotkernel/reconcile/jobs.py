"""What a sync job is and what it ships: ``Job`` (one verify), ``LaneRun`` and ``Outcome`` (what comes back), the
lane failures (``LaneDied``: may run again elsewhere; ``JobFailed``: would fail the same way again), and the
private copy of a target a lane runs in (``job_files``, ``bundle``, ``unpack``, ``run_bundled`` for one-shot
lanes such as Ray tasks)."""

from __future__ import annotations

import io
import json
import os
import re
import sys
import tarfile
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hotkernel._util.procs import ProcResult, run_command
from hotkernel.errors import HotkernelError
from hotkernel.run.models import VerifyResult
from hotkernel.run.runner import source_files
from hotkernel.run.verify import DEFAULT_TIMEOUT_S
from hotkernel.workspace.paths import Workspace

WALL_SLACK_S = 300.0  # a lane's whole verify may take its runs' limits plus this (interpreter starts, judging)
BUNDLE_LIMIT_BYTES = 256 * 1024 * 1024  # what one job may ship: a bigger target folder is a mistake
LaneStatus = Callable[[str, int], None]  # (what the lane is doing, runs of the job done)


@dataclass(frozen=True)
class Job:
    """One verify a sync needs: ``candidate`` against ``baseline`` (workspace-relative), with the files it uses."""

    key: str  # unique within one sync: the target name, "<target>/confirm", or ``competitor_job_key``
    target: str
    baseline: str
    candidate: str
    rounds: int
    timeout_s: float | None
    device_kind: str  # "cuda" or "cpu"
    files: tuple[str, ...] = ()  # workspace-relative: the manifest, the contract, targets/<target>/, its sources
    # its runs fork from a server that warms torch.compile (a cpu verify of scripts that call it, the contract's
    # ``wants_compile_warm``): a lane with other jobs before it starts that server ahead (``ProcessLane``)
    compile_warm: bool = False
    # the target's manifest entry as sync read it (an in-process lane passes it on; a child reads its own copy)
    resolved: dict[str, Any] | None = field(default=None, compare=False, hash=False)

    @property
    def runs(self) -> int:
        """The most runs the verify may make (it often stops earlier: the sequential rule)."""
        return 2 * self.rounds

    def wall_limit_s(self) -> float:
        """The longest a whole verify may take before its lane kills it."""
        return self.runs * (self.timeout_s or DEFAULT_TIMEOUT_S) + WALL_SLACK_S

    def as_json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if k not in ("files", "resolved")}, sort_keys=True)


@dataclass(frozen=True)
class JobTerms:
    """What every job of one sync shares: its rounds and run limit, and where it can run (the pool's device kinds,
    the reason a cuda verify is skipped where none runs cuda, and the GPU name plans are made against)."""

    rounds: int
    timeout_s: float | None
    kinds: frozenset[str]
    no_cuda: str
    gpu_name: str | None


@dataclass
class LaneRun:
    """What a lane brings back: the verify result, and the hardware facts where it ran (None: probe here)."""

    result: VerifyResult
    facts: dict[str, Any] | None = None
    lane: str = ""
    judge_pid: int | None = None  # the judge that judged its runs (one per lane while verifies are clean)


@dataclass
class Outcome:
    """One job, done (``run``) or not run (``error``), after ``attempts`` tries."""

    job: Job
    run: LaneRun | None = None
    error: str | None = None
    lane: str = ""
    attempts: int = 0
    budget: bool = False  # not run, or cancelled mid-run, because the sync's budget was spent


BUDGET_SPENT = "not run: the time budget was spent"
BUDGET_CUT = "not run: the time budget was spent while it verified; nothing of that verify is recorded"


def competitor_job_key(target: str, competitor: str) -> str:
    """The job key of a competitor's verify: ``<target>/competitor/<competitor>``."""
    return f"{target}/competitor/{competitor}"


class LaneDied(Exception):
    """The lane's process, worker or node died mid-run: the job may run again elsewhere."""


class JobFailed(Exception):
    """The job cannot run (a one-line reason, e.g. a bad target): running it again would fail the same way."""


MISSING_MODULE = re.compile(r"No module named '([A-Za-z_][\w.]*)'")


def copy_hint(reason: str | None, run: LaneRun, root: Path) -> str | None:
    """``reason`` with its fix when a verify in a lane's private copy (``run.facts`` set: a lane ran it) could not
    import a module that the workspace ``root`` has (a folder or file of that name at its top): the copy holds only
    the files a job ships (``job_files``), not the whole workspace. A module missing everywhere keeps its reason."""
    found = MISSING_MODULE.search(reason or "") if run.facts is not None else None
    top = found.group(1).split(".")[0] if found else ""
    if not top or not ((root / top).is_dir() or (root / f"{top}.py").is_file()):
        return reason
    return (
        f"{reason}; it ran in a lane's private copy of the workspace (hotkernel.yaml, targets/<name>/ and the "
        f"target's source folders), which lacks {top}: move it there, or run `hotkernel sync --serial`"
    )


# ---- what a job ships ---------------------------------------------------------------------------------------


def job_files(ws: Workspace, target: str, resolved: dict[str, Any], refs: Sequence[str] = ()) -> tuple[str, ...]:
    """Workspace-relative files a verify of ``target`` reads: the manifest, the contract, every file of
    ``targets/<target>/``, the target's source files (``runner.source_files``) and those of the further function
    references ``refs`` (a competitor's ``./file.py:function``)."""
    root = ws.root.resolve()
    folder = ws.target_dir(target)
    paths = [ws.manifest, ws.contract_file, *source_files(ws, resolved)]
    paths += [path for ref in refs for path in source_files(ws, {"from": ref})]
    paths += [p for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    return tuple(sorted({p.resolve().relative_to(root).as_posix() for p in paths if p.is_file()}))


def bundle(ws: Workspace, files: Sequence[str]) -> bytes:
    """A gzipped tarball of ``files`` (workspace-relative, regular files only), for a lane's private copy."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        for rel in files:
            path = ws.inside(rel, what="job file")
            info = tar.gettarinfo(str(path), arcname=rel)
            if not info.isfile():
                raise HotkernelError(f"{rel}: a sync job ships regular files only; replace the link with the file")
            with open(path, "rb") as handle:
                tar.addfile(info, handle)
    if data.tell() > BUNDLE_LIMIT_BYTES:
        raise HotkernelError(
            f"sync: the files of the job are {data.tell() >> 20} MiB (limit "
            f"{BUNDLE_LIMIT_BYTES >> 20} MiB); keep data files out of targets/ and the source folders"
        )
    return data.getvalue()


def unpack(data: bytes, root: Path) -> None:
    """Unpack a ``bundle`` into ``root`` (regular files with relative names inside it only): tarfile's "data"
    extraction filter, or, on a Python before 3.10.12 / 3.11.4 (which lacks the filters), the same rule checked
    here."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(root, filter="data")
            return
        base = root.resolve()
        for member in tar.getmembers():
            if not member.isfile() or not (base / member.name).resolve().is_relative_to(base):
                raise HotkernelError(f"sync: a job bundle holds {member.name!r}, not a regular file inside the copy")
        tar.extractall(root)


def run_bundled(
    data: bytes,
    job: Job,
    *,
    cancel: threading.Event | None = None,
    env: dict[str, str] | None = None,
    python: str | None = None,
) -> LaneRun:
    """Unpack ``data`` into a temporary workspace and run ``job`` there in a child process (its own process group,
    killed on ``cancel``, a timeout or an exception); the lane side of both local lanes and Ray tasks."""
    with tempfile.TemporaryDirectory(prefix="hotkernel-lane-") as tmp:
        root = Path(tmp) / "ws"
        unpack(data, root)
        child_env = {**os.environ, **(env or {}), "HOTKERNEL_WORKSPACE": str(root)}
        if python:
            child_env["HOTKERNEL_PYTHON"] = python
        proc = run_command(
            [sys.executable, "-m", "hotkernel.reconcile.verify_job", job.as_json()],
            timeout_s=job.wall_limit_s(),
            cwd=root,
            env=child_env,
            out_dir=Path(tmp) / "out",
            name="verify",
            cancel=cancel,
        )
        return child_outcome(proc, job)


def child_outcome(proc: ProcResult, job: Job) -> LaneRun:
    """The verify child's last stdout line as a ``LaneRun``; ``JobFailed`` or ``LaneDied`` when there is none."""
    lines = [line for line in proc.stdout().splitlines() if line.strip()]
    try:
        reply = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        reply = None
    if proc.cancelled:
        raise LaneDied("cancelled")
    if proc.timed_out:
        raise JobFailed(f"the verify took longer than {job.wall_limit_s():.0f} s and was killed")
    if isinstance(reply, dict) and proc.returncode == 0 and "result" in reply:
        return LaneRun(result=VerifyResult.model_validate(reply["result"]), facts=reply.get("facts") or {})
    if isinstance(reply, dict) and "error" in reply:
        raise JobFailed(str(reply["error"]))
    tail = (proc.stderr(2000).strip().splitlines() or ["no output"])[-1]
    raise LaneDied(f"the verify process died (exit {proc.returncode}): {tail[:200]}")
