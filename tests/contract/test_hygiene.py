"""Process hygiene: a SIGINT, SIGTERM or SIGHUP of ``hotkernel verify`` / ``bench`` (or ``timeout`` of it) leaves
no process of the run alive within 5 s, a daemon in its own session included; stale run directories of a
killed orchestrator are removed by the next run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hotkernel.run import render

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from adversarial.workspace import TARGET, make_workspace, python  # noqa: E402

hk = render.contract_module()

HANGS_WITH_DAEMON = '''"""Starts a daemon (own session, no environment), records both pids, hangs in the kernel."""
import os
import pathlib
import subprocess
import time

import torch

_here = pathlib.Path(__file__).resolve().parent
_daemon = subprocess.Popen(["sleep", "300"], env={}, start_new_session=True)
(_here / "pids.txt").write_text(f"{os.getpid()} {_daemon.pid}\\n")


def kernel(x, w, *, eps):
    time.sleep(300)
    return x
'''


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def processes_with_parent_env(pid: int) -> list[int]:
    """Judge and workers started by the CLI carry HK_PARENT_PID=<its pid> in their environment: the whole entry,
    so that the processes of an orchestrator whose pid merely starts with those digits (another test's, pytest -n)
    are never taken for the CLI's and killed."""
    needle = f"{hk.PARENT_PID_ENV}={pid}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    if needle in handle.read().split(b"\0") and alive(int(entry)):
                        found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "sig"),
    [
        ("verify", signal.SIGTERM),
        ("verify", signal.SIGINT),
        ("verify", signal.SIGHUP),
        ("bench", signal.SIGTERM),
    ],
)
def test_a_signal_to_the_cli_leaves_no_process_of_the_run(tmp_path: Path, command: str, sig: int) -> None:
    ws, _ = make_workspace(tmp_path / "ws")
    (ws.target_dir(TARGET) / "candidate.py").write_text(HANGS_WITH_DAEMON)
    argv = [sys.executable, "-m", "hotkernel", command]
    argv += (
        [f"targets/{TARGET}/baseline.py", f"targets/{TARGET}/candidate.py", "-n", "3"]
        if command == "verify"
        else [f"targets/{TARGET}/candidate.py", "-n", "3"]
    )
    env = {**os.environ, "HOTKERNEL_PYTHON": python()}
    cli = subprocess.Popen(argv, cwd=ws.root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    pid_file = ws.target_dir(TARGET) / "pids.txt"
    deadline = time.monotonic() + 120
    while not pid_file.is_file() and time.monotonic() < deadline and cli.poll() is None:
        time.sleep(0.1)
    assert pid_file.is_file(), f"the candidate never started: {cli.stderr.read().decode()[-2000:]}"
    time.sleep(0.5)
    worker, daemon = (int(v) for v in pid_file.read_text().split())
    contract_children = processes_with_parent_env(cli.pid)
    assert worker in contract_children and alive(daemon)
    cli.send_signal(sig)
    sent = time.monotonic()
    survivors = [worker, daemon, *contract_children]
    while time.monotonic() - sent < 5.0 and (any(alive(p) for p in survivors) or cli.poll() is None):
        time.sleep(0.05)
    left = [p for p in survivors if alive(p)]
    for pid in left:  # never leave them to the next test
        os.kill(pid, signal.SIGKILL)
    assert cli.poll() is not None, "the CLI did not exit within 5 s"
    assert left == [], f"alive 5 s after {signal.Signals(sig).name}: {left} (worker {worker}, daemon {daemon})"


def test_stale_run_directories_of_dead_orchestrators_are_removed(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"{hk.STALE_RUN_DIR_PREFIX}{dead.pid}_abc"
    live = tmp_path / f"{hk.STALE_RUN_DIR_PREFIX}{os.getpid()}_def"
    for folder in (stale, live):
        folder.mkdir()
        (folder / "shape0.pt").write_bytes(b"x")
    removed = hk.clean_stale_run_dirs(str(tmp_path))
    assert str(stale) in removed and not stale.exists() and live.exists()


def test_orphans_come_back_to_the_subreaper_and_are_found() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_CHILD_SUBREAPER is Linux only")
    code = (
        "import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], "
        "env={}, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
        "print(p.pid, flush=True)"
    )
    before = hk.own_children()
    assert hk.become_subreaper()
    middle = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    orphan = int(middle.stdout.split()[0])
    try:
        deadline = time.monotonic() + 5
        while orphan not in hk.own_children() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert orphan in hk.own_children() and orphan not in before  # reparented to us, not to init
        found = hk.run_processes(-1, "no-such-token", set(), before)
        assert orphan in found
    finally:
        hk.kill_processes({orphan})
    assert not alive(orphan)


@pytest.mark.slow
def test_kill_9_of_the_cli_takes_worker_and_judge_along_and_the_next_run_cleans_up(tmp_path: Path) -> None:
    ws, _ = make_workspace(tmp_path / "ws")
    (ws.target_dir(TARGET) / "candidate.py").write_text(HANGS_WITH_DAEMON)
    argv = [sys.executable, "-m", "hotkernel", "bench", f"targets/{TARGET}/candidate.py", "-n", "1"]
    cli = subprocess.Popen(
        argv,
        cwd=ws.root,
        env={**os.environ, "HOTKERNEL_PYTHON": python()},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pid_file = ws.target_dir(TARGET) / "pids.txt"
    deadline = time.monotonic() + 120
    while not pid_file.is_file() and time.monotonic() < deadline and cli.poll() is None:
        time.sleep(0.1)
    assert pid_file.is_file(), "the candidate never started"
    worker, daemon = (int(v) for v in pid_file.read_text().split())
    contract_children = processes_with_parent_env(cli.pid)
    parent = hk.run_dir_parent() or __import__("tempfile").gettempdir()
    run_dirs = [p for p in Path(parent).glob(f"{hk.STALE_RUN_DIR_PREFIX}{cli.pid}_*")]
    cli.kill()
    cli.wait()
    gone_by = time.monotonic() + 5.0
    while time.monotonic() < gone_by and any(alive(p) for p in [worker, *contract_children]):
        time.sleep(0.05)
    left = [p for p in [worker, *contract_children] if alive(p)]
    for pid in [*left, daemon]:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    assert left == [], f"alive 5 s after kill -9 of the CLI: {left}"
    # a kill -9 leaves its run directory, and the next run start removes it: that start may be another test's
    # run (pytest -n), so the directory is only known to be gone after this cleanup, not to be there before it
    assert run_dirs
    hk.clean_stale_run_dirs(parent)
    assert not any(p.exists() for p in run_dirs)
