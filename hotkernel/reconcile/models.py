"""What plan and sync return."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field

from hotkernel._util.model import StrictModel as _Model
from hotkernel.errors import HotkernelError
from hotkernel.run.models import Verdict
from hotkernel.store.models import BestEntry, LeaderboardRow
from hotkernel.store.record import tamper_reason

PlanAction = Literal["create", "update"]


class PlanItem(_Model):
    """One out-of-date target."""

    name: str = Field(description="target name")
    action: PlanAction = Field(description="'create' (no record yet: '+') or 'update' (re-run: '~')")
    reasons: list[str] = Field(
        description="why it is out of date: new, manifest changed, candidate changed, contract changed, "
        "baseline not rendered, baseline edited, candidate not rendered, no record on this GPU, "
        "recorded with contract protocol N, record missing / damaged / not vouched for / invalidated"
    )
    device_kind: str = Field(description="'cuda' or 'cpu' (the target's device)")


class CompetitorItem(_Model):
    """One out-of-date competitor of a target."""

    name: str = Field(description="target name")
    competitor: str = Field(description="the competitor as hotkernel.yaml names it (compile, ./f.py:fn)")
    who: str = Field(description="who its records name: torch.compile (mode) or the function reference")
    script: str = Field(description="its generated script, targets/<name>/competitor_<slug>.py")
    action: PlanAction = Field(description="'create' (no record yet) or 'update' (re-run)")
    reasons: list[str] = Field(
        description="why it is out of date: new, no record on this GPU, manifest changed, contract changed, "
        "templates changed, source changed, recorded with contract protocol N, record missing / damaged / "
        "not vouched for / invalidated"
    )
    device_kind: str = Field(description="'cuda' or 'cpu' (the target's device)")


class Plan(_Model):
    """``plan``: what ``sync`` would run, and why."""

    device: str = Field(description="the GPU name plans were made against, 'cpu', or 'no-gpu'")
    items: list[PlanItem] = Field(default_factory=list, description="out-of-date targets, sorted by name")
    competitors: list[CompetitorItem] = Field(
        default_factory=list,
        description="out-of-date competitors, by target then in manifest order",
    )
    up_to_date: list[str] = Field(default_factory=list, description="targets with nothing to do")
    notes: list[str] = Field(default_factory=list, description="remarks (e.g. no GPU here: compared to lock only)")
    problems: list[str] = Field(
        default_factory=list,
        description="torn state, one line each with the file and the fix: a damaged, missing or unverified "
        "record, a stale LEADERBOARD.md, a leftover temp file",
    )

    @property
    def out_of_date(self) -> bool:
        return bool(self.items or self.competitors)


SyncStatus = Literal["recorded", "up to date", "skipped", "failed", "not run"]


class SyncItem(_Model):
    """What sync did with one target."""

    name: str = Field(description="target name")
    status: SyncStatus = Field(
        description="recorded / up to date / skipped / failed / not run (the budget was spent or sync was "
        "interrupted before its verify finished: it stays out of date)"
    )
    reason: str | None = Field(default=None, description="why it was skipped or failed, or the plan reasons")
    verdict: Verdict | None = Field(default=None, description="verdict recorded (when recorded)")
    speedup: float | None = Field(
        default=None,
        description="the measured speedup (baseline / candidate time) whenever the verify measured one, "
        "inconclusive included",
    )
    interval: list[float] | None = Field(
        default=None, description="[low, high] interval of the speedup whenever the verify measured one"
    )
    confirms: str | None = Field(
        default=None,
        description="the record this one repeats: sync verifies a would-be new best a second time, and the "
        "board counts it only when both are faster and consistent",
    )
    noisy: str | None = Field(
        default=None,
        description="an inconclusive verify that was too noisy here to decide: why, and what narrows it "
        "(VerifyResult.noisy)",
    )
    seconds: float | None = Field(default=None, description="wall seconds of the verify's runs")
    record: str | None = Field(default=None, description="workspace-relative record path written")
    beats_best: bool | None = Field(default=None, description="whether the record beats the best so far")
    clear_of_best: bool | None = Field(
        default=None,
        description="whether its interval lies wholly above the "
        "previous best's (beats_best without it: inside the two verifies' noise)",
    )
    who: str | None = Field(
        default=None,
        description="the author recorded: --who, else the candidate's WHO, "
        "else HOTKERNEL_WHO or git's user.name (when recorded)",
    )


class SyncReport(_Model):
    """``sync``: one line per target, and whether anything failed."""

    check: bool = Field(default=False, description="True when run with --check (nothing was run)")
    plan: Plan = Field(description="the plan sync started from")
    items: list[SyncItem] = Field(default_factory=list, description="one entry per target considered")
    best: list[LeaderboardRow] = Field(
        default_factory=list, description="the leaderboard's best counted row per target and device, after sync"
    )
    headline: list[BestEntry] = Field(
        default_factory=list,
        description="per target and device with a crowned candidate: the board's headline, the median speedup of "
        "the counted runs of its files with their count and range (what reruns give)",
    )
    latest: dict[str, LeaderboardRow] = Field(
        default_factory=dict, description="per target: its newest vouched record of the current protocol"
    )
    repaired: list[str] = Field(
        default_factory=list, description="what sync repaired (a stale LEADERBOARD.md rewritten, temp files removed)"
    )
    budget_s: float | None = Field(default=None, description="the time budget in seconds (--budget), if any")
    lanes: str = Field(
        default="",
        description="where the verifies ran: 'local' (one at a time in the sync process), its lanes side by side "
        "('gpu0, cpu'), or 'ray (...)'; empty with --check and when a signal stopped the sync",
    )
    order: list[str] = Field(
        default_factory=list,
        description="the order targets were run in: never recorded first, then the oldest newest record first",
    )
    left: list[str] = Field(
        default_factory=list,
        description="targets (and competitors) still out of date because the budget was spent or a signal stopped "
        "the sync: run sync again",
    )
    interrupted: bool = Field(default=False, description="True: a signal stopped the sync before it finished")
    signal: str | None = Field(
        default=None, description="the signal that stopped it: SIGINT (Ctrl-C), SIGTERM or SIGHUP (None: unknown)"
    )

    @property
    def failed(self) -> bool:
        """True when a target failed to run or its verdict is incorrect/invalid."""
        return any(i.status == "failed" or i.verdict in ("incorrect", "invalid") for i in self.items)


def measured(result: object) -> tuple[float | None, list[float] | None]:
    """(speedup, [low, high]) of a VerifyResult whenever its verdict rule measured them, inconclusive included:
    the result's own fields for faster/slower, else its decision's."""
    speedup = getattr(result, "speedup", None)
    interval = getattr(result, "interval", None)
    decision = getattr(result, "decision", None) or {}
    if speedup is None and isinstance(decision, dict):
        speedup = decision.get("speedup")
    if interval is None and isinstance(decision, dict):
        low, high = decision.get("speedup_low"), decision.get("speedup_high")
        interval = [float(low), float(high)] if low is not None and high is not None else None
    return (float(speedup) if speedup is not None else None), (list(interval) if interval else None)


def run_seconds(result: object) -> float | None:
    """Wall seconds of a VerifyResult's runs (None when none reports one)."""
    walls = [run.wall_s for run in getattr(result, "runs", None) or [] if getattr(run, "wall_s", None) is not None]
    return round(float(sum(walls)), 3) if walls else None


