"""Measure a card's streaming ceilings in the user's interpreter and keep them per GPU UUID in the workspace.

``<workspace>/.hotkernel/calibration.json``::

    {"version": 1, "devices": {"GPU-…": {"name": …, "copy_gbps": …, "read_gbps": …, "measured_at": …, …}}}

``measured_ceiling_gbps(ws, uuid)`` is what other modules (roofline, bench/verify's floor check) read.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from filelock import FileLock
from pydantic import BaseModel, Field

from hotkernel.errors import HotkernelError
from hotkernel.procs import run_command
from hotkernel.workspace import Workspace

CALIBRATION_FILE = "calibration.json"
PROBE = Path(__file__).parent / "scripts" / "calibrate_probe.py"
DEFAULT_TIMEOUT_S = 300.0


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
    aa_noise: dict | None = Field(default=None, description="A/A noise of the verify rule, when measured")
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
            f"{path} is not a valid calibration file ({type(exc).__name__}); "
            "delete it and run `hotkernel calibrate`"
        ) from None


def store_calibration(ws: Workspace | Path, entry: CalibrationEntry) -> Path:
    """Insert or replace ``entry`` (atomic write under a file lock); returns the file."""
    path = calibration_path(ws)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=30):
        entries = load_calibration(ws)
        previous = entries.get(entry.uuid)
        if previous is not None and entry.aa_noise is None:
            entry = entry.model_copy(update={"aa_noise": previous.aa_noise})
        entries[entry.uuid] = entry
        payload = {"version": 1, "devices": {uuid: e.model_dump() for uuid, e in sorted(entries.items())}}
        handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".calibration-", suffix=".json")
        with os.fdopen(handle, "w") as out:
            json.dump(payload, out, indent=1)
            out.write("\n")
        os.replace(tmp, path)
    return path


def store_aa_noise(ws: Workspace | Path, uuid: str, noise: dict) -> Path:
    """Attach A/A noise figures (from the verify rule's self-test) to a calibrated device."""
    entries = load_calibration(ws)
    if uuid not in entries:
        raise HotkernelError(
            f"no calibration for {uuid} in {calibration_path(ws)}: run `hotkernel calibrate` first"
        )
    return store_calibration(ws, entries[uuid].model_copy(update={"aa_noise": noise}))


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


def user_python(ws: Workspace | None = None) -> str:
    """The interpreter that has torch: ``hotkernel.interpreter.find_python`` when present, else
    ``HOTKERNEL_PYTHON``, ``python3`` on PATH, or this interpreter."""
    try:
        from hotkernel.interpreter import find_python
    except ImportError:
        find_python = None
    if find_python is not None:
        manifest_python = None
        if ws is not None and ws.manifest.is_file():
            try:
                from hotkernel.manifest import load_manifest

                manifest_python = getattr(load_manifest(ws.manifest), "python", None)
            except Exception:  # a broken manifest is reported by the commands that need it
                manifest_python = None
        return str(find_python(manifest_python, root=ws.root if ws is not None else None).path)
    return os.environ.get("HOTKERNEL_PYTHON") or shutil.which("python3") or sys.executable


def contract_file(ws: Workspace | None = None) -> Path | None:
    """The contract whose ``measure`` times the probe: the workspace's vendored copy, else the template."""
    candidates = []
    if ws is not None:
        candidates.append(ws.contract_file)
    here = Path(__file__).parent
    candidates += [here / "templates" / "hk_contract.py", here.parent / "templates" / "hk_contract.py"]
    return next((path for path in candidates if path.is_file()), None)


def calibrate(
    ws: Workspace,
    *,
    python: str | None = None,
    device: str = "cuda",
    size_mib: int = 0,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    store: bool = True,
) -> CalibrationEntry:
    """Run the probe in the user's interpreter, store the result under the device UUID, and return it."""
    interpreter = python or user_python(ws)
    run_dir = Path(tempfile.mkdtemp(prefix="hotkernel-calibrate-"))
    out = run_dir / "result.json"
    argv = [interpreter, str(PROBE), "--out", str(out), "--device", device]
    contract = contract_file(ws)
    if contract is not None:
        argv += ["--contract", str(contract)]
    if size_mib:
        argv += ["--mib", str(int(size_mib))]
    proc = run_command(argv, timeout_s=timeout_s, out_dir=run_dir, name="probe")
    if proc.timed_out:
        raise HotkernelError(
            f"calibrate: the probe ran past {timeout_s:.0f} s in {interpreter}; is the GPU busy? "
            f"retry with --timeout or a smaller --mib (log: {proc.stderr_path})"
        )
    try:
        result = json.loads(out.read_text())
    except (OSError, ValueError):
        tail = proc.stderr(400).strip().splitlines()
        raise HotkernelError(
            f"calibrate: the probe in {interpreter} wrote no result (exit {proc.returncode}: "
            f"{tail[-1] if tail else 'no output'}); check that this interpreter has torch "
            f"(log: {proc.stderr_path})"
        ) from None
    if not result.get("ok"):
        raise HotkernelError(
            f"calibrate: the probe in {interpreter} failed: {result.get('error', 'unknown error')}; "
            f"point HOTKERNEL_PYTHON (or --python) at an interpreter with CUDA torch (traceback: {out})"
        )
    from hotkernel.roofline import find_gpu

    spec_bw = None
    notes = list(result.get("notes", []))
    if device == "cuda":
        try:
            spec, warning = find_gpu(result["device"])
            spec_bw = spec.bandwidth_gbps
            if warning:
                notes.append(warning)
        except HotkernelError as err:
            notes.append(str(err))
    entry = CalibrationEntry(
        uuid=result["uuid"],
        name=result["device"],
        copy_gbps=round(result["copy_gbps"], 2),
        read_gbps=round(result["read_gbps"], 2),
        bytes_per_buffer=result["bytes_per_buffer"],
        timer=result["timer"],
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        python=interpreter,
        torch=result.get("torch"),
        spec_bandwidth_gbps=spec_bw,
        notes=notes,
    )
    if spec_bw:
        entry.share_of_spec = round(entry.ceiling_gbps / spec_bw, 3)
    if store:
        store_calibration(ws, entry)
    shutil.rmtree(run_dir, ignore_errors=True)
    return entry


def summary_lines(entry: CalibrationEntry, path: Path | None = None) -> list[str]:
    share = ""
    if entry.share_of_spec:
        share = f" = {entry.share_of_spec:.0%} of {entry.spec_bandwidth_gbps:g} GB/s spec"
    lines = [
        f"{entry.name} ({entry.uuid}): copy {entry.copy_gbps:.1f} GB/s, read {entry.read_gbps:.1f} GB/s"
        f"{share} [timer {entry.timer}, {entry.bytes_per_buffer / 2**20:.0f} MiB buffers]",
    ]
    if path is not None:
        lines.append(f"stored in {path}")
    lines.extend(f"note: {note}" for note in entry.notes)
    return lines
