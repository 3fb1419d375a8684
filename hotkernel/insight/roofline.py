"""Roofline arithmetic against a table of spec-sheet rates (dense, with a source for every figure).

``roofline(flops, bytes_moved, gpu=...)`` says whether a kernel is memory- or compute-bound and how fast it
could run: ``attainable_ms`` from the spec sheet, ``attainable_ms_measured`` from a measured streaming ceiling
(``hotkernel calibrate``), which is the floor a real kernel can get near.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from hotkernel.errors import HotkernelError
from hotkernel.insight.base import CLI_ONLY, Cli, Hints, InsightContext
from hotkernel.insight.calibration import calibration_for
from hotkernel.insight.gpu_info import gpu_info
from hotkernel.insight.specs import DTYPE_RATE_FIELD, find_gpu, gpu_table, known_gpus


class RooflineResult(BaseModel):
    """Where (flops, bytes) sits on the roofline of one GPU."""

    gpu: str = Field(description="table key of the GPU used")
    gpu_name: str
    dtype: str
    flops: float
    bytes: float
    intensity_flop_per_byte: float | None = Field(description="flops / bytes; None when bytes is 0")
    ridge_flop_per_byte: float = Field(description="peak FLOP/s / bandwidth: above it, compute-bound")
    bound: str = Field(description="memory | compute")
    peak_tflops: float
    bandwidth_gbps: float
    attainable_tflops: float
    attainable_ms: float = Field(description="max(flops/peak, bytes/bandwidth) from the spec sheet")
    measured_bandwidth_gbps: float | None = None
    measured_source: str | None = None
    attainable_ms_measured: float | None = Field(
        default=None, description="same, with the measured streaming ceiling in place of the spec bandwidth"
    )
    warnings: list[str] = []
    sources: dict[str, str] = {}


def check_work(flops: float, bytes_moved: float) -> None:
    """Refuse negative, NaN or infinite work, and flops and bytes both zero."""
    for label, value in (("flops", flops), ("bytes", bytes_moved)):
        if value is None or not math.isfinite(float(value)) or float(value) < 0:
            raise HotkernelError(f"roofline: {label}={value!r} must be a finite number >= 0")
    if float(flops) == 0 and float(bytes_moved) == 0:
        raise HotkernelError("roofline: flops and bytes are both 0: give the kernel's FLOPs and/or bytes moved")


def roofline(
    flops: float,
    bytes_moved: float,
    *,
    gpu: str | None = None,
    dtype: str = "bf16",
    measured_gbps: float | None = None,
    measured_source: str | None = None,
    workspace: Path | None = None,
) -> RooflineResult:
    """Roofline of ``flops`` FLOPs over ``bytes_moved`` bytes on ``gpu`` (default: the first GPU here).

    ``measured_gbps`` (or, when a workspace is given, the calibration stored for this GPU's UUID) gives
    ``attainable_ms_measured``.
    """
    check_work(flops, bytes_moved)
    warnings: list[str] = []
    uuid = None
    if gpu is None:
        info = gpu_info()
        if not info.gpus:
            raise HotkernelError(
                f"roofline: no GPU found here ({info.message}); name the GPU (gpu NAME; --gpu on the command "
                f"line), one of {known_gpus()}"
            )
        gpu, uuid = info.gpus[0].name, info.gpus[0].uuid
    spec, warning = find_gpu(gpu)
    if warning:
        warnings.append(warning)
    if measured_gbps is None and workspace is not None:
        entry = calibration_for(workspace, uuid=uuid, gpu_name=gpu)
        if entry is not None:
            measured_gbps = entry.ceiling_gbps
            measured_source = f"hotkernel calibrate, {entry.measured_at} ({entry.uuid})"
    if measured_gbps is not None and (not math.isfinite(measured_gbps) or measured_gbps <= 0):
        raise HotkernelError(f"roofline: measured bandwidth {measured_gbps!r} GB/s must be a number > 0")
    peak = spec.peak_tflops(dtype)
    bandwidth = spec.bandwidth_gbps
    ridge = peak * 1e12 / (bandwidth * 1e9)
    intensity = flops / bytes_moved if bytes_moved > 0 else None
    bound = "compute" if intensity is None or intensity >= ridge else "memory"
    attainable_tflops = peak if intensity is None else min(peak, intensity * bandwidth * 1e9 / 1e12)
    compute_ms = flops / (peak * 1e12) * 1e3
    attainable_ms = max(compute_ms, bytes_moved / (bandwidth * 1e9) * 1e3)
    measured_ms = None
    if measured_gbps is not None:
        measured_ms = max(compute_ms, bytes_moved / (measured_gbps * 1e9) * 1e3)
    field = DTYPE_RATE_FIELD[dtype]
    return RooflineResult(
        gpu=spec.key,
        gpu_name=spec.name,
        dtype=dtype,
        flops=flops,
        bytes=bytes_moved,
        intensity_flop_per_byte=intensity,
        ridge_flop_per_byte=round(ridge, 3),
        bound=bound,
        peak_tflops=peak,
        bandwidth_gbps=bandwidth,
        attainable_tflops=attainable_tflops,
        attainable_ms=attainable_ms,
        measured_bandwidth_gbps=measured_gbps,
        measured_source=measured_source if measured_gbps is not None else None,
        attainable_ms_measured=measured_ms,
        warnings=warnings,
        sources={"peak_tflops": spec.sources[field], "bandwidth_gbps": spec.sources["bandwidth_gbps"]},
    )


def summary_lines(result: RooflineResult) -> list[str]:
    """A few lines a person or agent reads first."""
    intensity = "inf" if result.intensity_flop_per_byte is None else f"{result.intensity_flop_per_byte:.3g}"
    lines = [
        f"{result.gpu_name} [{result.gpu}] {result.dtype}: peak {result.peak_tflops:g} TFLOP/s, "
        f"{result.bandwidth_gbps:g} GB/s, ridge {result.ridge_flop_per_byte:.3g} FLOP/B",
        f"intensity {intensity} FLOP/B -> {result.bound}-bound, attainable {result.attainable_tflops:.4g} TFLOP/s",
        f"attainable_ms (spec) {result.attainable_ms:.6g}",
    ]
    if result.attainable_ms_measured is not None:
        lines.append(
            f"attainable_ms_measured {result.attainable_ms_measured:.6g} "
            f"(at {result.measured_bandwidth_gbps:g} GB/s, {result.measured_source or 'given'})"
        )
    lines.extend(f"warning: {w}" for w in result.warnings)
    return lines


def table_lines() -> list[str]:
    """The GPU table, one card a line (sources are in the JSON output)."""
    lines = []
    for spec in gpu_table():
        fp8 = f"{spec.fp8_tflops:g}" if spec.fp8_tflops else "-"
        lines.append(
            f"{spec.key:10s} {spec.bandwidth_gbps:6g} GB/s  bf16 {spec.bf16_tflops:6g}  fp8 {fp8:>6}  "
            f"fp32 {spec.fp32_tflops:5g} TFLOP/s  L2 {spec.l2_mib:g} MiB  {spec.sms} SMs  cc {spec.cc}"
        )
    return lines


# ---- the insight tool (hotkernel.insight.base.InsightTool) -------------------------------------------------

NAME = "roofline"
CLI_NAME = "roofline"
CLI_HELP = (
    "Where a kernel sits on the roofline: intensity, ridge point, memory- or compute-bound, attainable TFLOP/s "
    "and attainable_ms (spec), attainable_ms_measured (calibrated bandwidth)."
)
DESCRIPTION = """Place a kernel on the roofline: memory- or compute-bound, and the fastest it could run (attainable_ms).

attainable_ms uses the spec sheet; attainable_ms_measured uses the measured ceiling (calibrate), the floor
a real kernel can get near: stop optimising within about 5% of it. Needs a GPU here unless gpu is given.
Use gpu_info for the card itself, profile for what the kernel actually achieves.
"""
HINTS = Hints(read_only=True, destructive=False, idempotent=True)
LONG_RUNNING = False
RESULT = RooflineResult
MAX_WORK = 1e30  # FLOPs or bytes of one call: far beyond any kernel, small enough to stay a finite float


class Params(BaseModel):
    """roofline's parameters."""

    flops: Annotated[
        float,
        Field(description="floating-point operations of one call (FLOP), >= 0", ge=0, le=MAX_WORK),
        Cli(("--flops",), "floating-point operations of one call", default=0.0),
    ]
    bytes_moved: Annotated[
        float,
        Field(
            description="bytes one call must read plus write (B), > 0; bench reports them as 'bytes'",
            gt=0,
            le=MAX_WORK,
        ),
        Cli(("--bytes",), "bytes read + written by one call"),
    ]
    gpu: Annotated[
        str | None,
        Field(
            description="GPU name from the spec table (e.g. 'H200', 'H100 SXM'); default None = the first GPU here",
            max_length=200,
        ),
        Cli(("--gpu",), "GPU name or table key (default: the first GPU here)"),
    ] = None
    dtype: Annotated[
        Literal["bf16", "fp16", "fp32", "fp8", "fp8_e4m3", "fp8_e5m2"],
        Field(description="element type that sets the peak FLOP rate; default bf16"),
        Cli(("--dtype",), "bf16 | fp16 | fp8 | fp32"),
    ] = "bf16"
    measured_gbps: Annotated[
        float | None,
        Field(
            description="measured streaming ceiling in GB/s (> 0); default None = the workspace's "
            "calibration for "
            "this GPU, if calibrate ran",
            gt=0,
            le=MAX_WORK,
        ),
        Cli(("--measured-gbps",), "measured bandwidth (default: this workspace's calibration)"),
    ] = None
    list_gpus: Annotated[
        bool,
        Field(description="print the GPU table with its sources instead"),
        CLI_ONLY,
        Cli(("--list",), "print the GPU table with its sources"),
    ] = False


def run(params: Params, ctx: InsightContext) -> RooflineResult:
    """The roofline of the given work; the workspace's calibration gives the measured floor."""
    return roofline(
        params.flops,
        params.bytes_moved,
        gpu=params.gpu,
        dtype=params.dtype,
        measured_gbps=params.measured_gbps,
        workspace=ctx.workspace.root if ctx.workspace else None,
    )


def cli_shortcut(values: dict, as_json: bool) -> str | None:
    """``hotkernel roofline --list``: the GPU table instead of a roofline (None: no shortcut taken)."""
    if not values.get("list_gpus"):
        return None
    if as_json:
        return json.dumps([spec.model_dump() for spec in gpu_table()], indent=2)
    return "\n".join(table_lines())
