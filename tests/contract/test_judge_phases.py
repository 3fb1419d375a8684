"""The judge reports where its time goes: each phase's own seconds (``judge_*`` in a run's ``phases_s``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hotkernel.run import render

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from adversarial.workspace import TARGET, make_workspace, python  # noqa: E402

hk = render.contract_module()


class FakeCuda:
    def __init__(self) -> None:
        self.synchronized = 0

    def is_initialized(self) -> bool:
        return True

    def synchronize(self) -> None:
        self.synchronized += 1


class FakeTorch:
    def __init__(self) -> None:
        self.cuda = FakeCuda()


def test_a_nested_phase_is_counted_once_and_each_phase_ends_synchronized(monkeypatch: Any) -> None:
    now = [0.0]
    monkeypatch.setattr(hk.time, "perf_counter", lambda: now[0])
    torch = FakeTorch()
    clock = hk.PhaseClock(torch)
    with clock("checks"):
        now[0] += 1.0
        with clock("reference"):
            now[0] += 2.0
        now[0] += 0.5
    with clock("reference"):
        now[0] += 0.25
    assert clock.seconds() == {"checks": 1.5, "reference": 2.25}
    assert torch.cuda.synchronized == 3


def test_a_run_reports_the_judge_phases_within_the_judge_time(tmp_path: Path) -> None:
    ws, _ = make_workspace(tmp_path / "ws")
    contract = str(render.contract_path())
    result = hk.orchestrate(str(ws.target_dir(TARGET) / "candidate.py"), python=python(), contract=contract)
    assert result["status"] == "ok", result["reason"]
    phases = result["phases_s"]
    judged = {name: value for name, value in phases.items() if name.startswith("judge_")}
    for name in ("judge_open", "judge_inputs", "judge_reference", "judge_baseline", "judge_checks", "judge_release"):
        assert name in judged, sorted(judged)
    assert all(value >= 0 for value in judged.values()), judged
    # every phase ran inside the orchestrator's wait for the judge's answer (3 decimals each: rounding slack)
    assert sum(judged.values()) <= phases["judge"] + 0.001 * len(judged) + 1e-9, (judged, phases["judge"])
    assert judged["judge_reference"] > 0
