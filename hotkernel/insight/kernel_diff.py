"""Two read profiles compared kernel by kernel (the engine of ``profile_diff``), and what moved most.

Each side is an ``.ncu-rep`` (NVIDIA's ``ncu_report`` module, else ``ncu --import --page raw``), an ncu CSV
(``--page details`` or ``--page raw``), or, for time only, an nsys ``cuda_gpu_kern_sum`` CSV or a torch.profiler
chrome trace. A kernel is one name at one launch configuration (grid and block, where the report has them), so a
library kernel that the harness launches on both sides (a target's reference, say) stays apart from the same
kernel launched at another shape by the function. Kernels are matched by full name and launch configuration; then
by full name alone, in launch order; then, among the rest, by their base name (namespace, template arguments,
parameters and a trailing ``_<digits...>`` or hex-hash suffix removed: Triton's and Inductor's names), in launch
order; then the one kernel left on each side, if exactly one is left, is paired.
Per kernel: the time per launch and DRAM / SM throughput, achieved occupancy, registers per thread,
instructions executed and local-memory bytes (spills), each with its change; a change is flagged when it is at
least ``MOVED_REL_PCT`` percent (time and counts) or ``MOVED_POINTS`` points of peak (throughput, occupancy).
"""

from __future__ import annotations

import os
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from hotkernel.errors import HotkernelError, quote
from hotkernel.insight.ncu_report import read_ncu_rep
from hotkernel.insight.profile import ProfileResult
from hotkernel.insight.top_kernels import (
    NCU_METRICS,
    detect_csv_kind,
    kernels_from_chrome_trace,
    number,
    parse_ncu_details,
    parse_ncu_raw,
    parse_nsys_kern_sum,
    short_kernel_name,
    to_ns,
)

MOVED_REL_PCT = 5.0  # ncu's run-to-run spread of a kernel's duration is ~1-3% with clocks untouched
MOVED_POINTS = 5.0  # throughput and occupancy are % of peak: a move is counted in points
DEFAULT_TOP = 10
# Collected on top of ncu's basic set when diff profiles a command: instructions executed and local-memory
# traffic (register spills and local arrays), hardware counters that the basic set does not have.
EXTRA_METRICS = (
    "smsp__inst_executed.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
)


@dataclass(frozen=True)
class Metric:
    """One compared quantity: where ncu puts it (display name on the details page, raw name elsewhere)."""

    key: str
    label: str
    unit: str
    names: tuple[str, ...]
    points: bool = False  # a % of peak: moves are counted in points
    summed: bool = False  # the sum of every name present (local loads + stores), not the first one found


METRICS = (
    Metric("time_us", "time", "us", NCU_METRICS["duration"]),
    Metric("dram_pct", "DRAM", "%", NCU_METRICS["dram_pct"], points=True),
    Metric("sm_pct", "SM", "%", NCU_METRICS["sm_pct"], points=True),
    Metric("occupancy_pct", "occupancy", "%", NCU_METRICS["occupancy_pct"], points=True),
    Metric("registers", "registers", "/thread", NCU_METRICS["registers"]),
    Metric("instructions", "instructions", "warp inst", ("Executed Instructions", EXTRA_METRICS[0])),
    Metric("local_bytes", "local memory", "B", EXTRA_METRICS[1:], summed=True),
)
METRIC_NAMES = [name for metric in METRICS for name in metric.names]
# what NVIDIA's ncu_report module gives of a launch's configuration (an ncu CSV has "Grid Size" and "Block Size",
# the same dimensions written "(x, y, z)")
LAUNCH_METRICS = tuple(f"launch__{part}_dim_{axis}" for part in ("grid", "block") for axis in "xyz")
SI_PREFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
HASH_SUFFIX = re.compile(r"(_[0-9][0-9a-z]*|_[0-9a-f]{8,})+$")


# ---- the result --------------------------------------------------------------------------------------------


