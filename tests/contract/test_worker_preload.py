"""The worker pays Triton's once-per-process set-up (cache key, gluon import) before its job, where torch sees
a GPU, and creates no CUDA context doing it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hotkernel.run import render

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
    proc = subprocess.run([sys.executable, "-c", PROBE.format(folder=folder, available=available)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[-2] == expected
