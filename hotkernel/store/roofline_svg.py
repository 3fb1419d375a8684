"""``roofline_<device>.svg``: each board target on the card's roofline, generated from the records.

Hand-written SVG: the tool process has no plotting library (it stays torch-free and light), and a few lines
and labels do not need one. Deterministic: the same rows give the same bytes (sorted input, fixed float
formats, no time).

Drawn: the spec-sheet roofline (``insight/specs.py``: peak bandwidth, dense peak of each dtype on the board),
the copy ceiling the judge measured during the records' runs (the highest one), and per target its baseline,
best candidate and competitors at the target's arithmetic intensity (manifest flops / bytes of the records).
Targets without ``flops`` cannot be placed and are named under the chart.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from xml.sax.saxutils import escape

from hotkernel.errors import HotkernelError
from hotkernel.insight.specs import GpuSpec, find_gpu
from hotkernel.store.models import BestEntry, LeaderboardRow

WIDTH, HEIGHT = 960, 600
LEFT, RIGHT, TOP, BOTTOM = 80, 250, 60, 90  # plot margins (the legend sits in the right one)
COLORS = {
    "baseline": "#777777",
    "candidate": "#1f6fd1",
    "competitor": "#e07b00",
    "spec": "#222222",
    "measured": "#2a9d3a",
}


def device_slug(device: str) -> str:
    """``NVIDIA H200`` -> ``nvidia_h200``."""
    return re.sub(r"[^a-z0-9]+", "_", device.lower()).strip("_") or "device"


def chart_name(device: str) -> str:
    """The chart's file name beside LEADERBOARD.md."""
    return f"roofline_{device_slug(device)}.svg"


@functools.lru_cache(maxsize=64)
def spec_for(device: str) -> GpuSpec | None:
    """The spec-sheet entry of ``device`` when the table has it by name (not merely close by spelling)."""
    try:
        spec, warning = find_gpu(device)
    except HotkernelError:
        return None
    return spec if warning is None or "closest by name" not in warning else None


@dataclass(frozen=True)
class Point:
    target: str
    kind: str  # baseline / candidate / competitor
    label: str
    intensity: float  # flop / byte
    flops_per_s: float


def _points(entries: list[BestEntry], newest: dict[str, LeaderboardRow]) -> tuple[list[Point], list[str]]:
    points: list[Point] = []
    unplaced: list[str] = []
    for entry in sorted(entries, key=lambda e: e.target):
        rows = [r for r in (entry.best, newest.get(entry.target), entry.competitor) if r is not None]
        any_row = rows[0] if rows else None
        if any_row is None or not any_row.flops or not any_row.bytes:
            unplaced.append(entry.target)
            continue
        ai = any_row.flops / any_row.bytes
        if any_row.baseline_ms:
            points.append(Point(entry.target, "baseline", "baseline", ai, any_row.flops / (any_row.baseline_ms * 1e-3)))
        for row, kind in ((entry.best, "candidate"), (entry.competitor, "competitor")):
            if row is not None and row.candidate_ms:
                label = "best candidate" if kind == "candidate" else (row.who or "competitor")
                points.append(Point(entry.target, kind, label, ai, row.flops / (row.candidate_ms * 1e-3)))  # type: ignore[operator]
    return points, unplaced


def _f(value: float) -> str:
    return f"{value:.1f}"


def _tick(value: float) -> str:
    return f"{value:g}"


