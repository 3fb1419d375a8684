"""A sync's progress line: verifies done of verifies planned, what each busy lane does (its verify's round), and
the estimated time left from measured seconds per verify."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from hotkernel.reconcile.budget import Estimate, duration_text
from hotkernel.reconcile.executor import Job

SyncProgress = Callable[[int, int, str], None]  # (verifies done, verifies planned, "<target>: <what>")


class RunCounter:
    """Turns each lane's verify progress into whole-sync progress: (verifies done, verifies planned, message).

    The count moves only when a verify is finished (recorded, failed or not run), so the bar never reads done
    while one runs; the message says what every busy lane does ("<target>: round 2/7 candidate: ok ..."), and
    ends with the estimated time left (``Estimate``: recorded verify times, else this sync's seconds per
    verify). A verify stops early when its answer is clear, so planned rounds are no measure of what is left."""

    def __init__(self, progress: SyncProgress | None, total: int = 0, estimate: Estimate | None = None) -> None:
        self.progress, self.total, self.offset = progress, total, 0
        self.lanes: dict[str, tuple[str, int]] = {}  # lane -> (what it does, runs of its job done)
        self.guard = threading.Lock()
        self.estimate = estimate or Estimate(history={})
        self.pending: set[str] = set()  # job keys not yet finished
        self.started: dict[str, float] = {}  # job key -> monotonic time its lane began it

    def plan(self, jobs: list[Job], seconds: dict[str, float]) -> None:
        """Jobs that are to run (``seconds``: recorded verify times by job key), added to the total."""
        with self.guard:
            for job in jobs:
                self.estimate.add_job(job.key, seconds.get(job.key))
                self.pending.add(job.key)
            self.total += len(jobs)

    def say(self, name: str, message: str, done: int = 0) -> None:
        """A message about target ``name`` from the coordinator (``done``: ignored, the count is verifies)."""
        self._emit(f"{name}: {message}")

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
            busy = dict(self.lanes)
        if message == "idle" or not busy:
            return
        if len(busy) == 1 and lane in busy:
            text = message
        else:
            text = " | ".join(f"{name}: {what}" for name, (what, _) in sorted(busy.items()))
        self._emit(text + self.left_text())

    def finish(self, job: Job) -> None:
        """``job`` is done: one verify more on the count, and its time on the estimate's rate."""
        with self.guard:
            self.offset += 1
            began = self.started.pop(job.key, None)
            if job.key in self.pending and began is not None:
                self.estimate.finished(time.monotonic() - began)
            self.pending.discard(job.key)
            for lane, (what, _) in list(self.lanes.items()):
                if what.startswith(f"{job.key}: "):
                    self.lanes.pop(lane)

    def left_s(self) -> float | None:
        """Estimated seconds until every planned job is done (None until something is measured)."""
        now = time.monotonic()
        with self.guard:
            elapsed = {key: now - began for key, began in self.started.items()}
            return self.estimate.left_s(sorted(self.pending), elapsed)

    def left_text(self) -> str:
        left = self.left_s()
        return f" (about {duration_text(left)} left)" if left is not None else ""

    def _emit(self, text: str) -> None:
        if self.progress is not None:
            self.progress(min(self.offset, self.total), self.total, text)
