"""``audit``: re-run the counted best of a target and say whether it reproduces.

The best record names the sha256 of the baseline, candidate and contract it measured; the files on disk must be
those bytes (else the audit is refused: it would measure something else). One new verify of them follows, and its
interval is compared with the record's: the two are consistent when the intervals overlap, and the best
reproduces when the rerun is also faster and consistent. A record whose samples were made up so that they
recompute (``docs/security.md``) passes every check of the board; a rerun on the same device is what catches it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from hotkernel._util.fs import sha256_file
from hotkernel._util.model import StrictModel
from hotkernel._util.nvml import visible_gpu_name
from hotkernel.errors import HotkernelError
from hotkernel.run.models import VerifyResult
from hotkernel.run.verify import verify
from hotkernel.store.leaderboard import best_entries, board_rows
from hotkernel.store.models import BestEntry, LeaderboardRow, Record
from hotkernel.store.recompute import decision_of
from hotkernel.store.scan import load_record
from hotkernel.workspace.paths import Workspace, validate_target_name


class AuditResult(StrictModel):
    """What a rerun of the counted best gave, against what the record says."""

    target: str = Field(description="target name")
    device: str = Field(description="the device of the best audited (GPU name or CPU model)")
    record: str = Field(description="workspace-relative path of the counted best record")
    recorded_speedup: float = Field(description="the record's speedup")
    recorded_interval: list[float] = Field(description="the record's [low, high] speedup interval")
    headline: float | None = Field(default=None, description="the board's headline: median of the runs of its files")
    rerun: VerifyResult = Field(description="the new verify of the same files (saved in the run store)")
    rerun_interval: list[float] | None = Field(
        default=None, description="the rerun's [low, high] interval (from its samples, any measured verdict)"
    )
    consistent: bool = Field(description="the two intervals overlap")
    reproduces: bool = Field(description="the rerun is faster too and consistent with the record")


def pick_best(entries: list[BestEntry], target: str, device: str | None) -> BestEntry:
    """The board entry of ``target`` to audit: on ``device`` when given, else the only one, else the one on this
    machine's GPU; a HotkernelError naming the choices otherwise."""
    found = [e for e in entries if e.target == target and e.best is not None]
    if not found:
        raise HotkernelError(
            f"audit: {target} has no counted best (a confirmed faster record); `hotkernel history {target}` lists "
            "its records"
        )
    names = ", ".join(e.device for e in found)
    if device is not None:
        chosen = [e for e in found if e.device == device]
    elif len(found) == 1:
        chosen = found
    else:
        chosen = [e for e in found if e.device == visible_gpu_name()]
    if len(chosen) != 1:
        raise HotkernelError(f"audit: {target} has a best on {names}: pick one with --device NAME")
    return chosen[0]


def best_record(ws: Workspace, best: LeaderboardRow) -> Record:
    """The record file of the board's best."""
    record = load_record(ws.root / best.path)
    if record is None:
        raise HotkernelError(f"{best.path}: not a record; run `hotkernel leaderboard --check`")
    return record


def changed_file(ws: Workspace, target: str, path: str, result: VerifyResult) -> str | None:
    """One line naming the first file that is not the bytes the record at ``path`` measured, or None."""
    files = (
        (ws.target_dir(target) / "baseline.py", result.baseline.sha256),
        (ws.target_dir(target) / "candidate.py", result.candidate.sha256),
        (ws.contract_file, result.contract_sha256),
    )
    for file, recorded in files:
        rel = file.relative_to(ws.root).as_posix()
        if recorded is None:
            return f"audit: {path} does not name the sha256 of {rel}: it cannot be re-run as it was"
        now = sha256_file(file)
        if now != recorded:
            state = "is missing" if now is None else f"changed since (sha256 {now[:12]}, the record's {recorded[:12]})"
            return (
                f"audit: {rel} {state}: {path} measured other bytes; restore them (e.g. `git checkout` the "
                "commit of the record) to audit it"
            )
    return None


def rerun_interval(result: VerifyResult) -> list[float] | None:
    """The rerun's interval from its samples for any measured verdict (an inconclusive one has one too)."""
    if result.interval:
        return list(result.interval)
    if result.verdict not in ("faster", "slower", "inconclusive"):
        return None
    try:
        decision = decision_of(result)
    except ValueError:
        return None
    if decision.speedup_low is None or decision.speedup_high is None:
        return None
    return [decision.speedup_low, decision.speedup_high]


def audit(
    ws: Workspace,
    target: str,
    *,
    device: str | None = None,
    n: int | None = None,
    timeout_s: float = 600.0,
    progress: Any = None,
) -> AuditResult:
    """Re-run the counted best of ``target`` with verify (the record's rounds unless ``n``) and compare."""
    validate_target_name(target)
    rows = board_rows(ws)
    entry = pick_best(best_entries(rows), target, device)
    best = entry.best
    assert best is not None and best.speedup is not None and best.interval is not None  # pick_best: a faster best
    recorded = best_record(ws, best).result
    problem = changed_file(ws, target, best.path, recorded)
    if problem:
        raise HotkernelError(problem)
    rounds = n if n is not None else recorded.n
    cap = None if n is not None else recorded.max_rounds
    folder = Path("targets") / target
    rerun = verify(
        ws,
        folder / "baseline.py",
        folder / "candidate.py",
        n=rounds,
        max_rounds=cap if cap is None or cap >= rounds else None,
        timeout_s=timeout_s,
        progress=progress,
    )
    interval = rerun_interval(rerun)
    low, high = best.interval
    consistent = interval is not None and interval[0] <= high and low <= interval[1]
    return AuditResult(
        target=target,
        device=entry.device,
        record=best.path,
        recorded_speedup=best.speedup,
        recorded_interval=[low, high],
        headline=entry.median,
        rerun=rerun,
        rerun_interval=interval,
        consistent=consistent,
        reproduces=consistent and rerun.verdict == "faster",
    )


def audit_lines(result: AuditResult) -> list[str]:
    """People-readable lines: the record, the rerun, both intervals, and whether it reproduces."""
    low, high = result.recorded_interval
    rerun = result.rerun
    speed = f" {rerun.speedup:.3f}x" if rerun.speedup is not None else ""
    span = f" [{result.rerun_interval[0]:.3f}, {result.rerun_interval[1]:.3f}]" if result.rerun_interval else ""
    device = "" if rerun.device in (None, result.device) else f" (on {rerun.device}, the record's is {result.device})"
    lines = [
        f"record: {result.record}: faster {result.recorded_speedup:.3f}x [{low:.3f}, {high:.3f}] on {result.device}",
        f"rerun:  {rerun.verdict}{speed}{span}{device} (run {rerun.run_id or 'not stored'}; {rerun.reason})",
    ]
    if result.reproduces:
        lines.append("reproduces: the rerun is faster and its interval overlaps the record's")
    elif result.consistent:
        lines.append(f"does not reproduce: the intervals overlap, but the rerun is {rerun.verdict}, not faster")
    else:
        lines.append("does not reproduce: the rerun's interval does not overlap the record's")
    return lines
