"""``leaderboard --summary``: KernelBench's fast_p and the geometric mean speedup, per suite and device.

fast_p is the share of a suite's targets whose best candidate is correct and faster than the baseline by more
than p: only a ``faster`` verdict counts, with its speedup. A target imported from KernelBench is named
``kb<level>_<nnn>_<name>`` (``kb1_023_softmax``) and belongs to suite ``kernelbench level <level>``; every other
target is in the workspace's own suite. The denominator is the suite's targets with a record on that device.
"""

from __future__ import annotations

import math
import re

from hotkernel.store.models import BestEntry, SuiteSummary

FAST_P = (0.0, 1.0, 1.5, 2.0)
WORKSPACE_SUITE = "workspace"
KERNELBENCH_RE = re.compile(r"kb(\d{1,2})_")


def suite_of(target: str) -> str:
    """``kernelbench level N`` for a target named ``kb<N>_...``, else ``workspace``."""
    match = KERNELBENCH_RE.match(target)
    return f"kernelbench level {int(match.group(1))}" if match else WORKSPACE_SUITE


def p_label(p: float) -> str:
    """The key of ``fast_p``: ``fast_0``, ``fast_1.0``, ``fast_1.5``, ``fast_2.0``."""
    return "fast_0" if p == 0 else f"fast_{p:.1f}"


def suite_summaries(entries: list[BestEntry]) -> list[SuiteSummary]:
    """One summary per (suite, device), sorted; ``entries`` is the board's one entry per (target, device)."""
    groups: dict[tuple[str, str], list[BestEntry]] = {}
    for entry in entries:
        groups.setdefault((suite_of(entry.target), entry.device), []).append(entry)
    out = []
    for (suite, device), group in sorted(groups.items()):
        speedups = [e.median for e in group if e.best is not None and e.median is not None]
        fast = {p_label(p): sum(1 for s in speedups if s > p) / len(group) for p in FAST_P}
        geomean = math.exp(sum(math.log(s) for s in speedups) / len(speedups)) if speedups else None
        out.append(
            SuiteSummary(
                suite=suite,
                device=device,
                targets=len(group),
                fast_p=fast,
                faster=len(speedups),
                geomean_speedup=geomean,
            )
        )
    return out


def summary_lines(summaries: list[SuiteSummary]) -> list[str]:
    """A fixed-width table: suite, device, targets, fast_p for each p, geometric mean speedup."""
    labels = [p_label(p) for p in FAST_P]
    header = ["suite", "device", "targets", *labels, "geomean (faster only)"]
    rows = [
        [
            s.suite,
            s.device,
            str(s.targets),
            *(f"{s.fast_p[k]:.3f}" for k in labels),
            "-" if s.geomean_speedup is None else f"{s.geomean_speedup:.3f}x ({s.faster})",
        ]
        for s in summaries
    ]
    if not rows:
        return ["no record of the current contract protocol yet: run `hotkernel sync`"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]]
