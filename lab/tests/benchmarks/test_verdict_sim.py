"""lab/benchmarks/verdict_sim.py and lab/benchmarks/device/verdict_samples.py: pairing, ABBA order, power search.

The JSONL written here is constructed (timer "synthetic"), only to test the plumbing; real samples come from
the H200 through lab/benchmarks/device/verdict_samples.py.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
REPO = Path(__file__).resolve().parents[3]


def load_module(relative: str):
    spec = importlib.util.spec_from_file_location(Path(relative).stem, REPO / relative)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses need the module registered
    spec.loader.exec_module(module)
    return module


sim = load_module("lab/benchmarks/verdict_sim.py")
samples_script = load_module("lab/benchmarks/device/verdict_samples.py")


def test_device_script_interleaves_abba() -> None:
    assert [samples_script.arm_of(p) for p in range(8)] == ["A", "B", "B", "A", "A", "B", "B", "A"]


def test_sample_rounds_alternate_which_run_is_the_baseline() -> None:
    rounds = np.array([[1.0, 2.0]])  # first-run process took 1.0, second-run 2.0
    baseline, candidate = sim.sample_rounds(np.random.default_rng(0), 3, 4, rounds)
    assert baseline.tolist() == [[1.0, 2.0, 1.0, 2.0]] * 3
    assert candidate.tolist() == [[2.0, 1.0, 2.0, 1.0]] * 3


def write_synthetic_jsonl(path: Path, rounds: int) -> None:
    rng = np.random.default_rng(1)
    with path.open("w") as sink:
        for process_index in range(2 * rounds):
            for kernel, ms in (("neg", 0.0334), ("rms_norm", 0.0542)):
                value = ms * math.exp(rng.normal(0, 0.005)) * (1.01 if process_index % 2 == 0 else 1.0)
                record = {
                    "kernel": kernel,
                    "process_index": process_index,
                    "round": process_index // 2,
                    "arm": samples_script.arm_of(process_index),
                    "ms": value,
                    "samples": [value * 0.999, value, value * 1.001],
                    "timer": "synthetic",
                }
                sink.write(json.dumps(record) + "\n")


def test_load_samples_pairs_rounds_in_process_order(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    write_synthetic_jsonl(path, rounds=20)
    kernels = sim.load_samples(path)
    assert sorted(kernels) == ["neg", "rms_norm"]
    stats = kernels["neg"]["stats"]
    assert stats["rounds"] == 20 and stats["timer"] == ["synthetic"] and stats["warning"] is None
    # the first-run process of every round was made 1% slower: the position effect must show up
    assert stats["mean_log_first_over_second"] == pytest.approx(math.log(1.01), abs=0.003)
    assert kernels["neg"]["rounds"].shape == (20, 2)


def test_load_samples_rejects_incomplete_records(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"kernel": "neg", "ms": 1.0}) + "\n")
    with pytest.raises(SystemExit, match="lacks"):
        sim.load_samples(path)


def test_power_thresholds_match_direct_evaluation() -> None:
    scenario = sim.Scenario("test", cv_run=0.01, cv_round=0.0)
    baseline, candidate = sim.parametric_rounds(np.random.default_rng(2), 3000, 7, scenario)
    result = sim.evaluate(baseline, candidate, 0.01, 0.01)
    assert result["aa"]["decide"]["false_rate"] <= 0.01
    assert result["aa"]["seed_rule"]["false_rate"] > 3 * max(result["aa"]["decide"]["false_rate"], 0.01)
    for rule in ("decide", "seed_rule"):
        speedup = result["power"][rule]["speedup_detected_80pct"]
        shifted = candidate / speedup  # at exactly this true speedup, ~80% of simulations say faster
        if rule == "decide":
            low, high = sim.decide_interval(baseline, shifted, 0.01)
            detected = np.mean(sim.verdict_codes(low, high, 0.01) == 1)
        else:
            detected = np.mean(sim.seed_codes(baseline, shifted) == 1)
        assert detected == pytest.approx(0.8, abs=0.01)
    assert result["power"]["decide"]["speedup_detected_80pct"] > 1.01  # never below the margin


def test_main_writes_json_and_names_the_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = tmp_path / "samples.jsonl"
    write_synthetic_jsonl(samples, rounds=16)
    out = tmp_path / "sim.json"
    argv = ["verdict_sim.py", "--out", str(out), "--sims", "400", "--rounds", "7", "--samples", str(samples)]
    monkeypatch.setattr(sys, "argv", argv)
    assert sim.main() == 0
    results = json.loads(out.read_text())
    assert {row["mode"] for row in results["rows"]} == {"parametric", "samples"}
    assert results["analytic_seed_rule_false_rate_by_df"]["6"] == pytest.approx(0.0924, abs=5e-4)
    assert "| samples | neg | 7 |" in results["markdown"]


@pytest.mark.slow
def test_device_script_cpu_smoke_uses_the_contract_timer(tmp_path: Path) -> None:
    """Plumbing only (CPU, tiny shapes): 6 fresh processes -> JSONL the simulation reads, timed by measure."""
    pytest.importorskip("torch")
    import subprocess

    out = tmp_path / "cpu.jsonl"
    command = [sys.executable, str(REPO / "lab/benchmarks/device/verdict_samples.py"), "--device", "cpu"]
    result = subprocess.run(
        [*command, "--processes", "6", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 12 and {r["kernel"] for r in records} == {"neg", "rms_norm"}
    assert all(r["timer"].startswith("hk_contract.measure/") and r["timer_note"] is None for r in records)
    assert [r["arm"] for r in records if r["kernel"] == "neg"] == ["A", "B", "B", "A", "A", "B"]
    assert sim.load_samples(out)["neg"]["stats"]["rounds"] == 3
    meta = json.loads(Path(str(out) + ".meta.json").read_text())
    assert meta["processes_completed"] == 6 and meta["device"]["name"] == "cpu"


@pytest.mark.slow
def test_device_script_records_why_it_did_not_use_the_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    """A contract helper that cannot be called: auto times inline and says why on every line; contract stops."""
    pytest.importorskip("torch")
    from types import SimpleNamespace

    def rotation_count(per_set_bytes: int, cache: int, device_kind: str, new_knob: int) -> tuple[int, bool]:
        raise AssertionError("never reached: the script cannot fill new_knob")

    fake = SimpleNamespace(cache_bytes=lambda torch, device: 1 << 20, rotation_count=rotation_count,
                           measure=lambda *args, **kwargs: None)
    monkeypatch.setattr(samples_script, "_load_contract", lambda: fake)
    records = samples_script.child(0, "cpu", "auto")
    assert [r["kernel"] for r in records] == ["neg", "rms_norm"]
    assert all(r["timer"] == "inline-cpu-perf-counter" for r in records)
    assert all(r["timer_note"].startswith("contract rotation not used: TypeError") for r in records)
    with pytest.raises(SystemExit, match="--timer contract, but contract rotation not used"):
        samples_script.child(0, "cpu", "contract")
