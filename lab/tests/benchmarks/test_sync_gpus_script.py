"""lab/benchmarks/device/sync_gpus.sh with DRY_RUN=1 on the CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_the_device_script_dry_runs_on_cpu(tmp_path: Path) -> None:
    """lab/benchmarks/device/sync_gpus.sh with DRY_RUN=1: the same flow (copies, commands, summary) without a GPU."""
    repo = Path(__file__).resolve().parents[3]
    env = {**os.environ, "DRY_RUN": "1", "HOTKERNEL_TOOL_PYTHON": sys.executable, "TARGETS": "rmsnorm"}
    done = subprocess.run(["bash", "lab/benchmarks/device/sync_gpus.sh", str(tmp_path), "one all ray"], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    walls = (tmp_path / "walls.txt").read_text()
    assert "--gpus all --json" in walls and "--executor ray --json" in walls and "CUDA_VISIBLE_DEVICES=" in walls
    summary = (tmp_path / "summary.txt").read_text()
    assert "wall s: one=" in summary and "all/one = " in summary and "rmsnorm" in summary
    assert {p.name for p in tmp_path.iterdir()} == {"one", "all", "ray", "walls.txt", "summary.txt"}
