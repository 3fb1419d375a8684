"""lab/benchmarks/device/suites.py --dry-run: the device script's steps on the CPU at a tiny scale."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
KB = REPO.parent / "shared" / "kernelbench" / "level1"


@pytest.mark.slow
@pytest.mark.skipif(not KB.is_dir(), reason=f"KernelBench level 1 not at {KB}")
def test_the_dry_run_imports_fits_and_verifies(tmp_path: Path) -> None:
    env = {**os.environ, "HK_KB_DIR": str(KB), "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, str(REPO / "lab/benchmarks/device/suites.py"), str(tmp_path), "--dry-run",
                           "--problems", "1", "--budget-s", "120"], capture_output=True, text=True, env=env,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "suites.jsonl").read_text().splitlines()]
    steps = [row["step"] for row in rows]
    assert steps == ["import", "fit", "import_scaled", "verify", "verify"], steps
    assert rows[0]["imported"] == 1 and rows[1]["fits"] is True and rows[1]["input_bytes"] == 2 * 4096 * 4096 * 4
    verdicts = {row["kind"]: row["verdict"] for row in rows[3:]}
    assert verdicts == {"aa": "inconclusive", "compile": "inconclusive"}, rows[3:]  # -n 1: too few rounds
    assert "import: 1 imported, 0 skipped" in proc.stdout