def render_roofline_svg(
    device: str,
    spec: GpuSpec,
    entries: list[BestEntry],
    newest: dict[str, LeaderboardRow],
    dtypes: list[str],
    measured_gbps: float | None,
) -> str:
    """The SVG text of one device's chart; ``newest``: each target's newest counted candidate row (its
    baseline is drawn where no candidate beat it)."""
    points, unplaced = _points(entries, newest)
    speedups = {e.target: e.median for e in entries if e.best is not None and e.median}
    peaks = []
    for dtype in sorted(set(dtypes)):
        try:
            peaks.append((dtype, spec.peak_tflops(dtype) * 1e12))
        except HotkernelError:
            continue
    top_peak = max((p for _, p in peaks), default=spec.bf16_tflops * 1e12)
    bw = spec.bandwidth_gbps * 1e9
    ridge = top_peak / bw
    xs = [p.intensity for p in points] or [1.0]
    ys = [p.flops_per_s for p in points] or [top_peak / 1000]
    x_lo = 10 ** math.floor(math.log10(min(xs) / 2))
    x_hi = 10 ** math.ceil(math.log10(max(max(xs) * 2, ridge * 4)))
    y_lo = 10 ** math.floor(math.log10(min(min(ys), x_lo * bw) / 2))
    y_hi = top_peak * 2.5
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(x: float) -> float:
        return LEFT + pw * (math.log10(x) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo))

    def sy(y: float) -> float:
        return TOP + ph * (1 - (math.log10(y) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo)))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="Helvetica, Arial, sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="24" font-size="16" font-weight="bold">'
        f"{escape(f'Roofline: {device} (spec sheet {spec.key})')}</text>",
        f'<text x="{LEFT}" y="42" fill="#555555">Generated by hotkernel from results/: median times of the '
        "board's records at the manifest's flops / bytes. DO NOT EDIT.</text>",
        f'<clipPath id="plot"><rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}"/></clipPath>',
        f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#999999"/>',
    ]
    for exp in range(round(math.log10(x_lo)), round(math.log10(x_hi)) + 1):
        x = sx(10.0**exp)
        out.append(f'<line x1="{_f(x)}" y1="{TOP}" x2="{_f(x)}" y2="{TOP + ph}" stroke="#e6e6e6"/>')
        out.append(f'<text x="{_f(x)}" y="{TOP + ph + 18}" text-anchor="middle">{_tick(10.0**exp)}</text>')
    for exp in range(round(math.log10(y_lo)), math.floor(math.log10(y_hi)) + 1):
        y = sy(10.0**exp)
        out.append(f'<line x1="{LEFT}" y1="{_f(y)}" x2="{LEFT + pw}" y2="{_f(y)}" stroke="#e6e6e6"/>')
        out.append(f'<text x="{LEFT - 8}" y="{_f(y + 4)}" text-anchor="end">{_tick(10.0**exp / 1e12)}</text>')
    out.append(
        f'<text x="{_f(LEFT + pw / 2)}" y="{TOP + ph + 42}" text-anchor="middle">'
        "arithmetic intensity (FLOP / byte, log scale)</text>"
    )
    out.append(
        f'<text transform="translate(22 {_f(TOP + ph / 2)}) rotate(-90)" text-anchor="middle">'
        "TFLOP/s (log scale)</text>"
    )
    out.append('<g clip-path="url(#plot)">')
    for dtype, peak in peaks:
        knee = peak / bw
        out.append(
            f'<polyline fill="none" stroke="{COLORS["spec"]}" stroke-width="2" points="'
            f'{_f(sx(x_lo))},{_f(sy(x_lo * bw))} {_f(sx(knee))},{_f(sy(peak))} {_f(sx(x_hi))},{_f(sy(peak))}"/>'
        )
        out.append(
            f'<text x="{_f(sx(x_hi) - 6)}" y="{_f(sy(peak) - 6)}" text-anchor="end">'
            f"{escape(f'{dtype} dense peak {peak / 1e12:.0f} TFLOP/s (spec)')}</text>"
        )
    if measured_gbps:
        mbw = measured_gbps * 1e9
        knee = top_peak / mbw
        out.append(
            f'<line x1="{_f(sx(x_lo))}" y1="{_f(sy(x_lo * mbw))}" x2="{_f(sx(knee))}" y2="{_f(sy(top_peak))}" '
            f'stroke="{COLORS["measured"]}" stroke-width="2" stroke-dasharray="6 4"/>'
        )
    out.append("</g>")
    # slope labels along the memory roof, well right of the (memory-bound) points, below the ridge
    angle = -math.degrees(math.atan2(sy(x_lo) - sy(x_lo * 10), sx(x_lo * 10) - sx(x_lo)))
    lx = max(max(xs) * 2.5, ridge / 40)
    out.append(
        f'<text transform="translate({_f(sx(lx))} {_f(sy(lx * bw) - 8)}) rotate({angle:.1f})">'
        f"{escape(f'spec {spec.bandwidth_gbps / 1000:.2f} TB/s')}</text>"
    )
    if measured_gbps:
        out.append(
            f'<text transform="translate({_f(sx(lx * 1.3))} {_f(sy(lx * 1.3 * measured_gbps * 1e9) + 16)}) '
            f'rotate({angle:.1f})" fill="{COLORS["measured"]}">'
            f"{escape(f'measured copy {measured_gbps / 1000:.2f} TB/s (judge)')}</text>"
        )
    by_target: dict[str, list[Point]] = {}
    for p in points:
        by_target.setdefault(p.target, []).append(p)
    markers = [(sx(p.intensity), sy(p.flops_per_s)) for p in points]
    boxes: list[tuple[float, float, float, float]] = []  # placed labels: x0, y0, x1, y1
    for target, group in by_target.items():
        x = sx(group[0].intensity)
        ys_px = [sy(p.flops_per_s) for p in group]
        out.append(f'<line x1="{_f(x)}" y1="{_f(min(ys_px))}" x2="{_f(x)}" y2="{_f(max(ys_px))}" stroke="#bbbbbb"/>')
        for p, y in zip(group, ys_px, strict=True):
            out.append(_marker(p.kind, x, y, f"{target}: {p.label}, {p.flops_per_s / 1e12:.2f} TFLOP/s"))
        gain = f" {speedups[target]:.2f}x" if target in speedups else " (not beaten)"
        text = target + gain
        box = _label_box(x + 10, min(ys_px) + 4, text, markers, boxes)
        boxes.append(box)
        out.append(f'<text x="{_f(box[0])}" y="{_f(box[3] - 3)}">{escape(text)}</text>')
    lx0, ly0 = WIDTH - RIGHT + 16, TOP + 10
    legend = [
        ("spec", "spec-sheet roofline"),
        ("measured", "measured copy ceiling (judge)"),
        ("baseline", "baseline"),
        ("candidate", "best candidate"),
        ("competitor", "best competitor"),
    ]
    for i, (kind, text) in enumerate(legend):
        y = ly0 + 22 * i
        if kind in ("spec", "measured"):
            dash = ' stroke-dasharray="6 4"' if kind == "measured" else ""
            out.append(
                f'<line x1="{lx0}" y1="{y}" x2="{lx0 + 22}" y2="{y}" stroke="{COLORS[kind]}" stroke-width="2"{dash}/>'
            )
        else:
            out.append(_marker(kind, lx0 + 11, y, text))
        out.append(f'<text x="{lx0 + 30}" y="{y + 4}">{escape(text)}</text>')
    notes = []
    if not measured_gbps:
        notes.append("no measured ceiling in the records")
    if unplaced:
        notes.append("not placed (no flops in the manifest): " + ", ".join(unplaced))
    for i, note in enumerate(notes):
        out.append(
            f'<text x="{LEFT}" y="{HEIGHT - 22 + 14 * i - 14 * (len(notes) - 1)}" fill="#555555">{escape(note)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


CHAR_PX = 6.8  # average glyph width at font-size 12, for label collision boxes


def _label_box(
    x: float,
    baseline_y: float,
    text: str,
    markers: list[tuple[float, float]],
    boxes: list[tuple[float, float, float, float]],
) -> tuple[float, float, float, float]:
    """The first box at or below ``baseline_y`` (12 px steps) that covers no marker and no placed label."""
    width = CHAR_PX * len(text)
    for step in range(40):
        y = baseline_y + 12 * step
        box = (x, y - 11, x + width, y + 3)
        hits_marker = any(box[0] - 6 <= mx <= box[2] + 6 and box[1] - 6 <= my <= box[3] + 6 for mx, my in markers)
        hits_label = any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in boxes)
        if not hits_marker and not hits_label:
            return box
    return (x, baseline_y - 11, x + width, baseline_y + 3)


def _marker(kind: str, x: float, y: float, title: str) -> str:
    tip = f"<title>{escape(title)}</title>"
    if kind == "baseline":
        return (
            f'<circle cx="{_f(x)}" cy="{_f(y)}" r="5" fill="#ffffff" stroke="{COLORS["baseline"]}" '
            f'stroke-width="2">{tip}</circle>'
        )
    if kind == "candidate":
        return f'<circle cx="{_f(x)}" cy="{_f(y)}" r="5" fill="{COLORS["candidate"]}">{tip}</circle>'
    return (
        f'<polygon points="{_f(x)},{_f(y - 6)} {_f(x + 6)},{_f(y + 5)} {_f(x - 6)},{_f(y + 5)}" '
        f'fill="{COLORS["competitor"]}">{tip}</polygon>'
    )
