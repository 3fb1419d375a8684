"""Do fresh `sync --from-scratch` runs land in the range the board stated before them?

Usage: python lab/benchmarks/fresh_vs_board.py [--min-max] SYNC_JSON... (the --json reports of the syncs, in order)

The board before: every counted record older than the first report's first record, as `hotkernel leaderboard`
would have built it then (the best's median, the prediction range of a fresh run and the min-max of its runs of
the same files). Per report and target: the point speedups of the candidate records it wrote, their median, and
whether that median is inside each range (and how many of the runs are inside the prediction range).
``--min-max`` prints the min-max comparison alone, as this script did before the board stated a prediction range
(``evidence/h200_round_20261205b/fresh_vs_board.txt``).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from hotkernel.store.recompute import point_speedup
from hotkernel.store.rows import best_entries, leaderboard_rows
from hotkernel.store.scan import current_protocol, device_of, scan_results
from hotkernel.workspace.paths import Workspace


def _where(value: float, low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "none stated"
    return "inside" if low <= value <= high else ("above" if value > high else "below")


def _by(value: float, low: float | None, high: float | None) -> str:
    """How far outside the range, in percent of the nearer end ('' inside or when none is stated)."""
    if low is None or high is None or low <= value <= high:
        return ""
    end = high if value > high else low
    return f" by {100 * abs(value / end - 1):.3f}%"


def main(argv: list[str]) -> None:
    min_max_only = "--min-max" in argv
    reports = [a for a in argv if a != "--min-max"]
    ws = Workspace(Path("."))
    records = dict(scan_results(ws).records)
    written = [[i["record"] for i in json.loads(Path(r).read_text())["items"] if i.get("record")] for r in reports]
    first = min(p.rsplit("/", 1)[-1] for paths in written for p in paths)
    before = [(p, r) for p, r in records.items() if p.rsplit("/", 1)[-1] < first]
    entries = {(e.target, e.device): e for e in best_entries(leaderboard_rows(before, current_protocol()))}
    for (target, device), entry in sorted(entries.items()):
        if entry.best is None or entry.median is None:
            continue
        low, high = entry.same_files_point_low, entry.same_files_point_high
        plow, phigh = entry.rerun_low, entry.rerun_high
        cells = []
        for n, paths in enumerate(written, 1):
            runs = [records[p] for p in paths if p in records and records[p].target == target]
            points = [point_speedup(r.result) for r in runs if r.role == "candidate" and device_of(r) == device]
            if not points:
                continue
            median = statistics.median(points)
            listed = f"sync {n}: {', '.join(f'{p:.4f}' for p in points)} -> {median:.4f}"
            if min_max_only:
                cells.append(f"{listed} {_where(median, low, high)}")
                continue
            inside = sum(_where(p, plow, phigh) == "inside" for p in points)
            cells.append(
                f"{listed} prediction {_where(median, plow, phigh)}{_by(median, plow, phigh)} "
                f"({inside}/{len(points)} runs), min-max {_where(median, low, high)}{_by(median, low, high)}"
            )
        if not cells:
            continue
        if min_max_only:
            head = f"board {entry.median:.4f}, {entry.same_files_runs} runs {low:.4f}-{high:.4f}"
        else:
            sessions = entry.same_files_sessions
            stated = (
                f"prediction {plow:.4f}-{phigh:.4f} ({sessions} sessions)"
                if plow is not None and phigh is not None
                else f"no prediction ({sessions} session)"
            )
            head = f"board {entry.median:.4f}, {stated}, min-max {low:.4f}-{high:.4f} ({entry.same_files_runs} runs)"
        print(f"{target} ({device}): {head}; " + "; ".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])
