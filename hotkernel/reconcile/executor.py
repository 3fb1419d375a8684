"""How ``sync`` runs its verify jobs: lanes (one GPU each, or the CPU), retries, and stopping on Ctrl-C.

A ``Job`` is one verify a sync needs (a target's candidate against its baseline; a target may later add more,
e.g. competitors). A ``Lane`` runs one job at a time and returns the VerifyResult and the facts of the hardware
it ran on; an ``Executor`` spreads jobs over its lanes and yields each ``Outcome`` to the coordinating process,
which alone writes results/, hotkernel.lock and LEADERBOARD.md. A lane whose process (or node) dies mid-run
raises ``LaneDied``: the job is retried on another lane at most ``MAX_RETRIES`` times, then reported not run.

``ProcessLane`` runs the job in a child process (``python -m hotkernel.reconcile.verify_job``) in a private copy
of the target (``bundle``): the run's own workspace checks then see only files the coordinator never writes.
"""

from __future__ import annotations

import collections
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from hotkernel._util.nvml import GpuSlot, all_gpus, select_visible, visible_tokens
from hotkernel.errors import HotkernelError, quote
from hotkernel.manifest.python import user_python
from hotkernel.reconcile.jobs import (
    BUDGET_CUT,
    BUDGET_SPENT,
    BUNDLE_LIMIT_BYTES,
    WALL_SLACK_S,
    Job,
    JobFailed,
    LaneDied,
    LaneRun,
    LaneStatus,
    Outcome,
    bundle,
    child_outcome,
    job_files,
    run_bundled,
    unpack,
)
from hotkernel.reconcile.lane_child import LaneChild
from hotkernel.workspace.paths import Workspace

__all__ = [  # what a job is lives in jobs.py; the names stay importable from here
    "BUDGET_CUT",
    "BUDGET_SPENT",
    "BUNDLE_LIMIT_BYTES",
    "WALL_SLACK_S",
    "Job",
    "JobFailed",
    "LaneDied",
    "LaneRun",
    "LaneStatus",
    "Outcome",
    "bundle",
    "child_outcome",
    "job_files",
    "run_bundled",
    "unpack",
]

MAX_RETRIES = 2  # a job whose lane died is run again at most this many times
StatusFn = Callable[[str, str, int], None]  # (lane name, "<target>: <what>", runs of the job done)


class Lane(Protocol):
    """Runs one job at a time: one GPU, or the CPU. A lane subclasses this to take the defaults of ``close`` and
    ``warm_ahead`` (a lane that keeps nothing warm)."""

    name: str
    kinds: frozenset[str]  # the device kinds it runs: "cuda", "cpu"

    def run(self, job: Job, cancel: threading.Event, status: LaneStatus) -> LaneRun: ...

    def warm_ahead(self, jobs: Sequence[Job]) -> None:
        """``jobs``: what this lane may run, in queue order, before it runs any; a lane that keeps warm state may
        prepare for them."""
        del jobs

    def close(self) -> None:
        """End what the lane keeps warm between jobs (its judge, its child process)."""


class Executor(Protocol):
    """Spreads jobs over lanes; yields each outcome as it comes (``close()`` the iterator to stop them all)."""

    def describe(self) -> str: ...

    def kinds(self) -> set[str]: ...

    def run(
        self, jobs: Sequence[Job], status: StatusFn, *, deadline: float | None = None, more: list[Job] | None = None
    ) -> Iterator[Outcome]:
        """``deadline`` (``time.monotonic()``): no job starts after it, and one running then is cancelled (its
        outcome has ``budget`` set). ``more``: jobs the caller appends while it handles an outcome (the second
        verify of a new best); they join the queue, ahead of the jobs still waiting, before the next outcome."""
        ...

    def close(self) -> None: ...


@dataclass
class PythonOnce:
    """The interpreter targets run in, found (its PATH probe paid) at most once per sync, on first use; None
    when none is found, so each verify says why with the fix."""

    ws: Workspace
    given: str | None = None
    found: str | None = None
    guard: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self) -> str | None:
        if self.given:
            return self.given
        with self.guard:
            if self.found is None:
                try:
                    self.found = user_python(self.ws, None, probe=False)
                except HotkernelError:
                    return None
            return self.found


