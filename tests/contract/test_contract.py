"""The contract's pieces (rotation, seeds, timer sizing and check, inputs, perturbation, memory refusal,
reference precision) and real CPU runs of the rendered scripts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hotkernel.run import render
from hotkernel.run.runner import run_script

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from adversarial.workspace import TARGET, make_workspace, python  # noqa: E402

hk = render.contract_module()
REQUIRED_FIELDS = (
    "protocol",
    "status",
    "ok",
    "reason",
    "ms",
    "target",
    "role",
    "shapes",
    "dtype",
    "seed_policy",
    "iters",
    "contract_sha256",
    "script_sha256",
    "device",
    "device_kind",
    "rotation",
    "bytes",
    "flops",
    "max_error",
    "timer",
    "launch_bound",
    "per_shape",
    "checks",
    "wall_s",
    "tolerances",
    "reference_precision",
    "transport",
    "placement_pad_bytes",
)


def test_contract_imports_only_stdlib_at_top_level() -> None:
    assert hk.PROTOCOL_VERSION == 2
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


def test_outputs_that_clear_the_cache_cap_the_rotation() -> None:
    cache = 60 << 20  # the H200's L2
    tall_skinny_inputs, tall_skinny_output = 2 * (32768 * 32 * 4), 32768 * 32768 * 4  # KernelBench 9: 4 GiB
    wanted, _ = hk.rotation_count(tall_skinny_inputs, cache, "cuda")
    assert wanted > 10
    assert hk.rotation_with_outputs(wanted, tall_skinny_inputs, tall_skinny_output, cache, "cuda") == 2
    # small outputs leave K to the inputs: rmsnorm 4096x8192 bf16 (64 MiB in, 64 MiB out) still rotates
    rms = 4096 * 8192 * 2
    wanted, _ = hk.rotation_count(rms, cache, "cuda")
    assert hk.rotation_with_outputs(wanted, rms, rms, cache, "cuda") == wanted == 2
    tiny_in, small_out = 64 << 10, 8 << 20
    wanted, _ = hk.rotation_count(tiny_in, cache, "cuda")
    capped = hk.rotation_with_outputs(wanted, tiny_in, small_out, cache, "cuda")
    assert 2 < capped < wanted and capped * (tiny_in + small_out) > 2 * cache


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


def test_a_reused_output_buffer_is_attributed_to_the_last_call_that_wrote_it() -> None:
    # calls 0..5; call 1 and call 4 were kept; every call returned the same buffer: it holds call 5's result
    assert hk.last_writers({1: "a", 4: "b"}, [(7,)] * 6) == {1: 5, 4: 5}
    distinct = [(1,), (2,), (3,), (1,)]  # buffer 1 returned again by call 3
    assert hk.last_writers({0: "a", 1: "b"}, distinct) == {0: 3, 1: 1}


def test_inputs_are_random_reproducible_and_never_constant() -> None:
    torch = pytest.importorskip("torch")
    spec = {
        "inputs": [{"name": "x", "shapes": [[8, 16]]}, {"name": "w", "shapes": [[16]]}],
        "dtype": "bf16",
        "rotate": ["x"],
        "derive": None,
    }
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
    proc = subprocess.run(
        [python(), f"targets/{TARGET}/candidate.py"], cwd=ws.root, capture_output=True, text=True, timeout=300
    )
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stdout + proc.stderr
    result = json.loads(lines[0])
    assert result["status"] == "ok" and result["ok"] is True and proc.returncode == 0, result
    assert [f for f in REQUIRED_FIELDS if f not in result] == []
    assert result["role"] == "candidate" and result["seed_policy"] == "fresh-per-run"
    assert result["contract_sha256"] == render.contract_sha256()
    assert result["rotation"] >= 2 and result["per_shape"][0]["shape"] == "64x256"
    assert result["timer"] == "cpu-perf-counter" and result["ms"] > 0
    assert result["placement_pad_bytes"] == 0  # the pad is for CUDA runs only


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


def test_timer_sizes_samples_to_ten_ms_in_multiples_of_k() -> None:
    assert hk.MIN_SAMPLE_KERNEL_MS == 10.0
    assert hk.calls_for(0.017, 4, 10.0) == 592  # a 17 us kernel: 589 calls -> the next multiple of 4
    assert hk.calls_for(50.0, 2, 10.0) == 2  # a 50 ms kernel: K calls at least
    assert hk.calls_for(1e-9, 3, 10.0) == 100_002  # capped at MAX_CALLS_PER_SAMPLE, rounded up to a multiple of K


def test_memory_refusal_names_needed_and_free() -> None:
    gib = 1 << 30
    k, problem = hk.fit_rotation(4 * gib, 0, 4 * gib, 16, 200 * gib, "cuda")
    assert problem is None and 2 <= k < 16  # fewer sets, still fits
    k, problem = hk.fit_rotation(40 * gib, 0, 40 * gib, 2, 100 * gib, "cuda")
    assert k == 0 and "GiB of device memory" in problem and "100.00 GiB are free" in problem
    assert hk.fit_rotation(1, 0, 1, 5, None, "cpu") == (5, None)  # the platform does not say: no refusal


def test_checks_table_is_complete_and_each_name_once() -> None:
    names = [check.name for check in hk.CHECKS]
    assert len(names) == len(set(names))
    assert {check.verdict for check in hk.CHECKS} == {"incorrect", "invalid"}
    assert all(check.function is not None for check in hk.OUTPUT_CHECKS)
    for name in (
        "outputs_match_reference",
        "relative_error_norm",
        "output_carries_signal",
        "inputs_unchanged",
        "timed_outputs_match_reference",
    ):
        assert hk.verdict_of(name) == "incorrect"
    for name in ("faster_than_floor", "no_leftover_processes", "workspace_unchanged", "fits_memory", "unknown"):
        assert hk.verdict_of(name) == "invalid"


def test_perturbation_seen_by_the_worker_is_what_the_judge_rebuilds() -> None:
    torch = pytest.importorskip("torch")
    sets = [[torch.randn(8, 16, dtype=torch.bfloat16)] for _ in range(3)]
    flats = [hk.bits_view(torch, s[0]) for s in sets]
    n_calls, seed = 12, 987654321
    for derived in (False, True):
        pos, second = hk.perturbation_draws(torch, flats[0].numel(), n_calls, seed, "cpu", derived, torch.bfloat16)
        values = hk.gather_per_set(torch, flats, second) if derived else second
        for call in range(n_calls):
            k = call % 3
            position, value = hk.perturbation_of_call(torch, sets[k], 0, n_calls, seed, call, derived)
            assert position == int(pos[call]) and int(value) == int(values[call])
        if not derived:  # raw inputs: a large value, so the row's result changes beyond any tolerance
            magnitudes = values.view(torch.bfloat16).float().abs()
            assert float(magnitudes.min()) >= hk.PERTURB_MIN_ABS * 0.99
            assert float(magnitudes.max()) <= hk.PERTURB_MAX_ABS * 1.01
    seen = [sets[0][0].clone()]
    hk.apply_perturbation(torch, seen, 0, 5, hk.bits_view(torch, torch.tensor([6.0], dtype=torch.bfloat16)))
    assert float(seen[0].reshape(-1)[5]) == 6.0 and torch.equal(seen[0].reshape(-1)[6:], sets[0][0].reshape(-1)[6:])


def test_one_copy_per_call_shows_each_call_its_set_with_only_its_own_element_changed() -> None:
    """The worker's fused writes, replayed on K sets: before each call its set differs from the clean set at
    exactly the call's position (positions that repeat within a set included), and the K restores after the
    last call leave every set clean, whatever order the copy writes its two elements in."""
    torch = pytest.importorskip("torch")
    k_sets, n_calls = 3, 30
    clean = [torch.randint(-1000, 1000, (4,), dtype=torch.int16) for _ in range(k_sets)]
    pos = torch.randint(0, 4, (n_calls,), generator=torch.Generator().manual_seed(7))  # 4 places: many repeats
    values = torch.arange(2000, 2000 + n_calls, dtype=torch.int16)
    orig = hk.gather_per_set(torch, clean, pos)
    write_pos, write_val = hk.fused_perturbation(torch, pos, values, orig, k_sets)
    assert write_pos.shape == (n_calls, 2) and write_val.shape == (n_calls, 2)
    repeats = sum(int(pos[j]) == int(pos[j - k_sets]) for j in range(k_sets, n_calls))
    assert repeats >= 3  # the case where the copy's two positions coincide is exercised
    for order in ((0, 1), (1, 0)):
        flats = [c.clone() for c in clean]
        for j in range(n_calls):
            k = j % k_sets
            for column in order:
                flats[k][write_pos[j, column]] = write_val[j, column]
            expected = clean[k].clone()
            expected[pos[j]] = values[j]
            assert torch.equal(flats[k], expected), (order, j)
        for i in range(n_calls - k_sets, n_calls):
            flats[i % k_sets].index_copy_(0, pos[i : i + 1], orig[i : i + 1])
        assert all(torch.equal(f, c) for f, c in zip(flats, clean, strict=True))


def test_reference_upcasts_module_parameters_and_says_so() -> None:
    torch = pytest.importorskip("torch")
    norm = torch.nn.LayerNorm(16)

    def layer_norm(x):
        return norm(x)

    state = hk.JudgeState(torch)
    spec = {"dtype": "fp32", "name": "ln"}
    x = torch.randn(4, 16)
    out = hk.reference_outputs(state, spec, layer_norm, [x], {})
    assert out[0].dtype == torch.float64 and norm.weight.dtype == torch.float32  # restored after the call
    assert hk.precision_label(state, spec, 1) == "fp64, 1 module(s) upcast"


def test_reference_falls_back_to_the_target_dtype_and_states_it() -> None:
    torch = pytest.importorskip("torch")

    def only_bf16(x):
        if x.dtype != torch.bfloat16:
            raise RuntimeError("expected scalar type BFloat16")
        return x * 2

    state = hk.JudgeState(torch)
    spec = {"dtype": "bf16", "name": "b"}
    out = hk.reference_outputs(state, spec, only_bf16, [torch.randn(4, dtype=torch.bfloat16)], {})
    assert out[0].dtype == torch.bfloat16
    assert hk.precision_label(state, spec, 0).startswith("bf16 (the target dtype")


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_a_reference_out_of_memory_in_every_precision_is_a_one_line_fits_memory_refusal() -> None:
    """KernelBench's 93_masked_cumsum passed the memory check on an H100 and its judge then ran out of memory in
    every precision: the run is ``invalid`` for ``fits_memory`` with the numbers and the fix on one line, not the
    allocator's 620-character paragraph under ``crashed``."""
    torch = pytest.importorskip("torch")
    captured = (FIXTURES / "h100" / "judge_oom_kb1_093.txt").read_text().strip()  # verbatim from the card

    def out_of_memory(x):
        raise torch.OutOfMemoryError(captured)

    state = hk.JudgeState(torch)
    with pytest.raises(hk.CheckFailed) as caught:
        hk.reference_outputs(state, {"dtype": "fp32", "name": "m"}, out_of_memory, [torch.randn(4)], {})
    assert caught.value.check == "fits_memory" and hk.verdict_of("fits_memory") == "invalid"
    reason = str(caught.value)
    assert "tried to allocate 8.00 GiB, 4.38 GiB of 79.18 GiB free" in reason and "smaller shape" in reason
    assert "\n" not in reason and len(reason) < 250

    def type_error(x):  # any other failure in every precision is still a crash with its own text
        raise TypeError("unsupported operand")

    with pytest.raises(hk.CheckFailed) as caught:
        hk.reference_outputs(hk.JudgeState(torch), {"dtype": "fp32", "name": "t"}, type_error, [torch.randn(4)], {})
    assert caught.value.check == "crashed" and "unsupported operand" in str(caught.value)
    # the CPU allocator's own failure (a real one: 2^50 bytes) reads the same way, in GiB of host memory
    with pytest.raises(RuntimeError) as host:
        torch.empty(1 << 50, dtype=torch.uint8)
    assert hk.out_of_memory(host.value) == "host memory (tried to allocate 1048576.00 GiB)"
    assert hk.out_of_memory(ValueError("shape mismatch")) is None


