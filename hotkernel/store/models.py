"""What the store keeps and returns: records (file layout, ``kind: "record"``), history, leaderboard rows."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from hotkernel._util.model import StrictModel as _Model
from hotkernel.run.models import Verdict, VerifyResult

RECORD_KIND = "record"
RecordRole = Literal["candidate", "competitor"]
RECORD_SCHEMA = 2  # 2: the compact file (store/compact.py); 1: every run in full, indented


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
    git_dirty: bool | None = Field(default=None, description="True when the workspace had uncommitted changes")


class Invalidation(_Model):
    """Marks a record as not counted; the raw log stays."""

    reason: str = Field(description="why the record no longer counts")
    at: str = Field(description="UTC time it was invalidated (ISO 8601)")


class Record(_Model):
    """A file under ``results/<target>/<UTC timestamp>.json``: one verify result and its provenance. Frozen: a scan
    hands the same parsed record to every caller (``scan._read``); a change is a copy (``model_copy``)."""

    model_config = ConfigDict(frozen=True)

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
    spec: dict[str, Any] | None = Field(
        default=None,
        description="the resolved target it ran with (resolved_target: shapes, dtype, tolerances, "
        "seed, kwargs), as hotkernel.yaml said at record time; None for records made before it was stored",
    )
    manifest_fingerprint: str | None = Field(
        default=None, description="manifest_fingerprint of the target at record time (sha256 of ``spec``)"
    )
    tolerances: dict[str, float | list[dict[str, float]]] | None = Field(
        default=None,
        description="the correctness bounds the judge applied (atol, rtol, rel_l2_max, min_corr; per_output: each "
        "output's four, where the target set output_tolerances), as the runs reported them; None when no run "
        "reported them",
    )
    invalidated: Invalidation | None = Field(default=None, description="set when the record no longer counts")
    role: RecordRole = Field(
        default="candidate",
        description="'candidate' (the loop's candidate) or 'competitor' (another "
        "implementation from the target's competitors: recorded as such, never the kept candidate)",
    )
    competitor: str | None = Field(
        default=None,
        description="the competitor as hotkernel.yaml names it (compile-max-autotune, ./f.py:fn); None for candidates",
    )
    run_id: str | None = Field(
        default=None, description="the run-store id (.hotkernel/runs/<id>.json) of the verify it keeps, when it had one"
    )
    imported: bool = Field(
        default=False,
        description="True when the result came from a file (`record --import`), not from this workspace's run "
        "store or a sync: listed as imported on the board",
    )
    confirms: str | None = Field(
        default=None,
        description="the record (results/<target>/<name>.json) of the first verify of the same files that this "
        "second, independent verify confirms",
    )


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
    clear_of_best: bool = Field(
        default=False,
        description="True when beats_best and this record's interval lies wholly above the previous best's (or "
        "there was none): the two verifies' noise does not explain the order. beats_best without it: verify the "
        "new candidate once more and keep it only when that verify beats the previous best again",
    )
    previous_best: float | None = Field(default=None, description="best counted speedup before this record")
    previous_best_interval: list[float] | None = Field(
        default=None, description="[low, high] interval of the previous best's speedup"
    )
    previous_best_path: str | None = Field(default=None, description="record holding the previous best")
    awaiting_confirmation: bool = Field(
        default=False,
        description="True for a faster candidate record that no second verify of the same files confirms yet: it "
        "is not crowned until one does (`hotkernel sync` runs it; or verify and record again)",
    )
    confirmed: bool = Field(
        default=False,
        description="True when a second, independent verify of the same files was also faster with an "
        "overlapping interval: the pair counts for the best",
    )
    leaderboard: str = Field(description="path of the regenerated LEADERBOARD.md")
    tampered: list[str] = Field(
        default_factory=list,
        description="files the run changed that only hotkernel writes (hotkernel.lock, results/): the record "
        "is then written invalidated and the lock restored",
    )


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
    role: RecordRole = Field(default="candidate", description="'candidate' or 'competitor'")
    competitor: str | None = Field(default=None, description="the competitor's manifest name (competitor records)")
    confirmed: bool = Field(
        default=False,
        description="a counted faster candidate record that a second verify of the same files, also faster with an "
        "overlapping interval, confirms: it can be the best",
    )
    awaiting_confirmation: bool = Field(
        default=False,
        description="a counted faster candidate record no second verify of the same files confirms yet: not "
        "crowned until one does",
    )
    imported: bool = Field(default=False, description="the result was imported from a file (`record --import`)")
    run_id: str | None = Field(default=None, description="the run-store id the result was recorded from")
    confirms: str | None = Field(default=None, description="the record this one was recorded to confirm")


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
        default=False, description="True for the best counted faster candidate record of its target/device"
    )
    role: RecordRole = Field(default="candidate", description="'candidate' or 'competitor'")
    competitor: str | None = Field(default=None, description="the competitor's manifest name (competitor rows)")
    dtype: str | None = Field(default=None, description="the target's dtype as the runs reported it")
    shape: str | None = Field(default=None, description="the headline shape the runs reported")
    baseline_from: str | None = Field(default=None, description="the baseline's function (the manifest's from)")
    flops: float | None = Field(default=None, description="flops of one call (manifest), for the roofline")
    bytes: float | None = Field(default=None, description="bytes one call moves (manifest or measured)")
    ceiling_gbps: float | None = Field(
        default=None, description="the highest copy ceiling the judge measured during the record's runs, GB/s"
    )
    files: str | None = Field(
        default=None,
        description="the sha256 of the baseline, the candidate and the contract the record measured, "
        "joined by ':' (None when one is missing): records with the same files ran the same experiment",
    )
    point: float | None = Field(
        default=None,
        description="the verdict rule's point estimate of the speedup for any measured verdict (inconclusive "
        "included): what the median of a file set's runs is taken over",
    )
    confirmed: bool = Field(
        default=False,
        description="a counted faster candidate record with another counted faster record of the same files "
        "whose interval overlaps its own (two independent verifies agree); only those can be the best",
    )
    awaiting_confirmation: bool = Field(
        default=False,
        description="a counted faster candidate record no second verify of the same files confirms yet: never the "
        "best until one does",
    )
    imported: bool = Field(default=False, description="the result was imported from a file (`record --import`)")
    created_at: str | None = Field(default=None, description="UTC time the record was written (ISO 8601)")
    machine: str | None = Field(
        default=None,
        description="the machine it ran on, for grouping runs into sessions: the GPU's UUID, else the device name",
    )


class BestEntry(_Model):
    """One (target, device) of the board: its best candidate and its best competitor."""

    target: str = Field(description="target name")
    device: str = Field(description="GPU name (or CPU model)")
    best: LeaderboardRow | None = Field(default=None, description="the best counted faster candidate, if any")
    competitor: LeaderboardRow | None = Field(
        default=None, description="the fastest counted competitor (largest speedup over the baseline), if any"
    )
    competitor_speedup: float | None = Field(
        default=None, description="the competitor's speedup over the baseline (1.0 when inconclusive)"
    )
    vs_competitor: float | None = Field(
        default=None,
        description="best candidate's speedup / best competitor's speedup (each over the baseline "
        "of its own verify); below 1: slower than the competitor",
    )
    same_files_runs: int = Field(
        default=0,
        description="counted records on this device of the best candidate's very files (baseline and "
        "candidate), the best included; 0 when its files are not known",
    )
    same_files_low: float | None = Field(default=None, description="the lowest speedup of those that were faster")
    same_files_high: float | None = Field(default=None, description="the highest speedup of those that were faster")
    same_files_not_faster: int = Field(default=0, description="how many of those were not faster")
    median: float | None = Field(
        default=None,
        description="the headline: the median point speedup of the counted runs of the best's files (what "
        "reruns give); a goal counts as met by it",
    )
    same_files_point_low: float | None = Field(default=None, description="lowest point speedup of those runs")
    same_files_point_high: float | None = Field(default=None, description="highest point speedup of those runs")
    same_files_sessions: int = Field(
        default=0,
        description="the sessions those runs came from: runs on one machine (GPU UUID, else device name) less than "
        "an hour apart form one (store/rerun_range.py)",
    )
    rerun_level: float = Field(default=0.95, description="the probability the rerun range is stated at")
    rerun_low: float | None = Field(
        default=None,
        description="low end of the prediction range of a fresh run's point speedup (a new session), centred on the "
        "median, from the runs' between- and within-session spread; None with fewer than two sessions (the spread "
        "between sessions is then unknown)",
    )
    rerun_high: float | None = Field(default=None, description="high end of that prediction range")
    between_session_sd: float | None = Field(
        default=None,
        description="standard deviation of the log point speedup between sessions (random-effects estimate; the "
        "total when no session has two runs); None with fewer than two sessions",
    )
    within_session_sd: float | None = Field(
        default=None,
        description="standard deviation of the log point speedup within a session; None when no session has two runs",
    )
    awaiting: LeaderboardRow | None = Field(
        default=None,
        description="the fastest counted faster candidate no second verify confirms yet (not crowned), if any "
        "beats the best's median",
    )


class SuiteSummary(_Model):
    """KernelBench's fast_p over one suite's targets on one device."""

    suite: str = Field(description="'kernelbench level N' (targets named kb<N>_...) or 'workspace'")
    device: str = Field(description="GPU name (or CPU model)")
    targets: int = Field(description="targets of the suite with a current record on this device")
    fast_p: dict[str, float] = Field(
        description="p -> share of those targets whose best candidate is faster (verdict) with speedup > p"
    )
    faster: int = Field(description="targets with a faster best candidate")
    geomean_speedup: float | None = Field(
        default=None, description="geometric mean speedup over the targets with a faster best candidate"
    )


class BoardSummary(_Model):
    """``leaderboard --summary``: fast_p per suite and device."""

    protocol: int = Field(description="contract protocol of the records counted")
    suites: list[SuiteSummary] = Field(description="one per (suite, device), sorted")
