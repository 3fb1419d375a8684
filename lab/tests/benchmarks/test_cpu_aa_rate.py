"""lab/benchmarks/cpu_aa_rate.py: its confidence bound, and one real A/A verify on this CPU written as a JSON line."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "lab" / "benchmarks" / "cpu_aa_rate.py"


def _module():
    spec = importlib.util.spec_from_file_location("cpu_aa_rate_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_upper_bound_is_clopper_pearson() -> None:
    upper = _module().upper_bound  # crown_sim.upper_bound, which the script uses
    assert upper(0, 100) == pytest.approx(1 - 0.05 ** (1 / 100), abs=1e-6)  # 0 seen: 1 - alpha^(1/n), ~2.95%
    assert upper(1, 100) == pytest.approx(0.0466, abs=5e-4)  # the tabulated one-sided 95% bound for 1 in 100
    assert upper(5, 5) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.slow
def test_one_verify_is_one_line_then_the_summary(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "aa.jsonl"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(out), "--count", "1", "--load", "0", "--rounds", "3"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    row, summary = (json.loads(line) for line in out.read_text().splitlines())
    assert row["verdict"] in {"inconclusive", "faster", "slower"} and row["rounds"] >= 3
    assert row["kind"] == "aa" and row["target"] == "scale" and row["device"].startswith("CPU")
    assert row["point"] is not None and row["interval"][0] <= row["point"] <= row["interval"][1]
    assert summary["summary"] == {row["verdict"]: 1} and summary["count"] == 1 and summary["load"] == 0
