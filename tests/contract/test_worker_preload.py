"""The worker pays Triton's once-per-process set-up (cache key, gluon import) before its job, where torch sees
a GPU, and creates no CUDA context doing it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hotkernel.run import render
from hotkernel.run.runner import run_script

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from adversarial.workspace import TARGET, make_workspace, python  # noqa: E402

PROBE = """
import sys, types
sys.path.insert(0, {folder!r})
import hk_contract
import triton.runtime.cache as triton_cache
fake = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: {available}))
hk_contract.preload_triton(fake)
import torch
print(triton_cache.triton_key.cache_info().currsize, "triton.experimental.gluon" in sys.modules,
      torch.cuda.is_initialized())
"""


@pytest.mark.parametrize(("available", "expected"), [(True, "1 True False"), (False, "0 False False")])
def test_preload_runs_only_where_torch_sees_a_gpu(available: bool, expected: str) -> None:
    pytest.importorskip("triton")
    folder = str(render.contract_path().parent)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(folder=folder, available=available)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[-2] == expected


TF32_WATCHER = """import torch


def kernel(x, w, *, eps):
    if torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32:
        raise RuntimeError("TF32 is allowed during the timed call")
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
"""


def test_tf32_is_off_while_the_kernel_runs(tmp_path: Path) -> None:
    """PyTorch allows TF32 in cuDNN by default; under the contract an fp32 target computes in fp32."""
    ws, resolved = make_workspace(tmp_path / "ws")
    (ws.target_dir(TARGET) / "candidate.py").write_text(TF32_WATCHER)
    outcome = run_script(ws, f"targets/{TARGET}/candidate.py", python=python(), resolved=resolved)
    assert outcome.status == "ok", outcome.reason
