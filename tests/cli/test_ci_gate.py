""".ci/gpu_pending.py: CI lets through only cuda targets out of date because the contract changed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "gpu_pending.py"


def gate(plan: dict) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT)], input=json.dumps(plan), capture_output=True, text=True)


def item(name: str, device: str, *reasons: str, competitor: str | None = None) -> dict:
    row = {"name": name, "action": "update", "reasons": list(reasons), "device_kind": device}
    return {**row, "competitor": competitor} if competitor else row


def test_a_contract_change_on_cuda_targets_is_pending_not_failing() -> None:
    done = gate(
        {
            "items": [item("gemv", "cuda", "contract changed")],
            "competitors": [item("rmsnorm", "cuda", "contract changed", competitor="compile")],
            "problems": [],
        }
    )
    assert done.returncode == 0, done.stderr
    assert "pending a GPU re-record (contract changed): target gemv" in done.stdout
    assert "competitor rmsnorm (compile)" in done.stdout


@pytest.mark.parametrize(
    "plan",
    [
        {"items": [item("cpu_rmsnorm", "cpu", "contract changed")]},
        {"items": [item("gemv", "cuda", "contract changed", "candidate changed")]},
        {"items": [item("gemv", "cuda", "manifest changed")]},
        {"items": [], "competitors": [item("softmax", "cuda", "candidate changed", competitor="compile")]},
        {"items": [], "problems": ["LEADERBOARD.md is stale"]},
    ],
)
def test_any_other_drift_fails_and_is_named(plan: dict) -> None:
    done = gate(plan)
    assert done.returncode == 2
    assert "out of date:" in done.stderr
