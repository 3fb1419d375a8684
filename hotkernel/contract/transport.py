"""How judged outputs reach the judge: CUDA IPC handles for cuda (the judge opens the worker's buffers and
compares on the GPU while the worker is frozen), a file in the run directory for cpu.

Handles travel as JSON primitives (sizes, strides, dtype name, base64 bytes), never pickles: the judge
rebuilds the tensors with classes it chooses, so a forged protocol line can at worst name a bad handle.
"""

from __future__ import annotations

import base64
import contextlib
import glob
import hashlib
import io
import os
from typing import Any


def b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode("ascii")


def unb64(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value.encode("ascii"))


def ipc_handle(torch: Any, tensor: Any) -> dict[str, Any]:
    """The CUDA IPC description of ``tensor`` (it must stay alive until the judge has read it)."""
    storage = tensor._typed_storage()
    (device, handle, size_bytes, offset_bytes, ref_handle, ref_offset, event_handle, event_sync) = (
        storage._share_cuda_()
    )
    return {
        "size": list(tensor.size()),
        "stride": list(tensor.stride()),
        "offset": int(tensor.storage_offset()),
        "dtype": str(tensor.dtype).replace("torch.", ""),
        "device": int(device),
        "handle": b64(handle),
        "size_bytes": int(size_bytes),
        "offset_bytes": int(offset_bytes),
        "ref_handle": b64(ref_handle),
        "ref_offset": int(ref_offset),
        "event_handle": b64(event_handle),
        "event_sync": bool(event_sync),
    }


def open_ipc_handle(torch: Any, item: dict[str, Any]) -> Any:
    """The judge's view of a worker tensor described by ``ipc_handle``."""
    from torch.multiprocessing.reductions import rebuild_cuda_tensor

    dtype = getattr(torch, str(item["dtype"]))
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"not a dtype: {item['dtype']!r}")
    return rebuild_cuda_tensor(
        torch.Tensor,
        torch.Size([int(v) for v in item["size"]]),
        tuple(int(v) for v in item["stride"]),
        int(item["offset"]),
        torch.storage.TypedStorage,
        dtype,
        int(item["device"]),
        unb64(item["handle"]),
        int(item["size_bytes"]),
        int(item["offset_bytes"]),
        False,
        unb64(item["ref_handle"]),
        int(item["ref_offset"]),
        unb64(item["event_handle"]),
        bool(item["event_sync"]),
    )


def export_outputs(
    torch: Any, groups: dict[str, list[list[Any]]], run_dir: str, name: str, device_kind: str
) -> dict[str, Any]:
    """Worker side: describe ``{"correct": [[t, ...], ...], "timed": [...]}`` for the judge."""
    if device_kind == "cuda":
        with contextlib.suppress(RuntimeError):  # e.g. an allocator without IPC: the file path below
            return {
                "kind": "cuda-ipc",
                "groups": {
                    key: [[ipc_handle(torch, t) for t in group] for group in value] for key, value in groups.items()
                },
            }
    buffer = io.BytesIO()
    torch.save(
        {key: [[t.detach().to("cpu") for t in group] for group in value] for key, value in groups.items()}, buffer
    )
    data = buffer.getvalue()
    with open(os.path.join(run_dir, name), "wb") as handle:
        handle.write(data)
    return {"kind": "file", "file": name, "sha256": hashlib.sha256(data).hexdigest()}


def import_outputs(torch: Any, payload: dict[str, Any], run_dir: str, device: str) -> dict[str, list[list[Any]]]:
    """Judge side: the tensors ``export_outputs`` described (views of the worker's memory for cuda-ipc)."""
    if payload.get("kind") == "cuda-ipc":
        return {
            key: [[open_ipc_handle(torch, item) for item in group] for group in value]
            for key, value in payload["groups"].items()
        }
    path = os.path.join(run_dir, os.path.basename(str(payload["file"])))
    with open(path, "rb") as handle:
        data = handle.read()
    if hashlib.sha256(data).hexdigest() != payload["sha256"]:
        raise ValueError(f"{payload['file']} changed after the worker wrote it")
    saved = torch.load(io.BytesIO(data), map_location=device, weights_only=True)
    return {key: [list(group) for group in value] for key, value in saved.items()}


def remove_ipc_files(pid: int) -> None:
    """CUDA IPC reference-counter files a killed worker left in /dev/shm (``torch_<pid>_*``)."""
    for path in glob.glob(f"/dev/shm/torch_{int(pid)}_*"):
        with contextlib.suppress(OSError):
            os.unlink(path)
