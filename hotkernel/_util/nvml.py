"""The one NVML probe (nvidia-ml-py): a session, the visible GPU's name, the processes using a GPU.

``pynvml`` is imported here only; every caller asks through these functions. No driver, no device or no
library reads as "no NVIDIA GPU" (None), never as an error: NVML raises many library-specific types.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def nvml_session() -> Iterator[Any]:
    """An initialised ``pynvml`` module for the duration (shut down after); raises when NVML cannot load."""
    import pynvml  # nvidia-ml-py; imported on use: a CPU-only `hotkernel plan` never loads libnvidia-ml

    pynvml.nvmlInit()
    try:
        yield pynvml
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def text(value: Any) -> str:
    """NVML returns bytes in older bindings and str in newer ones."""
    return value.decode() if isinstance(value, bytes) else str(value)


def visible_gpu_name() -> str | None:
    """Name of the first GPU CUDA would use (honours an integer CUDA_VISIBLE_DEVICES), None without one."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if visible == "" and "CUDA_VISIBLE_DEVICES" in os.environ:
        return None  # CUDA_VISIBLE_DEVICES="" hides every GPU
    try:
        with nvml_session() as nvml:
            count = nvml.nvmlDeviceGetCount()
            if count < 1:
                return None
            index = int(visible) if visible.isdigit() and int(visible) < count else 0
            return text(nvml.nvmlDeviceGetName(nvml.nvmlDeviceGetHandleByIndex(index)))
    except Exception:  # noqa: BLE001 - no driver, no GPU, no library
        return None


def foreign_compute_pids(own_pids: set[int]) -> list[int] | None:
    """PIDs (alive in /proc, not in ``own_pids``) with a compute context on any GPU; None without NVML."""
    try:
        with nvml_session() as nvml:
            foreign: list[int] = []
            for index in range(nvml.nvmlDeviceGetCount()):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                for proc in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
                    pid = int(proc.pid)
                    if pid not in own_pids and os.path.exists(f"/proc/{pid}"):
                        foreign.append(pid)
            return foreign
    except Exception:  # noqa: BLE001
        return None