class MetricChange(BaseModel):
    """One metric of one kernel on both sides (per launch, mean over the launches); None: not in that report."""

    metric: str = Field(
        description="time_us | dram_pct | sm_pct | occupancy_pct | registers | instructions | local_bytes"
    )
    unit: str
    a: float | None
    b: float | None
    delta: float | None = Field(description="b - a (points for a % metric)")
    rel_pct: float | None = Field(description="100 * (b - a) / a; None when a is 0 or missing")
    moved: bool = Field(
        description=f"|rel_pct| >= {MOVED_REL_PCT:g} (time, counts) or |delta| >= "
        f"{MOVED_POINTS:g} points (throughput, occupancy), or from 0 to non-zero"
    )


class KernelDiff(BaseModel):
    """One kernel matched across the two reports, or present on one side only."""

    kernel: str = Field(description="short name (B's when paired)")
    name_a: str | None
    name_b: str | None
    match: Literal["name", "base", "sole", "only_a", "only_b"] = Field(
        description="name: same full name; base: same name without template arguments / hash suffix; sole: the "
        "one kernel left on each side; only_a / only_b: in one report only"
    )
    launch_a: str | None = Field(default=None, description="A's grid and block, where the report has them")
    launch_b: str | None = None
    calls_a: int
    calls_b: int
    total_ms_a: float | None
    total_ms_b: float | None
    metrics: list[MetricChange]
    moved: list[str] = Field(description="the flagged changes, biggest first, as text")


class ProfileDiff(BaseModel):
    a: str = Field(description="report A (before)")
    b: str = Field(description="report B (after)")
    kind_a: str
    kind_b: str
    launches_a: int
    launches_b: int
    total_ms_a: float | None = Field(description="kernel time of every profiled launch in A")
    total_ms_b: float | None
    total_rel_pct: float | None
    kernels: list[KernelDiff] = Field(description="heaviest first (by the larger total of the two sides)")
    kernel_count: int = Field(description="kernels compared, before the top limit")
    moved_most: list[str] = Field(description="what moved most: biggest time change first, then the flagged metrics")
    notes: list[str] = []
    profile_a: ProfileResult | None = Field(default=None, description="the profile run behind A (commands)")
    profile_b: ProfileResult | None = None


# ---- reading one side -------------------------------------------------------------------------------------


@dataclass
class Kernel:
    """One kernel of one report: its launches merged; ``order`` is its first launch's position."""

    name: str
    order: int
    calls: int
    total_ms: float | None
    values: dict[str, float | None]
    launch: str | None = None  # grid and block, when the report has them


@dataclass
class Side:
    path: Path
    kind: str
    launches: int
    kernels: list[Kernel]


def si_value(value: float, unit: str) -> float:
    """A count in its base unit: ncu prints an imported report's bytes as ``32.77 Kbyte`` (SI), a live one's as
    ``32,768 byte``; instruction counts the same way (``inst``, ``Minst``)."""
    text = unit.strip()
    for base in ("byte", "inst"):
        if text.endswith(base):
            return value * SI_PREFIX.get(text[: -len(base)], 1.0)
    return value


def _launch_value(launch: dict[str, Any], metric: Metric) -> float | None:
    found = []
    for name in metric.names:
        if name in launch["metrics"]:
            value, unit = launch["metrics"][name]
            parsed = number(value)
            if parsed is not None and metric.key == "time_us":
                parsed = to_ns(parsed, unit)
                parsed = None if parsed is None else parsed / 1e3
            elif parsed is not None:
                parsed = si_value(parsed, unit)
            if parsed is not None:
                found.append(parsed)
                if not metric.summed:
                    break
    return sum(found) if found else None


def launch_config(launch: dict[str, Any]) -> str | None:
    """``grid (1, 1024, 1) block (32, 8, 1)``, from an ncu CSV row's columns or the module's launch metrics alike;
    None when the report has neither."""
    if launch.get("grid") or launch.get("block"):
        return f"grid {launch.get('grid') or '?'} block {launch.get('block') or '?'}"
    dims = [number(launch["metrics"][name][0]) if name in launch["metrics"] else None for name in LAUNCH_METRICS]
    if None in dims:
        return None
    grid, block = (", ".join(f"{d:.0f}" for d in part) for part in (dims[:3], dims[3:]))
    return f"grid ({grid}) block ({block})"


