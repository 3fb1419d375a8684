"""``sync --executor ray``: each verify job is a Ray task (one GPU, or CPUs for a cpu target) that unpacks the
target's files into a temporary workspace on its node and runs the same verify child process a local lane runs.

Ray is an optional extra (``pip install 'hotkernel[ray]'``), imported on first use: without ``--executor ray``
sync never loads it. Ray schedules and retries: a task whose worker or node dies, or whose verify process dies
(``LaneDied``), runs again at most ``MAX_RETRIES`` times. Closing the outcome iterator (Ctrl-C in the
coordinator) cancels every task; a cancelled task's KeyboardInterrupt kills its verify's process tree.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from hotkernel.errors import HotkernelError
from hotkernel.reconcile.executor import (
    BUDGET_SPENT,
    MAX_RETRIES,
    Job,
    JobFailed,
    LaneDied,
    LaneRun,
    Outcome,
    StatusFn,
    bundle,
    run_bundled,
)
from hotkernel.run.models import VerifyResult
from hotkernel.workspace.paths import Workspace

CPU_TASK_CPUS = 1  # what a cpu target's task asks for (its timing wants the core to itself)
CANCEL_GRACE_S = 15.0  # how long cancelled tasks get to kill their verify processes before they are force-killed
POLL_S = 0.5


def ray_module() -> Any:
    """The ``ray`` package, or a one-line error saying what to install."""
    try:
        import ray  # an optional extra, loaded only by --executor ray (its import takes ~1 s)
    except ImportError:
        raise HotkernelError(
            "--executor ray needs Ray: pip install 'hotkernel[ray]' (or pip install ray) in the "
            "environment hotkernel runs in"
        ) from None
    return ray


def ray_verify(data: bytes, job: Job, python: str | None) -> dict[str, Any]:
    """The Ray task: run ``job`` from its bundle on this node; the VerifyResult JSON, facts and where it ran."""
    ray = ray_module()
    context = ray.get_runtime_context()
    env = {"CUDA_VISIBLE_DEVICES": ""} if job.device_kind != "cuda" else {}  # Ray pins a GPU task's GPU itself
    run = run_bundled(data, job, env=env, python=python)
    where = f"ray:{context.get_node_id()[:8]}"
    if job.device_kind == "cuda":
        where += f":gpu{','.join(str(g) for g in ray.get_gpu_ids())}"
    return {"result": run.result.model_dump(mode="json"), "facts": run.facts, "lane": where}


class RayExecutor:
    """Jobs as Ray tasks on the cluster at ``address`` (None: a local Ray instance started for this sync)."""

    def __init__(self, ws: Workspace, *, address: str | None = None, python: str | None = None) -> None:
        self.ws, self.address = ws, address
        self.python = python if python is not None or address is not None else os.environ.get("HOTKERNEL_PYTHON")
        self.ray = ray_module()
        self.started = False
        self.quiet = contextlib.ExitStack()

    def describe(self) -> str:
        return f"ray ({self.address or 'a local instance'})"

    def connect(self) -> None:
        if self.ray.is_initialized():
            return
        # Ray's driver prints its workers' errors (e.g. "Task ray_verify failed ... will be retried") on stdout,
        # where `sync --json` prints its report: they go to stderr until close().
        self.quiet.enter_context(contextlib.redirect_stdout(sys.stderr))
        try:
            self.ray.init(
                address=self.address or "local",
                include_dashboard=False,
                log_to_driver=False,
                logging_level="ERROR",
                configure_logging=False,
            )
        except (ConnectionError, RuntimeError, ValueError) as err:
            self.quiet.close()
            first = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
            raise HotkernelError(
                f"--executor ray: cannot reach the Ray cluster at {self.address or 'local'} "
                f"({first}); check --address (e.g. ray://HEAD:10001 or HEAD:6379)"
            ) from None
        self.started = True

    def kinds(self) -> set[str]:
        """cpu, and cuda when the cluster has a GPU."""
        self.connect()
        return {"cpu", "cuda"} if self.ray.cluster_resources().get("GPU", 0) >= 1 else {"cpu"}

    def close(self) -> None:
        """Shut down the Ray instance this executor started (a cluster it joined stays up)."""
        if self.started:
            self.ray.shutdown()
            self.started = False
        self.quiet.close()

    def run(
        self, jobs: Sequence[Job], status: StatusFn, *, deadline: float | None = None, more: list[Job] | None = None
    ) -> Iterator[Outcome]:
        ray = self.ray
        self.connect()
        task = ray.remote(ray_verify)
        refs: dict[Any, Job] = {}
        more = more if more is not None else []

        def submit(job: Job) -> None:
            wants = {"num_gpus": 1, "num_cpus": 1} if job.device_kind == "cuda" else {"num_cpus": CPU_TASK_CPUS}
            ref = task.options(
                **wants, max_retries=MAX_RETRIES, retry_exceptions=[LaneDied], name=f"hotkernel verify {job.key}"
            ).remote(bundle(self.ws, job.files), job, self.python)
            refs[ref] = job

        try:
            for job in jobs:
                submit(job)
            total = len(refs)
            status("ray", f"{total} verifies submitted", 0)
            while refs:
                if deadline is not None and time.monotonic() >= deadline:  # the budget: cancel what is left
                    left, refs = refs, {}
                    self._cancel(list(left))
                    for job in left.values():
                        yield Outcome(job, error=BUDGET_SPENT, lane="ray", budget=True)
                    break
                ready, _ = ray.wait(list(refs), num_returns=1, timeout=POLL_S)
                for ref in ready:
                    job = refs.pop(ref)
                    yield self._outcome(ref, job)
                    for added in more:  # added while the caller handled that outcome
                        submit(added)
                    total, more[:] = total + len(more), []
                    status("ray", f"{total - len(refs)} of {total} done", 0)
        finally:
            self._cancel(list(refs))

    def _outcome(self, ref: Any, job: Job) -> Outcome:
        exceptions = self.ray.exceptions
        try:
            reply = self.ray.get(ref)
        except exceptions.RayTaskError as err:
            cause = getattr(err, "cause", None)
            if isinstance(cause, JobFailed):
                return Outcome(job, error=str(cause), lane="ray", attempts=1)
            if isinstance(cause, LaneDied):
                return Outcome(
                    job,
                    error=f"not run: its verify process died {MAX_RETRIES + 1} times ({cause})",
                    lane="ray",
                    attempts=MAX_RETRIES + 1,
                )
            text = str(cause or err).strip().splitlines()
            return Outcome(
                job,
                error=f"not run: {type(cause or err).__name__}: {text[-1] if text else ''}"[:300],
                lane="ray",
                attempts=1,
            )
        except exceptions.RayError as err:  # a worker or node died more often than the retries allow
            text = str(err).strip().splitlines()
            return Outcome(
                job,
                error=f"not run: {type(err).__name__}: {text[0] if text else ''}"[:300],
                lane="ray",
                attempts=MAX_RETRIES + 1,
            )
        run = LaneRun(
            result=VerifyResult.model_validate(reply["result"]),
            facts=reply.get("facts") or {},
            lane=reply.get("lane", "ray"),
        )
        return Outcome(job, run=run, lane=run.lane, attempts=1)

    def _cancel(self, refs: list[Any]) -> None:
        """Cancel ``refs``: a KeyboardInterrupt in each running task kills its verify; force what lingers."""
        if not refs:
            return
        for ref in refs:
            self.ray.cancel(ref)
        _, left = self.ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE_S)
        for ref in left:
            self.ray.cancel(ref, force=True)
