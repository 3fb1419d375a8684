"""calibrate: the probe really runs in the user's interpreter (CPU mode here), results stored per UUID."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.insight import calibrate as cal
from hotkernel.insight import calibration
from hotkernel.workspace.paths import Workspace

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch not installed in this interpreter")


def _entry(uuid: str = "GPU-1", copy: float = 100.0, read: float = 120.0) -> calibration.CalibrationEntry:
    return calibration.CalibrationEntry(
        uuid=uuid,
        name="NVIDIA H200",
        copy_gbps=copy,
        read_gbps=read,
        bytes_per_buffer=1 << 20,
        timer="cuda-events",
        measured_at="2026-11-30T00:00:00",
    )


@needs_torch
@pytest.mark.slow
def test_probe_runs_for_real_on_cpu_and_is_stored(tmp_path):
    ws = Workspace(tmp_path)
    entry = cal.calibrate(ws, python=sys.executable, device="cpu", size_mib=8)
    assert entry.uuid == "cpu" and entry.timer == "cpu-perf-counter"
    assert entry.notes == []  # timed by the contract's own measure(), not the probe's fallback loop
    assert entry.copy_gbps > 0.1 and entry.read_gbps > 0.1
    assert entry.bytes_per_buffer == 8 * 2**20
    stored = json.loads(calibration.calibration_path(ws).read_text())
    assert stored["devices"]["cpu"]["copy_gbps"] == entry.copy_gbps
    assert calibration.measured_ceiling_gbps(ws, "cpu") == max(entry.copy_gbps, entry.read_gbps)


@needs_torch
@pytest.mark.slow
def test_cuda_probe_without_a_gpu_is_one_line(tmp_path):
    try:
        entry = cal.calibrate(Workspace(tmp_path), python=sys.executable, size_mib=64)
    except HotkernelError as err:
        assert "torch.cuda.is_available() is False" in str(err) and "\n" not in str(err)
    else:  # a machine with a GPU: the probe measured it under its UUID
        assert entry.uuid.startswith("GPU-") and entry.copy_gbps > 0


def test_interpreter_without_torch_is_one_line(tmp_path):
    fake = tmp_path / "python-no-torch"
    fake.write_text(
        f'#!/bin/sh\nexec {sys.executable} -S -I -c \'import sys; sys.modules["torch"] = None; '
        'import runpy; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name="__main__")\' "$@"\n'
    )
    fake.chmod(0o755)
    with pytest.raises(HotkernelError, match="probe .* failed: .*torch") as info:
        cal.calibrate(Workspace(tmp_path), python=str(fake), device="cpu")
    assert "\n" not in str(info.value)


def test_missing_interpreter(tmp_path):
    with pytest.raises(HotkernelError, match="cannot run"):
        cal.calibrate(Workspace(tmp_path), python=str(tmp_path / "no-python"), device="cpu")


def test_store_replaces_per_uuid(tmp_path):
    calibration.store_calibration(tmp_path, _entry("GPU-1"))
    calibration.store_calibration(tmp_path, _entry("GPU-2", copy=50, read=40))
    calibration.store_calibration(tmp_path, _entry("GPU-1", copy=200, read=150))  # a re-calibration replaces
    entries = calibration.load_calibration(tmp_path)
    assert set(entries) == {"GPU-1", "GPU-2"}
    assert entries["GPU-1"].copy_gbps == 200
    assert calibration.measured_ceiling_gbps(tmp_path, "GPU-1") == 200
    assert calibration.measured_ceiling_gbps(tmp_path, "GPU-2") == 50
    assert calibration.measured_ceiling_gbps(tmp_path, "GPU-3") is None
    assert calibration.measured_ceiling_gbps(tmp_path, None) is None


def test_corrupt_calibration_file_names_the_fix(tmp_path):
    path = calibration.calibration_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(HotkernelError, match="delete it and run `hotkernel calibrate`"):
        calibration.load_calibration(tmp_path)


def test_nothing_calibrated_is_empty(tmp_path):
    assert calibration.load_calibration(tmp_path) == {}
    assert calibration.calibration_for(tmp_path, uuid="GPU-1", gpu_name="NVIDIA H200") is None
