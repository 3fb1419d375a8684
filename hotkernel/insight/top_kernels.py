"""The heaviest kernels of a saved profile: an nsys ``cuda_gpu_kern_sum`` CSV, an ncu details (or raw) CSV,
an ``.ncu-rep`` (through NVIDIA's ``ncu_report`` module, else ``ncu --import``), or a torch.profiler chrome
trace. ncu rows carry occupancy, DRAM/SM throughput, registers and a memory/compute/latency hint.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import statistics
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field

from hotkernel.errors import HotkernelError
from hotkernel.insight.base import Cli, Hints, InsightContext
from hotkernel.insight.ncu_report import read_ncu_rep
from hotkernel.workspace.paths import MAX_PATH

BUSY_PCT = 60.0  # Nsight Compute's "high throughput" threshold in its SOL rule
TIME_UNITS_NS = {
    "ns": 1.0,
    "nsecond": 1.0,
    "nanosecond": 1.0,
    "us": 1e3,
    "usecond": 1e3,
    "microsecond": 1e3,
    "ms": 1e6,
    "msecond": 1e6,
    "millisecond": 1e6,
    "s": 1e9,
    "second": 1e9,
}
NCU_METRICS = {
    "duration": ("Duration", "gpu__time_duration.sum"),
    "occupancy_pct": ("Achieved Occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    "dram_pct": (
        "DRAM Throughput",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    "memory_pct": ("Memory Throughput", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
    "sm_pct": ("Compute (SM) Throughput", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    "registers": ("Registers Per Thread", "launch__registers_per_thread"),
}


class KernelRow(BaseModel):
    """One kernel (all its launches); fields a source does not have are None."""

    name: str
    short_name: str
    calls: int
    total_ms: float | None = None
    share_pct: float | None = Field(default=None, description="share of all kernel time in the report")
    avg_us: float | None = None
    med_us: float | None = None
    min_us: float | None = None
    max_us: float | None = None
    std_us: float | None = None
    occupancy_pct: float | None = Field(default=None, description="achieved occupancy")
    dram_pct: float | None = Field(default=None, description="DRAM throughput, % of peak")
    memory_pct: float | None = Field(default=None, description="memory throughput (any level), % of peak")
    sm_pct: float | None = Field(default=None, description="compute (SM) throughput, % of peak")
    registers: int | None = None
    block_size: str | None = None
    grid_size: str | None = None
    hint: str | None = None
    rules: list[str] = Field(default_factory=list, description="Nsight Compute advice (OPT rules), biggest first")


class TopKernels(BaseModel):
    report: str
    kind: str = Field(description="nsys-csv | ncu-csv | ncu-raw-csv | ncu-rep | chrome-trace")
    kernel_count: int = Field(description="distinct kernels in the report")
    launches: int
    total_ms: float | None
    rows: list[KernelRow]
    note: str | None = None


# ---- entry point ------------------------------------------------------------------------------------------


def top_kernels(report: str | os.PathLike[str], n: int = 10) -> TopKernels:
    """The ``n`` heaviest kernels of ``report`` (kind detected from the extension and the header)."""
    if n < 1:
        raise HotkernelError(f"top: n={n} must be at least 1")
    path = Path(report)
    if not path.is_file():
        raise HotkernelError(f"top: report {os.fspath(report)!r} not found; give a saved .csv, .ncu-rep or .json")
    if path.suffix == ".ncu-rep":
        launches, kind = ncu_rep_launches(path), "ncu-rep"
        return _finish(
            path,
            kind,
            aggregate_ncu(launches),
            sum(1 for _ in launches),
            n,
            note="ncu times one launch at a time (serialised, replayed): shares are of profiled launches",
        )
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise HotkernelError(f"top: cannot read {path}: {exc.strerror}") from None
    if path.suffix == ".json" or text.lstrip().startswith("{"):
        rows = kernels_from_chrome_trace(text, path)
        note = None if rows else "no GPU kernel events in this trace (profiled without CUDA activity?)"
        return _finish(path, "chrome-trace", rows, None, n, note=note)
    kind = detect_csv_kind(text)
    if kind == "nsys-csv":
        return _finish(path, kind, parse_nsys_kern_sum(text), None, n)
    launches = parse_ncu_details(text) if kind == "ncu-csv" else parse_ncu_raw(text)
    if not launches:
        raise HotkernelError(f"top: {path} is an ncu CSV with no kernel rows (was any kernel profiled?)")
    return _finish(
        path,
        kind,
        aggregate_ncu(launches),
        len(launches),
        n,
        note="ncu times one launch at a time (serialised, replayed): shares are of profiled launches",
    )


def detect_csv_kind(text: str) -> str:
    """nsys-csv, ncu-csv (details page) or ncu-raw-csv; anything else raises, naming what was expected."""
    header = _header_line(text)
    if header is None and "No kernels were profiled" in text:
        raise HotkernelError(
            "top: this ncu output has no kernel rows (ncu: 'No kernels were profiled'); "
            "check the --kernel-regex / --launch-skip used and that the program ran CUDA kernels"
        )
    if header is None:
        first = next((line for line in text.splitlines() if line.strip()), "")[:80]
        raise HotkernelError(
            f"top: not a kernel summary CSV (first line {first!r}); expected `nsys stats --report "
            "cuda_gpu_kern_sum --format csv` output or `ncu --csv --page details` / `--page raw` output"
        )
    cells = next(csv.reader([header]))
    if "Metric Name" in cells and "Metric Value" in cells:
        return "ncu-csv"
    if "Kernel Name" in cells:
        return "ncu-raw-csv"
    return "nsys-csv"


def _header_line(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith('"ID"') or line.startswith("ID,"):
            return line
        if "Time (%)" in line or "Time(%)" in line:
            return line
    return None


def _csv_from_header(text: str) -> list[list[str]]:
    header = _header_line(text)
    start = text.splitlines().index(header) if header is not None else 0
    body = "\n".join(line for line in text.splitlines()[start:] if not line.startswith("=="))
    return [row for row in csv.reader(io.StringIO(body)) if row]


# ---- parsers ----------------------------------------------------------------------------------------------


def number(value: str | None) -> float | None:
    """'32,288' -> 32288.0; '' / 'n/a' -> None."""
    if value is None:
        return None
    cleaned = value.strip().replace(",", "")
    try:
        result = float(cleaned)
    except ValueError:
        return None
    return result if math.isfinite(result) else None


def to_ns(value: float | None, unit: str) -> float | None:
    factor = TIME_UNITS_NS.get(unit.strip().lower())
    return None if value is None or factor is None else value * factor


def parse_nsys_kern_sum(text: str) -> list[KernelRow]:
    """``nsys stats --report cuda_gpu_kern_sum --format csv`` rows (times in ns unless the header says)."""
    rows = _csv_from_header(text)
    header, body = rows[0], rows[1:]

    def column(*names: str) -> int | None:
        for i, cell in enumerate(header):
            if any(cell.strip().lower().startswith(name.lower()) for name in names):
                return i
        return None

    idx = {
        "share": column("Time (%)", "Time(%)"),
        "total": column("Total Time"),
        "calls": column("Instances", "Calls"),
        "avg": column("Avg", "Average"),
        "med": column("Med"),
        "min": column("Min"),
        "max": column("Max"),
        "std": column("StdDev", "Std Dev"),
        "name": column("Name"),
    }
    if idx["name"] is None or idx["total"] is None:
        raise HotkernelError(
            f"top: nsys CSV without Name/Total Time columns (header {header}); "
            "export it with `nsys stats --report cuda_gpu_kern_sum --format csv`"
        )
    unit_match = re.search(r"\((\w+)\)", header[idx["total"]])
    factor = TIME_UNITS_NS.get(unit_match.group(1).lower(), 1.0) if unit_match else 1.0
    kernels = []
    for row in body:
        if len(row) != len(header):
            continue

        def get(key: str, row: list[str] = row) -> float | None:
            return number(row[idx[key]]) if idx[key] is not None else None

        def us(key: str) -> float | None:
            value = get(key)
            return None if value is None else value * factor / 1e3

        total = get("total")
        kernels.append(
            KernelRow(
                name=row[idx["name"]],
                short_name=short_kernel_name(row[idx["name"]]),
                calls=int(get("calls") or 0),
                total_ms=None if total is None else total * factor / 1e6,
                share_pct=get("share"),
                avg_us=us("avg"),
                med_us=us("med"),
                min_us=us("min"),
                max_us=us("max"),
                std_us=us("std"),
            )
        )
    return kernels


def parse_ncu_details(text: str) -> list[dict[str, Any]]:
    """``ncu --csv --page details``: one dict per launch (id, name, metrics by display name, rules)."""
    rows = _csv_from_header(text)
    header, body = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(header)}
    launches: dict[str, dict[str, Any]] = {}
    for row in body:
        if len(row) < len(header) - 5 or row[0] == "ID":
            continue
        cell = dict(zip(header, row + [""] * (len(header) - len(row)), strict=True))
        launch = launches.setdefault(
            cell["ID"],
            {
                "id": cell["ID"],
                "name": cell["Kernel Name"],
                "block": cell.get("Block Size"),
                "grid": cell.get("Grid Size"),
                "metrics": {},
                "rules": [],
            },
        )
        if cell.get("Metric Name"):
            launch["metrics"][cell["Metric Name"]] = (cell["Metric Value"], cell.get("Metric Unit", ""))
        if "Rule Type" in col and cell.get("Rule Type") == "OPT":
            speedup = number(cell.get("Estimated Speedup"))
            first = re.split(r"(?<=\.)\s", cell.get("Rule Description", ""), maxsplit=1)[0]
            launch["rules"].append((speedup or 0.0, f"{cell.get('Rule Name')}: {first}"))
    return list(launches.values())


def parse_ncu_raw(text: str) -> list[dict[str, Any]]:
    """``ncu --csv --page raw``: metric names on row 1, units on row 2, one launch per row after."""
    rows = _csv_from_header(text)
    header, units, body = rows[0], rows[1], rows[2:]
    launches = []
    for row in body:
        if len(row) != len(header):
            continue
        cell = dict(zip(header, row, strict=True))
        unit = dict(zip(header, units, strict=True))
        launches.append(
            {
                "id": cell.get("ID"),
                "name": cell.get("Kernel Name", "?"),
                "block": cell.get("Block Size"),
                "grid": cell.get("Grid Size"),
                "metrics": {k: (v, unit.get(k, "")) for k, v in cell.items()},
                "rules": [],
            }
        )
    return launches


def _metric(launch: dict[str, Any], key: str) -> float | None:
    for name in NCU_METRICS[key]:
        if name in launch["metrics"]:
            value, unit = launch["metrics"][name]
            parsed = number(value)
            return to_ns(parsed, unit) if key == "duration" else parsed
    return None


def aggregate_ncu(launches: list[dict[str, Any]]) -> list[KernelRow]:
    """Launches of the same kernel merged: calls, total/avg/min/max duration, mean metrics, hint, rules."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for launch in launches:
        by_name.setdefault(launch["name"], []).append(launch)
    rows = []
    for name, group in by_name.items():
        durations = [d for d in (_metric(launch, "duration") for launch in group) if d is not None]

        def mean(key: str, group: list[dict[str, Any]] = group) -> float | None:
            values = [v for v in (_metric(launch, key) for launch in group) if v is not None]
            return statistics.fmean(values) if values else None

        rules: dict[str, float] = {}
        for launch in group:
            for speedup, text in launch["rules"]:
                rules[text] = max(speedup, rules.get(text, 0.0))
        row = KernelRow(
            name=name,
            short_name=short_kernel_name(name),
            calls=len(group),
            total_ms=sum(durations) / 1e6 if durations else None,
            avg_us=statistics.fmean(durations) / 1e3 if durations else None,
            med_us=statistics.median(durations) / 1e3 if durations else None,
            min_us=min(durations) / 1e3 if durations else None,
            max_us=max(durations) / 1e3 if durations else None,
            std_us=statistics.stdev(durations) / 1e3 if len(durations) > 1 else None,
            occupancy_pct=mean("occupancy_pct"),
            dram_pct=mean("dram_pct"),
            memory_pct=mean("memory_pct"),
            sm_pct=mean("sm_pct"),
            registers=int(mean("registers")) if mean("registers") is not None else None,
            block_size=group[0].get("block"),
            grid_size=group[0].get("grid"),
            rules=[
                f"{text} (est. speedup {speedup:g}%)" if speedup else text
                for text, speedup in sorted(rules.items(), key=lambda item: -item[1])
            ][:3],
        )
        row.hint = bound_hint(row)
        rows.append(row)
    return rows


