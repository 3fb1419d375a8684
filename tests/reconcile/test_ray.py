"""``sync --executor ray`` on a local Ray instance: a CPU target verified by a Ray task in a temporary workspace on
the node and recorded here; a cuda target skipped when the cluster has no GPU; a clear error without Ray."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
    env = {**os.environ, "HOTKERNEL_WORKSPACE": str(tmp_path), "HOTKERNEL_PYTHON": sys.executable,
           "HOTKERNEL_WHO": "ray test", "RAY_AUTH_MODE": "disabled"}
    done = subprocess.run([sys.executable, "-m", "hotkernel", "sync", "-n", "3", "--executor", "ray", "--json"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    items = {i["name"]: i for i in json.loads(done.stdout)["items"]}
    assert (items["scale"]["status"], items["scale"]["verdict"]) == ("recorded", "inconclusive"), items
    if not all_gpus():  # a CPU-only machine (CI): the local Ray instance has no GPU to give the cuda target
        assert items["on_gpu"]["status"] == "skipped" and "no CUDA GPU in ray" in items["on_gpu"]["reason"]
    record = json.loads((tmp_path / items["scale"]["record"]).read_text())
    assert record["result"]["rounds_completed"] == 3 and record["provenance"]["torch"]
    lock = json.loads((tmp_path / "hotkernel.lock").read_text())
    assert lock["targets"]["scale"]["cpu"]["record"] == items["scale"]["record"]
    assert list(lock["records"]) == [items["scale"]["record"]]
    check = subprocess.run([sys.executable, "-m", "hotkernel", "sync", "--check", "scale"], capture_output=True,
                           text=True, env=env, cwd=tmp_path, timeout=120)
    assert check.returncode == 0, check.stdout
