"""Backtest of the board's prediction range for a fresh run, on the committed records.

Usage: python lab/benchmarks/rerun_range_backtest.py [--until ISO_TIME]

For each GPU target of this workspace (counted candidate records on a device that is not a CPU, created up to
``--until``), its runs are grouped into sessions (``hotkernel.store.rerun_range.group_sessions``: same GPU UUID,
under an hour apart) and walked in time order. For each session from the third on, the board is rebuilt from the
records created before that session's first run only (``best_entries(leaderboard_rows(...))``, as `hotkernel
leaderboard` would have stated it then), and the session's runs of the then-best's files are checked against both
ranges the board states: the prediction range of a fresh run and the min-max of the runs so far. Checked: the
session's median point speedup (what a sync reports) and each of its runs. A session whose runs measured other
files than the then-best's, or before any best, is listed and not scored; one where the board stated no
prediction range (one earlier session of those files) is listed and scored for min-max only. A session that ran
under a contract (sha256) none of the earlier runs of those files used is marked ``new contract`` and tallied
apart as well: the rule treats such reruns as the same experiment (docs/leaderboard.md), and this shows what
that costs.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from hotkernel.store.models import Record
from hotkernel.store.rerun_range import RunPoint, group_sessions
from hotkernel.store.rows import best_entries, files_key, leaderboard_rows
from hotkernel.store.scan import current_protocol, device_of, scan_results
from hotkernel.workspace.paths import Workspace


def _where(value: float, low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "none"
    return "inside" if low <= value <= high else ("above" if value > high else "below")


class Tally:
    """Sessions and runs scored against one kind of range."""

    def __init__(self) -> None:
        self.sessions = self.sessions_in = self.runs = self.runs_in = 0
        self.widths: list[float] = []

    def add(self, median_where: str, run_wheres: list[str], width: float) -> None:
        self.sessions += 1
        self.sessions_in += median_where == "inside"
        self.runs += len(run_wheres)
        self.runs_in += sum(w == "inside" for w in run_wheres)
        self.widths.append(width)

    def line(self, name: str) -> str:
        if not self.sessions:
            return f"{name}: no session scored"
        width = statistics.median(self.widths)
        return (
            f"{name}: session medians {self.sessions_in}/{self.sessions} inside "
            f"({100 * self.sessions_in / self.sessions:.0f}%), runs {self.runs_in}/{self.runs} inside "
            f"({100 * self.runs_in / self.runs:.0f}%), median width {100 * width:.2f}% of the headline"
        )


def gpu_targets(records: list[tuple[str, Record]]) -> list[tuple[str, str]]:
    """(target, device) of every candidate record on a GPU, sorted."""
    return sorted(
        {(r.target, device_of(r)) for _, r in records if r.role == "candidate" and not device_of(r).startswith("CPU")}
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--until", default=None, help="only records created at or before this ISO 8601 time")
    args = parser.parse_args(argv)
    ws = Workspace(Path("."))
    protocol = current_protocol()
    records = [
        (p, r) for p, r in scan_results(ws).records if args.until is None or r.created_at <= args.until
    ]  # ISO 8601 UTC times of one format compare as strings
    totals = {"prediction": Tally(), "min-max": Tally()}
    by_depth = {
        "prediction, 2-4 earlier sessions": Tally(),
        "prediction, 5+ earlier sessions": Tally(),
        "prediction, a contract earlier runs used": Tally(),
        "prediction, new contract": Tally(),
    }
    contract_of = {p: r.result.contract_sha256 for p, r in records}
    for target, device in gpu_targets(records):
        mine = [(p, r) for p, r in records if r.target == target]
        rows = [
            row
            for row in leaderboard_rows(mine, protocol)
            if row.device == device and row.role == "candidate" and row.counted and row.point is not None
        ]
        runs = [RunPoint(machine=r.machine or r.device, created_at=r.created_at or "", point=r.point) for r in rows]
        row_of = dict(zip(runs, rows, strict=True))  # a RunPoint is a frozen dataclass: hashable
        sessions = group_sessions(runs)
        per_target = {"prediction": Tally(), "min-max": Tally()}
        print(f"{target} ({device}): {len(rows)} counted runs in {len(sessions)} sessions")
        for index, session in enumerate(sessions):
            if index < 2:
                continue
            start = session[0].created_at
            before = [(p, r) for p, r in mine if r.created_at < start]
            entry = next(
                (e for e in best_entries(leaderboard_rows(before, protocol)) if e.device == device),
                None,
            )
            head = f"  session {index + 1} {start} {session[0].machine[:12]}"
            if entry is None or entry.best is None or entry.median is None:
                print(f"{head}: no best stated before it, not scored")
                continue
            own = [row_of[run] for run in session]
            same = [row.point for row in own if row.files == entry.best.files]
            if not same:
                print(f"{head}: its runs measured other files than the best then, not scored")
                continue
            earlier = {contract_of[p] for p, r in before if r.role == "candidate" and files_key(r) == entry.best.files}
            fresh = any(contract_of[row.path] not in earlier for row in own if row.files == entry.best.files)
            median = statistics.median(same)
            low, high = entry.rerun_low, entry.rerun_high
            mlow, mhigh = entry.same_files_point_low, entry.same_files_point_high
            stated = (
                f"prediction {low:.4f}-{high:.4f} ({entry.same_files_sessions} sessions)"
                if low is not None and high is not None
                else f"no prediction ({entry.same_files_sessions} session)"
            )
            where = _where(median, low, high)
            where_mm = _where(median, mlow, mhigh)
            runs_where = [_where(p, low, high) for p in same]
            runs_where_mm = [_where(p, mlow, mhigh) for p in same]
            print(
                f"{head}: board {entry.median:.4f}, {stated}, min-max {mlow:.4f}-{mhigh:.4f} "
                f"({entry.same_files_runs} runs); runs {', '.join(f'{p:.4f}' for p in same)} -> {median:.4f}: "
                f"prediction {where} ({runs_where.count('inside')}/{len(same)} runs), "
                f"min-max {where_mm} ({runs_where_mm.count('inside')}/{len(same)} runs)"
                + ("; new contract" if fresh else "")
            )
            assert mlow is not None and mhigh is not None
            for tallies in (totals, per_target):
                tallies["min-max"].add(where_mm, runs_where_mm, (mhigh - mlow) / entry.median)
                if low is not None and high is not None:
                    tallies["prediction"].add(where, runs_where, (high - low) / entry.median)
            if low is not None and high is not None:
                depth = "2-4" if entry.same_files_sessions < 5 else "5+"
                by_depth[f"prediction, {depth} earlier sessions"].add(where, runs_where, (high - low) / entry.median)
                kind = "new contract" if fresh else "a contract earlier runs used"
                by_depth[f"prediction, {kind}"].add(where, runs_where, (high - low) / entry.median)
        for name, tally in per_target.items():
            print(f"  {tally.line(name)}")
    print("all GPU targets:")
    for name, tally in {**totals, **by_depth}.items():
        print(f"  {tally.line(name)}")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
