"""The verdict rule: is a candidate faster, slower, or not distinguishable from its baseline?

Input: per-round times of interleaved runs (round i ran the baseline and the candidate back to back, each in a
fresh process). Rule (``docs/verdicts.md`` says why): d_i = ln(baseline_i / candidate_i), a Student t interval
for mean(d) at confidence 1 - alpha with df = n - 1, speedup = exp(mean d) with interval [exp(lo), exp(hi)].
``faster`` only when the whole interval lies above 1 + epsilon, ``slower`` only when it lies below
1 / (1 + epsilon), otherwise ``inconclusive``. Stdlib only: the tool process imports no numpy/scipy/torch.

``decide`` looks once. ``decide_sequential`` looks after every round from MIN_ROUNDS on, each look with its own
share of alpha (alpha spending, ``LookPlan``), and stops at the first look whose interval lies outside the margin
(faster / slower) or inside it (inconclusive, within margin); by the union bound the chance that any look errs
is at most the sum of the shares, alpha.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from typing import Literal

RULE_NAME = "paired-log-ratio-t"
SEQUENTIAL_RULE_NAME = "paired-log-ratio-t-sequential"
DEFAULT_ALPHA = 0.01  # two-sided error rate of the interval; 0.01 because agents screen many candidates
# practical margin, fraction of the baseline time (0.01 = 1%): the A/A intervals measured on the H200 are
# narrower (docs/verdicts.md), so no per-device noise figure is needed on top of it
MIN_EPSILON = 0.01
MIN_ROUNDS = 3  # fewer paired rounds than this give no usable interval
# Alpha spending over the looks (decide_sequential). The faster / slower boundary: by look k <= n, alpha *
# (1 - EXTENSION_ALPHA_SHARE) * (k / n) ** SPENDING_POWER is spent (a power family: 1 is Pocock-like, 3 O'Brien-
# Fleming-like); the looks after n (up to max_rounds) share EXTENSION_ALPHA_SHARE * alpha equally. The within-
# margin boundary spends WITHIN_ALPHA * k / n by look k <= n; its error (stopping "within margin" when the true
# difference is epsilon or more) is a missed difference, never a false faster or slower.
SPENDING_POWER = 2.0
EXTENSION_ALPHA_SHARE = 0.2  # fraction of alpha kept for the looks after n; 0 when max_rounds == n
WITHIN_ALPHA = 0.05
EXTENSION_FACTOR = 2  # max_rounds = EXTENSION_FACTOR * n unless asked otherwise

Verdict = Literal["faster", "slower", "inconclusive"]
Reason = Literal[
    "interval_above_margin",  # faster: speedup_low > 1 + epsilon
    "interval_below_margin",  # slower: speedup_high < 1 / (1 + epsilon)
    "interval_within_margin",  # inconclusive, and the interval shows any difference is smaller than epsilon
    "interval_overlaps_margin",  # inconclusive: the interval reaches into the margin or across it
    "too_few_rounds",  # inconclusive: n < MIN_ROUNDS
]
# Why a sequential verify stopped: "decided" (faster / slower), "within_margin" (inconclusive, any difference is
# smaller than epsilon), "planned_rounds" (still open at n with the point estimate inside the margin: more
# rounds would not show a difference the margin counts), "max_rounds" (still open at the cap); verify adds
# "failed" (an incorrect / invalid run ended it) and "cancelled".
Stop = Literal["decided", "within_margin", "planned_rounds", "max_rounds", "failed", "cancelled"]


@dataclass(frozen=True)
class Decision:
    """A verdict with the speedup (baseline_ms / candidate_ms; > 1 means faster) and its interval."""

    verdict: Verdict
    reason: Reason
    speedup: float | None  # exp(mean d); None when there are no rounds
    speedup_low: float | None  # exp(lower end of the t interval); None when n < MIN_ROUNDS
    speedup_high: float | None
    n: int  # paired rounds
    alpha: float  # two-sided; the interval has confidence 1 - alpha
    epsilon: float  # practical margin as a fraction (0.01 = 1%)
    rule: str = RULE_NAME
    log_ratio_sd: float | None = None  # sample sd of d_i (ddof=1); 0.0 when every round had the same ratio
    t_critical: float | None = None  # Student t quantile 1 - alpha/2 at df = n - 1
    # decide_sequential only: alpha of the whole verify (``alpha`` above is this look's share of it), the
    # planned rounds, the cap, and why it stopped
    alpha_total: float | None = None
    planned_rounds: int | None = None
    max_rounds: int | None = None
    stopped: Stop | None = None

    def as_dict(self) -> dict:
        """Plain JSON-serialisable dict (for run records and MCP replies)."""
        return asdict(self)

    def summary(self) -> str:
        """One line for people, e.g. ``faster: 1.042x [1.031, 1.053] (99% interval, margin 1.0%, n=7)``."""
        if self.speedup_low is None or self.speedup_high is None:
            return f"{self.verdict}: {self.reason} (n={self.n}, need {MIN_ROUNDS})"
        return (
            f"{self.verdict}: {self.speedup:.3f}x [{self.speedup_low:.3f}, {self.speedup_high:.3f}] "
            f"({100 * (1 - self.alpha):g}% interval, margin {100 * self.epsilon:.1f}%, n={self.n})"
        )


def _regularized_incomplete_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b) by Lentz's continued fraction (Numerical Recipes 6.4), relative error ~1e-14."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1.0) / (a + b + 2.0):  # the fraction converges fast only below this point
        return 1.0 - _regularized_incomplete_beta(1.0 - x, b, a)
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return math.exp(log_front) * fraction / a


def student_t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom (df > 0, need not be an integer)."""
    if df <= 0 or math.isnan(t):
        raise ValueError(f"student_t_cdf: need df > 0 and a number, got t={t}, df={df}")
    tail = 0.5 * _regularized_incomplete_beta(df / (df + t * t), df / 2.0, 0.5)  # P(T > |t|)
    return 1.0 - tail if t > 0 else tail


