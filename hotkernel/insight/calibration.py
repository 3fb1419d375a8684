"""Measured streaming ceilings, kept per GPU UUID in the workspace (written by ``hotkernel calibrate``).

``<workspace>/.hotkernel/calibration.json``::

    {"version": 1, "devices": {"GPU-…": {"name": …, "copy_gbps": …, "read_gbps": …, "measured_at": …, …}}}

``measured_ceiling_gbps(ws, uuid)`` is what other modules (roofline, bench/verify's floor check) read.
"""

from __future__ import annotations

import json
from pathlib import Path

from filelock import FileLock
from pydantic import BaseModel, Field

from hotkernel._util.fs import atomic_write_text
from hotkernel.errors import HotkernelError
from hotkernel.workspace.paths import Workspace

CALIBRATION_FILE = "calibration.json"


class CalibrationEntry(BaseModel):
    """The measured ceilings of one device."""

    uuid: str
    name: str
    copy_gbps: float = Field(description="device copy, read + write bytes counted")
    read_gbps: float = Field(description="read-only reduction")
    bytes_per_buffer: int
    timer: str
    measured_at: str
    python: str | None = None
    torch: str | None = None
    spec_bandwidth_gbps: float | None = None
    share_of_spec: float | None = None
    notes: list[str] = []

    @property
    def ceiling_gbps(self) -> float:
        """The best streaming rate measured: the floor a memory-bound kernel can get near."""
        return max(self.copy_gbps, self.read_gbps)


def calibration_path(ws: Workspace | Path) -> Path:
    root = ws.root if isinstance(ws, Workspace) else Path(ws)
    return root / ".hotkernel" / CALIBRATION_FILE


def load_calibration(ws: Workspace | Path) -> dict[str, CalibrationEntry]:
    """Every stored entry by UUID ({} when nothing was calibrated); a corrupt file raises with the fix."""
    path = calibration_path(ws)
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
        devices = data.get("devices", {})
        return {uuid: CalibrationEntry.model_validate(entry) for uuid, entry in devices.items()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise HotkernelError(
            f"{path} is not a valid calibration file ({type(exc).__name__}); delete it and run `hotkernel calibrate`"
        ) from None


def store_calibration(ws: Workspace | Path, entry: CalibrationEntry) -> Path:
    """Insert or replace ``entry`` (atomic write under a file lock); returns the file."""
    path = calibration_path(ws)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=30):
        entries = load_calibration(ws)
        entries[entry.uuid] = entry
        payload = {"version": 1, "devices": {uuid: e.model_dump() for uuid, e in sorted(entries.items())}}
        atomic_write_text(path, json.dumps(payload, indent=1) + "\n")
    return path


def measured_ceiling_gbps(ws: Workspace | Path, uuid: str | None) -> float | None:
    """The measured streaming ceiling of device ``uuid`` in GB/s, or None when it was never calibrated."""
    if not uuid:
        return None
    entry = load_calibration(ws).get(uuid)
    return entry.ceiling_gbps if entry is not None else None


def calibration_for(
    ws: Workspace | Path, *, uuid: str | None = None, gpu_name: str | None = None
) -> CalibrationEntry | None:
    """The entry for ``uuid``; without one, the newest entry whose device name matches ``gpu_name``."""
    entries = load_calibration(ws)
    if uuid and uuid in entries:
        return entries[uuid]
    if gpu_name:
        named = [e for e in entries.values() if e.name.lower() == gpu_name.lower()]
        if named:
            return max(named, key=lambda e: e.measured_at)
    return None
