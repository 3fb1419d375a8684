"""bench and verify logic over a scripted fake runner (the real contract runs in test_sync_e2e.py)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.run import runner
from hotkernel.run.bench import bench
from hotkernel.run.runner import RunOutcome
from hotkernel.run.verify import verify
from hotkernel.workspace.paths import Workspace

FIELDS = {
    "protocol": 1,
    "target": "t",
    "shapes": ["8x8"],
    "dtype": "fp32",
    "seed_policy": "fresh-per-run",
    "rotation": 4,
    "bytes": 512,
    "flops": None,
    "contract_sha256": "c" * 64,
    "device": "Fake CPU",
    "device_kind": "cpu",
}


def _outcome(
    role: str, ms: float | None = 1.0, status: str = "ok", reason: str | None = None, **overrides: Any
) -> RunOutcome:
    run = {
        **FIELDS,
        "status": status,
        "ok": status == "ok",
        "reason": reason,
        "ms": ms,
        "role": role,
        "script_sha256": role[0] * 64,
        "per_shape": [{"shape": "8x8", "ms": ms}],
        **overrides,
    }
    return RunOutcome(
        status=status, reason=reason, ms=ms if status == "ok" else None, run=run, wall_s=0.1, script=role, role=role
    )


class FakeJudge:
    started = 0

    def __init__(self, ws: Any, *, python: str, compile_warm: bool = False) -> None:
        self.closed = False
        self.compile_warm = compile_warm
        FakeJudge.started += 1

    def want_compile_warm(self, compile_warm: bool) -> None:
        self.compile_warm = compile_warm

    def __enter__(self) -> FakeJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.closed = True

    def ensure_ready(self) -> None:
        pass


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    (tmp_path / "hotkernel.yaml").write_text("version: 1\ntargets: {}\n")
    for name in ("baseline", "candidate"):
        path = tmp_path / "targets" / "t" / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# fake\n")
    monkeypatch.setattr(runner, "JudgeProcess", FakeJudge)
    monkeypatch.setattr(runner, "check_workspace_integrity", lambda ws, name, resolved=None: None)
    return Workspace(tmp_path)


def _script(monkeypatch: pytest.MonkeyPatch, plan: dict[str, list[RunOutcome]]) -> list[str]:
    """Make run_script return the next planned outcome per role; returns the roles in the order they ran."""
    calls: list[str] = []
    queues = {role: list(items) for role, items in plan.items()}

    def fake_run_script(ws: Any, script: Any, *, python: str, role: str, **kwargs: Any) -> RunOutcome:
        calls.append(role)
        return queues[role].pop(0)

    monkeypatch.setattr(runner, "run_script", fake_run_script)
    return calls


def _verify(ws: Workspace, n: int = 5, **kwargs: Any):
    return verify(ws, "targets/t/baseline.py", "targets/t/candidate.py", n=n, python="python", **kwargs)


def test_abba_order_and_faster_with_interval(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """A clear 1.5x is decided at the first look (round 3): the rest of the planned rounds never run."""
    base = [1.00, 1.02, 0.99, 1.01, 1.00]
    calls = _script(
        monkeypatch,
        {
            "baseline": [_outcome("baseline", b) for b in base],
            "candidate": [_outcome("candidate", b / 1.5) for b in base],
        },
    )
    seen: list[tuple[int, int, str]] = []
    result = _verify(ws, progress=lambda d, t, m: seen.append((d, t, m)))
    assert calls == ["baseline", "candidate", "candidate", "baseline", "baseline", "candidate"]
    assert result.order == ["B", "C", "C", "B", "B", "C"]
    assert result.verdict == "faster" and result.speedup == pytest.approx(1.5)
    assert result.interval[0] <= 1.5 <= result.interval[1] and result.interval[0] > 1.01
    assert result.reason.startswith("interval_above_margin")
    assert result.baseline.stats.samples_ms == base[:3] and result.rounds_completed == 3
    assert result.stopped == "decided" and result.n == 5 and result.max_rounds == 10 and result.extended is None
    assert [s[0] for s in seen] == list(range(1, 7)) and all(s[1] == 10 for s in seen)
    assert result.contract["rotation"] == 4 and result.device == "Fake CPU"


def test_same_code_is_inconclusive_without_speedup(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    times = [1.0, 1.2, 0.9, 1.1, 1.0]
    _script(
        monkeypatch,
        {
            "baseline": [_outcome("baseline", t) for t in times],
            "candidate": [
                _outcome("candidate", t * f) for t, f in zip(times, [1.01, 0.98, 1.02, 0.99, 1.0], strict=True)
            ],
        },
    )
    result = _verify(ws)
    assert result.verdict == "inconclusive" and result.speedup is None and result.interval is None
    assert result.decision is not None and result.decision["speedup"] is not None


def test_incorrect_candidate_stops_at_once(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _script(
        monkeypatch,
        {
            "baseline": [_outcome("baseline")] * 5,
            "candidate": [
                _outcome("candidate", status="incorrect", reason="outputs_match_reference: max error 1.0 > atol")
            ]
            * 5,
        },
    )
    result = _verify(ws)
    assert calls == ["baseline", "candidate"]
    assert result.verdict == "incorrect" and result.reason.startswith("outputs_match_reference")
    assert result.speedup is None and result.rounds_completed == 0


def test_baseline_failure_is_invalid(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    _script(
        monkeypatch, {"baseline": [_outcome("baseline", status="invalid", reason="crashed: exit 1")], "candidate": []}
    )
    result = _verify(ws)
    assert result.verdict == "invalid" and result.reason == "baseline_failed: crashed: exit 1"


@pytest.mark.parametrize("field", ["target", "shapes", "dtype", "rotation", "bytes", "contract_sha256"])
def test_contract_field_mismatch_is_invalid(ws: Workspace, monkeypatch: pytest.MonkeyPatch, field: str) -> None:
    changed = {"shapes": ["8x9"], "rotation": 2, "bytes": 1}.get(field, "other")
    calls = _script(
        monkeypatch,
        {"baseline": [_outcome("baseline")] * 5, "candidate": [_outcome("candidate", **{field: changed})] * 5},
    )
    result = _verify(ws)
    assert result.verdict == "invalid" and result.reason.startswith(f"contract_fields_match: {field} ")
    assert calls == ["baseline", "candidate"]


def test_script_edited_between_rounds_is_invalid(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    _script(
        monkeypatch,
        {
            "baseline": [_outcome("baseline")] * 5,
            "candidate": [_outcome("candidate"), _outcome("candidate", script_sha256="e" * 64)],
        },
    )
    result = _verify(ws)
    assert result.verdict == "invalid" and result.reason.startswith("script_unchanged")


def test_protocol_break_and_integrity(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    _script(
        monkeypatch,
        {
            "baseline": [_outcome("baseline")],
            "candidate": [_outcome("candidate", status="invalid", reason="single_protocol_line: 2 JSON lines")],
        },
    )
    assert _verify(ws).reason.startswith("single_protocol_line")
    calls = _script(monkeypatch, {"baseline": [], "candidate": []})
    monkeypatch.setattr(
        runner,
        "check_workspace_integrity",
        lambda ws, name, resolved=None: "baseline_unchanged: baseline.py was edited",
    )
    started = FakeJudge.started
    result = _verify(ws)
    assert result.verdict == "invalid" and result.reason.startswith("baseline_unchanged") and calls == []
    assert FakeJudge.started == started  # no judge process was started for nothing


def test_cancel_stops_between_runs(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    cancel = threading.Event()
    _script(monkeypatch, {"baseline": [_outcome("baseline")] * 5, "candidate": [_outcome("candidate")] * 5})
    result = _verify(ws, progress=lambda d, t, m: cancel.set() if d == 3 else None, cancel=cancel)
    assert result.verdict == "invalid" and result.reason.startswith("cancelled") and len(result.runs) == 3


def test_bench_stats_and_failures(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = [2.0, 1.0, 3.0, 4.0]
    timed = [_outcome("candidate", s) for s in samples]
    _script(monkeypatch, {"candidate": [_outcome("candidate", 9.0), *timed]})
    result = bench(ws, "targets/t/candidate.py", n=4, warmup=1, python="python")
    assert result.status == "ok" and result.stats.samples_ms == samples  # warmup not counted
    assert result.stats.mean_ms == 2.5 and result.stats.median_ms == 2.5 and result.stats.min_ms == 1.0
    assert result.stats.std_ms == pytest.approx(1.2909944)
    assert len(result.runs) == 5 and result.runs[0].index == -1
    _script(
        monkeypatch,
        {"candidate": [_outcome("candidate", 1.0), _outcome("candidate", status="invalid", reason="timeout: 600 s")]},
    )
    failed = bench(ws, "targets/t/candidate.py", n=4, warmup=0, python="python")
    assert failed.status == "invalid" and failed.reason == "timeout: 600 s" and len(failed.runs) == 2

    def broken(*args: Any, **kwargs: Any) -> RunOutcome:
        raise HotkernelError("cannot start the judge")

    monkeypatch.setattr(runner, "run_script", broken)
    crashed = bench(ws, "targets/t/candidate.py", n=1, warmup=0, python="python")
    assert crashed.status == "error" and "cannot start the judge" in crashed.reason


def test_missing_script_and_bad_n(ws: Workspace) -> None:
    with pytest.raises(HotkernelError, match="does not exist"):
        bench(ws, "targets/t/nope.py", n=1, python="python")
    with pytest.raises(HotkernelError, match="outside the workspace"):
        bench(ws, "../escape.py", n=1, python="python")
    with pytest.raises(HotkernelError, match="-n >= 1"):
        _verify(ws, n=0)


def _noisy(ms: float, rounds: int, spread: float = 0.03) -> list[float]:
    return [ms * (1 + spread * (-1) ** i) for i in range(rounds)]


def test_open_at_n_with_a_difference_goes_on_to_the_cap(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """Still open at n with the point estimate outside the margin: more rounds, and the result says why."""
    base = [1.0] * 14
    _script(
        monkeypatch,
        {
            "baseline": [_outcome("baseline", b) for b in base],
            "candidate": [_outcome("candidate", c / 1.03) for c in _noisy(1.0, 14, 0.08)],
        },
    )
    result = _verify(ws, n=5)
    assert result.rounds_completed > 5 and result.max_rounds == 10
    assert result.extended is not None and "open after 5 rounds" in result.extended
    assert result.stopped in ("decided", "max_rounds")
    from hotkernel.run.verdict import LookPlan, decide_sequential

    again = decide_sequential(
        result.baseline.stats.samples_ms,
        result.candidate.stats.samples_ms,
        plan=LookPlan(n=result.n, max_rounds=result.max_rounds),
        alpha=result.alpha,
        epsilon=result.epsilon,
    )
    assert again.as_dict() == result.decision and again.verdict == result.verdict


def test_open_at_n_without_a_difference_stops_at_n(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    _script(
        monkeypatch,
        {
            "baseline": [_outcome("baseline", 1.0)] * 10,
            "candidate": [_outcome("candidate", c) for c in _noisy(1.0, 10)],
        },
    )
    result = _verify(ws, n=5, max_rounds=10)
    assert result.verdict == "inconclusive" and result.rounds_completed == 5
    assert result.stopped == "planned_rounds" and result.extended is None


def test_max_rounds_below_n_is_refused(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    _script(monkeypatch, {"baseline": [], "candidate": []})
    with pytest.raises(HotkernelError, match="--max-rounds 3 is below -n 5"):
        _verify(ws, n=5, max_rounds=3)


def test_failed_run_says_failed(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    _script(
        monkeypatch,
        {"baseline": [_outcome("baseline")], "candidate": [_outcome("candidate", status="incorrect", reason="x: y")]},
    )
    result = _verify(ws)
    assert result.verdict == "incorrect" and result.stopped == "failed"
