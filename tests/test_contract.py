"""The contract's pieces (rotation, seeds, timer check, inputs) and real CPU runs of the rendered scripts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hotkernel import render
from hotkernel.runner import run_script

sys.path.insert(0, str(Path(__file__).resolve().parent))
from adversarial.workspace import TARGET, make_workspace, python  # noqa: E402

hk = render.contract_module()
REQUIRED_FIELDS = ("protocol", "status", "ok", "reason", "ms", "target", "role", "shapes", "dtype",
                   "seed_policy", "iters", "contract_sha256", "script_sha256", "device", "device_kind",
                   "rotation", "bytes", "flops", "max_error", "timer", "launch_bound", "per_shape", "checks",
                   "wall_s")


def test_contract_imports_only_stdlib_at_top_level() -> None:
    assert hk.PROTOCOL_VERSION == 1
    assert "torch" not in vars(hk)
    source = render.contract_source()
    top_imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert not [line for line in top_imports if "torch" in line or "triton" in line]


def test_rotation_exceeds_twice_the_cache_with_at_least_two_sets() -> None:
    cache = 60 << 20
    k, resident = hk.rotation_count(64 << 20, cache, "cuda")
    assert k >= 2 and k * (64 << 20) > 2 * cache and not resident
    k, resident = hk.rotation_count(200 << 20, cache, "cuda")
    assert k == 2 and not resident
    k, resident = hk.rotation_count(64 << 10, cache, "cuda")
    assert k == hk.MAX_ROTATION["cuda"] and resident


def test_seeds_fresh_by_default_and_reproducible_when_fixed() -> None:
    fresh = hk.SeedSource(None)
    assert fresh.policy == "fresh-per-run" and fresh.next() != fresh.next()
    a, b = hk.SeedSource(7), hk.SeedSource(7)
    assert [a.next() for _ in range(3)] == [b.next() for _ in range(3)] and a.policy == "fixed:7"
    assert hk.mix_seed(1, 0) != hk.mix_seed(1, 1) and hk.mix_seed(1, 0) == hk.mix_seed(1, 0)


def test_wall_clock_check_flags_work_outside_the_timed_region() -> None:
    honest = {"event_total_ms": 30.0, "enqueue_total_ms": 5.0, "wall_total_ms": 31.0, "samples": 15}
    assert hk.check_wall_clock(honest) is None
    launch_bound = {"event_total_ms": 3.0, "enqueue_total_ms": 30.0, "wall_total_ms": 31.0, "samples": 15}
    assert hk.check_wall_clock(launch_bound) is None
    side_stream = {"event_total_ms": 3.0, "enqueue_total_ms": 2.0, "wall_total_ms": 300.0, "samples": 15}
    assert "outside the timed region" in hk.check_wall_clock(side_stream)
    lying = {"event_total_ms": 300.0, "enqueue_total_ms": 2.0, "wall_total_ms": 30.0, "samples": 15}
    assert "timer reported" in hk.check_wall_clock(lying)


def test_shared_output_buffer_is_attributed_to_the_last_set() -> None:
    class T:
        def __init__(self, ptr: int) -> None:
            self.ptr = ptr

        def data_ptr(self) -> int:
            return self.ptr

    shared = [[T(1)], [T(1)], [T(1)]]
    assert hk.attribute_outputs(shared, 3) == {2: 2}
    distinct = [[T(1)], [T(2)], [T(3)]]
    assert hk.attribute_outputs(distinct, 3) == {0: 0, 1: 1, 2: 2}


def test_inputs_are_random_reproducible_and_never_constant() -> None:
    torch = pytest.importorskip("torch")
    spec = {"inputs": [{"name": "x", "shapes": [[8, 16]]}, {"name": "w", "shapes": [[16]]}], "dtype": "bf16",
            "rotate": ["x"], "derive": None}
    a = hk.make_raw(torch, spec, 0, 11, 22, "cpu")
    b = hk.make_raw(torch, spec, 0, 11, 22, "cpu")
    c = hk.make_raw(torch, spec, 0, 12, 22, "cpu")
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not torch.equal(a[0], c[0]) and torch.equal(a[1], c[1])  # w is shared, x rotates
    assert a[0].dtype == torch.bfloat16 and a[0].float().std() > 0.5
    assert hk.checksum(torch, a[0]) == hk.checksum(torch, b[0]) != hk.checksum(torch, c[0])


def test_load_function_accepts_both_forms(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text("def f(x):\n    return x + 1\n")
    assert hk.load_function("./k.py:f", str(tmp_path))(1) == 2
    assert hk.load_function("json:dumps", str(tmp_path))([1]) == "[1]"
    with pytest.raises(ValueError):
        hk.load_function("nocolon", str(tmp_path))


@pytest.mark.slow
def test_standalone_script_prints_exactly_one_json_line(tmp_path: Path) -> None:
    ws, _ = make_workspace(tmp_path)
    proc = subprocess.run([python(), f"targets/{TARGET}/candidate.py"], cwd=ws.root, capture_output=True,
                          text=True, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stdout + proc.stderr
    result = json.loads(lines[0])
    assert result["status"] == "ok" and result["ok"] is True and proc.returncode == 0, result
    assert [f for f in REQUIRED_FIELDS if f not in result] == []
    assert result["role"] == "candidate" and result["seed_policy"] == "fresh-per-run"
    assert result["contract_sha256"] == render.contract_sha256()
    assert result["rotation"] >= 2 and result["per_shape"][0]["shape"] == "64x256"
    assert result["timer"] == "cpu-perf-counter" and result["ms"] > 0


@pytest.mark.slow
def test_faster_than_the_floor_is_invalid(tmp_path: Path) -> None:
    ws, resolved = make_workspace(tmp_path, min_bytes=10**13)
    outcome = run_script(ws, f"targets/{TARGET}/baseline.py", python=python(), resolved=resolved)
    assert outcome.status == "invalid" and outcome.reason.startswith("faster_than_floor:"), outcome.reason


@pytest.mark.slow
def test_fixed_seed_policy_is_reported(tmp_path: Path) -> None:
    ws, resolved = make_workspace(tmp_path, seed=1234)
    outcome = run_script(ws, f"targets/{TARGET}/baseline.py", python=python(), resolved=resolved)
    assert outcome.status == "ok", outcome.reason
    assert outcome.run["seed_policy"] == "fixed:1234" and outcome.run["role"] == "baseline"
