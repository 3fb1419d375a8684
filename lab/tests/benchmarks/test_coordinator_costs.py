"""lab/benchmarks/coordinator_costs.py: its synthetic records are ones `record` accepts (it recomputes every
verdict from the runs), and one small size measures every cost, the sync step recording each time."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "lab" / "benchmarks"))
import coordinator_costs  # noqa: E402


def test_one_small_size_measures_every_cost() -> None:
    row = coordinator_costs.measure(6, repeat=1, max_targets=3)
    assert (row["records"], row["targets"]) == (6, 3)
    costs = ("manifest_load_s", "store_snapshot_s", "lock_rw_s", "leaderboard_s", "record_s", "sync_step_s", "plan_s")
    assert all(row[key] > 0 for key in costs), row
