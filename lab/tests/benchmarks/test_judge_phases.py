"""lab/benchmarks/judge_phases.py on a verify captured on the H200 (KernelBench 19_ReLU at its own shape)."""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "lab" / "benchmarks"))
import judge_phases  # noqa: E402

CAPTURED = ROOT / "lab/benchmarks/evidence/h200_round_20261205b/kernelbench_l1_profile/prof_kb1_019_relu.json"


def test_the_summary_gives_rounds_and_the_mean_phases_per_role() -> None:
    lines = judge_phases.summary(CAPTURED)
    assert lines[0].startswith("kb1_019_relu: inconclusive rounds=3 stopped=within_margin runs=6 ")
    assert "bytes=12884901888" in lines[0]
    baseline = [line for line in lines if line.startswith("  baseline (mean of 3)")]
    assert len(baseline) == 1
    # the captured baseline runs' worker phases were 2.239, 1.174 and 1.158 s
    assert f"worker={statistics.mean([2.239, 1.174, 1.158]):.3f}" in baseline[0]


def test_files_without_runs_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "import.json").write_text('{"added": []}')
    (tmp_path / "broken.json").write_text("{")
    assert judge_phases.summary(tmp_path / "import.json") == []
    assert judge_phases.summary(tmp_path / "broken.json") == []


@pytest.mark.parametrize("script", ["judge_profile.sh"])
def test_the_device_script_parses_and_names_its_usage(script: str) -> None:
    path = ROOT / "lab/benchmarks/device" / script
    assert subprocess.run(["bash", "-n", str(path)], check=False).returncode == 0
    run = subprocess.run(["bash", str(path)], capture_output=True, text=True, check=False)
    assert run.returncode != 0 and "usage: judge_profile.sh OUT LEVEL_DIR PROBLEMS" in run.stderr
