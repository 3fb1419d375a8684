"""Where a fresh run of the best's files will land: a prediction range from the runs' sessions.

The board's headline is the median point speedup of every counted run of the best's files. The runs are not
independent draws: they cluster by *session* (one lease of one machine: runs minutes apart on one card), and the
spread between sessions (another card of the same name, another day) is larger than within one. A fresh
``sync`` is a new session, so the range that predicts it must carry the between-session spread.

The rule, on log speedups ``y = ln(point)`` (a ratio's noise is multiplicative):

* **Sessions.** Runs on the same machine (``provenance.gpu_uuid``; a run without one, a CPU run, by its device
  name) whose ``created_at`` follow each other by less than ``SESSION_GAP_S`` form one session.
* **Variance components** (one-way random effects, unbalanced ANOVA): with ``k`` sessions of ``n_i`` runs, ``N``
  runs in all, ``MSW`` the pooled within-session mean square (``N - k`` degrees of freedom) and ``MSB`` the
  between-session one (``k - 1``), ``s_w^2 = MSW`` and ``s_b^2 = max(0, (MSB - MSW) / n0)`` with
  ``n0 = (N - sum(n_i^2) / N) / (k - 1)``. When every session has one run the two cannot be told apart and the
  sample variance of the runs estimates their sum.
* **Prediction range** for one run of a new session, centred on the headline median ``m``:
  ``m * exp(+-t * sqrt(s_b^2 + s_w^2 + v_c))`` with ``v_c = sum_i (s_b^2 + s_w^2 / n_i) / k^2`` (the variance of
  the centre, taken as that of the mean of the session means) and ``t`` the ``(1 + LEVEL) / 2`` quantile of
  Student's t on ``k - 1`` degrees of freedom: the between-session variance is estimated from ``k`` sessions only,
  so the quantile follows their number, not the runs' (conservative when the within part dominates).
* **One session** says nothing about the spread between sessions: no range is stated (``None``), and the board
  says so instead of inventing one.

``LEVEL`` is 95%: a board row is a claim about one rerun, and two fresh syncs both land inside with about 90%
when the model holds; 99% would widen every range by at least 31% (2.58 against 1.96 standard deviations), five-fold
on one degree of freedom (a t quantile of 63.7 against 12.7), where few sessions make it wide already.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from hotkernel.run.verdict import student_t_quantile  # the verdict rule's own t quantile

LEVEL = 0.95
SESSION_GAP_S = 3600.0  # runs of one lease are minutes apart; leases are hours or days apart


@dataclass(frozen=True)
class RunPoint:
    """One run for the range: the machine it ran on, when (ISO 8601) and its point speedup."""

    machine: str
    created_at: str
    point: float


@dataclass(frozen=True)
class RerunRange:
    """The prediction range of a fresh run's point speedup and what it was estimated from."""

    sessions: int
    runs: int
    low: float | None  # None with fewer than two sessions: the between-session spread is unknown
    high: float | None
    between_sd: float | None  # log scale; None with fewer than two sessions; the total when no session has two runs
    within_sd: float | None  # log scale; None when no session has two runs
    t: float | None


def _seconds(created_at: str) -> float:
    return datetime.fromisoformat(created_at.replace("Z", "+00:00")).timestamp()


def group_sessions(runs: list[RunPoint], gap_s: float = SESSION_GAP_S) -> list[list[RunPoint]]:
    """The runs by session, each in time order, sessions ordered by their first run (ties by machine): runs of
    one machine less than ``gap_s`` after the previous run of that machine share its session."""
    sessions: list[list[RunPoint]] = []
    by_machine: dict[str, list[RunPoint]] = {}
    for run in sorted(runs, key=lambda r: (_seconds(r.created_at), r.machine, r.point)):
        by_machine.setdefault(run.machine, []).append(run)
    for machine_runs in by_machine.values():
        current = [machine_runs[0]]
        for run in machine_runs[1:]:
            if _seconds(run.created_at) - _seconds(current[-1].created_at) < gap_s:
                current.append(run)
            else:
                sessions.append(current)
                current = [run]
        sessions.append(current)
    sessions.sort(key=lambda s: (_seconds(s[0].created_at), s[0].machine))
    return sessions


def rerun_range(sessions: list[list[float]], centre: float, level: float = LEVEL) -> RerunRange:
    """The ``level`` prediction range of one fresh run's point speedup, centred on ``centre`` (the headline
    median), from the point speedups of the earlier runs grouped by session (see the module's rule)."""
    logs = [[math.log(p) for p in s] for s in sessions if s]
    k, n = len(logs), sum(len(s) for s in logs)
    if k < 2:
        return RerunRange(sessions=k, runs=n, low=None, high=None, between_sd=None, within_sd=None, t=None)
    means = [sum(s) / len(s) for s in logs]
    grand = sum(sum(s) for s in logs) / n
    ssb = sum(len(s) * (m - grand) ** 2 for s, m in zip(logs, means, strict=True))
    ssw = sum((y - m) ** 2 for s, m in zip(logs, means, strict=True) for y in s)
    if n == k:  # one run per session: only the sum of the two variances is estimable
        var_b, var_w, within = ssb / (k - 1), 0.0, None
    else:
        msb, msw = ssb / (k - 1), ssw / (n - k)
        n0 = (n - sum(len(s) ** 2 for s in logs) / n) / (k - 1)
        var_b, var_w = max(0.0, (msb - msw) / n0), msw
        within = math.sqrt(var_w)
    var_centre = sum(var_b + var_w / len(s) for s in logs) / k**2
    t = student_t_quantile((1.0 + level) / 2.0, k - 1)
    half = t * math.sqrt(var_b + var_w + var_centre)
    return RerunRange(
        sessions=k,
        runs=n,
        low=centre * math.exp(-half),
        high=centre * math.exp(half),
        between_sd=math.sqrt(var_b),
        within_sd=within,
        t=t,
    )
