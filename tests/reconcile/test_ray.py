"""``sync --executor ray`` on a local Ray instance: a CPU target verified by a Ray task in a temporary workspace on
the node and recorded here; a cuda target skipped when the cluster has no GPU; a clear error without Ray."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hotkernel._util.nvml import all_gpus
from hotkernel.errors import HotkernelError
from hotkernel.reconcile.ray_executor import ray_module

KERNEL = "def scale_add(x, w):\n    return x * w + 1.0\n"
MANIFEST = """\
version: 1
defaults:
  dtype: fp32
targets:
  scale:
    from: ./kern.py:scale_add
    shapes: [32x64]
    extra: [w:64]
    device: cpu
  on_gpu:
    from: ./kern.py:scale_add
    shapes: [32x64]
    extra: [w:64]
"""


def test_without_ray_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails
    with pytest.raises(HotkernelError, match=r"pip install 'hotkernel\[ray\]'"):
        ray_module()


@pytest.mark.slow
def test_sync_executor_ray_on_a_local_instance(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="ray is not installed (pip install 'hotkernel[ray]')")
    pytest.importorskip("torch")
    (tmp_path / "kern.py").write_text(KERNEL)
    (tmp_path / "hotkernel.yaml").write_text(MANIFEST)
    env = {
        **os.environ,
        "HOTKERNEL_WORKSPACE": str(tmp_path),
        "HOTKERNEL_PYTHON": sys.executable,
        "HOTKERNEL_WHO": "ray test",
        "RAY_AUTH_MODE": "disabled",
    }
    done = subprocess.run(
        [sys.executable, "-m", "hotkernel", "sync", "-n", "3", "--executor", "ray", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    items = {i["name"]: i for i in json.loads(done.stdout)["items"]}
    assert (items["scale"]["status"], items["scale"]["verdict"]) == ("recorded", "inconclusive"), items
    if not all_gpus():  # a CPU-only machine (CI): the local Ray instance has no GPU to give the cuda target
        assert items["on_gpu"]["status"] == "skipped" and "no CUDA GPU in ray" in items["on_gpu"]["reason"]
    record = json.loads((tmp_path / items["scale"]["record"]).read_text())
    # the sequential rule stops at n when the answer is settled, else goes on up to 2n
    assert 3 <= record["result"]["rounds_completed"] <= 6 and record["provenance"]["torch"]
    lock = json.loads((tmp_path / "hotkernel.lock").read_text())
    assert lock["targets"]["scale"]["cpu"]["record"] == items["scale"]["record"]
    assert list(lock["records"]) == [items["scale"]["record"]]
    check = subprocess.run(
        [sys.executable, "-m", "hotkernel", "sync", "--check", "scale"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert check.returncode == 0, check.stdout


HANGS = (
    "version: 1\ndefaults:\n  device: cpu\n  dtype: fp32\ntargets:\n  hangs:\n    from: ./kern.py:scale_add\n"
    "    shapes: [32x64]\n    extra: [w:64]\n"
)
HANGING_CANDIDATE = "import time\n\n\ndef kernel(x, w):\n    time.sleep(600)\n    return x * w + 1.0\n"


def run_processes(marker: str) -> list[int]:
    """PIDs whose command line names ``marker`` (the verify child and the contract's processes of the job)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker in cmdline and state != "Z":
                found.append(int(entry))
    return found


@pytest.mark.slow
def test_ctrl_c_of_sync_executor_ray_cancels_the_task_and_its_processes(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="ray is not installed (pip install 'hotkernel[ray]')")
    pytest.importorskip("torch")
    (tmp_path / "kern.py").write_text(KERNEL)
    (tmp_path / "hotkernel.yaml").write_text(HANGS)
    env = {
        **os.environ,
        "HOTKERNEL_WORKSPACE": str(tmp_path),
        "HOTKERNEL_PYTHON": sys.executable,
        "HOTKERNEL_WHO": "ray test",
        "RAY_AUTH_MODE": "disabled",
    }
    rendered = subprocess.run(
        [sys.executable, "-m", "hotkernel", "sync", "--check"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rendered.returncode == 2, rendered.stdout  # out of date: nothing rendered yet
    from hotkernel.manifest import load_manifest, resolved_target
    from hotkernel.run.render import render_target
    from hotkernel.workspace.paths import Workspace

    ws = Workspace(tmp_path)
    render_target(ws, "hangs", resolved_target(load_manifest(ws.manifest), "hangs"))
    (tmp_path / "targets" / "hangs" / "candidate.py").write_text(
        (tmp_path / "targets" / "hangs" / "candidate.py").read_text().split("def kernel")[0] + HANGING_CANDIDATE
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "hotkernel", "sync", "-n", "2", "--executor", "ray"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not run_processes("targets/hangs/candidate.py"):
            time.sleep(0.5)  # the task's verify reached the hanging candidate
        assert run_processes("targets/hangs/candidate.py"), "the candidate never started"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (run_processes("targets/hangs/") or run_processes("verify_job")):
        time.sleep(0.5)
    assert run_processes("targets/hangs/") == [] and run_processes("verify_job") == [], err[-2000:]
    assert not list((tmp_path / "results").glob("**/*.json"))  # nothing finished, nothing recorded
    assert not (tmp_path / ".hotkernel" / "lock.info").exists()  # the workspace lock was let go


@pytest.mark.slow
def test_a_killed_verify_process_is_retried_by_ray_and_recorded(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="ray is not installed (pip install 'hotkernel[ray]')")
    pytest.importorskip("torch")
    (tmp_path / "kern.py").write_text(KERNEL)
    (tmp_path / "hotkernel.yaml").write_text(MANIFEST.split("  on_gpu:")[0])
    env = {
        **os.environ,
        "HOTKERNEL_WORKSPACE": str(tmp_path),
        "HOTKERNEL_PYTHON": sys.executable,
        "HOTKERNEL_WHO": "ray test",
        "RAY_AUTH_MODE": "disabled",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "hotkernel", "sync", "-n", "2", "--executor", "ray", "--json"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not run_processes("verify_job"):
            time.sleep(0.2)
        (first,) = run_processes("verify_job")
        os.kill(first, signal.SIGKILL)  # the lane's verify dies mid-run
        out, err = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and out.strip(), err[-3000:]
    (item,) = json.loads(out)["items"]
    assert (item["status"], item["verdict"]) == ("recorded", "inconclusive"), item  # the retry ran it
    assert len(list((tmp_path / "results" / "scale").glob("*.json"))) == 1
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and run_processes("hotkernel-lane-"):
        time.sleep(0.5)
    assert run_processes("hotkernel-lane-") == []  # nothing of the killed attempt outlives the sync
