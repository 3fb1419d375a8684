"""Real CPU runs through the runner: scale-aware verdicts on a bf16 softmax 8x8192 (outputs ~1e-4, far under the bf16
atol of 0.02, so the elementwise check alone passes zeros; the rows are 8192 wide for that, and 8 of them keep the
judge's references cheap), a module baseline with fp32 parameters."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hotkernel.run.render import render_target
from hotkernel.run.runner import JudgeProcess, run_script

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from adversarial.workspace import TARGET, default_resolved, make_workspace, python  # noqa: E402

pytestmark = pytest.mark.slow

SOFTMAX_SOURCE = """import torch


def softmax(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
"""
SOFTMAX_CANDIDATES = {
    "honest_bf16": ("ok", (), "return torch.softmax(x, dim=-1)"),
    "honest_fp32_accumulate": ("ok", (), "return torch.softmax(x.float(), dim=-1).to(x.dtype)"),
    "zeros": ("incorrect", ("relative_error_norm", "output_carries_signal"), "return torch.zeros_like(x)"),
    "uniform": (
        "incorrect",
        ("relative_error_norm", "output_carries_signal"),
        "return torch.full_like(x, 1.0 / x.shape[-1])",
    ),
    "another_input_set": (
        "incorrect",
        ("outputs_match_reference", "relative_error_norm", "output_carries_signal"),
        "return torch.softmax(torch.randn_like(x), dim=-1)",
    ),
    "fp8_rounded_inputs": (
        "incorrect",
        ("outputs_match_reference", "relative_error_norm", "output_carries_signal"),
        "return torch.softmax(x.to(torch.float8_e4m3fn).float(), dim=-1).to(x.dtype)",
    ),
}


def softmax_workspace(root: Path) -> tuple:
    ws, _ = make_workspace(root)
    (ws.root / "kernels" / "ops.py").write_text(SOFTMAX_SOURCE)
    resolved = default_resolved(
        **{
            "from": "./kernels/ops.py:softmax",
            "inputs": [{"name": "x", "shapes": [[8, 8192]]}],
            "shapes": ["8x8192"],
            "dtype": "bf16",
            "kwargs": {},
            "rotate": ["x"],
            "atol": 0.02,
            "rtol": 0.02,
        }
    )
    render_target(ws, TARGET, resolved)
    return ws, resolved


@pytest.fixture(scope="module")
def softmax_session(tmp_path_factory: pytest.TempPathFactory):
    """One bf16 softmax workspace and one judge for the candidates of this module (on each xdist worker)."""
    ws, resolved = softmax_workspace(tmp_path_factory.mktemp("softmax") / "ws")
    with JudgeProcess(ws, python=python()) as judge:
        yield ws, resolved, judge


@pytest.mark.parametrize("name", list(SOFTMAX_CANDIDATES))
def test_scale_aware_checks_on_a_bf16_softmax(softmax_session, name: str) -> None:
    # zeros: the elementwise bound alone would have let them through, every output being under atol
    ws, resolved, judge = softmax_session
    status, checks, body = SOFTMAX_CANDIDATES[name]
    (ws.target_dir(TARGET) / "candidate.py").write_text(f"import torch\n\n\ndef kernel(x):\n    {body}\n")
    outcome = run_script(ws, f"targets/{TARGET}/candidate.py", python=python(), judge=judge, resolved=resolved)
    assert outcome.status == status, f"{name}: {outcome.status} / {outcome.reason}"
    if checks:
        assert outcome.reason.split(":", 1)[0] in checks, f"{name}: {outcome.reason}"
    else:
        assert set(outcome.run["tolerances"]) >= {"atol", "rtol", "rel_l2_max", "min_corr"}


LAYER_NORM_SOURCE = """import torch

NORM = torch.nn.LayerNorm(256)  # fp32 parameters: the judge's fp64 reference upcasts them


def layer_norm(x):
    return NORM(x)
"""


def test_module_baseline_with_fp32_parameters_gets_an_fp64_reference(tmp_path: Path) -> None:
    ws, _ = make_workspace(tmp_path / "ws")
    (ws.root / "kernels" / "ops.py").write_text(LAYER_NORM_SOURCE)
    resolved = default_resolved(
        **{
            "from": "./kernels/ops.py:layer_norm",
            "inputs": [{"name": "x", "shapes": [[64, 256]]}],
            "shapes": ["64x256"],
            "kwargs": {},
            "rotate": ["x"],
        }
    )
    render_target(ws, TARGET, resolved)
    outcome = run_script(ws, f"targets/{TARGET}/baseline.py", python=python(), resolved=resolved)
    assert outcome.status == "ok", outcome.reason
    assert outcome.run["reference_precision"] == "fp64, 1 module(s) upcast"
