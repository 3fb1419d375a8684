"""lab/benchmarks/level_times.py, fresh_vs_board.py and rerun_range_backtest.py on the committed evidence of the
2026-12-05 H200 leases and records: the figures docs/performance.md and docs/leaderboard.md quote."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "lab" / "benchmarks")]
import fresh_vs_board  # noqa: E402
import level_times  # noqa: E402
import rerun_range_backtest  # noqa: E402

EVIDENCE = ROOT / "lab" / "benchmarks" / "evidence"
LEVEL1 = [
    EVIDENCE / d / "kernelbench_l1_sync" / "records.tar.gz" for d in ("h200_round_20261205", "h200_round_20261205b")
]


def test_level_one_times_over_both_leases(capsys: pytest.CaptureFixture[str]) -> None:
    level_times.main([str(p) for p in LEVEL1])
    lines = capsys.readouterr().out.splitlines()
    rows, summary = lines[:-1], lines[-1]
    assert len(rows) == 52 and all(" inconclusive " in row for row in rows)
    assert summary.startswith("52 verifies, mean 15.8 s")
    assert sum("rounds=3 within_margin" in row for row in rows) == 49


def test_fresh_syncs_against_the_board_before_them(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    reports = [EVIDENCE / "h200_round_20261205b" / "sync" / f"sync_{i}.json" for i in (1, 2)]
    fresh_vs_board.main(["--min-max", *(os.fspath(p) for p in reports)])
    printed = capsys.readouterr().out
    assert printed == (EVIDENCE / "h200_round_20261205b" / "fresh_vs_board.txt").read_text()
    assert printed.count(" inside") == 6 and printed.count(" above") == 3 and printed.count(" below") == 1


def _after_command(path: Path) -> tuple[str, str]:
    """A committed output whose first line is the command that wrote it: (the command, the rest)."""
    command, _, rest = path.read_text().partition("\n")
    assert command.startswith("$ python lab/benchmarks/")
    return command[2:], rest


def test_fresh_syncs_against_the_prediction_range(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    """The same two syncs against the prediction range the board states now: 8 of 10 sync medians inside it (6 of
    10 inside the min-max), the two outside by 0.002% and 0.028%."""
    monkeypatch.chdir(ROOT)
    command, expected = _after_command(EVIDENCE / "h200_round_20261205b" / "fresh_vs_board_rerun_range.txt")
    fresh_vs_board.main(command.split()[2:])
    printed = capsys.readouterr().out
    assert printed == expected
    assert printed.count("prediction inside") == 8 and printed.count("min-max inside") == 6
    assert "prediction below by 0.002%" in printed and "prediction above by 0.028%" in printed


def test_rerun_range_backtest_matches_its_committed_output(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    command, expected = _after_command(EVIDENCE / "performance" / "rerun_range_backtest_20261205.txt")
    rerun_range_backtest.main(command.split()[2:])
    printed = capsys.readouterr().out
    assert printed == expected
    totals = printed.split("all GPU targets:\n")[1]
    assert "prediction: session medians 65/72 inside (90%), runs 110/125 inside (88%)" in totals
    assert "min-max: session medians 44/76 inside (58%), runs 77/133 inside (58%)" in totals
