"""Synthetic verify results for record/leaderboard tests: made-up numbers on a made-up device."""

from __future__ import annotations

import json
from pathlib import Path

from hotkernel.run.bench import sample_stats
from hotkernel.run.models import RunSummary, SideSummary, VerifyResult
from hotkernel.store.leaderboard import current_protocol
from hotkernel.store.models import Provenance
from hotkernel.workspace.paths import Workspace

DEVICE = "Synthetic Test Device"
FP32_TOLERANCES = {"atol": 1e-4, "rtol": 1e-4}  # what the manifest below resolves to (fp32 defaults)


def synthetic_result(
    target: str,
    verdict: str,
    speedup: float | None = None,
    *,
    device: str = DEVICE,
    protocol: int | None = None,
    tolerances: dict[str, float] | None = None,
) -> VerifyResult:
    """A VerifyResult with the given verdict (the current protocol unless given); the speedup only for
    faster/slower, as verify does. ``tolerances``: what each run's JSON reports, as protocol 2 does."""
    base = [1.0, 1.01, 0.99]
    cand = [b / speedup for b in base] if speedup else base
    has = verdict in ("faster", "slower")
    return VerifyResult(
        verdict=verdict,
        reason=f"test: synthetic {verdict}",
        speedup=speedup if has else None,
        interval=[speedup * 0.99, speedup * 1.01] if has and speedup else None,
        n=3,
        rounds_completed=3,
        order=["B", "C", "C", "B", "B", "C"],
        target=target,
        device=device,
        device_kind="cpu",
        protocol=current_protocol() if protocol is None else protocol,
        baseline=SideSummary(script=f"targets/{target}/baseline.py", stats=sample_stats(base)),
        candidate=SideSummary(script=f"targets/{target}/candidate.py", stats=sample_stats(cand)),
        runs=[
            RunSummary(role=role, index=i, status="ok", ms=1.0, data={"tolerances": tolerances})
            for i, role in enumerate(("baseline", "candidate"))
        ]
        if tolerances is not None
        else [],
    )


def provenance(device: str = DEVICE) -> Provenance:
    """Fixed provenance so tests need no git, NVML or interpreter probe."""
    return Provenance(device=device, device_kind="cpu", cpu="test cpu", hotkernel="0.0.test")


TARGETS = ("rmsnorm", "softmax", "gemv")


def make_workspace(root: Path) -> Workspace:
    """A workspace whose manifest declares the targets the synthetic records use (record refuses others)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "k.py").write_text("def f(x):\n    return x\n", encoding="utf-8")
    entries = "".join(
        f"  {t}:\n    from: ./k.py:f\n    shapes: [8x8]\n    dtype: fp32\n    device: cpu\n" for t in TARGETS
    )
    (root / "hotkernel.yaml").write_text(f"version: 1\ntargets:\n{entries}", encoding="utf-8")
    return Workspace(root)


def write_noise(results: Path) -> None:
    """Non-record JSON under results/ that the leaderboard must ignore."""
    (results / "calibration").mkdir(parents=True, exist_ok=True)
    (results / "calibration" / "h200_timer_vs_ncu.json").write_text(json.dumps({"rows": [1, 2]}))
    (results / "baseline_choice.json").write_text(json.dumps({"rmsnorm": "F.rms_norm"}))
    (results / "rmsnorm").mkdir(parents=True, exist_ok=True)
    (results / "rmsnorm" / ".20990101T000000Z.json.abc.tmp").write_text('{"kind": "rec')
