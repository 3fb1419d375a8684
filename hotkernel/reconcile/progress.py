"""A sync's progress line: runs done of runs planned, what each busy lane does, and the estimated time left."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from hotkernel.reconcile.budget import Estimate, duration_text
from hotkernel.reconcile.executor import Job

SyncProgress = Callable[[int, int, str], None]  # (runs done, runs planned, "<target>: <what>")


class RunCounter:
    """Turns each lane's verify progress into whole-sync progress: (runs done, runs planned, message); with
    several lanes the message shows what every busy lane does. Messages about verifies end with the estimated
    time left (``Estimate``: recorded verify times, else this sync's seconds per run)."""

    def __init__(self, progress: SyncProgress | None, total: int = 0, estimate: Estimate | None = None) -> None:
        self.progress, self.total, self.offset = progress, total, 0
        self.lanes: dict[str, tuple[str, int]] = {}  # lane -> (what it does, runs of its job done)
        self.guard = threading.Lock()
        self.estimate = estimate or Estimate(history={}, runs={})
        self.pending: dict[str, int] = {}  # job key -> runs done, for jobs not yet finished
        self.started: dict[str, float] = {}  # job key -> monotonic time its lane began it

    def plan(self, jobs: list[Job], seconds: dict[str, float]) -> None:
        """Jobs that are to run (``seconds``: their targets' recorded verify times), added to the total."""
        with self.guard:
            for job in jobs:
                self.estimate.add_job(job.key, job.runs, seconds.get(job.target))
                self.pending[job.key] = 0
            self.total += sum(job.runs for job in jobs)

    def say(self, name: str, message: str, done: int = 0) -> None:
        """A message about target ``name`` from the coordinator."""
        self._emit(f"{name}: {message}", done)

    def lane_status(self, lane: str, message: str, done: int) -> None:
        """What ``lane`` does now ("<job>: <what>", or "idle"); called from the lanes' threads."""
        with self.guard:
            if message == "idle":
                self.lanes.pop(lane, None)
            else:
                self.lanes[lane] = (message, done)
                key = message.split(": ", 1)[0]
                if key in self.pending:
                    self.started.setdefault(key, time.monotonic())
                    self.pending[key] = done
            busy = dict(self.lanes)
        if message == "idle" or not busy:
            return
        if len(busy) == 1 and lane in busy:
            text = message
        else:
            text = " | ".join(f"{name}: {what}" for name, (what, _) in sorted(busy.items()))
        self._emit(text + self.left_text(), sum(d for _, d in busy.values()))

    def finish(self, job: Job) -> None:
        with self.guard:
            self.offset += job.runs
            began = self.started.pop(job.key, None)
            if self.pending.pop(job.key, None) is not None and began is not None:
                self.estimate.finished(job.runs, time.monotonic() - began)
            for lane, (what, _) in list(self.lanes.items()):
                if what.startswith(f"{job.key}: "):
                    self.lanes.pop(lane)

    def left_s(self) -> float | None:
        """Estimated seconds until every planned job is done (None until something is measured)."""
        with self.guard:
            return self.estimate.left_s(list(self.pending), dict(self.pending))

    def left_text(self) -> str:
        left = self.left_s()
        return f" (about {duration_text(left)} left)" if left is not None else ""

    def _emit(self, text: str, done: int) -> None:
        if self.progress is not None:
            self.progress(min(self.offset + done, self.total), self.total, text)
