"""The board's rows: one per record, the best per (target, device), and each best's runs of the same files.

A faster candidate record is *confirmed* when another counted faster candidate record of the same files (baseline
and candidate sha256) on the same device has an interval that overlaps its own: two independent verifies agree.
The contract's sha256 is not part of the files: a rerun under a newer contract of the same protocol measures the
same code by the same rule, so it joins the count (a contract per run would make each contract change a new set,
and the board the best of their medians); a new protocol stops older records counting at all (``scan.py``).
Only confirmed records can be the best. The best's headline is the median point speedup of every counted run of
its files (what reruns give), with their count, their range (min-max) and a prediction range for a fresh run
(``rerun_range.py``: the runs grouped by session, between- and within-session spread): a goal counts as met by
that median.
"""

from __future__ import annotations

import statistics

from hotkernel.run.models import VerifyResult
from hotkernel.store.models import BestEntry, LeaderboardRow, Record
from hotkernel.store.recompute import point_speedup
from hotkernel.store.rerun_range import LEVEL, RunPoint, group_sessions, rerun_range
from hotkernel.store.scan import device_of, not_counted_reason


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None


def _first_shape(shapes: object) -> str | None:
    return str(shapes[0]) if isinstance(shapes, list) and shapes else None


def judge_ceiling_gbps(record: Record) -> float | None:
    """The highest copy ceiling the judge reported in the record's runs (GB/s), or None."""
    found = [_float((run.data or {}).get("ceiling_gbps")) for run in record.result.runs]
    return max((c for c in found if c is not None), default=None)


def files_key(record: Record) -> str | None:
    """The sha256s of the baseline and candidate a record measured, joined; None when one is missing."""
    return result_files(record.result)


def result_files(result: VerifyResult) -> str | None:
    """The sha256s of the baseline and candidate a verify measured, joined; None when one is missing."""
    shas = [sha for sha in (result.baseline.sha256, result.candidate.sha256) if sha]
    return ":".join(shas) if len(shas) == 2 else None


def leaderboard_rows(records: list[tuple[str, Record]], protocol: int) -> list[LeaderboardRow]:
    """One row per record, sorted by (target, device, path), with the best candidate per (target, device)
    marked (a competitor is never the best)."""
    rows = []
    for path, record in records:
        result = record.result
        reason = not_counted_reason(record, protocol)
        has_speedup = result.verdict in ("faster", "slower")
        contract = result.contract or {}
        rows.append(
            LeaderboardRow(
                target=record.target,
                device=device_of(record),
                path=path,
                verdict=result.verdict,
                speedup=result.speedup if has_speedup else None,
                interval=result.interval if has_speedup else None,
                baseline_ms=result.baseline.stats.median_ms,
                candidate_ms=result.candidate.stats.median_ms,
                who=record.who,
                note=record.note,
                counted=reason is None,
                not_counted_reason=reason,
                role=record.role,
                competitor=record.competitor,
                dtype=contract.get("dtype") if isinstance(contract.get("dtype"), str) else None,
                shape=_first_shape(contract.get("shapes")),
                baseline_from=str((record.spec or {}).get("from")) if (record.spec or {}).get("from") else None,
                flops=_float(contract.get("flops")),
                bytes=_float(contract.get("bytes")),
                ceiling_gbps=judge_ceiling_gbps(record),
                files=files_key(record),
                point=point_speedup(result) if record.role == "candidate" else None,
                imported=record.imported,
                created_at=record.created_at,
                machine=record.provenance.gpu_uuid or device_of(record),
            )
        )
    rows.sort(key=lambda r: (r.target, r.device, r.path))
    mark_best(rows)
    return rows


def _overlap(a: LeaderboardRow, b: LeaderboardRow) -> bool:
    if not a.interval or not b.interval:
        return False
    return a.interval[0] <= b.interval[1] and b.interval[0] <= a.interval[1]


def _faster(row: LeaderboardRow) -> bool:
    return row.role == "candidate" and row.counted and row.verdict == "faster" and row.speedup is not None


def file_sets(rows: list[LeaderboardRow]) -> dict[tuple[str, str, str], list[LeaderboardRow]]:
    """Counted candidate rows with a measured point speedup, by (target, device, files)."""
    sets: dict[tuple[str, str, str], list[LeaderboardRow]] = {}
    for row in rows:
        if row.role == "candidate" and row.counted and row.files is not None and row.point is not None:
            sets.setdefault((row.target, row.device, row.files), []).append(row)
    return sets


