"""A sync stopped by SIGTERM or Ctrl-C (SIGINT) still reports: ``sync --json`` writes one whole JSON report (what
was finished, the verify it was on, ``left``, and ``interrupted`` / ``signal``), the human report says what is
left, and the exit code is the signal's. The CLI runs in a subprocess whose lane stands in for the verify (no
torch): target ``a`` finishes at once, the others wait until the sync is stopped. The timeouts only guard
against a hang, they do not measure speed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from reconcile.test_sync_gpus import ScriptedLane
from reconcile.test_sync_gpus import workspace as scripted_workspace
from reconcile.test_sync_signals import assert_consistent

import hotkernel.reconcile.sync as sync_module
from hotkernel.reconcile.executor import Job, LaneExecutor, LaneRun
from hotkernel.reconcile.interrupt import interrupt_report
from hotkernel.reconcile.plan import plan
from hotkernel.workspace.lockfile import read_lock, workspace_lock
from hotkernel.workspace.paths import Workspace

HANG_GUARD_S = 120
MANIFEST = "version: 1\ndefaults:\n  dtype: fp32\n  device: cpu\ntargets:\n" + "".join(
    f"  {name}:\n    from: ./kern.py:scale\n    shapes: [{8 * (i + 1)}x8]\n" for i, name in enumerate("abc")
)
CLI = """
import sys, threading
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from store.record_factory import synthetic_result
import hotkernel.reconcile.sync as sync_module
from hotkernel.cli.app import main
from hotkernel.reconcile.executor import Lane, LaneExecutor, LaneRun
from reconcile.test_sync_gpus import ran_on_disk


class SlowLane(Lane):  # 'a' at once; any other target waits for the sync's cancel (a signal, or the budget)
    name, kinds = "local", frozenset({"cpu"})

    def __init__(self, ws):
        self.ws = ws

    def run(self, job, cancel, status):
        status("verify", 0)
        if job.target != "a":
            print("verifying", job.target, file=sys.stderr, flush=True)
            cancel.wait(60)
        candidate = self.ws.root / job.candidate
        result = synthetic_result(job.target, "slower", 0.8, device="cpu")
        return LaneRun(result=ran_on_disk(result, candidate), facts=None, lane=self.name)



real_lock = sync_module.workspace_lock
def told_lock(*args, **kwargs):  # says when sync asks for the workspace lock
    print("locking", file=sys.stderr, flush=True)
    return real_lock(*args, **kwargs)


