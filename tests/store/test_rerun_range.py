"""The board's prediction range for a fresh run: sessions, variance components, the t quantile, the cells."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from store.record_factory import make_workspace, synthetic_result

from hotkernel.run.verdict import student_t_quantile as t_quantile
from hotkernel.store.headline import MIN_MAX_HEADER, RERUN_HEADER, rerun_range_cell, same_files_cell
from hotkernel.store.leaderboard import best_entries, board_rows, write_leaderboard
from hotkernel.store.models import BestEntry, Provenance
from hotkernel.store.record import record
from hotkernel.store.rerun_range import RunPoint, group_sessions, rerun_range
from hotkernel.store.rows import run_sessions

E = math.exp


@pytest.mark.parametrize(
    ("p", "df", "expected"),
    [(0.975, 1, 12.7062), (0.975, 2, 4.3027), (0.975, 4, 2.7764), (0.975, 10, 2.2281), (0.995, 1, 63.6567)],
)
def test_t_quantile_matches_the_tables(p: float, df: int, expected: float) -> None:
    assert t_quantile(p, df) == pytest.approx(expected, abs=1e-4)


def test_two_sessions_by_hand() -> None:
    """Logs (0.01, -0.01) and (0.03, 0.01): session means 0 and 0.02, MSW = 4 * 0.01^2 / 2 = 2e-4, MSB = 2 *
    2 * 0.01^2 / 1 = 4e-4, n0 = 2, so s_b^2 = 1e-4; the centre's variance (2 * (1e-4 + 2e-4 / 2)) / 4 = 1e-4; a
    new run's sd sqrt(1e-4 + 2e-4 + 1e-4) = 0.02, times t(0.975, 1 df) = 12.706."""
    got = rerun_range([[E(0.01), E(-0.01)], [E(0.03), E(0.01)]], centre=1.5)
    assert (got.sessions, got.runs) == (2, 4)
    assert got.between_sd == pytest.approx(0.01) and got.within_sd == pytest.approx(math.sqrt(2e-4))
    assert got.low == pytest.approx(1.5 * E(-12.7062 * 0.02), rel=1e-5)
    assert got.high == pytest.approx(1.5 * E(12.7062 * 0.02), rel=1e-5)


def test_one_session_states_no_range() -> None:
    """One session, however many runs, says nothing about the spread between sessions."""
    got = rerun_range([[1.20, 1.21, 1.19, 1.20]], centre=1.20)
    assert got.sessions == 1 and got.runs == 4
    assert got.low is None and got.high is None and got.between_sd is None and got.t is None


def test_many_sessions_of_one_run_use_their_sample_variance() -> None:
    """Five sessions of one run, logs -0.02..0.02: s^2 = 1e-3 / 4 = 2.5e-4 estimates both components together,
    the centre's variance is s^2 / 5, and t has 4 degrees of freedom."""
    got = rerun_range([[E(x)] for x in (-0.02, -0.01, 0.0, 0.01, 0.02)], centre=2.0)
    half = 2.776445 * math.sqrt(2.5e-4 * (1 + 1 / 5))
    assert got.within_sd is None and got.between_sd == pytest.approx(math.sqrt(2.5e-4))
    assert got.low == pytest.approx(2.0 * E(-half), rel=1e-6) and got.high == pytest.approx(2.0 * E(half), rel=1e-6)


def test_no_spread_between_sessions_is_truncated_at_zero() -> None:
    """Sessions with equal means: MSB = 0 < MSW, so the between-session variance is 0, not negative; the range
    is then the within spread, widened by the centre's uncertainty and t on k - 1 degrees of freedom."""
    sessions = [[E(0.01), E(-0.01)] for _ in range(4)]
    got = rerun_range(sessions, centre=1.0)
    var_w = 4 * 2 * 1e-4 / 4  # SSW = 8e-4 over N - k = 4
    half = t_quantile(0.975, 3) * math.sqrt(var_w + 4 * var_w / 2 / 16)
    assert got.between_sd == 0.0 and got.high == pytest.approx(E(half), rel=1e-9)


def test_more_sessions_of_the_same_spread_narrow_the_range_and_it_is_centred_on_the_median() -> None:
    pattern = [E(0.004), E(-0.004), E(0.0), E(0.008), E(-0.008)]  # session means, repeating
    widths = []
    for k in (2, 3, 5, 10, 20):
        got = rerun_range([[m * E(0.001), m * E(-0.001)] for m in (pattern * 4)[:k]], centre=1.3)
        assert got.low is not None and got.high is not None
        assert got.low * got.high == pytest.approx(1.3**2)  # symmetric on the log scale around the centre
        widths.append(math.log(got.high / got.low))
    assert widths == sorted(widths, reverse=True)


def _run(machine: str, at: str, point: float = 1.0) -> RunPoint:
    return RunPoint(machine=machine, created_at=at, point=point)


