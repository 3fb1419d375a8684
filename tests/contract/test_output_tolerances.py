"""Each output judged at its own bounds (``output_tolerances``): in ``check_outputs``, and through real CPU runs
where the SPEC carries them to the judge and the run reports them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hotkernel.contract import correctness
from hotkernel.contract.correctness import check_output_tolerances
from hotkernel.contract.knobs import CheckFailed
from hotkernel.run.render import render_target
from hotkernel.run.runner import JudgeProcess, run_script

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from adversarial.workspace import TARGET, default_resolved, make_workspace, python  # noqa: E402

torch = pytest.importorskip("torch")

WIDE = {"atol": 1e-2, "rtol": 1e-2, "rel_l2_max": 1e-2}  # output 0's own; the target keeps fp32's 1e-4


def judged(outs: list, refs: list, entries: list[dict]) -> dict[str, dict]:
    tol = correctness.tolerances("fp32", {"output_tolerances": entries})
    return {check["name"]: check for check in correctness.check_outputs(torch, outs, refs, tol)}


def two_outputs() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return torch.randn(64, 256, generator=generator, dtype=torch.float64), torch.randn(
        64, generator=generator, dtype=torch.float64
    )


def test_an_output_within_its_own_wider_bounds_passes_where_the_targets_would_fail_it() -> None:
    a, b = two_outputs()
    off = (a + 3e-3).float()  # 30x over the target's atol, a third of output 0's own
    assert judged([off, b.float()], [a, b], [WIDE])["outputs_match_reference"]["ok"]
    assert all(check["ok"] for check in judged([off, b.float()], [a, b], [WIDE]).values())
    tightest = judged([off, b.float()], [a, b], [])
    assert not tightest["outputs_match_reference"]["ok"] and not tightest["relative_error_norm"]["ok"]


def test_an_output_outside_its_own_bounds_fails_and_is_named() -> None:
    a, b = two_outputs()
    found = judged([(a + 3e-3).float(), (b * 1.02).float()], [a, b], [WIDE])  # output 1: the target's bounds
    assert not found["outputs_match_reference"]["ok"]
    assert found["outputs_match_reference"]["detail"].startswith("output 1: ")
    assert "atol=0.0001, rtol=0.0001" in found["outputs_match_reference"]["detail"]


def test_a_passing_detail_states_each_outputs_bounds() -> None:
    a, b = two_outputs()
    found = judged([a.float(), b.float()], [a, b], [WIDE, {"min_corr": 0.5}])
    assert (
        "output 0: atol=0.01, rtol=0.01; output 1: atol=0.0001, rtol=0.0001"
        in (found["outputs_match_reference"]["detail"])
    )
    assert "output 0: min_corr=0.9999; output 1: min_corr=0.5" in found["output_carries_signal"]["detail"]


def test_more_entries_than_outputs_is_a_named_check() -> None:
    check_output_tolerances(correctness.tolerances("fp32", {"output_tolerances": [{}, {}]}), 2)
    with pytest.raises(CheckFailed) as caught:
        check_output_tolerances(correctness.tolerances("fp32", {"output_tolerances": [{}, {}, {}]}), 2)
    assert caught.value.check == "output_tolerances_fit_outputs"
    assert "lists 3 entries and the baseline returns 2 output(s); remove the entries past output 1" in str(caught.value)


TWO_SOURCE = """import torch


def scale_and_sum(x):
    return x * 2.0, x.sum(dim=-1)
"""
CANDIDATES = {
    "honest": ("ok", "return x * 2.0, x.sum(dim=-1)"),
    "output_0_within_its_own": ("ok", "return x * 2.0 + 3e-3, x.sum(dim=-1)"),
    "output_1_outside_its_own": ("incorrect", "return x * 2.0, x.sum(dim=-1) * 1.02"),
}


@pytest.mark.slow
def test_the_judge_applies_each_outputs_bounds_and_reports_them(tmp_path: Path) -> None:
    ws, _ = make_workspace(tmp_path / "ws")
    (ws.root / "kernels" / "ops.py").write_text(TWO_SOURCE)
    resolved = default_resolved(
        **{"from": "./kernels/ops.py:scale_and_sum", "inputs": [{"name": "x", "shapes": [[16, 256]]}]},
        shapes=["16x256"],
        kwargs={},
        output_tolerances=[WIDE],
    )
    render_target(ws, TARGET, resolved)
    with JudgeProcess(ws, python=python()) as judge:
        for name, (status, body) in CANDIDATES.items():
            (ws.target_dir(TARGET) / "candidate.py").write_text(f"import torch\n\n\ndef kernel(x):\n    {body}\n")
            outcome = run_script(ws, f"targets/{TARGET}/candidate.py", python=python(), judge=judge, resolved=resolved)
            assert outcome.status == status, f"{name}: {outcome.status} / {outcome.reason}"
            if status == "ok":
                assert outcome.run["tolerances"]["per_output"] == [{**WIDE, "min_corr": 0.9999}]
            else:
                assert "output 1: " in outcome.reason, outcome.reason
        too_many = {**resolved, "output_tolerances": [WIDE, {}, {}]}
        render_target(ws, TARGET, too_many)
        outcome = run_script(ws, f"targets/{TARGET}/candidate.py", python=python(), judge=judge, resolved=too_many)
        assert outcome.status == "invalid", outcome.reason
        assert outcome.reason.startswith("output_tolerances_fit_outputs: "), outcome.reason