sync_module.build_executor = lambda ws, **kw: LaneExecutor([SlowLane(ws)])
sync_module.workspace_lock = told_lock
sys.argv = ["hotkernel", "sync", *sys.argv[2:]]
main()
"""


def workspace(root: Path) -> Workspace:
    root.mkdir()
    (root / "kern.py").write_text("def scale(x):\n    return x * 2\n", encoding="utf-8")
    (root / "hotkernel.yaml").write_text(MANIFEST, encoding="utf-8")
    return Workspace(root)


def start(ws: Workspace, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "HOTKERNEL_WORKSPACE": str(ws.root), "HOTKERNEL_WHO": "tester"}
    tests = str(Path(__file__).resolve().parents[1])
    return subprocess.Popen(
        [sys.executable, "-c", CLI, tests, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ws.root,
        env=env,
    )


def stop_at(proc: subprocess.Popen[str], marker: str, sig: int) -> tuple[str, str]:
    """Wait for ``marker`` on stderr, send ``sig``; stdout and the rest of stderr."""
    seen = []
    try:
        for line in proc.stderr:
            seen.append(line)
            if line.strip() == marker:
                break
        else:
            pytest.fail(f"no {marker!r} on stderr: {''.join(seen)}")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        proc.kill()
    return out, "".join(seen) + err


def board_check(ws: Workspace) -> None:
    """``hotkernel leaderboard --check`` passes: the board and the lock agree with results/."""
    env = {**os.environ, "HOTKERNEL_WORKSPACE": str(ws.root)}
    done = subprocess.run(
        [sys.executable, "-m", "hotkernel", "leaderboard", "--check"],
        cwd=ws.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)


EXIT = {signal.SIGINT: 130, signal.SIGTERM: 128 + signal.SIGTERM}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_sync_json_reports_what_it_did_and_what_is_left(tmp_path: Path, sig: int) -> None:
    ws = workspace(tmp_path / "ws")
    proc = start(ws, "--json")
    out, err = stop_at(proc, "verifying b", sig)
    assert proc.returncode == EXIT[sig], (out, err)
    assert "sync interrupted: the records written before it are kept" in err, err
    report = json.loads(out)  # the whole of stdout is one JSON document
    assert report["interrupted"] is True and report["signal"] == signal.Signals(sig).name
    items = {item["name"]: item for item in report["items"]}
    assert items["a"]["status"] == "recorded" and items["a"]["record"].startswith("results/a/")
    assert items["b"]["status"] == "not run" and "during its verify" in items["b"]["reason"]
    assert items["c"]["status"] == "not run" and "before its verify started" in items["c"]["reason"]
    assert report["left"] == ["b", "c"]
    assert report["order"] == ["a", "b", "c"]
    files = assert_consistent(ws)
    assert files == [items["a"]["record"]]  # nothing of b's verify was recorded
    assert list(read_lock(ws).targets) == ["a"]
    assert sorted(i.name for i in plan(ws, gpu_name=None).items) == ["b", "c"]
    board_check(ws)


def test_an_interrupted_sync_says_what_is_left(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    proc = start(ws)
    out, err = stop_at(proc, "verifying b", signal.SIGTERM)
    assert proc.returncode == EXIT[signal.SIGTERM], (out, err)
    lines = out.splitlines()
    assert any(line.startswith("a.") and "recorded" in line for line in lines), out
    assert any(line.startswith("b.") and "not run" in line and "during its verify" in line for line in lines), out
    assert "Sync: 2 not run, 1 recorded." in out, out
    assert "Left when sync was interrupted (SIGTERM): b, c; run `hotkernel sync` again" in out, out
    assert_consistent(ws)
    board_check(ws)


def test_a_sync_interrupted_while_waiting_for_the_lock_reports_everything_left(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    with workspace_lock(ws, command="a test holding the lock"):
        proc = start(ws, "--json", "--wait", "60")
        out, err = stop_at(proc, "locking", signal.SIGTERM)
    assert proc.returncode == EXIT[signal.SIGTERM], (out, err)
    report = json.loads(out)
    assert report["interrupted"] is True and report["signal"] == "SIGTERM"
    assert report["items"] == [] and report["left"] == ["a", "b", "c"]
    assert "before it planned" in report["plan"]["notes"][0]
    assert not ws.results_dir.exists() or not list(ws.results_dir.rglob("*.json"))


def test_a_spent_budget_still_writes_the_json_report(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    proc = start(ws, "--json", "--budget", "3s")
    out, err = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 0, (out, err)
    report = json.loads(out)
    assert report["interrupted"] is False and report["signal"] is None and report["budget_s"] == 3
    assert [item["status"] for item in report["items"]] == ["recorded", "not run", "not run"]
    assert report["left"] == ["b", "c"]
    assert_consistent(ws)
    board_check(ws)


# ---- in this process: the report an interrupt carries, at the later steps ----------------------------------

COMPETING = (
    "version: 1\ndefaults:\n  dtype: fp32\ntargets:\n"
    "  alpha:\n    from: ./kern.py:scale\n    shapes: [8x8]\n    device: cpu\n    competitors: [compile]\n"
    "  beta:\n    from: ./kern.py:scale\n    shapes: [16x8]\n    device: cpu\n"
)


class InterruptingLane(ScriptedLane):
    """A ``ScriptedLane`` that sends this process SIGINT (Ctrl-C) when it starts job ``at``, then waits for the
    sync's cancel as a real verify would be killed."""

    def __init__(self, name: str, at: str, *, after_a_record: bool = False, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.at, self.after_a_record = at, after_a_record

    def run(self, job: Job, cancel: threading.Event, status: Any) -> LaneRun:
        if job.key == self.at:
            status("verify", 0)
            results = (ScriptedLane.root or Path(".")) / "results"
            waited = 0.0
            while self.after_a_record and not list(results.rglob("*.json")) and waited < HANG_GUARD_S:
                time.sleep(0.05)  # on a loaded box the coordinator may not have recorded anything yet
                waited += 0.05
            os.kill(os.getpid(), signal.SIGINT)  # the main thread raises KeyboardInterrupt
            cancel.wait(HANG_GUARD_S)
        return super().run(job, cancel, status)


def interrupted(ws: Workspace, lanes: list[Any]) -> Any:
    with pytest.raises(KeyboardInterrupt) as stop:
        sync_module.sync(ws, n=3, executor=LaneExecutor(lanes), gpu_name=None)
    report = interrupt_report(stop.value)
    assert report is not None and report.interrupted and report.signal == "SIGINT"
    return report


def test_an_interrupt_at_the_second_verify_of_a_new_best_leaves_the_target(tmp_path: Path) -> None:
    ws = scripted_workspace(tmp_path / "ws", COMPETING)
    report = interrupted(ws, [InterruptingLane("solo", "alpha/confirm")])
    items = [(i.name, i.status) for i in report.items]
    assert items == [  # the second verify went ahead of the jobs still waiting
        ("alpha", "recorded"),
        ("alpha", "not run"),
        ("beta", "not run"),
        ("alpha competitor compile", "not run"),
    ]
    assert "during the second verify" in report.items[1].reason and report.items[0].record in report.items[1].reason
    assert report.items[2].reason == "not run: sync was interrupted (SIGINT) before its verify started"
    assert report.left == ["alpha", "beta", "alpha competitor compile"]
    assert_consistent(ws)
    assert "alpha" not in read_lock(ws).targets  # the first record alone does not count


def test_an_interrupt_in_a_competitor_verify_names_it_left(tmp_path: Path) -> None:
    ws = scripted_workspace(tmp_path / "ws", COMPETING)
    report = interrupted(ws, [InterruptingLane("solo", "alpha/competitor/compile")])
    assert [(i.name, i.status, bool(i.confirms)) for i in report.items] == [
        ("alpha", "recorded", False),
        ("alpha", "recorded", True),  # its second verify ran before the waiting jobs
        ("beta", "recorded", False),
        ("alpha competitor compile", "not run", False),
    ]
    assert report.items[-1].reason == "not run: sync was interrupted (SIGINT) during its verify"
    assert report.left == ["alpha competitor compile"]
    assert_consistent(ws)
    assert "alpha" not in read_lock(ws).competitors and "alpha" in read_lock(ws).targets


def test_an_interrupt_before_the_competitors_were_rendered_names_them_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = scripted_workspace(tmp_path / "ws", COMPETING)

    def stopped(*_args: Any, **_kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(sync_module, "prepare_competitors", stopped)
    report = interrupted(ws, [ScriptedLane("solo")])
    assert [(i.name, i.status) for i in report.items] == [
        ("alpha", "not run"),
        ("beta", "not run"),
        ("alpha competitor compile", "not run"),
    ]
    assert report.items[-1].reason == "not run: sync was interrupted (SIGINT) while they were rendered"
    assert report.left == ["alpha", "beta", "alpha competitor compile"]
    assert not ws.results_dir.exists() or not list(ws.results_dir.rglob("*.json"))  # nothing ran


def test_an_interrupt_with_several_lanes_reports_each_job(tmp_path: Path) -> None:
    ws = scripted_workspace(tmp_path / "ws")
    lanes = [InterruptingLane(f"lane{i}", "gamma", after_a_record=True, delays={"beta": 0.5}) for i in range(2)]
    report = interrupted(ws, lanes)
    done = {i.name for i in report.items if i.status != "not run"}
    assert done and set(report.left) == {i.name for i in report.items if i.status == "not run"}
    assert "gamma" in report.left and set(report.left) | done >= {"alpha", "beta", "gamma", "delta", "eps"}
    assert_consistent(ws)
