"""Result models shared by the CLI and the MCP server: what bench, verify, record, plan and sync return.

Every model is plain pydantic (JSON-serialisable with ``model_dump(mode="json")``); every field says what it
means, so the MCP tool schemas generated from these models document themselves.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RunStatus = Literal["ok", "incorrect", "invalid", "error"]
Verdict = Literal["faster", "slower", "inconclusive", "incorrect", "invalid"]
RECORD_KIND = "record"
RECORD_SCHEMA = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunSummary(_Model):
    """One run of one script (one orchestrator process), as the runner parsed it."""

    role: str = Field(
        description="'baseline' or 'candidate' (or 'script' for a bench of an arbitrary script)"
    )
    index: int = Field(
        description="0-based run number of this role within the bench/verify (warmup runs: < 0)"
    )
    status: RunStatus = Field(
        description="'ok', 'incorrect' / 'invalid' as the contract judged it, or 'error' when no valid JSON "
        "line came back (crash, hang, no or several JSON lines)"
    )
    reason: str | None = Field(default=None, description="'<check_name>: <detail>' whenever status is not ok")
    ms: float | None = Field(
        default=None, description="headline time of this run in milliseconds (None on error)"
    )
    wall_s: float | None = Field(default=None, description="wall-clock seconds the whole run took")
    data: dict[str, Any] | None = Field(
        default=None,
        description="the run's JSON line as the contract printed it (protocol 1), when one came back",
    )


class SampleStats(_Model):
    """Summary statistics of a list of per-run headline times (ms)."""

    n: int = Field(description="number of samples")
    mean_ms: float | None = Field(default=None, description="arithmetic mean, ms")
    std_ms: float | None = Field(
        default=None, description="sample standard deviation (n-1), ms; 0 for one sample"
    )
    min_ms: float | None = Field(default=None, description="smallest sample, ms")
    median_ms: float | None = Field(default=None, description="median sample, ms")
    samples_ms: list[float] = Field(default_factory=list, description="every sample in run order, ms")


class BenchResult(_Model):
    """``bench``: one script run ``n`` times after ``warmup`` runs."""

    script: str = Field(description="the script as given (workspace-relative when inside the workspace)")
    status: RunStatus = Field(
        description="'ok' when every timed run was ok; else the first failing run's status"
    )
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
    epsilon: float | None = Field(
        default=None, description="practical-equivalence margin used by the verdict rule"
    )
    decision: dict[str, Any] | None = Field(
        default=None, description="the verdict rule's full decision (verdict.Decision.as_dict()), when it ran"
    )
    n: int = Field(description="rounds asked for (each round runs baseline and candidate once)")
    rounds_completed: int = Field(description="rounds that ran to the end (fewer when it stopped early)")
    order: list[str] = Field(default_factory=list, description="the roles in the order they ran ('B' / 'C')")
    target: str | None = Field(default=None, description="target name the contract reported")
    device: str | None = Field(default=None, description="device name the contract reported")
    device_kind: str | None = Field(default=None, description="'cuda' or 'cpu'")
    protocol: int | None = Field(default=None, description="contract protocol version of the runs")
    contract_sha256: str | None = Field(
        default=None, description="sha256 of the contract module the runs used"
    )
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


class Provenance(_Model):
    """Where and with what a record was measured."""

    device: str | None = Field(default=None, description="GPU name (or CPU model for cpu targets)")
    device_kind: str | None = Field(default=None, description="'cuda' or 'cpu'")
    gpu_uuid: str | None = Field(default=None, description="GPU UUID from NVML")
    driver: str | None = Field(default=None, description="NVIDIA driver version")
    power_limit_w: float | None = Field(default=None, description="enforced power limit, watts")
    clocks_mhz: dict[str, float] = Field(
        default_factory=dict, description="clocks at record time (sm, mem, max_sm, max_mem), MHz"
    )
    cpu: str | None = Field(default=None, description="CPU model of the host")
    torch: str | None = Field(default=None, description="torch version in the user's interpreter")
    triton: str | None = Field(default=None, description="triton version in the user's interpreter")
    python: str | None = Field(default=None, description="the user's interpreter path")
    hotkernel: str = Field(description="hotkernel version that recorded it")
    git_commit: str | None = Field(default=None, description="workspace git commit (HEAD) at record time")
    git_dirty: bool | None = Field(
        default=None, description="True when the workspace had uncommitted changes"
    )


class Invalidation(_Model):
    """Marks a record as not counted; the raw log stays."""

    reason: str = Field(description="why the record no longer counts")
    at: str = Field(description="UTC time it was invalidated (ISO 8601)")


class Record(_Model):
    """A file under ``results/<target>/<UTC timestamp>.json``: one verify result and its provenance."""

    kind: Literal["record"] = Field(default="record", description="marks this JSON file as a record")
    schema_version: int = Field(default=RECORD_SCHEMA, description="record file layout version")
    target: str = Field(description="target name")
    created_at: str = Field(description="UTC time the record was written (ISO 8601)")
    who: str = Field(description="honest author of the candidate (a person or an agent and its model)")
    note: str = Field(description="one line saying what the candidate changed")
    contract: int | None = Field(description="contract protocol version the runs used")
    result: VerifyResult = Field(description="the verify result this record keeps")
    provenance: Provenance = Field(description="GPU, driver, versions and git state at record time")
    fingerprint: dict[str, Any] = Field(
        default_factory=dict,
        description="what the record was made from (sync fills it: manifest/baseline/...)",
    )
    invalidated: Invalidation | None = Field(default=None, description="set when the record no longer counts")


class RecordResult(_Model):
    """``record``: where the record went and whether it beats the best so far."""

    path: str = Field(description="workspace-relative path of the record written")
    target: str = Field(description="target name")
    device: str | None = Field(default=None, description="GPU name (or CPU model) it was recorded on")
    verdict: Verdict = Field(description="the recorded verdict")
    speedup: float | None = Field(default=None, description="recorded speedup (faster/slower only)")
    beats_best: bool = Field(
        description="True when verdict is faster and the speedup exceeds every earlier counted record of "
        "this target on this device (the loop keeps a change only then)"
    )
    previous_best: float | None = Field(default=None, description="best counted speedup before this record")
    previous_best_path: str | None = Field(default=None, description="record holding the previous best")
    leaderboard: str = Field(description="path of the regenerated LEADERBOARD.md")


class HistoryEntry(_Model):
    """One record of a target, for ``history``."""

    path: str = Field(description="workspace-relative record path")
    created_at: str = Field(description="UTC time the record was written")
    device: str | None = Field(default=None, description="GPU name (or CPU model)")
    verdict: Verdict = Field(description="recorded verdict")
    speedup: float | None = Field(default=None, description="speedup (faster/slower only)")
    interval: list[float] | None = Field(default=None, description="speedup interval (faster/slower only)")
    who: str = Field(description="author of the candidate")
    note: str = Field(description="one-line note")
    counted: bool = Field(description="False when invalidated or made with an older contract protocol")
    not_counted_reason: str | None = Field(default=None, description="why it is not counted")


class LeaderboardRow(_Model):
    """One row of LEADERBOARD.md (one record)."""

    target: str = Field(description="target name")
    device: str = Field(description="GPU name (or CPU model)")
    path: str = Field(description="record path relative to the workspace")
    verdict: Verdict = Field(description="recorded verdict")
    speedup: float | None = Field(default=None, description="speedup (faster/slower only)")
    interval: list[float] | None = Field(default=None, description="speedup interval")
    baseline_ms: float | None = Field(default=None, description="baseline median, ms")
    candidate_ms: float | None = Field(default=None, description="candidate median, ms")
    who: str = Field(description="author")
    note: str = Field(description="note")
    counted: bool = Field(description="whether it counts toward best-so-far")
    not_counted_reason: str | None = Field(default=None, description="why it does not count")
    best: bool = Field(
        default=False, description="True for the best counted faster record of its target/device"
    )


PlanAction = Literal["create", "update"]


class PlanItem(_Model):
    """One out-of-date target."""

    name: str = Field(description="target name")
    action: PlanAction = Field(description="'create' (no record yet: '+') or 'update' (re-run: '~')")
    reasons: list[str] = Field(
        description="why it is out of date: new, manifest changed, candidate changed, contract changed, "
        "baseline not rendered, baseline edited, candidate not rendered, no record on this GPU, "
        "record missing"
    )
    device_kind: str = Field(description="'cuda' or 'cpu' (the target's device)")


class Plan(_Model):
    """``plan``: what ``sync`` would run, and why."""

    device: str = Field(description="the GPU name plans were made against, 'cpu', or 'no-gpu'")
    items: list[PlanItem] = Field(default_factory=list, description="out-of-date targets, sorted by name")
    up_to_date: list[str] = Field(default_factory=list, description="targets with nothing to do")
    notes: list[str] = Field(
        default_factory=list, description="remarks (e.g. no GPU here: compared to lock only)"
    )

    @property
    def out_of_date(self) -> bool:
        return bool(self.items)


SyncStatus = Literal["recorded", "up to date", "skipped", "failed"]


class SyncItem(_Model):
    """What sync did with one target."""

    name: str = Field(description="target name")
    status: SyncStatus = Field(description="recorded / up to date / skipped / failed")
    reason: str | None = Field(default=None, description="why it was skipped or failed, or the plan reasons")
    verdict: Verdict | None = Field(default=None, description="verdict recorded (when recorded)")
    speedup: float | None = Field(default=None, description="speedup recorded (faster/slower only)")
    record: str | None = Field(default=None, description="workspace-relative record path written")
    beats_best: bool | None = Field(default=None, description="whether the record beats the best so far")


class SyncReport(_Model):
    """``sync``: one line per target, and whether anything failed."""

    check: bool = Field(default=False, description="True when run with --check (nothing was run)")
    plan: Plan = Field(description="the plan sync started from")
    items: list[SyncItem] = Field(default_factory=list, description="one entry per target considered")

    @property
    def failed(self) -> bool:
        """True when a target failed to run or its verdict is incorrect/invalid."""
        return any(i.status == "failed" or i.verdict in ("incorrect", "invalid") for i in self.items)
