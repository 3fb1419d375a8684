"""The judge's reference precision (contract/reference.py): an fp32 target's slow fp64 reference gives way to fp32
only where fp32 is much faster and within a tenth of every bound of it; the reason is in the label."""

from __future__ import annotations

import time

import pytest

from hotkernel.run import render

hk = render.contract_module()
torch = pytest.importorskip("torch")

FP64_SECONDS = 0.3  # what the fp64 path of a test reference sleeps: "slow" beside the knob set below
SLOW_S = 0.1  # REFERENCE_SLOW_S for these tests (the knob's own value is for real references)


@pytest.fixture(autouse=True)
def _slow_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hk, "REFERENCE_SLOW_S", SLOW_S)


def slow_in_fp64(fn, seen: list, fp32_seconds: float = 0.0):
    """``fn`` with a sleep in fp64 (as cuDNN's fp64 transposed convolutions are slow) and ``seen`` the dtypes."""

    def reference(*args):
        seen.append(args[0].dtype)
        time.sleep(FP64_SECONDS if args[0].dtype == torch.float64 else fp32_seconds)
        return fn(*args)

    return reference


def mlp(x, *weights):
    for w in weights:
        x = torch.tanh(x @ w) * 1.5
    return x


def test_a_slow_fp64_reference_that_fp32_matches_gives_way_to_fp32_and_says_why() -> None:
    seen: list = []
    ref = slow_in_fp64(mlp, seen)
    state, spec = hk.JudgeState(torch), {"dtype": "fp32", "name": "layer"}
    x, w = torch.randn(64, 256), torch.randn(256, 256) / 16
    first = hk.reference_outputs(state, spec, ref, [x, w], {})
    assert first[0].dtype == torch.float64  # the first call's answer is the fp64 one ...
    assert seen == [torch.float64, torch.float32]  # ... and fp32 was tried on the same inputs
    label = hk.precision_label(state, spec, 0)
    assert label.startswith("fp32 (fp64 took ") and "within 1/10 of every bound of fp64" in label
    again = hk.reference_outputs(state, spec, ref, [torch.randn(64, 256), w], {})
    assert again[0].dtype == torch.float32 and seen[2:] == [torch.float32]  # later calls: fp32 only


def test_a_deep_network_whose_fp32_result_drifts_keeps_fp64(monkeypatch: pytest.MonkeyPatch) -> None:
    """100 chaotic layers: fp32 is more than 1e-4 off fp64 in relative norm (over rel_l2_max itself), so fp32
    cannot stand in for it. Any speed-up lets fp32 be tried: the drift alone is what keeps fp64 (100 fp32 layers
    took 0.28 s on a loaded 2-core box beside 0.98 s of fp64, short of the knob's 4x: the speed rule has a test of
    its own below)."""
    monkeypatch.setattr(hk, "REFERENCE_FAST_FACTOR", 1.0)
    torch.manual_seed(0)
    seen: list = []
    ref = slow_in_fp64(mlp, seen)
    weights = [torch.randn(256, 256) / 16 for _ in range(100)]
    x = torch.randn(64, 256)
    wide = mlp(x.double(), *[w.double() for w in weights])
    assert ((mlp(x, *weights).double() - wide).norm() / wide.norm()).item() > 1e-4
    state, spec = hk.JudgeState(torch), {"dtype": "fp32", "name": "deep"}
    hk.reference_outputs(state, spec, ref, [x, *weights], {})
    assert seen == [torch.float64, torch.float32]
    assert hk.precision_label(state, spec, 0).startswith("fp64 (fp64 took ")
    assert "off fp64 by more than 1/10 of a bound" in hk.precision_label(state, spec, 0)
    out = hk.reference_outputs(state, spec, ref, [torch.randn(64, 256), *weights], {})
    assert out[0].dtype == torch.float64 and seen[2:] == [torch.float64]


def test_fp32_that_is_not_much_faster_keeps_fp64() -> None:
    seen: list = []
    ref = slow_in_fp64(mlp, seen, fp32_seconds=FP64_SECONDS)
    state, spec = hk.JudgeState(torch), {"dtype": "fp32", "name": "same"}
    hk.reference_outputs(state, spec, ref, [torch.randn(8, 16), torch.randn(16, 16)], {})
    assert "not 4x faster" in hk.precision_label(state, spec, 0)
    assert hk.precision_label(state, spec, 0).startswith("fp64")


def test_a_fast_fp64_reference_is_never_tried_in_fp32() -> None:
    seen: list = []
    state, spec = hk.JudgeState(torch), {"dtype": "fp32", "name": "fast"}

    def reference(x):
        seen.append(x.dtype)
        return x * 2

    hk.reference_outputs(state, spec, reference, [torch.randn(8)], {})
    assert seen == [torch.float64] and hk.precision_label(state, spec, 0) == "fp64"


def test_targets_of_other_dtypes_never_try_a_cheaper_reference() -> None:
    seen: list = []
    ref = slow_in_fp64(lambda x: x * 2, seen)
    state, spec = hk.JudgeState(torch), {"dtype": "bf16", "name": "half"}
    hk.reference_outputs(state, spec, ref, [torch.randn(8, dtype=torch.bfloat16)], {})
    assert seen == [torch.float32] and hk.precision_label(state, spec, 0) == "fp32"


def test_an_fp32_reference_copies_the_modules_its_forward_updates() -> None:
    """BatchNorm in training mode updates its running statistics: the fp32 reference of an fp32 Model updates
    copies, as the fp64 one always did, never the Model the judge keeps."""
    norm = torch.nn.BatchNorm1d(8).train()
    before = norm.running_mean.clone()

    def reference(x):
        return norm(x)

    x = torch.randn(16, 8) + 3.0
    outs, seconds = hk.reference_call(hk.JudgeState(torch), reference, ([x], {}, None, [norm]), "fp32")
    assert outs[0].dtype == torch.float32 and seconds >= 0.0
    assert torch.equal(norm.running_mean, before) and int(norm.num_batches_tracked) == 0


def test_an_fp32_reference_never_writes_into_the_inputs_it_is_given() -> None:
    """A destination-passing reference writes its result into a buffer of its inputs: in fp32 for an fp32 target
    the cast is a copy too, so the judge's regenerated inputs stay as they were."""
    out, x = torch.full((4,), float("nan")), torch.randn(4)

    def reference(buffer, values):
        buffer.copy_(values * 2)
        return buffer

    hk.reference_call(hk.JudgeState(torch), reference, ([out, x], {}, None, []), "fp32")
    assert torch.isnan(out).all()


def test_tightened_bounds_divide_every_bound_and_each_outputs_own() -> None:
    tol = hk.tolerances("fp32", {"output_tolerances": [{"atol": 1e-2}]})
    tight = hk.tightened(tol, 10.0)
    assert tight["atol"] == pytest.approx(tol["atol"] / 10) and tight["rtol"] == pytest.approx(tol["rtol"] / 10)
    assert tight["rel_l2_max"] == pytest.approx(tol["rel_l2_max"] / 10)
    assert 1 - tight["min_corr"] == pytest.approx((1 - tol["min_corr"]) / 10)
    assert tight["per_output"][0]["atol"] == pytest.approx(1e-3)