def kernels_of_launches(launches: list[dict[str, Any]]) -> list[Kernel]:
    """ncu launches merged by kernel name and launch configuration: calls, total time, the mean of each metric
    over the launches."""
    groups: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    for launch in launches:
        groups.setdefault((launch["name"], launch_config(launch)), []).append(launch)
    kernels = []
    for order, ((name, config), group) in enumerate(groups.items()):
        values: dict[str, float | None] = {}
        for metric in METRICS:
            present = [v for v in (_launch_value(launch, metric) for launch in group) if v is not None]
            values[metric.key] = statistics.fmean(present) if present else None
        times = [v for v in (_launch_value(launch, METRICS[0]) for launch in group) if v is not None]
        total = sum(times) / 1e3 if times else None
        kernels.append(Kernel(name, order, len(group), total, values, config))
    return kernels


def read_side(path: Path, label: str) -> Side:
    """One report: its kind, launch count and kernels; anything else is a one-line error naming ``label``."""
    who = f"profile diff: {label}"
    if path.suffix == ".ncu-rep":
        launches = read_ncu_rep(path, [*METRIC_NAMES, *LAUNCH_METRICS], parse_ncu_raw, who)
        return Side(path, "ncu-rep", len(launches), kernels_of_launches(launches))
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise HotkernelError(f"{who} {path}: cannot read it ({exc.strerror})") from None
    if path.suffix == ".json" or text.lstrip().startswith("{"):
        rows = kernels_from_chrome_trace(text, path)
        kind = "chrome-trace"
    else:
        try:
            kind = detect_csv_kind(text)
        except HotkernelError as err:
            raise HotkernelError(f"{who} {path}: {str(err).removeprefix('top: ')}") from None
        if kind != "nsys-csv":
            launches = parse_ncu_details(text) if kind == "ncu-csv" else parse_ncu_raw(text)
            if not launches:
                raise HotkernelError(f"{who} {path} is an ncu CSV with no kernel rows (was any kernel profiled?)")
            return Side(path, kind, len(launches), kernels_of_launches(launches))
        rows = parse_nsys_kern_sum(text)
    kernels = [
        Kernel(row.name, i, row.calls, row.total_ms, {m.key: None for m in METRICS} | {"time_us": row.avg_us})
        for i, row in enumerate(rows)
    ]
    return Side(path, kind, sum(row.calls for row in rows), kernels)


# ---- matching and comparing -------------------------------------------------------------------------------


def base_name(name: str) -> str:
    """``void ns::k<T, 8>(T*)`` -> ``k``; ``triton_red_fused_sum_0`` -> ``triton_red_fused_sum``."""
    short = short_kernel_name(name)
    return HASH_SUFFIX.sub("", short) or short


def match_kernels(a: list[Kernel], b: list[Kernel]) -> list[tuple[Kernel | None, Kernel | None, str]]:
    """Pairs (A, B, how): same name and launch configuration; then same name in launch order; then same base name
    in launch order; then the sole leftovers; then one-sided."""
    by_launch_b = {(k.name, k.launch): k for k in b}
    pairs: list[tuple[Kernel | None, Kernel | None, str]] = []
    named_a = []
    for kernel in a:
        other = by_launch_b.pop((kernel.name, kernel.launch), None)
        if other is not None:
            pairs.append((kernel, other, "name"))
        else:
            named_a.append(kernel)
    by_name_b: dict[str, list[Kernel]] = {}
    for kernel in sorted(by_launch_b.values(), key=lambda k: k.order):
        by_name_b.setdefault(kernel.name, []).append(kernel)
    left_a = []
    for kernel in named_a:
        same = by_name_b.get(kernel.name)
        if same:
            pairs.append((kernel, same.pop(0), "name"))
        else:
            left_a.append(kernel)
    left_b = sorted((k for group in by_name_b.values() for k in group), key=lambda k: k.order)
    groups_b: dict[str, list[Kernel]] = {}
    for kernel in left_b:
        groups_b.setdefault(base_name(kernel.name), []).append(kernel)
    still_a = []
    for kernel in left_a:
        group = groups_b.get(base_name(kernel.name))
        if group:
            pairs.append((kernel, group.pop(0), "base"))
        else:
            still_a.append(kernel)
    still_b = [k for group in groups_b.values() for k in group]
    if len(still_a) == 1 and len(still_b) == 1:
        return pairs + [(still_a[0], still_b[0], "sole")]
    return pairs + [(k, None, "only_a") for k in still_a] + [(None, k, "only_b") for k in still_b]


