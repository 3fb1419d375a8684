"""Run a script of the speedrun tests in a fresh interpreter, under Triton's interpreter (no GPU)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def skip_without_torch_and_triton() -> None:
    """Skip the calling test when this interpreter cannot import torch and triton."""
    probe = subprocess.run([sys.executable, "-c", "import torch, triton"], capture_output=True, timeout=120)
    if probe.returncode != 0:
        pytest.skip("torch and triton are not importable by this interpreter")


def run_interpreted(script: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
    """``script`` with TRITON_INTERPRET=1, CUDA hidden, and lab/speedrun/ then the repository root importable."""
    path = os.pathsep.join([str(REPO / "lab" / "speedrun"), str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": path}
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout_s,
                          cwd=REPO, env=env)
