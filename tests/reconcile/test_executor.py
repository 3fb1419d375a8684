"""The lane executor on fake lanes: jobs in parallel, a dying lane's job retried elsewhere (at most twice), a
failing job not retried, and Ctrl-C (or closing the outcomes) killing every lane's process tree."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from store.record_factory import synthetic_result

from hotkernel._util.nvml import GpuSlot
from hotkernel._util.procs import run_command
from hotkernel.errors import HotkernelError
from hotkernel.reconcile.executor import (
    MAX_RETRIES,
    Job,
    JobFailed,
    Lane,
    LaneDied,
    LaneExecutor,
    LaneRun,
    host_lanes,
)
from hotkernel.workspace.paths import Workspace


def job(name: str, kind: str = "cpu") -> Job:
    return Job(
        key=name,
        target=name,
        baseline=f"targets/{name}/baseline.py",
        candidate=f"targets/{name}/candidate.py",
        rounds=3,
        timeout_s=None,
        device_kind=kind,
    )


class FakeLane(Lane):
    """Answers a synthetic result after ``delay_s``; dies (``LaneDied``) on the jobs named in ``dies_on``."""

    def __init__(
        self,
        name: str,
        *,
        kinds: frozenset[str] = frozenset({"cpu"}),
        delay_s: float = 0.0,
        dies_on: set[str] | None = None,
        fails_on: set[str] | None = None,
        barrier: threading.Barrier | None = None,
    ) -> None:
        self.name, self.kinds, self.delay_s = name, kinds, delay_s
        self.dies_on, self.fails_on = dies_on or set(), fails_on or set()
        self.barrier, self.ran = barrier, []

    def run(self, job: Job, cancel: threading.Event, status) -> LaneRun:
        self.ran.append(job.key)
        status("verify", 0)
        if self.barrier is not None:
            self.barrier.wait(timeout=10)  # every lane holds a job at the same time: they run in parallel
        time.sleep(self.delay_s)
        if job.key in self.dies_on:
            raise LaneDied(f"{self.name} died")
        if job.key in self.fails_on:
            raise JobFailed(f"{job.key}: bad target")
        return LaneRun(result=synthetic_result(job.target, "inconclusive"), facts={"cpu": self.name})


def collect(executor: LaneExecutor, jobs: list[Job]) -> dict[str, object]:
    return {o.job.key: o for o in executor.run(jobs, lambda lane, what, done: None)}


def test_two_lanes_run_at_once_and_every_job_comes_back_once() -> None:
    barrier = threading.Barrier(2)
    lanes = [FakeLane("a", barrier=barrier), FakeLane("b", barrier=barrier)]
    out = collect(LaneExecutor(lanes), [job("t1"), job("t2")])
    assert sorted(out) == ["t1", "t2"] and all(o.run is not None and o.attempts == 1 for o in out.values())
    assert sorted(lanes[0].ran + lanes[1].ran) == ["t1", "t2"] and lanes[0].ran and lanes[1].ran


def test_a_dead_lane_s_job_is_retried_on_another_lane() -> None:
    dying = FakeLane("a", dies_on={"t1", "t2", "t3"})
    out = collect(LaneExecutor([dying, FakeLane("b", delay_s=0.05)]), [job("t1"), job("t2"), job("t3")])
    assert dying.ran  # the dying lane took a job, and every job it took went to the other lane
    assert {k: (o.run is not None, o.lane, o.attempts) for k, o in out.items()} == {
        k: (True, "b", 1 + dying.ran.count(k)) for k in ("t1", "t2", "t3")
    }


def test_a_job_whose_lane_always_dies_is_reported_not_run_after_two_retries() -> None:
    lanes = [FakeLane("a", dies_on={"t1"}), FakeLane("b", dies_on={"t1"})]
    out = collect(LaneExecutor(lanes), [job("t1"), job("t2")])
    assert out["t1"].run is None and out["t1"].attempts == MAX_RETRIES + 1
    assert out["t1"].error.startswith("not run: its lane died 3 times (") and "a: a died" in out["t1"].error
    assert out["t2"].run is not None
    one = collect(LaneExecutor([FakeLane("solo", dies_on={"t1"})]), [job("t1")])  # one lane: retried there
    assert one["t1"].attempts == 3 and one["t1"].run is None


def test_a_failing_job_is_not_retried_and_a_kind_without_lane_is_not_run() -> None:
    lane = FakeLane("a", fails_on={"t1"})
    out = collect(LaneExecutor([lane, FakeLane("b", delay_s=0.05)]), [job("t1"), job("g", "cuda")])
    assert out["t1"].error == "t1: bad target" and out["t1"].attempts == 1 and lane.ran.count("t1") == 1
    assert out["g"].error == "not run: no lane runs cuda targets"


@pytest.mark.parametrize("lanes", [1, 2])
def test_jobs_added_while_an_outcome_is_handled_go_ahead_of_the_waiting_ones(lanes: int) -> None:
    """``more``: what the caller appends while it handles an outcome joins the queue, ahead of the jobs still
    waiting; a kind no lane runs is answered at once; the run ends once nothing more is added."""
    fake = [FakeLane(f"l{i}", kinds=frozenset({"cpu"}), delay_s=0.02) for i in range(lanes)]
    executor = LaneExecutor(fake)
    more: list[Job] = []
    seen = []
    for outcome in executor.run([job("t1"), job("t2"), job("t3")], lambda lane, what, done: None, more=more):
        seen.append(outcome.job.key)
        if outcome.job.key == "t1":
            more += [job("t1/confirm"), job("g/confirm", "cuda")]
    assert sorted(seen) == ["g/confirm", "t1", "t1/confirm", "t2", "t3"]
    ran = [key for lane in fake for key in lane.ran]
    assert sorted(ran) == ["t1", "t1/confirm", "t2", "t3"]
    if lanes == 1:  # one lane: the added job runs right after the outcome that added it
        assert fake[0].ran == ["t1", "t1/confirm", "t2", "t3"]


def test_a_job_added_after_the_budget_is_spent_is_not_run() -> None:
    lanes = [FakeLane("a", delay_s=0.3), FakeLane("b", delay_s=0.3)]
    more: list[Job] = []
    out = {}
    deadline = time.monotonic() + 0.1
    for outcome in LaneExecutor(lanes).run([job("t1")], lambda lane, what, done: None, deadline=deadline, more=more):
        out[outcome.job.key] = outcome
        if outcome.job.key == "t1":
            more.append(job("t1/confirm"))
    assert out["t1/confirm"].budget and out["t1/confirm"].error == "not run: the time budget was spent"
    assert [key for lane in lanes for key in lane.ran] == ["t1"]


def test_a_process_lane_starts_the_compile_warm_up_only_for_a_later_cpu_job(tmp_path: Path) -> None:
    from hotkernel.reconcile.executor import ProcessLane

    lane = ProcessLane(Workspace(tmp_path), "cpu", frozenset({"cpu"}))
    warm = Job(**{**job("c").__dict__, "key": "c/competitor/compile", "compile_warm": True})
    lane.warm_ahead([job("a"), warm])
    assert lane.compile_ahead  # started with job a, so it warms up while a verifies
    lane.warm_ahead([warm, job("a")])
    assert not lane.compile_ahead  # the first job needs it itself: nothing to start ahead
    lane.warm_ahead([job("a"), Job(**{**warm.__dict__, "device_kind": "cuda"})])
    assert not lane.compile_ahead


def test_gpus_option_makes_one_lane_per_gpu_plus_the_cpu(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    gpus = [GpuSlot(0, "GPU-a", "NVIDIA H200"), GpuSlot(1, "GPU-b", "NVIDIA H200")]
    lanes = host_lanes(ws, "all", gpu_list=gpus)
    assert [(lane.name, sorted(lane.kinds), lane.gpu) for lane in lanes] == [
        ("gpu0", ["cuda"], gpus[0]),
        ("gpu1", ["cuda"], gpus[1]),
        ("cpu", ["cpu"], None),
    ]
    assert [lane.name for lane in host_lanes(ws, "1", gpu_list=gpus)] == ["gpu1", "cpu"]
    for bad in ("2", "0,0", "x", ""):
        with pytest.raises(HotkernelError, match="--gpus"):
            host_lanes(ws, bad, gpu_list=gpus)
    with pytest.raises(HotkernelError, match="no NVIDIA GPU"):
        host_lanes(ws, "all", gpu_list=[])


class TreeLane(Lane):
    """A lane whose job is a real process tree (a shell with a sleeping child), killed through ``cancel``."""

    def __init__(self, name: str, pid_dir: Path) -> None:
        self.name, self.kinds, self.pid_dir = name, frozenset({"cpu"}), pid_dir

    def run(self, job: Job, cancel: threading.Event, status) -> LaneRun:
        if job.key == "quick":
            wait_for_files(self.pid_dir, 4)
            return LaneRun(result=synthetic_result(job.target, "inconclusive"))
        script = f"sleep 300 & echo $! > {self.pid_dir}/{job.key}.child; echo $$ > {self.pid_dir}/{job.key}.sh; wait"
        result = run_command(["sh", "-c", script], timeout_s=600, cancel=cancel, out_dir=self.pid_dir / job.key)
        raise LaneDied(f"exit {result.returncode}")


def pids_in(folder: Path) -> list[int]:
    """The pids the lanes' shells wrote so far (a file the shell has created but not yet written is not one)."""
    files = [*folder.glob("*.child"), *folder.glob("*.sh")]
    return [int(text) for text in (p.read_text().strip() for p in files) if text]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for_files(folder: Path, count: int) -> None:
    deadline = time.monotonic() + 30
    while len(pids_in(folder)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(pids_in(folder)) == count


def test_closing_the_outcomes_kills_every_lane_s_process_tree(tmp_path: Path) -> None:
    lanes = [TreeLane("a", tmp_path), TreeLane("b", tmp_path), TreeLane("c", tmp_path)]
    outcomes = LaneExecutor(lanes).run([job("t1"), job("t2"), job("quick")], lambda lane, what, done: None)
    first = next(outcomes)  # "quick" answers once both other lanes' trees are up
    assert first.job.key == "quick" and first.run is not None
    pids = pids_in(tmp_path)
    assert len(pids) == 4 and all(alive(p) for p in pids)
    outcomes.close()  # what a KeyboardInterrupt in the coordinator does (contextlib.closing in sync)
    assert not any(alive(p) for p in pids)


CTRL_C = """
import sys, threading
from pathlib import Path
sys.path.insert(0, sys.argv[2]); sys.path.insert(0, sys.argv[3])
from test_executor import TreeLane, job
from hotkernel.reconcile.executor import LaneExecutor
folder = Path(sys.argv[1])
executor = LaneExecutor([TreeLane("a", folder), TreeLane("b", folder)])
try:
    for outcome in executor.run([job("t1"), job("t2")], lambda lane, what, done: None):
        print("outcome", outcome.job.key, flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    raise SystemExit(130)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_of_the_coordinator_leaves_no_process(tmp_path: Path, sig: int) -> None:
    code = CTRL_C.replace(
        "folder = Path",
        "from hotkernel._util.procs import TerminationRaises\nTerminationRaises().__enter__()\nfolder = Path",
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path), str(Path(__file__).parent), str(Path(__file__).parents[1])],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_files(tmp_path, 4)
        pids = pids_in(tmp_path)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode in (130, 128 + signal.SIGTERM), out
    assert "outcome" not in out  # nothing finished: the lanes were killed, not left to run out
    assert not any(alive(p) for p in pids)