@lru_cache(maxsize=256)
def student_t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p (p=0.995, df=6 -> 3.7074): closed forms for df 1 and 2, else bisection."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"student_t_quantile: need 0 < p < 1 and df > 0, got p={p}, df={df}")
    if p < 0.5:
        return -student_t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    low, high = 0.0, 1.0
    while student_t_cdf(high, df) < p:
        low, high = high, 2 * high
    for _ in range(200):  # bisection on a monotone cdf: slow but cannot diverge; ~1e-13 absolute
        mid = 0.5 * (low + high)
        if student_t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-13 * high:
            break
    return 0.5 * (low + high)


def aa_noise(first_ms: list[float], second_ms: list[float], *, alpha: float = DEFAULT_ALPHA) -> float:
    """A/A noise of two runs of one code: the largest relative difference their interval cannot exclude."""
    decision = decide(first_ms, second_ms, alpha=alpha, epsilon=0.0)
    if decision.speedup_low is None or decision.speedup_high is None:
        raise ValueError(f"aa_noise: need at least {MIN_ROUNDS} paired rounds, got {decision.n}")
    return max(decision.speedup_high - 1.0, 1.0 - decision.speedup_low)


def _check_times(name: str, values: list[float]) -> None:
    for index, value in enumerate(values):
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"verdict: {name}[{index}] = {value!r}; every time must be a finite number > 0 ms")


def decide(
    baseline_ms: list[float],
    candidate_ms: list[float],
    *,
    alpha: float = DEFAULT_ALPHA,
    epsilon: float = MIN_EPSILON,
) -> Decision:
    """The verdict for paired rounds: ``baseline_ms[i]`` and ``candidate_ms[i]`` ran in the same round."""
    if len(baseline_ms) != len(candidate_ms):
        raise ValueError(
            f"decide: {len(baseline_ms)} baseline times but {len(candidate_ms)} candidate times; "
            "pass one time per arm per round"
        )
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"decide: alpha must lie in (0, 1), got {alpha}")
    if not math.isfinite(epsilon) or epsilon < 0:
        raise ValueError(f"decide: epsilon must be a fraction >= 0, got {epsilon}")
    _check_times("baseline_ms", baseline_ms)
    _check_times("candidate_ms", candidate_ms)
    n = len(baseline_ms)
    log_ratios = [math.log(b / c) for b, c in zip(baseline_ms, candidate_ms, strict=True)]
    common = {"n": n, "alpha": alpha, "epsilon": epsilon}
    if n < MIN_ROUNDS:
        point = math.exp(sum(log_ratios) / n) if n else None
        return Decision("inconclusive", "too_few_rounds", point, None, None, **common)
    mean = sum(log_ratios) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in log_ratios) / (n - 1))
    if sd <= 1e-12 * max(1.0, abs(mean)):  # identical ratios up to rounding: the interval is the point
        sd = 0.0
    t_critical = student_t_quantile(1.0 - alpha / 2.0, n - 1)
    half_width = t_critical * sd / math.sqrt(n)
    low, high = math.exp(mean - half_width), math.exp(mean + half_width)
    if low > 1.0 + epsilon:
        verdict, reason = "faster", "interval_above_margin"
    elif high < 1.0 / (1.0 + epsilon):
        verdict, reason = "slower", "interval_below_margin"
    elif low >= 1.0 / (1.0 + epsilon) and high <= 1.0 + epsilon:
        verdict, reason = "inconclusive", "interval_within_margin"
    else:
        verdict, reason = "inconclusive", "interval_overlaps_margin"
    return Decision(verdict, reason, math.exp(mean), low, high, **common, log_ratio_sd=sd, t_critical=t_critical)


