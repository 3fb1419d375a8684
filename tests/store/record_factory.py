"""Synthetic verify results for record/leaderboard tests: made-up numbers on a made-up device."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from hotkernel.manifest import load_manifest, resolved_target
from hotkernel.run.bench import sample_stats
from hotkernel.run.models import RunSummary, SideSummary, VerifyResult
from hotkernel.run.render import expected_baseline_sha256
from hotkernel.run.verdict import DEFAULT_ALPHA, MIN_EPSILON, decide
from hotkernel.store.leaderboard import current_protocol
from hotkernel.store.models import Provenance
from hotkernel.workspace.paths import Workspace

DEVICE = "Synthetic Test Device"
FP32_TOLERANCES = {"atol": 1e-4, "rtol": 1e-4}  # what the manifest below resolves to (fp32 defaults)


ROUND_JITTER = (1.0, math.exp(0.0005), math.exp(-0.0005))  # per-round ratio noise whose log-mean is 0
_CALLS = itertools.count(1)  # every synthetic verify gets its own times (two real runs never share them)


ENTRY = "  {}:\n    from: ./k.py:f\n    shapes: [8x8]\n    dtype: fp32\n    device: cpu\n"  # every test target


@functools.lru_cache(maxsize=64)
def rendered_baseline_sha(target: str) -> str:
    """The sha256 of ``targets/<target>/baseline.py`` as a manifest entry ``ENTRY`` renders it (what verify reports)."""
    with tempfile.TemporaryDirectory() as tmp:
        manifest = Path(tmp) / "hotkernel.yaml"
        manifest.write_text(f"version: 1\ntargets:\n{ENTRY.format(target)}", encoding="utf-8")
        (Path(tmp) / "k.py").write_text("def f(x):\n    return x\n", encoding="utf-8")
        return expected_baseline_sha256(resolved_target(load_manifest(manifest), target))


def file_sha(*parts: object) -> str:
    """A stand-in sha256 of a file: the same parts give the same file."""
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()


def synthetic_result(
    target: str,
    verdict: str,
    speedup: float | None = None,
    *,
    device: str = DEVICE,
    protocol: int | None = None,
    tolerances: dict[str, float] | None = None,
    candidate: str | None = None,
    baseline_sha256: str | None = None,
) -> VerifyResult:
    """A VerifyResult whose numbers follow from its per-round times by the verdict rule, as verify makes them
    (the current protocol unless given): round i's candidate time is the baseline's over ``speedup`` times a
    small jitter, so the rule gives ``verdict`` with this ``speedup``; incorrect / invalid carry none.
    ``tolerances``: what each run's JSON reports, as protocol 2 does. The files: the target's baseline and
    contract, and a candidate named by ``candidate`` (default: one per target and speedup), so two results of one
    target and speedup measured the same files. ``baseline_sha256``: the baseline the runs reported (default: the
    render of ``ENTRY``; a test with its own manifest passes its rendered baseline's)."""
    # distinct for a million calls and never more than 0.1% off: a worker that made many records earlier (the
    # 10,000-record tests) must not shift the times a later test computes shares and medians from
    scale = 1.0 + (next(_CALLS) % 1_000_000) * 1e-9
    base = [scale * t for t in (1.0, 1.01, 0.99)]
    measured = verdict in ("faster", "slower", "inconclusive")
    ratio = speedup if speedup and verdict != "inconclusive" else 1.0
    cand = [b / (ratio * (j if verdict != "inconclusive" else 1.0)) for b, j in zip(base, ROUND_JITTER, strict=True)]
    decision = decide(base, cand) if measured else None
    assert decision is None or decision.verdict == verdict, f"synthetic {verdict} {speedup} gives {decision}"
    has = verdict in ("faster", "slower")
    data = {"tolerances": tolerances} if tolerances is not None else None
    runs = [
        RunSummary(role=role, index=i, status="ok", ms=ms, data=data)
        for i in range(len(base))
        for role, ms in (("baseline", base[i]), ("candidate", cand[i]))
    ]
    return VerifyResult(
        verdict=verdict,
        reason=f"test: synthetic {verdict}",
        speedup=decision.speedup if has and decision else None,
        interval=[decision.speedup_low, decision.speedup_high] if has and decision else None,
        alpha=DEFAULT_ALPHA,
        epsilon=MIN_EPSILON,
        decision=decision.as_dict() if decision else None,
        n=3,
        rounds_completed=3,
        order=["B", "C", "C", "B", "B", "C"],
        target=target,
        device=device,
        device_kind="cpu",
        protocol=current_protocol() if protocol is None else protocol,
        contract_sha256=file_sha("contract"),
        baseline=SideSummary(
            script=f"targets/{target}/baseline.py",
            sha256=baseline_sha256 or rendered_baseline_sha(target),
            stats=sample_stats(base),
        ),
        candidate=SideSummary(
            script=f"targets/{target}/candidate.py",
            sha256=file_sha(target, candidate or speedup),
            stats=sample_stats(cand),
        ),
        runs=runs,
    )


def provenance(device: str = DEVICE) -> Provenance:
    """Fixed provenance so tests need no git, NVML or interpreter probe."""
    return Provenance(device=device, device_kind="cpu", cpu="test cpu", hotkernel="0.0.test")


TARGETS = ("rmsnorm", "softmax", "gemv")


def make_workspace(root: Path, targets: tuple[str, ...] = TARGETS) -> Workspace:
    """A workspace whose manifest declares the targets the synthetic records use (record refuses others)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "k.py").write_text("def f(x):\n    return x\n", encoding="utf-8")
    entries = "".join(ENTRY.format(t) for t in targets)
    (root / "hotkernel.yaml").write_text(f"version: 1\ntargets:\n{entries}", encoding="utf-8")
    return Workspace(root)


def write_noise(results: Path) -> None:
    """Non-record JSON under results/ that the leaderboard must ignore."""
    (results / "calibration").mkdir(parents=True, exist_ok=True)
    (results / "calibration" / "h200_timer_vs_ncu.json").write_text(json.dumps({"rows": [1, 2]}))
    (results / "baseline_choice.json").write_text(json.dumps({"rmsnorm": "F.rms_norm"}))
    (results / "rmsnorm").mkdir(parents=True, exist_ok=True)
    (results / "rmsnorm" / ".20990101T000000Z.json.abc.tmp").write_text('{"kind": "rec')


def leaderboard_cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    """``hotkernel leaderboard ARGS`` in a fresh process on the workspace at ``root`` (wide output)."""
    env = {**os.environ, "HOTKERNEL_WORKSPACE": str(root), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "hotkernel", "leaderboard", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