def bound_hint(row: KernelRow) -> str | None:
    """memory-bound / compute-bound when a unit is near peak (>= 60%), else latency-bound."""
    memory = max((v for v in (row.memory_pct, row.dram_pct) if v is not None), default=None)
    compute = row.sm_pct
    if memory is None and compute is None:
        return None
    memory_text = "n/a" if memory is None else f"{memory:.0f}%"
    compute_text = "n/a" if compute is None else f"{compute:.0f}%"
    memory, compute = memory or 0.0, compute or 0.0
    if max(memory, compute) >= BUSY_PCT:
        if memory >= compute:
            return f"memory-bound (memory {memory_text} of peak, compute {compute_text}): move fewer bytes"
        return f"compute-bound (compute {compute_text} of peak, memory {memory_text}): do less work per byte"
    occupancy = f", achieved occupancy {row.occupancy_pct:.0f}%" if row.occupancy_pct is not None else ""
    return (
        f"latency-bound (memory {memory_text}, compute {compute_text} of peak{occupancy}): "
        "too little parallelism or long stalls; more work per launch or more warps in flight"
    )


def kernels_from_chrome_trace(text: str, path: Path) -> list[KernelRow]:
    """Kernel events (``"cat": "kernel"``) of a torch.profiler chrome trace, merged by name."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise HotkernelError(f"top: {path} is not valid JSON ({exc.msg}); expected a chrome trace") from None
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise HotkernelError(f"top: {path} has no traceEvents; expected a torch.profiler chrome trace")
    by_name: dict[str, list[float]] = {}
    for event in events:
        if isinstance(event, dict) and str(event.get("cat", "")).lower() == "kernel" and "dur" in event:
            by_name.setdefault(event.get("name", "?"), []).append(float(event["dur"]))
    return [
        KernelRow(
            name=name,
            short_name=short_kernel_name(name),
            calls=len(durs),
            total_ms=sum(durs) / 1e3,
            avg_us=statistics.fmean(durs),
            med_us=statistics.median(durs),
            min_us=min(durs),
            max_us=max(durs),
            std_us=statistics.stdev(durs) if len(durs) > 1 else None,
        )
        for name, durs in by_name.items()
    ]


# ---- .ncu-rep -------------------------------------------------------------------------------------------


def ncu_rep_launches(path: Path) -> list[dict[str, Any]]:
    """Launches of an ``.ncu-rep``: via ``ncu_report`` when importable, else ``ncu --import --csv --page details``."""
    return read_ncu_rep(
        path, [n for names in NCU_METRICS.values() for n in names], parse_ncu_details, "top", page="details"
    )


# ---- output -----------------------------------------------------------------------------------------------


# The anonymous namespace as the tools spell it: torch.profiler "(anonymous namespace)", ncu's details page
# "<unnamed>", its raw page "unnamed>" (the "<" dropped, as captured on the H200).
ANONYMOUS_NAMESPACE = re.compile(r"\(anonymous namespace\)::|<?unnamed>::")


def short_kernel_name(name: str) -> str:
    """``void at::ns::kernel<T, 8>(int, T*)`` -> ``kernel``; a plain name stays as it is."""
    text = ANONYMOUS_NAMESPACE.sub("", name.strip())
    if text.startswith("void "):
        text = text[5:]
    depth, cut = 0, len(text)
    for i, char in enumerate(text):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth == 0:
            cut = i
            break
    text = text[:cut]
    stripped, depth = [], 0
    for char in text:
        if char == "<":
            depth += 1
        elif char == ">":
            depth = max(depth - 1, 0)
        elif depth == 0:
            stripped.append(char)
    short = "".join(stripped).split("::")[-1].strip()
    return short or name


def _finish(
    path: Path, kind: str, rows: list[KernelRow], launches: int | None, n: int, note: str | None = None
) -> TopKernels:
    totals = [row.total_ms for row in rows if row.total_ms is not None]
    total_ms = sum(totals) if totals else None
    if total_ms:
        for row in rows:
            if row.total_ms is not None:
                row.share_pct = round(100.0 * row.total_ms / total_ms, 2)
    rows.sort(key=lambda row: row.total_ms or 0.0, reverse=True)
    return TopKernels(
        report=str(path),
        kind=kind,
        kernel_count=len(rows),
        launches=launches if launches is not None else sum(row.calls for row in rows),
        total_ms=total_ms,
        rows=rows[:n],
        note=note,
    )


def summary_lines(result: TopKernels, *, name_width: int = 60) -> list[str]:
    lines = [
        f"{result.report} ({result.kind}): {result.kernel_count} kernels, {result.launches} launches"
        + (f", {result.total_ms:.4g} ms of kernel time" if result.total_ms is not None else "")
    ]
    for row in result.rows:
        parts = [
            f"{row.share_pct:5.1f}%" if row.share_pct is not None else "   ?  ",
            f"{row.calls:5d}x",
            f"avg {row.avg_us:9.2f} us" if row.avg_us is not None else "",
        ]
        if row.occupancy_pct is not None:
            parts.append(f"occ {row.occupancy_pct:4.0f}%")
        if row.dram_pct is not None:
            parts.append(f"dram {row.dram_pct:4.0f}%")
        if row.sm_pct is not None:
            parts.append(f"sm {row.sm_pct:4.0f}%")
        if row.registers is not None:
            parts.append(f"{row.registers} regs")
        lines.append("  " + "  ".join(p for p in parts if p) + "  " + row.short_name[:name_width])
        if row.hint:
            lines.append(f"      {row.hint}")
    if result.note:
        lines.append(f"note: {result.note}")
    return lines


# ---- the insight tool (hotkernel.insight.base.InsightTool) -------------------------------------------------

NAME = "top_kernels"
CLI_NAME = "top"
CLI_HELP = (
    "The n heaviest kernels: share of GPU time, calls, avg/med/min/max/std; from ncu also occupancy, DRAM and "
    "SM throughput, registers and a memory/compute/latency-bound hint."
)
DESCRIPTION = """Rank the kernels of a saved profiler report by total time, with counters when the report has them.

Reads only; runs nothing on the GPU. Use it to re-read a profile or torch_trace result, or a report you
exported yourself. To make a new report use profile (counters) or torch_trace (no Nsight needed).
"""
HINTS = Hints(read_only=True, destructive=False, idempotent=True)
LONG_RUNNING = False
RESULT = TopKernels


class Params(BaseModel):
    """top_kernels' parameters."""

    report: Annotated[
        str,
        Field(
            description="workspace-relative path of a saved report: .ncu-rep, an ncu/nsys CSV export, or a "
            "torch_trace Chrome trace (.json); profile and torch_trace print where theirs went",
            min_length=1,
            max_length=MAX_PATH,
        ),
        Cli(
            argument=True,
            help="nsys cuda_gpu_kern_sum CSV, ncu details/raw CSV, .ncu-rep, or a torch.profiler chrome trace .json",
        ),
    ]
    n: Annotated[
        int, Field(description="kernels to list, 1 to 200; default 10", ge=1, le=200), Cli(("-n",), "kernels to list")
    ] = 10


def run(params: Params, ctx: InsightContext) -> TopKernels:
    """Rank the report's kernels."""
    return top_kernels(ctx.existing_file(params.report, "report"), params.n)
