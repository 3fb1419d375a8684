"""Every speedrun candidate (speedrun/<target>/<variant>.py) is correct at small shapes, interpreted.

One subprocess (TRITON_INTERPRET=1, CPU tensors) runs speedrun/check_variants.py over all variants; each
variant is then one test case, failing with the checker's own line (error ratio or exception). The timing and
the headline shapes are checked on the H200 by the lead (`--device cuda --shapes headline`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SPEEDRUN = REPO / "speedrun"
TARGETS = ("rmsnorm", "softmax", "gemv", "decode_attention", "int4_gemv")
VARIANTS = [(t, p.stem) for t in TARGETS for p in sorted((SPEEDRUN / t).glob("*.py"))
            if not p.name.startswith("_")]

pytestmark = pytest.mark.slow


def _has_triton() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import torch, triton"], capture_output=True, timeout=120)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def interpreter_results() -> dict[tuple[str, str], list[dict]]:
    """Run the checker once for all variants; results keyed by (target, variant)."""
    if not _has_triton():
        pytest.skip("torch and triton are not importable by this interpreter")
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, str(SPEEDRUN / "check_variants.py"), "--device", "cpu"],
                          capture_output=True, text=True, timeout=600, cwd=REPO, env=env)
    results: dict[tuple[str, str], list[dict]] = {}
    for line in proc.stdout.splitlines():
        row = json.loads(line)
        results.setdefault((row["target"], row["variant"]), []).append(row)
    assert results, f"checker printed nothing (rc={proc.returncode}): {proc.stderr[-2000:]}"
    return results


def test_every_target_has_several_variants() -> None:
    for target in TARGETS:
        assert sum(1 for t, _ in VARIANTS if t == target) >= 3, f"{target}: fewer than 3 candidates"


@pytest.mark.parametrize(("target", "variant"), VARIANTS, ids=[f"{t}/{v}" for t, v in VARIANTS])
def test_variant_matches_fp32_reference(interpreter_results: dict, target: str, variant: str) -> None:
    rows = interpreter_results.get((target, variant))
    assert rows, f"{target}/{variant}: no result from the checker"
    assert len(rows) >= 2, f"{target}/{variant}: expected every small case to run, got {rows}"
    for row in rows:
        assert row["ok"], f"{target}/{variant} case {row['case']}: {row}"
        assert row["worst_ratio"] <= 1.0


def test_checker_rejects_a_wrong_kernel(tmp_path: Path) -> None:
    """The comparison has teeth: a kernel reading tinygemm's nibbles in the wrong order fails it."""
    if not _has_triton():
        pytest.skip("torch and triton are not importable by this interpreter")
    script = f"""
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, {str(SPEEDRUN)!r})
import torch
import check_variants as cv
torch.manual_seed(0)
module = cv.load_variant(cv.SPEEDRUN_DIR / "int4_gemv" / "tile_bn32_g4.py")
name, inputs, kwargs, ref = cv.make_cases("int4_gemv", "small", "cpu")[0]
x, packed, sz = inputs
swapped = ((packed >> 4) & 0x0F0F0F0F) | ((packed & 0x0F0F0F0F) << 4)  # swap nibbles within each byte
good = cv.compare(module.kernel(x, packed, sz, **kwargs), ref(), "int4_gemv", "cpu")[0]
bad = cv.compare(module.kernel(x, swapped, sz, **kwargs), ref(), "int4_gemv", "cpu")[0]
print(good, bad)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["True", "False"]