@dataclass(frozen=True)
class LookPlan:
    """The looks of a sequential verify: one after every round k from MIN_ROUNDS to ``max_rounds``, planned
    around ``n`` rounds (the target's n). Stored in the verify result (``n``, ``max_rounds``) so the decision can
    be recomputed from the per-round times alone."""

    n: int
    max_rounds: int

    def __post_init__(self) -> None:
        if self.n < 1 or self.max_rounds < self.n:
            raise ValueError(f"LookPlan: need 1 <= n <= max_rounds, got n={self.n}, max_rounds={self.max_rounds}")

    @classmethod
    def for_rounds(cls, n: int, max_rounds: int | None = None) -> LookPlan:
        """The default plan: the cap EXTENSION_FACTOR * n (no extension below MIN_ROUNDS rounds)."""
        if max_rounds is None:
            max_rounds = EXTENSION_FACTOR * n if n >= MIN_ROUNDS else n
        return cls(n=n, max_rounds=max(n, max_rounds))

    def spent(self, k: int, alpha: float) -> float:
        """Alpha spent by looks MIN_ROUNDS .. k (0 before the first look, ``alpha`` at the last)."""
        if k < MIN_ROUNDS:
            return 0.0
        if k >= self.max_rounds:
            return alpha
        main = alpha * (1.0 - EXTENSION_ALPHA_SHARE) if self.max_rounds > self.n else alpha
        if k <= self.n:
            return main * (k / self.n) ** SPENDING_POWER
        return main + (alpha - main) * (k - self.n) / (self.max_rounds - self.n)

    def look_alpha(self, k: int, alpha: float) -> float:
        """The share of ``alpha`` the faster / slower test after round k spends (two-sided t interval)."""
        return self.spent(k, alpha) - self.spent(k - 1, alpha)

    def within_alpha(self, k: int) -> float:
        """The share of WITHIN_ALPHA the within-margin test after round k spends; 0 after n (no such test)."""
        if k < MIN_ROUNDS or k > self.n:
            return 0.0
        return WITHIN_ALPHA * (k if k == MIN_ROUNDS else 1) / self.n


def decide_sequential(
    baseline_ms: list[float],
    candidate_ms: list[float],
    *,
    plan: LookPlan,
    alpha: float = DEFAULT_ALPHA,
    epsilon: float = MIN_EPSILON,
) -> Decision:
    """The sequential verdict on the rounds run so far. At each look k = MIN_ROUNDS, ...: faster / slower when
    the interval at the look's share of ``alpha`` lies outside the margin; inconclusive when the interval at
    the look's share of WITHIN_ALPHA lies inside it; at k = n, inconclusive when the point estimate lies inside
    the margin; at ``plan.max_rounds``, whatever the interval says. Else the last look (the verify goes on).
    A pure function of the per-round times, ``alpha``, ``epsilon`` and ``plan``."""
    if len(baseline_ms) > plan.max_rounds:
        raise ValueError(f"decide_sequential: {len(baseline_ms)} rounds but the plan stops at {plan.max_rounds}")
    if len(baseline_ms) < MIN_ROUNDS:
        decision = decide(baseline_ms, candidate_ms, alpha=alpha, epsilon=epsilon)
        return _sequential(decision, plan, alpha, "max_rounds")
    margin = math.log1p(epsilon)
    for k in range(MIN_ROUNDS, len(baseline_ms) + 1):
        rounds = (baseline_ms[:k], candidate_ms[:k])
        decision = decide(*rounds, alpha=plan.look_alpha(k, alpha), epsilon=epsilon)
        if decision.verdict != "inconclusive":
            return _sequential(decision, plan, alpha, "decided")
        within = plan.within_alpha(k)
        inside = decide(*rounds, alpha=within, epsilon=epsilon) if within > 0 else None
        if inside is not None and inside.reason == "interval_within_margin":
            return _sequential(inside, plan, alpha, "within_margin")
        if k == plan.n and abs(math.log(decision.speedup)) <= margin:  # type: ignore[arg-type]
            return _sequential(decision, plan, alpha, "planned_rounds")
    return _sequential(decision, plan, alpha, "max_rounds")


def _sequential(decision: Decision, plan: LookPlan, alpha: float, stopped: Stop) -> Decision:
    return replace(
        decision,
        rule=SEQUENTIAL_RULE_NAME,
        alpha_total=alpha,
        planned_rounds=plan.n,
        max_rounds=plan.max_rounds,
        stopped=stopped,
    )


def seed_rule(baseline_ms: list[float], candidate_ms: list[float]) -> Verdict:
    """The seed's rule, kept only for side-by-side comparison: |mean_b - mean_c| > 2 * sqrt(s_b²/n + s_c²/n).

    Unpaired, critical value 2 whatever n is: ~7-9% false verdicts at n=7 (docs/verdicts.md). Do not use it.
    """
    _check_times("baseline_ms", baseline_ms)
    _check_times("candidate_ms", candidate_ms)
    n_b, n_c = len(baseline_ms), len(candidate_ms)
    if n_b < 2 or n_c < 2:
        return "inconclusive"
    mean_b, mean_c = sum(baseline_ms) / n_b, sum(candidate_ms) / n_c
    var_b = sum((x - mean_b) ** 2 for x in baseline_ms) / (n_b - 1)
    var_c = sum((x - mean_c) ** 2 for x in candidate_ms) / (n_c - 1)
    if abs(mean_b - mean_c) <= 2.0 * math.sqrt(var_b / n_b + var_c / n_c):
        return "inconclusive"
    return "faster" if mean_c < mean_b else "slower"
