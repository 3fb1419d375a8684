"""Measure a card's streaming ceilings in the user's interpreter and keep them per GPU UUID in the workspace.

``<workspace>/.hotkernel/calibration.json``::

    {"version": 1, "devices": {"GPU-…": {"name": …, "copy_gbps": …, "read_gbps": …, "measured_at": …, …}}}

``measured_ceiling_gbps(ws, uuid)`` is what other modules (roofline, bench/verify's floor check) read.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from hotkernel._util.procs import run_command
from hotkernel.contract import build
from hotkernel.errors import HotkernelError
from hotkernel.insight.base import CLI_ONLY, Cli, Hints, InsightContext
from hotkernel.insight.calibration import CALIBRATION_FILE, CalibrationEntry, store_calibration
from hotkernel.insight.specs import find_gpu
from hotkernel.manifest.python import user_python
from hotkernel.workspace.paths import Workspace

PROBE = Path(__file__).parent / "scripts" / "calibrate_probe.py"
DEFAULT_TIMEOUT_S = 300.0


def contract_file(ws: Workspace | None = None) -> Path | None:
    """The contract whose ``measure`` times the probe: the workspace's vendored copy, else the tool's own (shipped
    built in a wheel; built from the package's modules in a checkout)."""
    candidates = []
    if ws is not None:
        candidates.append(ws.contract_file)
    here = Path(__file__).resolve().parent.parent  # the hotkernel package
    candidates.append(here / "templates" / "hk_contract.py")
    if (here.parent / "templates").is_dir():
        with contextlib.suppress(OSError, build.ContractBuildError):
            candidates.append(build.ensure_built(here.parent / "templates" / "hk_contract.py"))
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
    lines.append(f"stored in {path or '.hotkernel/' + CALIBRATION_FILE + ' of the workspace'}")
    lines.extend(f"note: {note}" for note in entry.notes)
    return lines


# ---- the insight tool (hotkernel.insight.base.InsightTool) -------------------------------------------------

NAME = "calibrate"
CLI_NAME = "calibrate"
CLI_HELP = (
    "Time a device copy (read + write) and a read-only reduction in the user's interpreter; store the GB/s "
    "under .hotkernel/calibration.json for this GPU's UUID (roofline and verify read it)."
)
DESCRIPTION = """Measure the card's real streaming ceiling (copy and read GB/s) in the user's python; store it per GPU
UUID.

Writes .hotkernel/calibration.json. roofline then reports attainable_ms_measured, the floor to stop at.
Run it once per machine, when the GPU is idle. Needs a GPU and torch in the user's python; use gpu_info
first.
"""
HINTS = Hints(read_only=False, destructive=False, idempotent=True)
LONG_RUNNING = True
RESULT = CalibrationEntry


class Params(BaseModel):
    """calibrate's parameters."""

    device: Annotated[
        Literal["cuda", "cpu"],
        Field(description="device to measure: 'cuda' (default) or 'cpu' (for tests)"),
        Cli(("--device",), "cuda (default) or cpu (tests the probe only)"),
    ] = "cuda"
    size_mib: Annotated[
        int,
        Field(
            description="buffer size in MiB, 0 to 65536; default 0 = sized by the probe (over 2x L2)", ge=0, le=65536
        ),
        Cli(("--mib",), "MiB per buffer (default: 8x L2, at least 256)"),
    ] = 0
    timeout_s: Annotated[
        float,
        Field(description="probe time limit in seconds, 1 to 3600; default 300", ge=1, le=3600),
        Cli(("--timeout",), "seconds before the probe is killed"),
    ] = DEFAULT_TIMEOUT_S
    python: Annotated[
        str | None,
        Field(description="interpreter with torch", max_length=4096),
        CLI_ONLY,
        Cli(
            ("--python",),
            "interpreter with torch (default: HOTKERNEL_PYTHON, hotkernel.yaml defaults.python, python on PATH)",
        ),
    ] = None


def run(params: Params, ctx: InsightContext) -> CalibrationEntry:
    """Probe the device in the user's python and store the result in the workspace."""
    ctx.progress(0, 1, "running the streaming probe in the user's python")
    entry = calibrate(
        ctx.require_workspace("calibrate"),
        python=params.python,
        device=params.device,
        size_mib=params.size_mib,
        timeout_s=params.timeout_s,
    )
    ctx.progress(1, 1, "done")
    return entry
