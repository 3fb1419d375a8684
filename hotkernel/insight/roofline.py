"""Roofline arithmetic against a table of spec-sheet rates (dense, with a source for every figure).

``roofline(flops, bytes_moved, gpu=...)`` says whether a kernel is memory- or compute-bound and how fast it
could run: ``attainable_ms`` from the spec sheet, ``attainable_ms_measured`` from a measured streaming ceiling
(``hotkernel calibrate``), which is the floor a real kernel can get near.
"""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import BaseModel, Field

from hotkernel.errors import HotkernelError
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
        raise HotkernelError(
            "roofline: flops and bytes are both 0: give the kernel's FLOPs and/or bytes moved"
        )


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
        f"intensity {intensity} FLOP/B -> {result.bound}-bound, "
        f"attainable {result.attainable_tflops:.4g} TFLOP/s",
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
