"""The verdict rule: is a candidate faster, slower, or not distinguishable from its baseline?

Input: per-round times of interleaved runs (round i ran the baseline and the candidate back to back, each in a
fresh process). Rule (``docs/verdicts.md`` says why): d_i = ln(baseline_i / candidate_i), a Student t interval
for mean(d) at confidence 1 - alpha with df = n - 1, speedup = exp(mean d) with interval [exp(lo), exp(hi)].
``faster`` only when the whole interval lies above 1 + epsilon, ``slower`` only when it lies below
1 / (1 + epsilon), otherwise ``inconclusive``. Stdlib only: the tool process imports no numpy/scipy/torch.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Literal

RULE_NAME = "paired-log-ratio-t"
DEFAULT_ALPHA = 0.01  # two-sided error rate of the interval; 0.01 because agents screen many candidates
# practical margin, fraction of the baseline time (0.01 = 1%): the A/A intervals measured on the H200 are
# narrower (docs/verdicts.md), so no per-device noise figure is needed on top of it
MIN_EPSILON = 0.01
MIN_ROUNDS = 3  # fewer paired rounds than this give no usable interval

Verdict = Literal["faster", "slower", "inconclusive"]
Reason = Literal[
    "interval_above_margin",  # faster: speedup_low > 1 + epsilon
    "interval_below_margin",  # slower: speedup_high < 1 / (1 + epsilon)
    "interval_within_margin",  # inconclusive, and the interval shows any difference is smaller than epsilon
    "interval_overlaps_margin",  # inconclusive: the interval reaches into the margin or across it
    "too_few_rounds",  # inconclusive: n < MIN_ROUNDS
]


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