def recorded_item(name: str, result: object, record: str, reason: str | None, **more: Any) -> SyncItem:
    """The ``recorded`` item of a verify written to ``record``: its verdict, the speedup and interval whenever it
    measured them (``measured``), its runs' seconds, and ``more`` (who, confirms, beats_best, ...)."""
    speedup, interval = measured(result)
    return SyncItem(
        name=name,
        status="recorded",
        verdict=getattr(result, "verdict", None),
        speedup=speedup,
        interval=interval,
        record=record,
        reason=reason,
        noisy=getattr(result, "noisy", None),
        seconds=run_seconds(result),
        **more,
    )


def tampered_item(name: str, record: str, tampered: Any, **more: Any) -> SyncItem:
    """The ``failed`` item of a run that changed files only hotkernel writes: its record is kept, invalidated."""
    reason = f"invalid: {tamper_reason(tampered)}; the record is kept invalidated"
    return SyncItem(name=name, status="failed", verdict="invalid", record=record, reason=reason, **more)


def failed_item(name: str, err: Exception, say: Callable[[str], object]) -> SyncItem:
    """The ``failed`` item of a target (or competitor) whose step raised: hotkernel's one-line errors as they
    are, anything else with its type; said to the progress line too. The other targets go on."""
    reason = str(err) if isinstance(err, HotkernelError) else f"{type(err).__name__}: {err}"
    say(f"failed: {reason}")
    return SyncItem(name=name, status="failed", reason=reason)
