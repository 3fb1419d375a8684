"""Backtest of the board's prediction range for a fresh run, on the committed records.

Usage: python lab/benchmarks/rerun_range_backtest.py [--until ISO_TIME] [--contract-rules]

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

``--contract-rules`` also scores, on the same sessions (those with a prediction stated), three candidate rules for
the level shift a contract change brings, each centred on the same headline median, and prints them after the
totals with their coverage, median width and the median ratio of their width to the board's range, session by
session; the rules were written down after the misses after contract changes were seen:

* ``contract opens a session``: the board's rule with the contract's sha256 part of the session key
  (``group_sessions`` on machine and contract);
* ``between-contract component, t on k - 1``: a nested one-way analysis (contracts, sessions within a contract,
  runs within a session; ANOVA moments for the unbalanced design) whose prediction variance adds the
  between-contract variance, the quantile still on the sessions' degrees of freedom;
* ``between-contract component, t on C - 1``: the same variance, the quantile on the contracts' degrees of
  freedom, as the board's rule takes the sessions' because the largest component is estimated from them.
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

from hotkernel.run.verdict import student_t_quantile
from hotkernel.store.models import Record
from hotkernel.store.rerun_range import LEVEL, RunPoint, group_sessions, rerun_range
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


RULES = (
    "contract opens a session",
    "between-contract component, t on k - 1",
    "between-contract component, t on C - 1",
)


def nested_range(contracts: list[list[list[float]]], centre: float, df_on: str) -> tuple[float, float]:
    """The ``LEVEL`` prediction range of one run under a new contract and session, centred on ``centre``, from the
    point speedups by contract, then session: ANOVA moments of the unbalanced two-level nested design on logs,
    each component floored at 0; ``df_on`` ``sessions`` (k - 1) or ``contracts`` (C - 1)."""
    logs = [[[math.log(p) for p in s] for s in c] for c in contracts]
    c_n, k_n = len(logs), sum(len(c) for c in logs)
    n = sum(len(s) for c in logs for s in c)
    n_c = [sum(len(s) for s in c) for c in logs]
    grand = sum(y for c in logs for s in c for y in s) / n
    c_mean = [sum(y for s in c for y in s) / nc for c, nc in zip(logs, n_c, strict=True)]
    s_mean = [[sum(s) / len(s) for s in c] for c in logs]
    ssw = sum((y - m) ** 2 for c, ms in zip(logs, s_mean, strict=True) for s, m in zip(c, ms, strict=True) for y in s)
    sss = sum(
        len(s) * (m - cm) ** 2
        for c, ms, cm in zip(logs, s_mean, c_mean, strict=True)
        for s, m in zip(c, ms, strict=True)
    )
    ssc = sum(nc * (m - grand) ** 2 for nc, m in zip(n_c, c_mean, strict=True))
    within_sq = sum(len(s) ** 2 / nc for c, nc in zip(logs, n_c, strict=True) for s in c)
    var_w = ssw / (n - k_n) if n > k_n else 0.0
    var_b = 0.0
    if k_n > c_n:  # some contract has two sessions
        k1 = (n - within_sq) / (k_n - c_n)
        var_b = max(0.0, (sss / (k_n - c_n) - var_w) / k1)
    k2 = (within_sq - sum(len(s) ** 2 for c in logs for s in c) / n) / (c_n - 1)
    k3 = (n - sum(nc**2 for nc in n_c) / n) / (c_n - 1)
    var_c = max(0.0, (ssc / (c_n - 1) - var_w - k2 * var_b) / k3)
    var_centre = sum(var_c + sum(var_b + var_w / len(s) for s in c) / len(c) ** 2 for c in logs) / c_n**2
    t = student_t_quantile((1.0 + LEVEL) / 2.0, (k_n if df_on == "sessions" else c_n) - 1)
    half = t * math.sqrt(var_c + var_b + var_w + var_centre)
    return centre * math.exp(-half), centre * math.exp(half)


def rule_ranges(earlier: list[tuple[RunPoint, str]], centre: float) -> dict[str, tuple[float, float]]:
    """Each of ``RULES``' range from the earlier runs of the best's files, each with its contract's sha256. With
    one contract among them, the two nested rules are the first (no between-contract spread to estimate)."""
    keyed = [RunPoint(f"{run.machine}|{contract}", run.created_at, run.point) for run, contract in earlier]
    contract_of = {key: contract for key, (_, contract) in zip(keyed, earlier, strict=True)}
    sessions = group_sessions(keyed)
    split = rerun_range([[r.point for r in s] for s in sessions], centre)
    assert split.low is not None and split.high is not None
    ranges = {RULES[0]: (split.low, split.high)}
    by_contract: dict[str, list[list[float]]] = {}
    for session in sessions:
        by_contract.setdefault(contract_of[session[0]], []).append([r.point for r in session])
    for rule, df_on in zip(RULES[1:], ("sessions", "contracts"), strict=True):
        ranges[rule] = (
            nested_range(list(by_contract.values()), centre, df_on) if len(by_contract) > 1 else ranges[RULES[0]]
        )
    return ranges


def gpu_targets(records: list[tuple[str, Record]]) -> list[tuple[str, str]]:
    """(target, device) of every candidate record on a GPU, sorted."""
    return sorted(
        {(r.target, device_of(r)) for _, r in records if r.role == "candidate" and not device_of(r).startswith("CPU")}
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--until", default=None, help="only records created at or before this ISO 8601 time")
    parser.add_argument("--contract-rules", action="store_true", help="also score the candidate contract rules")
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
    rules = {rule: Tally() for rule in RULES}
    ratios: dict[str, list[float]] = {rule: [] for rule in RULES}
    misses: dict[str, list[str]] = {rule: [] for rule in ("board", *RULES)}
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
            if args.contract_rules and low is not None and high is not None:
                earlier_rows = [
                    row
                    for row in leaderboard_rows(before, protocol)
                    if row.device == device
                    and row.role == "candidate"
                    and row.counted
                    and row.point is not None
                    and row.files == entry.best.files
                ]
                earlier_runs = [
                    (RunPoint(row.machine or row.device, row.created_at or "", row.point), contract_of[row.path])
                    for row in earlier_rows
                    if row.point is not None
                ]
                name = f"{target} {start}" + (" (new contract)" if fresh else "")
                if where != "inside":
                    misses["board"].append(name)
                for rule, (rlow, rhigh) in rule_ranges(earlier_runs, entry.median).items():
                    rwhere = _where(median, rlow, rhigh)
                    rules[rule].add(rwhere, [_where(p, rlow, rhigh) for p in same], (rhigh - rlow) / entry.median)
                    ratios[rule].append((rhigh - rlow) / (high - low))
                    if rwhere != "inside":
                        misses[rule].append(name)
        for name, tally in per_target.items():
            print(f"  {tally.line(name)}")
    print("all GPU targets:")
    for name, tally in {**totals, **by_depth}.items():
        print(f"  {tally.line(name)}")
    if args.contract_rules:
        print("candidate contract rules, on the sessions with a prediction stated:")
        print(f"  board: session medians outside: {'; '.join(misses['board']) or 'none'}")
        for rule, tally in rules.items():
            ratio = statistics.median(ratios[rule]) if ratios[rule] else float("nan")
            print(f"  {tally.line(rule)}; width / board's: median {ratio:.2f}, max {max(ratios[rule], default=0):.2f}")
            print(f"    session medians outside: {'; '.join(misses[rule]) or 'none'}")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
