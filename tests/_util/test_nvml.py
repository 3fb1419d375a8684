"""CUDA_VISIBLE_DEVICES decides which GPUs the NVML probe looks at: a lane pinned to one GPU ignores the others."""

from __future__ import annotations

import os
import sys
import types

import pytest

from hotkernel._util import nvml
from hotkernel.run.runner import device_idle_problem

UUIDS = ["GPU-aaaa1111", "GPU-bbbb2222"]


def fake_pynvml(procs: dict[int, list[int]]) -> types.ModuleType:
    """A pynvml stand-in with two GPUs; ``procs`` maps a GPU index to the PIDs with a compute context on it."""
    mod = types.ModuleType("pynvml")
    mod.nvmlInit = lambda: None
    mod.nvmlShutdown = lambda: None
    mod.nvmlDeviceGetCount = lambda: 2
    mod.nvmlDeviceGetHandleByIndex = lambda i: i
    mod.nvmlDeviceGetUUID = lambda h: UUIDS[h]
    mod.nvmlDeviceGetName = lambda h: ["NVIDIA H200", "NVIDIA H100 80GB HBM3"][h]
    mod.nvmlDeviceGetComputeRunningProcesses = lambda h: [types.SimpleNamespace(pid=p) for p in procs.get(h, [])]
    return mod


@pytest.fixture
def two_gpus(monkeypatch: pytest.MonkeyPatch):
    def install(procs: dict[int, list[int]]) -> None:
        monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(procs))

    return install


def test_select_visible_by_index_uuid_and_prefix() -> None:
    gpus = [nvml.GpuSlot(0, UUIDS[0], "a"), nvml.GpuSlot(1, UUIDS[1], "b")]
    assert nvml.select_visible(gpus, None) == gpus
    assert nvml.select_visible(gpus, ["1"]) == [gpus[1]]
    assert nvml.select_visible(gpus, ["GPU-bbbb2222", "0"]) == [gpus[1], gpus[0]]
    assert nvml.select_visible(gpus, ["aaaa"]) == [gpus[0]]
    assert nvml.select_visible(gpus, ["0", "7", "1"]) == [gpus[0]]  # CUDA stops at the first unknown entry
    assert nvml.select_visible(gpus, []) == []


def test_foreign_pids_only_on_the_pinned_gpu(two_gpus, monkeypatch: pytest.MonkeyPatch) -> None:
    other = os.getppid()  # alive in /proc
    two_gpus({0: [other], 1: []})
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert nvml.foreign_compute_pids(set()) == [other]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", UUIDS[1])
    assert nvml.foreign_compute_pids(set()) == []  # the process on GPU 0 is another lane's, not this run's
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert nvml.foreign_compute_pids(set()) == [other]
    assert nvml.foreign_compute_pids({other}) == []


def test_visible_gpu_name_follows_the_pin(two_gpus, monkeypatch: pytest.MonkeyPatch) -> None:
    two_gpus({})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", UUIDS[1])
    assert nvml.visible_gpu_name() == "NVIDIA H100 80GB HBM3"
    assert [g.index for g in nvml.visible_gpus()] == [1]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert nvml.visible_gpu_name() is None


def test_device_idle_problem_names_the_pin(two_gpus, monkeypatch: pytest.MonkeyPatch) -> None:
    two_gpus({0: [os.getppid()]})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert device_idle_problem(set(), wait_s=0.0) is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    problem = device_idle_problem(set(), wait_s=0.0)
    assert problem is not None and problem.startswith(
        "device_idle: 1 other process(es) use the GPU (CUDA_VISIBLE_DEVICES=0)"
    )


def test_no_library_reads_as_no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    assert nvml.all_gpus() == []
    assert nvml.foreign_compute_pids(set()) is None
