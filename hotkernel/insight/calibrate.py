"""Measure a card's streaming ceilings in the user's interpreter and keep them per GPU UUID in the workspace.

``<workspace>/.hotkernel/calibration.json``::

    {"version": 1, "devices": {"GPU-…": {"name": …, "copy_gbps": …, "read_gbps": …, "measured_at": …, …}}}

``measured_ceiling_gbps(ws, uuid)`` is what other modules (roofline, bench/verify's floor check) read.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

from hotkernel._util.procs import run_command
from hotkernel.errors import HotkernelError
from hotkernel.insight.calibration import CalibrationEntry, store_calibration
from hotkernel.insight.specs import find_gpu
from hotkernel.manifest.python import user_python
from hotkernel.workspace.paths import Workspace

PROBE = Path(__file__).parent / "scripts" / "calibrate_probe.py"
DEFAULT_TIMEOUT_S = 300.0


def contract_file(ws: Workspace | None = None) -> Path | None:
    """The contract whose ``measure`` times the probe: the workspace's vendored copy, else the template."""
    candidates = []
    if ws is not None:
        candidates.append(ws.contract_file)
    here = Path(__file__).resolve().parent.parent  # the hotkernel package
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
    interpreter = user_python(ws, python)
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
