"""Ctrl-C (SIGINT) and SIGTERM stop a sync at the record step and during a verify, and leave hotkernel.lock, the
records index and LEADERBOARD.md consistent. The sync runs in a subprocess; the timeouts only guard against a
hang, they do not measure speed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hotkernel._util.fs import sha256_file
from hotkernel._util.procs import descendants
from hotkernel.reconcile.plan import plan
from hotkernel.store.leaderboard import leaderboard_difference
from hotkernel.workspace.lockfile import read_lock
from hotkernel.workspace.paths import Workspace

HANG_GUARD_S = 120
MANIFEST = "version: 1\ndefaults:\n  dtype: fp32\n  device: cpu\ntargets:\n" + "".join(
    f"  {name}:\n    from: ./kern.py:scale\n    shapes: [{8 * (i + 1)}x8]\n" for i, name in enumerate("abcd")
)
SLOW_RECORD = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from store.record_factory import synthetic_result
import hotkernel.reconcile.outcome as outcome_module
import hotkernel.reconcile.sync as sync_module
from hotkernel.workspace.paths import Workspace

from reconcile.stand_in import stand_in_executor
from reconcile.test_sync_gpus import ran_on_disk
ws = Workspace(Path(sys.argv[1]))
lanes = stand_in_executor(ws, lambda ws, baseline, candidate, **kw: ran_on_disk(synthetic_result(
    Path(baseline).parent.name, "slower", 0.8, device="cpu"), Path(candidate)))
real_record = outcome_module.record
def slow_record(*args, **kwargs):  # the signal arrives while a record is being written
    print("recording", args[1], flush=True)
    time.sleep(float(sys.argv[3]))
    return real_record(*args, **kwargs)
outcome_module.record = slow_record
sync_module.sync(ws, n=3, gpu_name=None, executor=lanes)
print("finished", flush=True)
"""


def workspace(root: Path) -> Workspace:
    root.mkdir()
    (root / "kern.py").write_text("def scale(x):\n    return x * 2\n", encoding="utf-8")
    (root / "hotkernel.yaml").write_text(MANIFEST, encoding="utf-8")
    return Workspace(root)


def assert_consistent(ws: Workspace) -> list[str]:
    """The lock's index vouches for exactly the record files, each target entry points at one of them, the
    board matches results/, and the workspace lock was let go. Returns the records."""
    lock = read_lock(ws)
    files = sorted(p.relative_to(ws.root).as_posix() for p in ws.results_dir.rglob("*.json"))
    assert sorted(lock.records) == files
    assert all(lock.records[path] == sha256_file(ws.root / path) for path in files)
    assert all(entry.record in files for entries in lock.targets.values() for entry in entries.values())
    assert leaderboard_difference(ws) is None
    assert not (ws.state_dir / "lock.info").exists()
    assert plan(ws, gpu_name=None).problems == []
    return files


def _ignore_sigint() -> None:  # as a script's `hotkernel sync &` starts it: SIGINT inherited ignored
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize(
    ("sig", "started_ignoring"), [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)]
)
@pytest.mark.parametrize("pause_s", [0.0, 0.3, 1.0])
def test_a_signal_at_the_record_step_stops_the_sync_after_that_record(
    tmp_path: Path, sig: int, started_ignoring: bool, pause_s: float
) -> None:
    ws = workspace(tmp_path / "ws")
    tests = str(Path(__file__).resolve().parents[1])
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_RECORD, str(ws.root), tests, str(max(pause_s, 0.5))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_sigint if started_ignoring else None,  # noqa: PLW1509 - one call, before exec
    )
    try:
        assert proc.stdout.readline().split() == ["recording", "a"]
        time.sleep(pause_s / 2)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        proc.kill()
    assert proc.returncode != 0 and "finished" not in out and "recording" not in out, (out, err)
    files = assert_consistent(ws)
    assert [path.split("/")[1] for path in files] == ["a"]  # the record in flight is whole; no other began
    assert list(read_lock(ws).targets) == ["a"]
    assert sorted(i.name for i in plan(ws, gpu_name=None).items) == ["b", "c", "d"]


REAL = (
    "version: 1\ndefaults:\n  device: cpu\n  dtype: fp32\ntargets:\n  scale:\n    from: ./kern.py:scale_add\n"
    "    shapes: [32x64]\n    extra: [w:64]\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_real_verify_stops_it_and_kills_its_processes(tmp_path: Path, sig: int) -> None:
    pytest.importorskip("torch")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "kern.py").write_text("def scale_add(x, w):\n    return x * w + 1.0\n", encoding="utf-8")
    (root / "hotkernel.yaml").write_text(REAL, encoding="utf-8")
    env = {**os.environ, "HOTKERNEL_WORKSPACE": str(root), "HOTKERNEL_PYTHON": sys.executable}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hotkernel", "sync", "-n", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
        env=env,
    )
    try:
        for line in proc.stderr:  # progress on stderr: wait until the verify has timed a run
            if "round 1/" in line:
                break
        family = descendants(proc.pid)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        proc.kill()
    assert proc.returncode != 0 and "recorded" not in out
    assert "sync interrupted: the records written before it are kept" in err, err  # said, not silent
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(pid) for pid in family):
        time.sleep(0.1)
    assert not [pid for pid in family if _alive(pid)]  # the judge and workers went with it
    assert assert_consistent(Workspace(root)) == []


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
