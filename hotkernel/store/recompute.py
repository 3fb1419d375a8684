"""A record is what the runner measured: recompute a verify result's verdict, speedup and interval from the
per-round times it carries, with the verdict rule (``hotkernel.run.verdict``), and name the first field that
does not follow from them.

``record`` refuses a result with a problem; the board (``scan_results``) lists a vouched record with one as
unverified, so ``leaderboard --check`` and ``sync --check`` fail naming it. What this cannot catch (per-round
times made up consistently) is in ``docs/security.md``; ``hotkernel audit`` re-runs the files instead.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from hotkernel.run.models import RunSummary, VerifyResult
from hotkernel.run.verdict import DEFAULT_ALPHA, MIN_EPSILON, Decision, LookPlan, decide, decide_sequential

MEASURED = ("faster", "slower", "inconclusive")
REL_TOL = 1e-9  # the rule is deterministic: a stored float differs from its recomputation only by rounding


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=0.0)


def round_times(result: VerifyResult) -> tuple[list[float], list[float]]:
    """The per-round times (baseline, candidate) in round order, from the stats each side carries."""
    return list(result.baseline.stats.samples_ms), list(result.candidate.stats.samples_ms)


def sequential(result: VerifyResult) -> bool:
    """Whether the result was decided by the sequential rule (it carries its look plan) or looked once at n."""
    return result.max_rounds is not None or result.stopped is not None


def decision_of(result: VerifyResult) -> Decision:
    """The verdict rule's decision on the result's per-round times, with the result's alpha, epsilon and look
    plan (``decide_sequential``); a result made before the sequential rule looked once, at n (``decide``)."""
    alpha = DEFAULT_ALPHA if result.alpha is None else result.alpha
    epsilon = MIN_EPSILON if result.epsilon is None else result.epsilon
    baseline, candidate = round_times(result)
    if sequential(result):
        plan = LookPlan(n=result.n, max_rounds=result.max_rounds or result.n)
        return decide_sequential(baseline, candidate, plan=plan, alpha=alpha, epsilon=epsilon)
    return decide(baseline, candidate, alpha=alpha, epsilon=epsilon)


def point_speedup(result: VerifyResult) -> float | None:
    """The speedup the rule's point estimate gives for a measured verdict (inconclusive included), else None."""
    if result.verdict not in MEASURED:
        return None
    try:
        return decision_of(result).speedup
    except ValueError:
        return None


def _runs_problem(result: VerifyResult, target: str | None) -> str | None:
    """The per-run data must agree with the summary: ok runs' times are the samples, hashes and target match."""
    timed = [r for r in result.runs if r.index >= 0]
    if not timed:
        return None  # a result made before runs were kept: the samples are all there is
    for role, side in (("baseline", result.baseline), ("candidate", result.candidate)):
        mine: list[RunSummary] = sorted((r for r in timed if r.role == role), key=lambda r: r.index)
        if any(r.status != "ok" for r in mine):
            return f"a {role} run did not finish ok, but the verdict is {result.verdict}"
        if [r.ms for r in mine] != list(side.stats.samples_ms):
            return f"the {role} samples differ from the {role} runs' times"
        for run in mine:
            data: dict[str, Any] = run.data or {}
            if data.get("script_sha256") not in (None, side.sha256):
                return f"the {role} run {run.index + 1} measured a file other than the sha256 the result names"
            if data.get("contract_sha256") not in (None, result.contract_sha256):
                return f"the {role} run {run.index + 1} used a contract other than the one the result names"
            if target is not None and data.get("target") not in (None, target):
                return f"the {role} run {run.index + 1} measured target {data.get('target')!r}, not {target!r}"
    return None


def _stats_problem(result: VerifyResult) -> str | None:
    for role, side in (("baseline", result.baseline), ("candidate", result.candidate)):
        samples, stats = side.stats.samples_ms, side.stats
        if stats.n != len(samples):
            return f"the {role} sample count {stats.n} is not its {len(samples)} samples"
        if samples and not _close(stats.median_ms, statistics.median(samples)):
            return f"the {role} median {stats.median_ms} ms is not its samples' median"
    return None


def recompute_problem(result: VerifyResult, target: str | None = None) -> str | None:
    """None when the verdict, speedup and interval follow from the per-round times by the verdict rule (with a
    significance level and margin at least as strict as the rule's defaults); else what does not, in a phrase.

    ``target``: the record's target; every run must have measured it.
    """
    if target is not None and result.target not in (None, target):
        return f"the result is for target {result.target!r}"
    if result.verdict not in MEASURED:
        if result.speedup is not None or result.interval is not None:
            return f"a {result.verdict} result carries a speedup"
        return None
    if result.alpha is not None and result.alpha > DEFAULT_ALPHA:
        return f"alpha {result.alpha} is looser than the rule's {DEFAULT_ALPHA}"
    if result.epsilon is not None and result.epsilon < MIN_EPSILON:
        return f"epsilon {result.epsilon} is below the rule's margin {MIN_EPSILON}"
    problem = _runs_problem(result, target) or _stats_problem(result)
    if problem:
        return problem
    if not sequential(result) and len(result.baseline.stats.samples_ms) != result.n:
        return f"it looked once, after {len(result.baseline.stats.samples_ms)} of its {result.n} rounds"
    try:
        decision = decision_of(result)
    except ValueError as err:
        return f"its samples are not times ({err})"
    if decision.verdict != result.verdict:
        return f"its samples give {decision.summary()}, not {result.verdict}"
    if result.verdict == "inconclusive":
        return None if result.speedup is None else "an inconclusive result carries a speedup"
    interval = [decision.speedup_low, decision.speedup_high]
    if not _close(result.speedup, decision.speedup):
        return f"speedup {result.speedup} but its samples give {decision.speedup:.6g}"
    if result.interval is None or len(result.interval) != 2 or not all(map(_close, result.interval, interval)):
        return f"interval {result.interval} but its samples give [{interval[0]:.6g}, {interval[1]:.6g}]"
    return None