def mark_best(rows: list[LeaderboardRow]) -> None:
    """Mark confirmed rows (a faster row with another faster row of its files whose interval overlaps, one of the
    two measured here, not imported) and, per (target, device), the best: the newest confirmed row of the file
    set whose runs have the highest median point speedup."""
    best: dict[tuple[str, str], tuple[float, LeaderboardRow]] = {}
    for (target, device, _), same in sorted(file_sets(rows).items()):
        faster = [r for r in same if _faster(r)]
        for row in faster:
            row.confirmed = any(
                other is not row and _overlap(row, other) and not (row.imported and other.imported) for other in faster
            )
            row.awaiting_confirmation = not row.confirmed
        confirmed = [r for r in faster if r.confirmed]
        if not confirmed:
            continue
        median = statistics.median(r.point for r in same)  # type: ignore[misc]
        if (target, device) not in best or median > best[(target, device)][0]:
            best[(target, device)] = (median, confirmed[-1])
    for _, row in best.values():
        row.best = True


def best_rows(rows: list[LeaderboardRow]) -> list[LeaderboardRow]:
    """The best counted row of every (target, device) that has one."""
    return [r for r in rows if r.best]


def competitor_speedup(row: LeaderboardRow) -> float | None:
    """A competitor's speedup over the baseline: its own for faster/slower, 1.0 for inconclusive (the verdict
    could not tell it from the baseline), None when it was incorrect or invalid."""
    if row.verdict in ("faster", "slower") and row.speedup is not None:
        return row.speedup
    return 1.0 if row.verdict == "inconclusive" else None


def best_entries(rows: list[LeaderboardRow]) -> list[BestEntry]:
    """One entry per (target, device), sorted: the best candidate, the fastest counted competitor, and the best
    candidate's speedup over that competitor (the ratio of the two speedups over the baseline)."""
    entries: dict[tuple[str, str], BestEntry] = {}
    runs: dict[tuple[str, str, str], list[LeaderboardRow]] = {}  # counted candidate rows by (target, device, files)
    for row in rows:
        if row.role == "candidate" and row.counted and row.files is not None:
            runs.setdefault((row.target, row.device, row.files), []).append(row)
        entry = entries.setdefault((row.target, row.device), BestEntry(target=row.target, device=row.device))
        if row.best:
            entry.best = row
        speed = competitor_speedup(row) if row.role == "competitor" and row.counted else None
        if speed is not None and (entry.competitor_speedup is None or speed > entry.competitor_speedup):
            entry.competitor, entry.competitor_speedup = row, speed
    sets = file_sets(rows)
    for entry in entries.values():
        if entry.best is not None and entry.best.files is not None:
            same_files(entry, sets[(entry.target, entry.device, entry.best.files)])
        if entry.best is not None and entry.median and entry.competitor_speedup:
            entry.vs_competitor = entry.median / entry.competitor_speedup
        waiting = [r for r in rows if r.target == entry.target and r.device == entry.device and _faster(r)]
        waiting = [r for r in waiting if not r.confirmed and (entry.median is None or r.speedup > entry.median)]
        entry.awaiting = max(waiting, key=lambda r: (r.speedup, r.path), default=None)
    return [entries[key] for key in sorted(entries)]


def run_sessions(same: list[LeaderboardRow]) -> list[list[float]]:
    """The point speedups of ``same`` (rows with one) by session (``rerun_range.group_sessions``)."""
    runs = [
        RunPoint(machine=r.machine or r.device, created_at=r.created_at or "", point=r.point)
        for r in same
        if r.point is not None and r.created_at
    ]
    return [[run.point for run in session] for session in group_sessions(runs)]


def same_files(entry: BestEntry, same: list[LeaderboardRow]) -> None:
    """Fill ``entry``'s runs of the best's files: count, median and range of their point speedups, how many of
    them were faster and their speedups' range, their sessions and the prediction range of a fresh run."""
    points = [r.point for r in same if r.point is not None]
    speedups = [r.speedup for r in same if r.verdict == "faster" and r.speedup is not None]
    entry.same_files_runs, entry.same_files_not_faster = len(same), len(same) - len(speedups)
    entry.same_files_low, entry.same_files_high = min(speedups), max(speedups)
    entry.median = statistics.median(points)
    entry.same_files_point_low, entry.same_files_point_high = min(points), max(points)
    predicted = rerun_range(run_sessions(same), entry.median, LEVEL)
    entry.same_files_sessions, entry.rerun_level = predicted.sessions, LEVEL
    entry.rerun_low, entry.rerun_high = predicted.low, predicted.high
    entry.between_session_sd, entry.within_session_sd = predicted.between_sd, predicted.within_sd
