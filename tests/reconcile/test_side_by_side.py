"""Where a default sync runs its verifies: one at a time in this process, or, on a GPU host with cpu and cuda
targets and CPUs to spare, the visible GPU's lane and a CPU lane side by side (``lanes.side_by_side``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotkernel._util.nvml import GpuSlot
from hotkernel.errors import HotkernelError
from hotkernel.manifest import load_manifest
from hotkernel.reconcile import executor as executor_module
from hotkernel.reconcile import lanes
from hotkernel.reconcile.executor import LaneExecutor
from hotkernel.workspace.paths import Workspace

H100 = GpuSlot(0, "GPU-a", "NVIDIA H100 80GB HBM3")
MANIFEST = """\
version: 1
defaults:
  dtype: fp32
targets:
  gpu_t:
    from: ./k.py:f
    shapes: [64x64]
  cpu_t:
    from: ./k.py:f
    shapes: [64x64]
    device: cpu
  cpu_wide:
    from: ./k.py:f
    shapes: [64x64]
    device: cpu
    threads: 8
"""


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    (tmp_path / "k.py").write_text("def f(x):\n    return x * 2\n", encoding="utf-8")
    (tmp_path / "hotkernel.yaml").write_text(MANIFEST, encoding="utf-8")
    monkeypatch.setattr(lanes, "visible_gpus", lambda: [H100])
    monkeypatch.setattr(executor_module, "all_gpus", lambda: [H100])
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return Workspace(tmp_path)


def test_a_cpu_lane_goes_beside_the_gpu_only_for_mixed_targets_with_cpus_to_spare(ws: Workspace) -> None:
    manifest = load_manifest(ws.manifest)
    mixed = ["gpu_t", "cpu_t"]
    assert lanes.side_by_side(manifest, mixed, cpus=4)  # 1 thread + 3 spare
    assert not lanes.side_by_side(manifest, mixed, cpus=3)  # a 2-core box with a GPU stays one at a time
    assert not lanes.side_by_side(manifest, ["gpu_t"], cpus=64)  # nothing for a CPU lane to do
    assert not lanes.side_by_side(manifest, ["cpu_t", "cpu_wide"], cpus=64)  # nothing for a GPU lane
    assert not lanes.side_by_side(manifest, None, cpus=10)  # cpu_wide's 8 threads need 11
    assert lanes.side_by_side(manifest, None, cpus=11)


def test_no_visible_gpu_means_one_at_a_time(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lanes, "visible_gpus", lambda: [])
    assert not lanes.side_by_side(load_manifest(ws.manifest), ["gpu_t", "cpu_t"], cpus=64)


def test_the_default_executor_is_the_gpu_lane_and_a_cpu_lane(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = load_manifest(ws.manifest)
    monkeypatch.setattr(lanes, "usable_cpus", lambda: 16)
    pool = lanes.build_executor(ws, manifest=manifest, names=["gpu_t", "cpu_t"])
    assert isinstance(pool, LaneExecutor)
    assert [(lane.name, sorted(lane.kinds)) for lane in pool.lanes] == [("gpu0", ["cuda"]), ("cpu", ["cpu"])]
    assert pool.lanes[0].gpu == H100
    assert lanes.build_executor(ws, manifest=manifest, names=["gpu_t", "cpu_t"], serial=True) is None
    assert lanes.build_executor(ws, manifest=manifest, names=["gpu_t"]) is None
    monkeypatch.setattr(lanes, "usable_cpus", lambda: 2)
    assert lanes.build_executor(ws, manifest=manifest, names=["gpu_t", "cpu_t"]) is None


def test_usable_cpus_is_what_this_process_may_run_on() -> None:
    assert 1 <= lanes.usable_cpus() <= (lanes.os.cpu_count() or 1)


@pytest.mark.parametrize("options", [{"gpus": "all"}, {"executor": "ray"}])
def test_serial_with_lanes_is_refused_with_the_fix(ws: Workspace, options: dict) -> None:
    with pytest.raises(HotkernelError, match="--serial runs one verify at a time.*drop --gpus / --executor"):
        lanes.build_executor(ws, serial=True, **options)


def test_the_cli_refuses_serial_with_gpus_in_one_line(ws: Workspace) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "hotkernel", "sync", "--serial", "--gpus", "all"],
        cwd=ws.root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip() == "error: --serial runs one verify at a time in this process; drop --gpus / --executor"
