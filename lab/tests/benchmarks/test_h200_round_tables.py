"""lab/benchmarks/level_times.py and fresh_vs_board.py on the committed evidence of the 2026-12-05 H200 leases:
the figures docs/performance.md and docs/leaderboard.md quote."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "lab" / "benchmarks")]
import fresh_vs_board  # noqa: E402
import level_times  # noqa: E402

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
    fresh_vs_board.main([os.fspath(p) for p in reports])
    printed = capsys.readouterr().out
    assert printed == (EVIDENCE / "h200_round_20261205b" / "fresh_vs_board.txt").read_text()
    assert printed.count(" inside") == 6 and printed.count(" above") == 3 and printed.count(" below") == 1