def python_of(python: str | PythonOnce | None) -> str | None:
    """A lane's interpreter: as given, or found once."""
    return python() if isinstance(python, PythonOnce) else python


@dataclass
class ProcessLane(Lane):
    """One GPU (pinned with CUDA_VISIBLE_DEVICES=<its UUID>) or the CPU of this host. Its jobs run one after
    another in one child process (``LaneChild``), each in a fresh private copy of its target; the child keeps
    its judge and pre-started workers warm between them. A cancelled or timed-out job kills the child (the
    next job starts a new one); ``close`` ends it."""

    ws: Workspace
    name: str
    kinds: frozenset[str]
    gpu: GpuSlot | None = None
    python: str | PythonOnce | None = None
    child: LaneChild | None = field(default=None, repr=False)
    compile_ahead: bool = False  # start the compile-warm fork server with the next job (``warm_ahead``)

    def warm_ahead(self, jobs: Sequence[Job]) -> None:
        """``jobs``: what this lane may run, in queue order. When a cpu job after the first forks from a server
        that warms torch.compile (``Job.compile_warm``), the child starts that server with its first job, so its
        warm-up (about 27 s, one core) runs beside the lane's earlier verifies instead of before that job: on an
        H100 host it was 46 s of a 165 s sync's critical path (docs/performance.md)."""
        self.compile_ahead = any(job.compile_warm and job.device_kind == "cpu" for job in list(jobs)[1:])

    def run(self, job: Job, cancel: threading.Event, status: LaneStatus) -> LaneRun:
        status("verify", 0)
        data = bundle(self.ws, job.files)
        if self.child is None or not self.child.alive():
            self.close()
            env = {"CUDA_VISIBLE_DEVICES": self.gpu.uuid if self.gpu is not None else ""}
            python = python_of(self.python)
            self.child = LaneChild.start({**env, "HOTKERNEL_PYTHON": python} if python else env)
        warm_compile, self.compile_ahead = self.compile_ahead, False
        try:
            run = self.child.run(data, job, cancel=cancel, status=status, warm_compile=warm_compile)
        except (LaneDied, JobFailed):
            if not self.child.alive():
                self.close()
            raise
        except BaseException:
            self.close()
            raise
        run.lane = self.name
        return run

    def close(self) -> None:
        if self.child is not None:
            child, self.child = self.child, None
            child.stop()


def host_lanes(
    ws: Workspace, gpus: str, *, python: str | PythonOnce | None = None, gpu_list: list[GpuSlot] | None = None
) -> list[ProcessLane]:
    """One lane per GPU named by ``gpus`` ('all' or indices '0,1', as nvidia-smi numbers the GPUs this process
    may use) plus one CPU lane (cpu targets, one at a time). ``gpu_list``: the GPUs (default: NVML's, as
    CUDA_VISIBLE_DEVICES leaves them)."""
    visible = gpu_list if gpu_list is not None else select_visible(all_gpus(), visible_tokens())
    spec = gpus.strip().lower()
    if spec == "all":
        chosen = visible
    else:
        try:
            indices = [int(part) for part in spec.split(",") if part.strip()]
        except ValueError:
            raise HotkernelError(f"--gpus {quote(gpus)}: give 'all' or GPU indices like '0,1'") from None
        bad = [i for i in indices if not 0 <= i < len(visible)]
        if not indices or bad or len(set(indices)) != len(indices):
            raise HotkernelError(
                f"--gpus {quote(gpus)}: {len(visible)} GPU(s) visible here (indices 0.."
                f"{max(len(visible) - 1, 0)}); give 'all' or distinct indices like '0,1'"
            )
        chosen = [visible[i] for i in indices]
    if not chosen:
        raise HotkernelError(
            "--gpus: NVML finds no NVIDIA GPU on this machine; run sync without --gpus "
            "(cuda targets are skipped) or on a GPU host"
        )
    lanes = [
        ProcessLane(ws, f"gpu{i}", frozenset({"cuda"}), gpu=g, python=python)
        for i, g in zip((visible.index(g) for g in chosen), chosen, strict=True)
    ]
    return [*lanes, ProcessLane(ws, "cpu", frozenset({"cpu"}), python=python)]


# ---- spreading jobs over lanes ------------------------------------------------------------------------------


