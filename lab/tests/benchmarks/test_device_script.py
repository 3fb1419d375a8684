"""The CPU-runnable parts of lab/benchmarks/device/contract_v2.py: arguments, budget shares, a tiny dry run."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "lab" / "benchmarks" / "device" / "contract_v2.py"


def load_script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("contract_v2_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_arguments_and_budget_shares(tmp_path: Path) -> None:
    script = load_script()
    args = script.parse_args([str(tmp_path)])
    assert args.steps == ["1", "2", "5", "6", "3", "4"] and args.budget_s == 540.0 and not args.dry_run
    with pytest.raises(SystemExit):
        script.parse_args([str(tmp_path), "--steps", "1,9"])
    budget = script.Budget(100.0)
    shares = [budget.share(step, ["1", "2"]) for step in ("1", "2")]
    assert abs(sum(shares) - budget.left()) < 0.5 and shares[0] > shares[1]


@pytest.mark.slow
def test_dry_run_of_the_overhead_step_writes_jsonl(tmp_path: Path) -> None:
    script = load_script()
    assert script.main([str(tmp_path), "--dry-run", "--steps", "1", "--budget-s", "120"]) == 0
    rows = [json.loads(line) for line in (tmp_path / "contract_v2.jsonl").read_text().splitlines()]
    assert rows[0]["step"] == "start" and rows[-1]["step"] == "end"
    runs = [r for r in rows if r["step"] == "overhead" and "status" in r]
    assert runs and all(r["status"] == "ok" for r in runs), runs
    assert all(r["overhead_s"] is not None and r["overhead_s"] > 0 for r in runs)
