"""A sync lane with a stand-in for ``verify``: sync's verifies run on lanes (``reconcile/lanes.py``), so a test
that replaces the verify gives sync an executor of this lane. No torch runs here."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from hotkernel.reconcile.executor import Job, Lane, LaneExecutor, LaneRun, LaneStatus
from hotkernel.reconcile.lanes import inline_kinds
from hotkernel.run.models import VerifyResult
from hotkernel.workspace.paths import Workspace

VerifyFn = Callable[..., VerifyResult]  # (ws, baseline, candidate, *, n) as run.verify.verify takes them


@dataclass
class StandInLane(Lane):
    """The default lane's shape (this process, one job at a time, the workspace itself) with ``verify`` in place
    of the real one; it may raise a HotkernelError, which sync reports as a failed target."""

    ws: Workspace
    verify: VerifyFn
    name: str = "local"
    kinds: frozenset[str] = frozenset({"cpu"})

    def run(self, job: Job, cancel: threading.Event, status: LaneStatus) -> LaneRun:
        status("verify", 0)
        result = self.verify(self.ws, self.ws.root / job.baseline, self.ws.root / job.candidate, n=job.rounds)
        return LaneRun(result=result, facts=None, lane=self.name)


def stand_in_executor(ws: Workspace, verify: VerifyFn, gpu_name: str | None = None) -> LaneExecutor:
    """One ``StandInLane`` running what the default lane would with this ``gpu_name`` (cuda targets with one)."""
    return LaneExecutor([StandInLane(ws, verify, kinds=inline_kinds(gpu_name))])