class _Cancel(threading.Event):
    """The lanes' cancel event; ``arm`` sets it at a deadline and remembers that the budget set it."""

    def __init__(self) -> None:
        super().__init__()
        self.budget = False

    def arm(self, deadline: float | None) -> threading.Timer | None:
        if deadline is None:
            return None

        def spent() -> None:
            self.budget = True
            self.set()

        timer = threading.Timer(max(0.0, deadline - time.monotonic()), spent)
        timer.daemon = True
        timer.start()
        return timer


def _stopped(task: _Task, lane: str, cancel: threading.Event, *, started: bool = False) -> Outcome:
    """The outcome of a job that a set ``cancel`` kept from finishing: the budget, or an interrupt; ``started``:
    it was cut short on ``lane`` (the time it ran is lost), not left in the queue."""
    budget = bool(getattr(cancel, "budget", False))
    error = (BUDGET_CUT if started else BUDGET_SPENT) if budget else "not run: sync was interrupted"
    return Outcome(task.job, error=error, lane=lane, attempts=task.attempts, budget=budget)


@dataclass
class _Task:
    job: Job
    attempts: int = 0
    failed_on: set[str] = field(default_factory=set)
    reasons: list[str] = field(default_factory=list)


class LaneExecutor:
    """Jobs over ``lanes`` of this host: one lane runs in the calling thread, several in one thread each.

    A job goes to the first free lane of its device kind, in job order; a job whose lane died goes back to the
    queue and prefers a lane it has not died on. Closing the iterator (an exception or Ctrl-C in the
    coordinator) sets the cancel event, which kills every lane's process tree, and waits for the lanes.
    """

    def __init__(self, lanes: Sequence[Lane]) -> None:
        if not lanes:
            raise HotkernelError("sync: no lane to run on")
        self.lanes = list(lanes)

    def describe(self) -> str:
        return ", ".join(lane.name for lane in self.lanes)

    def kinds(self) -> set[str]:
        return set().union(*(lane.kinds for lane in self.lanes))

    def close(self) -> None:
        """End what the lanes keep warm across ``run`` calls (a sync's first verifies, then its confirmations):
        their judges and child processes. A cancelled run has killed its lanes' processes already."""
        for lane in self.lanes:
            lane.close()

    def run(
        self, jobs: Sequence[Job], status: StatusFn, *, deadline: float | None = None, more: list[Job] | None = None
    ) -> Iterator[Outcome]:
        more = more if more is not None else []
        for lane in self.lanes:
            lane.warm_ahead([job for job in jobs if job.device_kind in lane.kinds])
        if len(self.lanes) == 1:
            return self._serial(jobs, status, deadline, more)
        return self._threads(jobs, status, deadline, more)

    def _attempt(self, lane: Lane, task: _Task, cancel: threading.Event, status: StatusFn) -> Outcome | None:
        """Run ``task`` on ``lane`` once: its outcome, or None when it goes back to the queue for a retry."""
        task.attempts += 1
        try:
            run = lane.run(task.job, cancel, lambda what, done: status(lane.name, f"{task.job.key}: {what}", done))
            run.lane = run.lane or lane.name
            if cancel.is_set():  # a lane that stops between runs returns a cut-short result: it is not a verdict
                return _stopped(task, lane.name, cancel, started=True)
            return Outcome(task.job, run=run, lane=lane.name, attempts=task.attempts)
        except (JobFailed, HotkernelError) as err:
            if cancel.is_set():
                return _stopped(task, lane.name, cancel, started=True)
            return Outcome(task.job, error=str(err), lane=lane.name, attempts=task.attempts)
        except LaneDied as err:
            task.failed_on.add(lane.name)
            task.reasons.append(f"{lane.name}: {err}")
            if cancel.is_set():
                return _stopped(task, lane.name, cancel, started=True)
            if task.attempts > MAX_RETRIES:
                return Outcome(
                    task.job,
                    lane=lane.name,
                    attempts=task.attempts,
                    error=f"not run: its lane died {task.attempts} times ({'; '.join(task.reasons)})",
                )
            status(lane.name, f"{task.job.key}: lane died ({err}); retrying", 0)
            return None
        except Exception as err:  # a failing job is reported; the others go on
            return Outcome(task.job, error=f"{type(err).__name__}: {err}", lane=lane.name, attempts=task.attempts)

    def _serial(
        self, jobs: Sequence[Job], status: StatusFn, deadline: float | None, more: list[Job]
    ) -> Iterator[Outcome]:
        lane, cancel = self.lanes[0], _Cancel()
        timer = cancel.arm(deadline)
        queue_ = collections.deque(jobs)
        try:
            while queue_:
                task = _Task(queue_.popleft())
                if cancel.is_set():
                    outcome = _stopped(task, "", cancel)
                elif task.job.device_kind not in lane.kinds:
                    outcome = Outcome(task.job, error=f"not run: no lane runs {task.job.device_kind} targets")
                else:
                    outcome = None
                    while outcome is None:
                        outcome = self._attempt(lane, task, cancel, status)
                yield outcome
                queue_.extendleft(reversed(more))  # added while the caller handled it: next, in their order
                more.clear()
        finally:
            if timer is not None:
                timer.cancel()
            cancel.set()

    def _threads(
        self, jobs: Sequence[Job], status: StatusFn, deadline: float | None, more: list[Job]
    ) -> Iterator[Outcome]:
        cancel = _Cancel()
        timer = cancel.arm(deadline)
        cond = threading.Condition()
        pending: list[_Task] = []
        running: list[_Task] = []
        done: queue.Queue[Outcome] = queue.Queue()
        finished = threading.Event()  # every outcome handed out and nothing added: the lanes may stop

        def enqueue(new: Sequence[Job], *, first: bool) -> None:
            """``new`` into the queue (``first``: ahead of the waiting jobs); one no lane runs is answered now."""
            tasks = []
            for job in new:
                if any(job.device_kind in lane.kinds for lane in self.lanes):
                    tasks.append(_Task(job))
                else:
                    done.put(Outcome(job, error=f"not run: no lane runs {job.device_kind} targets"))
            with cond:
                if first:
                    pending[:0] = tasks
                else:
                    pending.extend(tasks)
                cond.notify_all()

        enqueue(jobs, first=False)

        def take(lane: Lane) -> _Task | None:
            peers = [other.name for other in self.lanes if other.kinds & lane.kinds]
            with cond:
                while not cancel.is_set() and not finished.is_set():
                    mine = [t for t in pending if t.job.device_kind in lane.kinds]
                    fresh = [t for t in mine if lane.name not in t.failed_on]
                    stale = [t for t in mine if all(p in t.failed_on for p in peers)]  # every lane died on it
                    pick = (fresh or stale or [None])[0]
                    if pick is not None:
                        pending.remove(pick)
                        running.append(pick)
                        return pick
                    cond.wait(0.2)  # an outcome still to come may add a job (``more``)
            return None

        def work(lane: Lane) -> None:
            while (task := take(lane)) is not None:
                outcome = self._attempt(lane, task, cancel, status)
                with cond:
                    running.remove(task)
                    if outcome is None:
                        pending.insert(0, task)
                    cond.notify_all()
                if outcome is not None:
                    done.put(outcome)
            status(lane.name, "idle", 0)

        threads = [
            threading.Thread(target=work, args=(lane,), name=f"hotkernel-lane-{lane.name}", daemon=True)
            for lane in self.lanes
        ]
        try:
            for thread in threads:
                thread.start()
            left = len(jobs)
            while left:
                try:
                    outcome = done.get(timeout=0.2)
                except queue.Empty:
                    if any(t.is_alive() for t in threads) or not done.empty():
                        continue
                    if not cancel.is_set():
                        raise HotkernelError("sync: every lane stopped with jobs left") from None
                    with cond:
                        stopped, pending[:] = list(pending), []
                    for task in stopped:  # never started: the budget was spent first
                        done.put(_stopped(task, "", cancel))
                    continue
                left -= 1
                yield outcome
                if more:  # added while the caller handled that outcome
                    added, more[:] = list(more), []
                    left += len(added)
                    if cancel.is_set():
                        for job in added:
                            done.put(_stopped(_Task(job), "", cancel))
                    else:
                        enqueue(added, first=True)
            finished.set()
        finally:
            if timer is not None:
                timer.cancel()
            cancel.set()
            with cond:
                cond.notify_all()
            for thread in threads:
                thread.join()