def change(metric: Metric, a: float | None, b: float | None) -> MetricChange:
    """b against a: the difference, the relative change, and whether it counts as moved."""
    delta = None if a is None or b is None else b - a
    rel = None if delta is None or not a else 100.0 * delta / a
    if delta is None:
        moved = False
    elif metric.points:
        moved = abs(delta) >= MOVED_POINTS
    else:
        moved = (a == 0 and b != 0) or (rel is not None and abs(rel) >= MOVED_REL_PCT)
    return MetricChange(metric=metric.key, unit=metric.unit, a=a, b=b, delta=delta, rel_pct=rel, moved=moved)


def _score(metric: Metric, c: MetricChange) -> float:
    """How far a flagged change moved: points for a % metric, else percent (from zero: counted as 100%)."""
    if metric.points:
        return abs(c.delta or 0.0)
    return abs(c.rel_pct) if c.rel_pct is not None else 100.0


def fmt(value: float | None, unit: str = "") -> str:
    """A value in a few significant digits (k/M/G for large counts)."""
    if value is None:
        return "n/a"
    magnitude = abs(value)
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e4, "k")):
        if magnitude >= factor and unit not in ("us", "%"):
            return f"{value / factor:.3g}{suffix}"
    return f"{value:.4g}" if magnitude < 1e4 else f"{value:.0f}"


def change_text(metric: Metric, c: MetricChange) -> str:
    """``+11.6 pts`` (a % metric), ``-29.4%``, ``from 0``; a change under 0.05 reads ``0``."""
    if c.delta is None:
        return "n/a"
    if metric.points:
        return "0.0 pts" if abs(c.delta) < 0.05 else f"{c.delta:+.1f} pts"
    if c.rel_pct is None:
        return "from 0" if c.delta else "0"
    return "0.0%" if abs(c.rel_pct) < 0.05 else f"{c.rel_pct:+.1f}%"


def describe(metric: Metric, c: MetricChange) -> str:
    """``time 35.55 -> 25.1 us (-29.4%)`` / ``DRAM 76.5 -> 88.1 % (+11.6 pts)``."""
    unit = f" {metric.unit}" if metric.unit else ""
    return f"{metric.label} {fmt(c.a, metric.unit)} -> {fmt(c.b, metric.unit)}{unit} ({change_text(metric, c)})"


def diff_kernels(a: Side, b: Side) -> list[KernelDiff]:
    """Every kernel of either side, compared (one-sided kernels keep their values on their side)."""
    rows = []
    pairs = match_kernels(a.kernels, b.kernels)
    names = [short_kernel_name((kb or ka).name) for ka, kb, _ in pairs if (kb or ka) is not None]
    for ka, kb, how in pairs:
        changes = [change(m, ka.values[m.key] if ka else None, kb.values[m.key] if kb else None) for m in METRICS]
        flagged = sorted(
            ((m, c) for m, c in zip(METRICS, changes, strict=True) if c.moved), key=lambda mc: -_score(*mc)
        )
        shown = kb or ka
        assert shown is not None
        short = short_kernel_name(shown.name)
        # a name at several launch configurations: each row says which
        label = f"{short} ({shown.launch})" if names.count(short) > 1 and shown.launch else short
        rows.append(
            KernelDiff(
                kernel=label,
                name_a=ka.name if ka else None,
                name_b=kb.name if kb else None,
                launch_a=ka.launch if ka else None,
                launch_b=kb.launch if kb else None,
                match=how,  # type: ignore[arg-type]
                calls_a=ka.calls if ka else 0,
                calls_b=kb.calls if kb else 0,
                total_ms_a=ka.total_ms if ka else None,
                total_ms_b=kb.total_ms if kb else None,
                metrics=changes,
                moved=[describe(m, c) for m, c in flagged],
            )
        )
    rows.sort(key=lambda r: max(r.total_ms_a or 0.0, r.total_ms_b or 0.0), reverse=True)
    return rows


