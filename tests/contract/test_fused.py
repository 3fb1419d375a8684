"""The one-pass Triton error sums (``contract/fused.py``) equal the torch loop's, run by Triton's interpreter on CPU.

The GPU compiles the same kernel; the interpreter runs its program logic (strided ranges, masks, several launches,
fp64 accumulators, NaN and inf) element for element, so a wrong sum, mask or stride shows here.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, math, torch
from hotkernel.contract import correctness, fused

fused.FUSED_PROGRAMS = 3          # few programs: each strides over several blocks
fused.FUSED_LAUNCH_ELEMENTS = 4096  # several launches per output
fused.FUSED_BLOCK = 256
g = torch.Generator().manual_seed(7)
ref = torch.randn(5000, generator=g, dtype=torch.float64) * 3 + 10
cases = {}
def add(name, out, ref, atol=1e-4, rtol=1e-4):
    pieces = correctness.correctness_pieces(tuple(out.shape), 1000)
    loop, loop_worst = correctness.correctness_sums(torch, out, ref, atol, rtol, pieces, False)
    one, one_worst = fused.fused_error_sums(torch, out, ref, atol, rtol, loop["shift_o"], loop["shift_r"])
    cases[name] = {"loop": loop, "loop_worst": loop_worst, "fused": one, "fused_worst": one_worst}
noisy = ref.float() + torch.randn(5000, generator=g) * 2e-4  # some elements beyond atol + rtol |ref|
add("fp32", noisy, ref)
add("bf16", (ref + torch.randn(5000, generator=g, dtype=torch.float64) * 0.05).bfloat16(), ref.float(), 0.02, 0.02)
add("fp16", ref.half(), ref.float(), 2.5e-3, 2.5e-3)
add("odd_size_2d", noisy[:4199].reshape(13, 323).t(), ref[:4199].reshape(13, 323).t())
with_nan = noisy.clone(); with_nan[4100] = float("nan")
add("nan", with_nan, ref)
with_inf = noisy.clone(); with_inf[17] = float("inf")
add("inf", with_inf, ref)
print(json.dumps(cases, allow_nan=True))
"""


def interpreted(script: str) -> dict:
    probe = subprocess.run([sys.executable, "-c", "import torch, triton"], capture_output=True, timeout=120)
    if probe.returncode != 0:
        pytest.skip("torch and triton are not importable by this interpreter")
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300) + 1e-12


def test_the_fused_sums_equal_the_torch_loop_for_every_dtype_layout_and_non_finite_value() -> None:
    cases = interpreted(SCRIPT)
    assert set(cases) == {"fp32", "bf16", "fp16", "odd_size_2d", "nan", "inf"}
    for name, case in cases.items():
        for key, value in case["loop"].items():
            if key.startswith("shift"):
                continue
            assert close(case["fused"][key], value), (name, key, case["fused"][key], value)
        assert close(case["fused_worst"], case["loop_worst"]), (name, case["fused_worst"], case["loop_worst"])
    # the cases exercise what they claim: mismatches, rounding error, NaN and inf
    assert 0 < cases["fp32"]["loop"]["matches"] < 5000
    assert cases["fp16"]["loop"]["q2"] > 0 and cases["fp16"]["loop"]["d2"] == cases["fp16"]["loop"]["q2"]
    assert math.isnan(cases["nan"]["fused_worst"])
    assert cases["nan"]["fused"]["matches"] < cases["fp32"]["fused"]["matches"]
    assert math.isinf(cases["inf"]["fused_worst"]) and math.isinf(cases["inf"]["fused"]["d2"])
