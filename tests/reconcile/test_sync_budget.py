"""sync --budget: the value, the order (never recorded first, then the oldest record), a clean stop that leaves no
half-written record and says what is left, and the estimate of the time left (fake lanes, no torch)."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import pytest
from reconcile.test_sync_gpus import NAMES, ScriptedLane, workspace
from store.record_factory import synthetic_result

import hotkernel.store.record
from hotkernel.errors import HotkernelError
from hotkernel.reconcile.budget import Estimate, parse_budget, staleness_order
from hotkernel.reconcile.executor import BUDGET_CUT, BUDGET_SPENT, Job, LaneExecutor, LaneRun
from hotkernel.reconcile.plan import plan
from hotkernel.reconcile.progress import RunCounter
from hotkernel.reconcile.sync import sync
from hotkernel.store.leaderboard import current_records, leaderboard_difference
from hotkernel.workspace.lockfile import read_lock


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("10m", 600), ("1h", 3600), ("1h30m", 5400), ("45", 45)])
def test_budget_values(text: str, seconds: float) -> None:
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["", "ten minutes", "10x", "0s", "1h 30", "-5m"])
def test_a_bad_budget_is_one_line_with_the_fix(text: str) -> None:
    with pytest.raises(HotkernelError, match="--budget .*(90s, 10m|above zero)"):
        parse_budget(text)


def test_the_order_is_never_recorded_first_then_the_oldest_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path / "ws")
    for name, hour in (("gamma", 9), ("alpha", 10)):  # gamma's record is older than alpha's
        at = dt.datetime(2026, 12, 1, hour, 0, 0, tzinfo=dt.timezone.utc)
        monkeypatch.setattr(hotkernel.store.record, "utc_now", lambda at=at: at)
        sync(ws, [name], n=3, executor=LaneExecutor([ScriptedLane("solo")]), gpu_name=None)
    monkeypatch.undo()
    records = current_records(ws)
    assert staleness_order(list(NAMES), records)[:3] == ["beta", "delta", "eps"]
    assert staleness_order(list(NAMES), records)[3:] == ["gamma", "alpha"]
    report = sync(ws, n=3, executor=LaneExecutor([ScriptedLane("solo")]), gpu_name=None, from_scratch=True)
    assert report.order == ["beta", "delta", "eps", "gamma", "alpha"]
    assert [i.name for i in report.items if not i.confirms] == sorted(NAMES)  # reported by name


class QuickOrHangingLane(ScriptedLane):
    """Answers the targets in ``quick`` at once; any other job runs until the sync cancels it."""

    def __init__(self, name: str, quick: set[str]) -> None:
        super().__init__(name)
        self.quick, self.cancelled = quick, []

    def run(self, job: Job, cancel: threading.Event, status) -> LaneRun:
        if job.target in self.quick:
            return super().run(job, cancel, status)
        self.ran.append(job.key)
        status("verify", 1)
        cancel.wait(120)
        self.cancelled.append(job.key)
        return LaneRun(result=synthetic_result(job.target, "invalid", None, device="cpu"))  # cut short


@pytest.mark.parametrize("lanes", [1, 3])
def test_the_budget_stops_cleanly_and_says_what_is_left(tmp_path: Path, lanes: int) -> None:
    ws = workspace(tmp_path / "ws")
    pool = [QuickOrHangingLane(f"lane{i}", quick={"beta", "gamma"}) for i in range(lanes)]
    messages: list[str] = []
    report = sync(
        ws,
        n=3,
        executor=LaneExecutor(pool),
        gpu_name=None,
        budget_s=3.0,
        progress=lambda done, total, message: messages.append(message),
    )
    # one lane: alpha (first: never recorded, manifest order) hangs, and nothing starts after the budget;
    # three lanes: beta and gamma finish on the free lanes meanwhile
    # (a loaded machine may start a quick one only after the budget: it is then not run either)
    quick = {"beta", "gamma"} if lanes == 3 else set()
    status = {i.name: i.status for i in report.items}
    done = {name for name, what in status.items() if what == "recorded"}
    not_run = sorted(name for name, what in status.items() if what == "not run")
    assert done <= quick and sorted(done | set(not_run)) == sorted(NAMES) and sorted(set(report.left)) == not_run
    assert all("budget" in (i.reason or "") for i in report.items if i.status == "not run")
    assert "alpha" in [k for lane in pool for k in lane.cancelled]  # in flight at the budget: cancelled
    # a verify cut short at the budget says so (its time is lost), one never started says it was not started
    in_flight = {k for lane in pool for k in lane.cancelled}
    reasons = {i.name: i.reason for i in report.items if i.status == "not run"}
    assert {reasons[name] for name in in_flight} == {BUDGET_CUT}
    assert {reason for name, reason in reasons.items() if name not in in_flight} <= {BUDGET_SPENT}
    recorded = {path.split("/")[1] for path in read_lock(ws).records}
    assert recorded == done  # nothing of a cancelled verify was recorded
    assert leaderboard_difference(ws) is None and report.budget_s == 3.0
    assert sorted(i.name for i in plan(ws, gpu_name=None).items) == not_run  # still out of date: run again
    assert any("not run: the budget is spent" in m for m in messages)


def test_the_estimate_uses_recorded_times_then_the_measured_seconds_per_verify() -> None:
    estimate = Estimate(history={})
    estimate.add_job("a", 30.0)  # its newest record's verify took 30 s
    estimate.add_job("b", None)
    assert estimate.left_s(["a", "b"], {}) is None  # nothing says how long b takes yet
    estimate.finished(12.0)  # a verify of this sync
    assert estimate.left_s(["a", "b"], {"a": 10.0}) == pytest.approx(20.0 + 12.0)
    assert estimate.left_s(["a"], {"a": 45.0}) == 0.0  # past its estimate: about to finish, never negative


def test_the_bar_counts_verifies_and_never_reads_done_while_one_runs() -> None:
    seen: list[tuple[int, int, str]] = []
    counter = RunCounter(lambda done, total, message: seen.append((done, total, message)))
    jobs = [Job(key=k, target=k, baseline="", candidate="", rounds=7, timeout_s=None, device_kind="cpu") for k in "ab"]
    counter.plan(jobs, {"a": 20.0})
    for done in range(1, 29):  # a verify may run up to max_rounds (2n) rounds: the count does not move
        counter.lane_status("cpu", f"a: round {done // 2 + 1}/14 candidate: ok", done)
    assert {(d, t) for d, t, _ in seen} == {(0, 2)}
    counter.finish(jobs[0])  # it stopped after 3 rounds or 14: one verify done either way
    counter.lane_status("cpu", "b: round 1/7 baseline: ok", 1)
    assert seen[-1][:2] == (1, 2) and seen[-1][2].startswith("b: round 1/7")
    assert counter.left_s() is not None  # b has no record: the measured verify of a gives its estimate
    counter.finish(jobs[1])
    counter.say("b", "done: inconclusive")
    assert seen[-1][:2] == (2, 2)
