"""What bench and verify return: one run, sample statistics, a bench, a verify (shared by CLI and MCP).

Every model is plain pydantic (JSON-serialisable with ``model_dump(mode="json")``); every field says what it
means, so the MCP tool schemas generated from these models document themselves.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from hotkernel._util.model import StrictModel as _Model

RunStatus = Literal["ok", "incorrect", "invalid", "error"]
Verdict = Literal["faster", "slower", "inconclusive", "incorrect", "invalid"]
StopReason = Literal["decided", "within_margin", "planned_rounds", "max_rounds", "failed", "cancelled"]


class RunSummary(_Model):
    """One run of one script (one orchestrator process), as the runner parsed it."""

    role: str = Field(description="'baseline' or 'candidate' (or 'script' for a bench of an arbitrary script)")
    index: int = Field(description="0-based run number of this role within the bench/verify (warmup runs: < 0)")
    status: RunStatus = Field(
        description="'ok', 'incorrect' / 'invalid' as the contract judged it, or 'error' when no valid JSON "
        "line came back (crash, hang, no or several JSON lines)"
    )
    reason: str | None = Field(default=None, description="'<check_name>: <detail>' whenever status is not ok")
    ms: float | None = Field(default=None, description="headline time of this run in milliseconds (None on error)")
    wall_s: float | None = Field(default=None, description="wall-clock seconds the whole run took")
    data: dict[str, Any] | None = Field(
        default=None,
        description="the run's JSON line as the contract printed it (protocol 1), when one came back",
    )


class SampleStats(_Model):
    """Summary statistics of a list of per-run headline times (ms)."""

    n: int = Field(description="number of samples")
    mean_ms: float | None = Field(default=None, description="arithmetic mean, ms")
    std_ms: float | None = Field(default=None, description="sample standard deviation (n-1), ms; 0 for one sample")
    min_ms: float | None = Field(default=None, description="smallest sample, ms")
    median_ms: float | None = Field(default=None, description="median sample, ms")
    samples_ms: list[float] = Field(default_factory=list, description="every sample in run order, ms")


class BenchResult(_Model):
    """``bench``: one script run ``n`` times after ``warmup`` runs."""

    script: str = Field(description="the script as given (workspace-relative when inside the workspace)")
    status: RunStatus = Field(description="'ok' when every timed run was ok; else the first failing run's status")
    reason: str | None = Field(default=None, description="why the bench failed: the failing run's reason")
    n: int = Field(description="timed runs asked for")
    warmup: int = Field(description="untimed runs before the timed ones")
    stats: SampleStats = Field(description="statistics over the timed runs that completed ok")
    target: str | None = Field(default=None, description="target name the contract reported")
    device: str | None = Field(default=None, description="device name the contract reported")
    contract: dict[str, Any] = Field(
        default_factory=dict,
        description="contract fields of the first ok run (target, shapes, dtype, rotation, ...)",
    )
    per_shape: list[dict[str, Any]] = Field(
        default_factory=list,
        description="per-shape results of the first ok run, as the contract reported them",
    )
    python: str | None = Field(default=None, description="interpreter the script ran under")
    runs: list[RunSummary] = Field(default_factory=list, description="every run, warmup included, in order")
    run_id: str | None = Field(
        default=None,
        description="the id this result was saved under in the workspace's run store (.hotkernel/runs/<id>.json); "
        "None when the workspace could not keep it",
    )


class SideSummary(_Model):
    """One side (baseline or candidate) of a verify."""

    script: str = Field(description="script path as given")
    sha256: str | None = Field(default=None, description="sha256 of the script the contract reported")
    stats: SampleStats = Field(description="statistics of this side's ok runs")


class VerifyResult(_Model):
    """``verify``: baseline and candidate interleaved in ABBA rounds, judged by one judge process."""

    verdict: Verdict = Field(
        description="faster / slower / inconclusive (from verdict.decide), incorrect (candidate failed a "
        "correctness check), invalid (contract fields differ, baseline failed, files edited, protocol broken)"
    )
    reason: str = Field(description="machine-readable reason: '<check_or_rule>: <detail>'")
    speedup: float | None = Field(
        default=None, description="baseline time / candidate time (point estimate); only for faster/slower"
    )
    interval: list[float] | None = Field(
        default=None, description="[low, high] confidence interval of the speedup; only for faster/slower"
    )
    alpha: float | None = Field(default=None, description="significance level used by the verdict rule")
    epsilon: float | None = Field(default=None, description="practical-equivalence margin used by the verdict rule")
    decision: dict[str, Any] | None = Field(
        default=None, description="the verdict rule's full decision (verdict.Decision.as_dict()), when it ran"
    )
    n: int = Field(description="rounds planned (each round runs baseline and candidate once)")
    rounds_completed: int = Field(description="rounds that ran to the end: where the sequential rule stopped")
    max_rounds: int | None = Field(
        default=None, description="the cap: rounds it may run when the answer is still open at n (None: n)"
    )
    stopped: StopReason | None = Field(
        default=None,
        description="why it stopped: decided (faster/slower), within_margin, planned_rounds (open at n with the "
        "point estimate inside the margin), max_rounds (still open at the cap), failed (an incorrect/invalid "
        "run), cancelled",
    )
    extended: str | None = Field(default=None, description="why it ran past n rounds, when it did")
    noisy: str | None = Field(
        default=None,
        description="for an inconclusive verdict whose interval is many times wider than the margin: that the "
        "runs were too noisy here to decide, with their run-to-run spread and what narrows it",
    )
    order: list[str] = Field(default_factory=list, description="the roles in the order they ran ('B' / 'C')")
    target: str | None = Field(default=None, description="target name the contract reported")
    device: str | None = Field(default=None, description="device name the contract reported")
    device_kind: str | None = Field(default=None, description="'cuda' or 'cpu'")
    protocol: int | None = Field(default=None, description="contract protocol version of the runs")
    contract_sha256: str | None = Field(default=None, description="sha256 of the contract module the runs used")
    contract: dict[str, Any] = Field(
        default_factory=dict, description="contract fields both sides agreed on (target, shapes, dtype, ...)"
    )
    baseline: SideSummary = Field(description="the baseline side")
    candidate: SideSummary = Field(description="the candidate side")
    per_shape: dict[str, list[dict[str, Any]]] = Field(
        default_factory=dict,
        description="per-shape results of the last ok run of each side ('baseline'/'candidate')",
    )
    versions: dict[str, str] = Field(
        default_factory=dict, description="torch/triton/python versions the runs reported, when they did"
    )
    python: str | None = Field(default=None, description="interpreter the scripts ran under")
    runs: list[RunSummary] = Field(default_factory=list, description="every run in order")
    run_id: str | None = Field(
        default=None,
        description="the id this verify was saved under in the workspace's run store (.hotkernel/runs/<id>.json): "
        "`hotkernel record TARGET <run_id>` keeps it; None when the workspace could not keep it",
    )
