"""The one NVML probe (nvidia-ml-py): a session, the GPUs (and which CUDA_VISIBLE_DEVICES leaves visible), the
processes using a GPU.

``pynvml`` is imported here only; every caller asks through these functions. No driver, no device or no
library reads as "no NVIDIA GPU" (None), never as an error: NVML raises many library-specific types.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
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


@dataclass(frozen=True)
class GpuSlot:
    """One NVIDIA GPU as NVML numbers it: ``index`` (PCI order, as nvidia-smi shows it), ``uuid``, ``name``."""

    index: int
    uuid: str
    name: str


def visible_tokens() -> list[str] | None:
    """CUDA_VISIBLE_DEVICES split into its entries (indices or ``GPU-...`` UUIDs); None when it is unset."""
    if "CUDA_VISIBLE_DEVICES" not in os.environ:
        return None
    return [t.strip() for t in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if t.strip()]


def select_visible(gpus: list[GpuSlot], tokens: list[str] | None) -> list[GpuSlot]:
    """The GPUs CUDA would use for ``tokens`` (CUDA_VISIBLE_DEVICES entries), in their order: an index or a
    UUID (or a unique UUID prefix); like CUDA, the list ends at the first entry that names no GPU."""
    if tokens is None:
        return list(gpus)
    chosen: list[GpuSlot] = []
    for token in tokens:
        if token.isdigit():
            match = [g for g in gpus if g.index == int(token)]
        else:
            match = [g for g in gpus if g.uuid.startswith(token if token.startswith("GPU-") else f"GPU-{token}")]
        if len(match) != 1 or match[0] in chosen:
            break
        chosen.append(match[0])
    return chosen


def all_gpus() -> list[GpuSlot]:
    """Every NVIDIA GPU NVML sees (whatever CUDA_VISIBLE_DEVICES says); [] without NVML or a GPU."""
    try:
        with nvml_session() as nvml:
            slots = []
            for index in range(nvml.nvmlDeviceGetCount()):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                slots.append(GpuSlot(index, text(nvml.nvmlDeviceGetUUID(handle)), text(nvml.nvmlDeviceGetName(handle))))
            return slots
    except Exception:  # noqa: BLE001 - no driver, no GPU, no library
        return []


def visible_gpus() -> list[GpuSlot]:
    """The GPUs a CUDA process started now would use, honouring CUDA_VISIBLE_DEVICES (indices or UUIDs)."""
    return select_visible(all_gpus(), visible_tokens())


def visible_gpu_name() -> str | None:
    """Name of the first GPU CUDA would use (honours CUDA_VISIBLE_DEVICES), None without one."""
    gpus = visible_gpus()
    return gpus[0].name if gpus else None


def foreign_compute_pids(own_pids: set[int]) -> list[int] | None:
    """PIDs (alive in /proc, not in ``own_pids``) with a compute context on a GPU this process may use (every
    GPU, or only those CUDA_VISIBLE_DEVICES names: a run pinned to one GPU ignores the others); None without
    NVML."""
    tokens = visible_tokens()
    try:
        with nvml_session() as nvml:
            handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
            slots = [GpuSlot(i, text(nvml.nvmlDeviceGetUUID(h)), "") for i, h in enumerate(handles)]
            foreign: list[int] = []
            for slot in select_visible(slots, tokens):
                for proc in nvml.nvmlDeviceGetComputeRunningProcesses(handles[slot.index]):
                    pid = int(proc.pid)
                    if pid not in own_pids and os.path.exists(f"/proc/{pid}"):
                        foreign.append(pid)
            return foreign
    except Exception:  # noqa: BLE001
        return None
