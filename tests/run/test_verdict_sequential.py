"""The sequential verdict rule: alpha spending over the looks, where it stops, and that a record's per-round
times alone give its decision again."""

from __future__ import annotations

import math
import random

import pytest

from hotkernel.run.verdict import (
    DEFAULT_ALPHA,
    EXTENSION_ALPHA_SHARE,
    MIN_ROUNDS,
    WITHIN_ALPHA,
    LookPlan,
    decide,
    decide_sequential,
)


def test_plan_spends_exactly_alpha_over_its_looks() -> None:
    for n, cap in ((3, 3), (5, 10), (7, 14), (7, 7), (15, 30)):
        plan = LookPlan(n=n, max_rounds=cap)
        shares = [plan.look_alpha(k, DEFAULT_ALPHA) for k in range(MIN_ROUNDS, cap + 1)]
        assert all(share > 0 for share in shares)
        assert sum(shares) == pytest.approx(DEFAULT_ALPHA, rel=1e-12)
        by_n = sum(shares[: n - MIN_ROUNDS + 1])
        expected = DEFAULT_ALPHA * (1 - EXTENSION_ALPHA_SHARE) if cap > n else DEFAULT_ALPHA
        assert by_n == pytest.approx(expected, rel=1e-12)
        within = [plan.within_alpha(k) for k in range(MIN_ROUNDS, cap + 1)]
        assert sum(within) == pytest.approx(WITHIN_ALPHA, rel=1e-12) and within[n - MIN_ROUNDS + 1 :] == [0] * (cap - n)


def test_plan_defaults_and_bad_plans() -> None:
    assert LookPlan.for_rounds(7) == LookPlan(n=7, max_rounds=14)
    assert LookPlan.for_rounds(2) == LookPlan(n=2, max_rounds=2)  # a smoke run is never extended
    assert LookPlan.for_rounds(7, 7).max_rounds == 7
    with pytest.raises(ValueError, match="LookPlan"):
        LookPlan(n=7, max_rounds=6)


BASE = [1.000, 1.004, 0.997, 1.002, 0.999, 1.003, 0.998, 1.001, 0.996, 1.002, 1.0, 0.999, 1.003, 1.001]


def test_clear_speedup_stops_at_the_first_look() -> None:
    plan = LookPlan.for_rounds(7)
    decision = decide_sequential(BASE[:3], [x / 1.5 for x in BASE[:3]], plan=plan)
    assert decision.verdict == "faster" and decision.stopped == "decided" and decision.n == MIN_ROUNDS
    assert decision.alpha == pytest.approx(plan.look_alpha(MIN_ROUNDS, DEFAULT_ALPHA))
    assert decision.alpha_total == DEFAULT_ALPHA and (decision.planned_rounds, decision.max_rounds) == (7, 14)
    assert decision.rule == "paired-log-ratio-t-sequential"
    slower = decide_sequential(BASE[:3], [x * 1.5 for x in BASE[:3]], plan=plan)
    assert slower.verdict == "slower" and slower.stopped == "decided"


def test_identical_code_stops_within_margin_before_n() -> None:
    candidate = [x * (1 + 0.0005 * (-1) ** i) for i, x in enumerate(BASE)]
    decision = decide_sequential(BASE[:7], candidate[:7], plan=LookPlan.for_rounds(7))
    assert decision.verdict == "inconclusive" and decision.stopped == "within_margin"
    assert decision.reason == "interval_within_margin" and decision.n < 7


def test_open_at_n_stops_only_when_the_point_estimate_is_inside_the_margin() -> None:
    noise = [math.exp(0.03 * (-1) ** i) for i in range(len(BASE))]  # mean log ratio 0.03/7 at n = 7
    plan = LookPlan.for_rounds(7)
    near = decide_sequential(BASE[:7], [b * e for b, e in zip(BASE, noise, strict=False)][:7], plan=plan)
    assert near.stopped == "planned_rounds" and near.n == 7 and near.verdict == "inconclusive"
    far = [b * e / 1.05 for b, e in zip(BASE, noise, strict=False)]
    open_at_n = decide_sequential(BASE[:7], far[:7], plan=plan)
    assert open_at_n.stopped == "max_rounds" and open_at_n.n == 7  # not stopped: the verify goes on
    assert abs(math.log(open_at_n.speedup)) > math.log1p(0.01)
    last = decide_sequential(BASE, far, plan=plan)
    assert last.n == 14 and last.stopped in ("decided", "max_rounds")


def test_decision_follows_from_the_recorded_rounds_alone() -> None:
    """Re-deciding the rounds a verify stopped at returns the same decision (what a record is checked by)."""
    rng = random.Random(7)
    plan = LookPlan.for_rounds(7)
    for shift in (1.0, 1.01, 1.03, 1.2, 0.9):
        baseline = [math.exp(rng.gauss(0, 0.01)) for _ in range(14)]
        candidate = [b * math.exp(rng.gauss(0, 0.01)) / shift for b in baseline]
        k = MIN_ROUNDS
        while k < plan.max_rounds:
            if decide_sequential(baseline[:k], candidate[:k], plan=plan).stopped != "max_rounds":
                break
            k += 1
        stopped = decide_sequential(baseline[:k], candidate[:k], plan=plan)
        assert decide_sequential(baseline[:k], candidate[:k], plan=plan) == stopped
        assert stopped.n == k


def test_sequential_aa_false_verdicts_stay_below_alpha() -> None:
    """Identical code, run to the cap when open: any faster/slower verdict counts (1% goal; the union bound)."""
    rng = random.Random(20261205)
    plan, simulations, false = LookPlan.for_rounds(7), 4000, 0
    for _ in range(simulations):
        baseline = [0.035 * math.exp(rng.gauss(0, 0.01)) for _ in range(plan.max_rounds)]
        candidate = [0.035 * math.exp(rng.gauss(0, 0.01)) for _ in range(plan.max_rounds)]
        false += decide_sequential(baseline, candidate, plan=plan).verdict != "inconclusive"
    assert false / simulations <= 0.01


def test_too_few_rounds_and_bad_input() -> None:
    plan = LookPlan.for_rounds(2)
    decision = decide_sequential([1.0, 1.0], [0.5, 0.5], plan=plan)
    assert decision.reason == "too_few_rounds" and decision.stopped == "max_rounds"
    with pytest.raises(ValueError, match="plan stops at"):
        decide_sequential(BASE, BASE, plan=LookPlan(n=7, max_rounds=7))
    with pytest.raises(ValueError, match="every time must be"):
        decide_sequential([1.0, 1.0, -1.0], [1.0, 1.0, 1.0], plan=LookPlan.for_rounds(7))
    assert decide(BASE[:7], BASE[:7]).rule == "paired-log-ratio-t"  # the one-look rule is unchanged