def test_sessions_are_runs_of_one_machine_under_an_hour_apart() -> None:
    runs = [
        _run("GPU-b", "2026-12-02T10:00:00Z", 2.0),
        _run("GPU-a", "2026-12-01T10:00:00Z", 1.0),
        _run("GPU-a", "2026-12-01T10:03:00Z", 1.1),  # minutes later: the same lease
        _run("GPU-a", "2026-12-01T10:55:00Z", 1.2),  # 52 minutes after the previous run: still chained
        _run("GPU-a", "2026-12-01T12:00:00Z", 1.3),  # 65 minutes later: a new session on the same card
        _run("GPU-c", "2026-12-01T10:01:00Z", 1.4),  # another card at the same time: its own session
    ]
    got = [[(r.machine, r.point) for r in s] for s in group_sessions(runs)]
    assert got == [
        [("GPU-a", 1.0), ("GPU-a", 1.1), ("GPU-a", 1.2)],
        [("GPU-c", 1.4)],
        [("GPU-a", 1.3)],
        [("GPU-b", 2.0)],
    ]


def _provenance(device: str, gpu_uuid: str | None) -> Provenance:
    return Provenance(device=device, device_kind="cpu", gpu_uuid=gpu_uuid, cpu="test cpu", hotkernel="0.0.test")


def test_rows_group_by_gpu_uuid_and_cpu_rows_by_device(tmp_path: Path) -> None:
    """Records of one device written within minutes: on two GPUs (by UUID) they are two sessions; without a
    UUID (a CPU) they are one, keyed by the device name."""
    ws = make_workspace(tmp_path)
    for uuid, speedup in (
        ("GPU-a", 1.300),
        ("GPU-a", 1.303),
        ("GPU-b", 1.298),
        ("GPU-b", 1.301),
        (None, 1.2),
        (None, 1.2),
    ):
        device = "Dev G" if uuid else "CPU Test (2 CPUs)"
        res = synthetic_result("rmsnorm", "faster", speedup, device=device, candidate="A")
        record(ws, "rmsnorm", res, note="run", who="w", provenance=_provenance(device, uuid), board=False)
    rows = [r for r in board_rows(ws) if r.role == "candidate"]
    assert {r.machine for r in rows} == {"GPU-a", "GPU-b", "CPU Test (2 CPUs)"}
    gpu = [r for r in rows if r.device == "Dev G"]
    cpu = [r for r in rows if r.device != "Dev G"]
    assert [len(s) for s in run_sessions(gpu)] == [2, 2] and [len(s) for s in run_sessions(cpu)] == [2]
    entries = {e.device: e for e in best_entries(board_rows(ws))}
    gpu_entry, cpu_entry = entries["Dev G"], entries["CPU Test (2 CPUs)"]
    assert gpu_entry.same_files_sessions == 2 and gpu_entry.rerun_low is not None
    assert gpu_entry.rerun_low < gpu_entry.median < gpu_entry.rerun_high  # type: ignore[operator]
    assert cpu_entry.same_files_sessions == 1 and cpu_entry.rerun_low is None


def test_the_board_states_both_ranges_and_says_which_is_which(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    for uuid, speedup in (("GPU-a", 1.300), ("GPU-a", 1.303), ("GPU-b", 1.298), ("GPU-b", 1.301)):
        res = synthetic_result("rmsnorm", "faster", speedup, device="Dev G", candidate="A")
        record(ws, "rmsnorm", res, note="run", who="w", provenance=_provenance("Dev G", uuid), board=False)
    write_leaderboard(ws)
    text = ws.leaderboard.read_text()
    assert f"| {MIN_MAX_HEADER} | {RERUN_HEADER} |" in text
    assert "every run of the same files: count, min-max" in text and "a fresh run: 95% prediction range" in text
    entry = next(e for e in best_entries(board_rows(ws)) if e.best is not None)
    row = next(line for line in text.splitlines() if line.startswith("| rmsnorm | Dev G | "))
    assert f"| {same_files_cell(entry)} | {rerun_range_cell(entry)} |" in row
    assert rerun_range_cell(entry).endswith("x (2 sessions)")
    assert write_leaderboard(ws) and ws.leaderboard.read_text() == text  # byte-identical for the same records


def test_cells() -> None:
    entry = BestEntry(
        target="t",
        device="d",
        same_files_runs=29,
        same_files_point_low=1.016,
        same_files_point_high=1.031,
        same_files_not_faster=1,
        same_files_sessions=15,
        rerun_low=1.01749,
        rerun_high=1.03251,
    )
    assert same_files_cell(entry) == "29 runs: 1.016-1.031x, 1 not faster"
    assert rerun_range_cell(entry) == "1.017-1.033x (15 sessions)"
    lone = entry.model_copy(update={"same_files_sessions": 1, "rerun_low": None, "rerun_high": None})
    assert rerun_range_cell(lone) == "not stated: 1 session, spread between sessions unknown"
    assert rerun_range_cell(BestEntry(target="t", device="d")) == ""
