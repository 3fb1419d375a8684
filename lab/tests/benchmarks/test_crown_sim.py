"""lab/benchmarks/crown_sim.py: the crowning rule it applies, the bound, and the rate's computation (small n)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
REPO = Path(__file__).resolve().parents[3]


def load_module(relative: str):
    spec = importlib.util.spec_from_file_location(Path(relative).stem, REPO / relative)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


sim = load_module("lab/benchmarks/crown_sim.py")
from hotkernel.run.verdict import LookPlan, decide_sequential  # noqa: E402

PLAN = LookPlan.for_rounds(3)


def _faster(ratio: float, jitter: float = 0.002):
    base = [1.0, 1.01, 0.99]
    cand = [b / (ratio * (1 + j)) for b, j in zip(base, (0.0, jitter, -jitter), strict=True)]
    decision = decide_sequential(base, cand, plan=PLAN)
    assert decision.verdict == "faster"
    return decision


def test_a_pair_is_crowned_only_when_both_are_faster_and_their_intervals_overlap() -> None:
    assert sim.crowned(_faster(1.2), _faster(1.2))
    assert not sim.crowned(_faster(1.2), _faster(1.6))  # both faster, intervals apart: not confirmed
    inconclusive = decide_sequential([1.0, 1.01, 0.99], [1.0, 1.01, 0.99], plan=PLAN)
    assert inconclusive.verdict != "faster" and not sim.crowned(_faster(1.2), inconclusive)


def test_upper_bound_is_clopper_pearson() -> None:
    assert sim.upper_bound(0, 30_000) == pytest.approx(1 - 0.05 ** (1 / 30_000), rel=1e-6)  # the "rule of three"
    assert sim.upper_bound(0, 30_000) == pytest.approx(3 / 30_000, rel=0.01)
    assert sim.upper_bound(5, 1000) > 5 / 1000 > sim.upper_bound(0, 1000)


def test_the_rate_counts_pairs_from_the_rules_own_decisions(tmp_path: Path) -> None:
    """Constructed pools: identical times (never faster) and a pool whose candidate is 2x faster in every
    round (always faster, always crowned): the rate is crowned pairs over pairs in each."""
    (tmp_path / "verdict_samples_contract.jsonl").write_text(
        "\n".join(
            json.dumps({"kernel": "same", "process_index": p, "round": p // 2, "arm": "AB"[p % 2], "ms": 1.0})
            for p in range(8)
        )
    )
    row = {"baseline_ms": [2.0, 2.0, 2.0], "candidate_ms": [1.0, 1.0, 1.0]}  # every interval is [2, 2]
    (tmp_path / "aa_verify_h200.jsonl").write_text(json.dumps(row) + "\n")
    result = sim.run(pairs=50, n=3, checks=10, evidence=tmp_path)
    pools = {p["pool"]: p for p in result["pools"]}
    assert pools["contract:same"]["faster_verifies"] == 0 and pools["contract:same"]["crowned_pairs"] == 0
    assert pools["verify"]["faster_verifies"] == 100 and pools["verify"]["crowned_pairs"] == 50
    assert result["pairs"] == 100 and result["crown_rate"] == 0.5 and result["meets_goal"] is False
    assert result["screen_missed"] == 0 and pools["contract:same"]["screen_checked"] == 10