def _total(side: Side) -> float | None:
    totals = [k.total_ms for k in side.kernels if k.total_ms is not None]
    return sum(totals) if totals else None


def _time_moved(row: KernelDiff) -> float:
    return abs((row.total_ms_b or 0.0) - (row.total_ms_a or 0.0))


def moved_most(rows: list[KernelDiff], limit: int = 5) -> list[str]:
    """The kernels whose total time changed most, each with its flagged changes (or its one-sided presence)."""
    lines = []
    for row in sorted(rows, key=_time_moved, reverse=True):
        if row.match == "only_a":
            lines.append(f"{row.kernel}: only in A ({row.calls_a}x, {fmt(row.total_ms_a)} ms)")
        elif row.match == "only_b":
            lines.append(f"{row.kernel}: only in B ({row.calls_b}x, {fmt(row.total_ms_b)} ms)")
        elif row.moved:
            paired = "" if row.match == "name" else f" [{row.match} match: {short_kernel_name(row.name_a or '')}]"
            lines.append(f"{row.kernel}{paired}: " + "; ".join(row.moved))
        if len(lines) == limit:
            break
    return lines


def diff_reports(a: str | os.PathLike[str], b: str | os.PathLike[str], *, top: int = DEFAULT_TOP) -> ProfileDiff:
    """Compare report ``a`` (before) with report ``b`` (after); see the module docstring for the rules."""
    if top < 1:
        raise HotkernelError(f"profile diff: top={top} must be at least 1")
    sides = []
    for label, path in (("A", Path(a)), ("B", Path(b))):
        if not path.is_file():
            raise HotkernelError(
                f"profile diff: {label} {quote(os.fspath(path))} is not a file; give an .ncu-rep or an ncu CSV "
                "(`ncu --csv --page details` or `--page raw`)"
            )
        sides.append(read_side(path, label))
    return compare(sides[0], sides[1], top=top)


def compare(side_a: Side, side_b: Side, *, top: int = DEFAULT_TOP) -> ProfileDiff:
    """The diff of two read reports: kernels heaviest first (``top`` of them), what moved most, notes."""
    rows = diff_kernels(side_a, side_b)
    total_a, total_b = _total(side_a), _total(side_b)
    notes = []
    if {side_a.kind, side_b.kind} & {"nsys-csv", "chrome-trace"}:
        notes.append("an nsys or chrome-trace side has times only: the counters need ncu reports")
    if side_a.launches != side_b.launches:
        notes.append(
            f"A has {side_a.launches} profiled launches, B {side_b.launches}: compare per-launch times, not totals"
        )
    if any(r.match == "sole" for r in rows):
        notes.append("a 'sole' pair is the one kernel left unmatched on each side, compared as before/after")
    return ProfileDiff(
        a=str(side_a.path),
        b=str(side_b.path),
        kind_a=side_a.kind,
        kind_b=side_b.kind,
        launches_a=side_a.launches,
        launches_b=side_b.launches,
        total_ms_a=total_a,
        total_ms_b=total_b,
        total_rel_pct=100.0 * (total_b - total_a) / total_a if total_a and total_b is not None else None,
        kernels=rows[:top],
        kernel_count=len(rows),
        moved_most=moved_most(rows),
        notes=notes,
    )
