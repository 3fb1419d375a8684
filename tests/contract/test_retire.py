"""Deferred teardown: a bench/verify kills each run's worker and reaps it in the background, and the next
run's worker waits for those processes to exit before its timer (``previous_run_exited`` when they do not)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from hotkernel.run import render
from hotkernel.run.runner import JudgeProcess, run_script

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from adversarial.workspace import TARGET, make_workspace, python  # noqa: E402

hk = render.contract_module()


def alive(pid: int) -> bool:
    return not hk.exited(pid, None)


def test_wait_exited_sees_exit_zombie_and_pid_reuse() -> None:
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        started = hk.start_ticks(sleeper.pid)
        assert started is not None
        t0 = time.monotonic()
        assert hk.wait_exited([(sleeper.pid, started)], 0.2) == [sleeper.pid]  # still running: named
        assert time.monotonic() - t0 >= 0.2
        assert hk.wait_exited([(sleeper.pid, started + 1)], 0.2) == []  # another start time: a reused pid
        sleeper.kill()
        assert hk.wait_exited([(sleeper.pid, started)], 5.0) == []  # a zombie (not reaped yet) has exited
    finally:
        sleeper.kill()
        sleeper.wait()
    assert hk.wait_exited([(sleeper.pid, started)], 0.1) == []  # reaped: gone


def test_a_deferred_teardown_retires_the_worker_and_reaping_finishes_it(tmp_path: Path) -> None:
    ws, _ = make_workspace(tmp_path / "ws")
    contract = str(render.contract_path())
    judge = hk.Judge(python(), contract)
    worker = hk.Worker(python(), contract)
    try:
        result = hk.orchestrate(
            str(ws.target_dir(TARGET) / "baseline.py"),
            python=python(),
            contract=contract,
            judge=judge,
            worker=worker,
            defer_teardown=True,
        )
    finally:
        judge.close()
    assert result["status"] == "ok", result["reason"]
    assert "shape0_await_exit" in result["phases_s"]
    assert worker.proc.pid in [pid for pid, _ in worker.retired]  # retired, not closed in line
    hk.reap_retired()
    assert hk.RETIRING == {} and worker.proc.pid not in hk.LIVE
    assert not [pid for pid, _ in worker.retired if alive(pid)]


def test_a_verify_session_leaves_no_retired_process_behind(tmp_path: Path) -> None:
    ws, resolved = make_workspace(tmp_path / "ws")
    with JudgeProcess(ws, python=python()) as judge:
        outcomes = [
            run_script(ws, f"targets/{TARGET}/{script}", python=python(), judge=judge, resolved=resolved)
            for script in ("baseline.py", "candidate.py", "baseline.py")
        ]
        retiring = list(hk.RETIRING)
    assert [o.status for o in outcomes] == ["ok", "ok", "ok"], [o.reason for o in outcomes]
    assert hk.RETIRING == {} and not hk.exiting_processes()
    assert not [pid for pid in retiring if alive(pid)]
    assert not any(isinstance(item, hk.Worker) for item in hk.LIVE.values())


def test_a_previous_run_that_does_not_exit_makes_the_run_invalid(tmp_path: Path) -> None:
    ws, _ = make_workspace(tmp_path / "ws")
    sleeper = subprocess.Popen(["sleep", "30"])
    worker = hk.Worker(python(), str(render.contract_path()))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    try:
        started = time.monotonic()
        verdict = hk.run_worker(
            worker,
            str(ws.target_dir(TARGET) / "baseline.py"),
            str(run_dir),
            60.0,
            [(sleeper.pid, hk.start_ticks(sleeper.pid))],
        )
        waited = time.monotonic() - started
    finally:
        worker.close()
        sleeper.kill()
        sleeper.wait()
    assert verdict["status"] == "invalid"
    assert verdict["reason"].startswith("previous_run_exited: "), verdict["reason"]
    assert str(sleeper.pid) in verdict["reason"]
    assert waited >= hk.KILL_WAIT_S
