"""Where a sync's verifies run: the default (``InlineLane``: in this process, one judge kept warm across its
targets; on a GPU host with cpu and cuda targets and CPUs to spare, the visible GPU's lane and a CPU lane side by
side), the executor the CLI/MCP options name, and SIGINT handling for the sync."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from hotkernel._util.nvml import visible_gpu_name, visible_gpus
from hotkernel.errors import HotkernelError, quote
from hotkernel.manifest import resolve_target
from hotkernel.manifest.python import user_python
from hotkernel.reconcile.executor import (
    Executor,
    Job,
    Lane,
    LaneExecutor,
    LaneRun,
    LaneStatus,
    PythonOnce,
    host_lanes,
    python_of,
)
from hotkernel.reconcile.plan import NO_GPU
from hotkernel.reconcile.ray_executor import RayExecutor
from hotkernel.run.runner import WarmJudge
from hotkernel.run.verify import clean_run, verify
from hotkernel.workspace.paths import Workspace

# A CPU lane runs beside the GPU lane by default only where this process may use the cpu targets' threads plus
# this many more logical CPUs: one for the GPU lane's launches, one for the judges, one for the coordinator.
SPARE_CPUS = 3


def build_executor(
    ws: Workspace,
    *,
    gpus: str | None = None,
    executor: str = "local",
    address: str | None = None,
    python: str | PythonOnce | None = None,
    serial: bool = False,
    manifest: Any = None,
    names: list[str] | None = None,
) -> Executor | None:
    """The executor the CLI/MCP options name; None for one verify at a time in this process (``serial``, or the
    default where ``side_by_side`` says no)."""
    if serial and (gpus is not None or executor != "local"):
        raise HotkernelError("--serial runs one verify at a time in this process; drop --gpus / --executor")
    if executor == "ray":
        if gpus is not None:
            raise HotkernelError("--gpus is for --executor local; Ray gives each task one GPU of the cluster")
        return RayExecutor(ws, address=address, python=python)
    if executor != "local":
        raise HotkernelError(f"--executor {quote(executor)}: give 'local' (this host) or 'ray' (a Ray cluster)")
    if address is not None:
        raise HotkernelError("--address is for --executor ray; drop it or add --executor ray")
    if gpus is not None:
        return LaneExecutor(host_lanes(ws, gpus, python=python))
    if not serial and manifest is not None and side_by_side(manifest, names, usable_cpus()):
        return LaneExecutor(host_lanes(ws, "0", python=python))
    return None


def usable_cpus() -> int:
    """The logical CPUs this process may run on (its affinity where the platform says, else the machine's)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def side_by_side(manifest: Any, names: list[str] | None, cpus: int) -> bool:
    """Whether a default sync runs the visible GPU's lane and a CPU lane side by side (as ``--gpus 0``) rather than
    one verify at a time: where the targets it may run (``names``, else all) include cuda and cpu ones, NVML sees a
    GPU this process may use, and ``cpus`` (the logical CPUs it may use) leave ``SPARE_CPUS`` beside the cpu
    targets' threads. The CPU lane times with its pinned threads while the GPU lane's kernels are timed by CUDA
    events; on an H100 host (16 CPUs) the five GPU targets' fresh medians stayed inside the board's range with a
    CPU lane beside them (docs/performance.md)."""
    resolved = [resolve_target(manifest, name) for name in (names or list(manifest.targets))]
    cpu_threads = [r.threads or 1 for r in resolved if r.device == "cpu"]
    if not cpu_threads or len(cpu_threads) == len(resolved):
        return False
    return cpus >= max(cpu_threads) + SPARE_CPUS and bool(visible_gpus())


@dataclass
class InlineLane(Lane):
    """The default lane: each verify in this process, in the workspace itself, one at a time, all with one judge
    and its pre-started workers (``WarmJudge``: replaced after a verify that was not clean); ``close`` ends it."""

    ws: Workspace
    python: str | PythonOnce | None = None
    name: str = "local"
    kinds: frozenset[str] = frozenset({"cuda", "cpu"})
    warm: WarmJudge | None = field(default=None, repr=False)

    def run(self, job: Job, cancel: threading.Event, status: LaneStatus) -> LaneRun:
        status("verify", 0)
        python = user_python(self.ws, python_of(self.python), probe=False)
        self.warm = self.warm or WarmJudge(self.ws)
        kwargs: dict[str, Any] = {
            "n": job.rounds,
            "python": python,
            "cancel": cancel,
            "progress": lambda done, _total, msg: status(msg, done),
            "resolved": job.resolved,
        }
        if job.timeout_s is not None:
            kwargs["timeout_s"] = job.timeout_s
        try:
            judge = self.warm.take(python, job.resolved)
            result = verify(self.ws, self.ws.root / job.baseline, self.ws.root / job.candidate, judge=judge, **kwargs)
        except BaseException:  # an interrupt or a failed start: the judge and its workers go now
            self.close()
            raise
        pid = self.warm.pid()
        self.warm.done(clean_run(result) and not cancel.is_set())
        return LaneRun(result=result, facts=None, lane=self.name, judge_pid=pid)

    def close(self) -> None:
        if self.warm is not None:
            self.warm.close()


@contextlib.contextmanager
def interrupts_stop() -> Iterator[None]:
    """SIGINT stops the sync even when inherited ignored (``sync &`` in a script), where a held-back one would be
    lost; main thread only, the inherited disposition comes back after."""
    main = threading.current_thread() is threading.main_thread()
    ignored = main and signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    with contextlib.ExitStack() as stack:
        if ignored:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            stack.callback(signal.signal, signal.SIGINT, signal.SIG_IGN)
        yield


def inline_kinds(gpu_name: str | None) -> frozenset[str]:
    """What the default lane runs: cpu targets, and cuda targets when this machine has a GPU."""
    return frozenset({"cpu", "cuda"}) if gpu_name not in (None, NO_GPU) else frozenset({"cpu"})


def lane_gpu_name(pool: Executor | None) -> str | None:
    """The GPU name plans are made against: the first GPU lane's, this process's visible GPU, or None (a
    cluster: compared with each target's latest entry on any GPU)."""
    if isinstance(pool, LaneExecutor):
        gpus = [lane.gpu for lane in pool.lanes if getattr(lane, "gpu", None) is not None]
        if gpus:
            return gpus[0].name
    if pool is not None and not isinstance(pool, LaneExecutor):
        return None
    return visible_gpu_name()