def test_checksum_is_chunked_and_position_sensitive() -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(1000)
    swapped = x.clone()
    swapped[[0, 1]] = swapped[[1, 0]]
    assert hk.checksum(torch, x)[0] == pytest.approx(hk.checksum(torch, swapped)[0])
    assert hk.checksum(torch, x)[1] != hk.checksum(torch, swapped)[1]


@pytest.mark.parametrize("chunk", [1000, 251 * 7, 100, 1 << 26])
def test_checksum_is_the_position_weighted_sum_across_chunks(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of whole 251-element rows and a ragged tail give exactly the weighted sum of weight (i % 251) + 1."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(hk, "CHECKSUM_CHUNK_ELEMENTS", chunk)
    for n in (0, 1, 250, 251, 252, 30_011):
        x = torch.randn(n, dtype=torch.float32)
        wide = x.double()
        weights = (torch.arange(n) % 251 + 1).double()
        plain, weighted = hk.checksum(torch, x)
        assert plain == pytest.approx(float(wide.sum()), abs=1e-9 * max(1.0, n))
        assert weighted == pytest.approx(float((wide * weights).sum()), abs=1e-7 * max(1.0, n))


def test_every_check_of_the_table_is_documented() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "verdicts.md").read_text(encoding="utf-8")
    missing = [check.name for check in hk.CHECKS if f"`{check.name}`" not in text]
    assert missing == [], f"docs/verdicts.md does not describe {missing}"


def test_a_cpu_is_named_by_its_model_and_the_cpus_the_process_may_use() -> None:
    """Board rows of cpu targets split hosts whose generic model names agree (a 2-CPU box, a 16-CPU GPU host)."""
    import os

    name = hk.cpu_name()
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert name.startswith("CPU ") and name.endswith(f" ({count} CPUs)") and len(name) > len(f"CPU  ({count} CPUs)")
