"""Do fresh `sync --from-scratch` runs land in the range the board stated before them?

Usage: python lab/benchmarks/fresh_vs_board.py SYNC_JSON... (the --json reports of the syncs, in order)

The board before: every counted record older than the first report's first record, as `hotkernel leaderboard`
would have built it then (the best's median and the range of its runs of the same files). Per report and target:
the point speedups of the candidate records it wrote, their median, and whether that median is inside the range.
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


def main(reports: list[str]) -> None:
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
        cells = []
        for n, paths in enumerate(written, 1):
            runs = [records[p] for p in paths if p in records and records[p].target == target]
            points = [point_speedup(r.result) for r in runs if r.role == "candidate" and device_of(r) == device]
            if not points:
                continue
            median = statistics.median(points)
            where = "inside" if low <= median <= high else ("above" if median > high else "below")
            cells.append(f"sync {n}: {', '.join(f'{p:.4f}' for p in points)} -> {median:.4f} {where}")
        if cells:
            print(
                f"{target} ({device}): board {entry.median:.4f}, {entry.same_files_runs} runs {low:.4f}-{high:.4f}; "
                + "; ".join(cells)
            )


if __name__ == "__main__":
    main(sys.argv[1:])
