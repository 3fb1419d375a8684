"""Outputs judged at their own scale: a reference near zero (the mean of a GroupNorm output) passes its own
baseline and an honest rewrite, a wrong output still fails; a reference that is zero everywhere is judged
elementwise; the baseline's error never loosens the bounds of an ordinary output."""

from __future__ import annotations

import torch

from hotkernel.contract.correctness import check_outputs, correctness_baseline_error, tolerances


def failed(checks: list[dict]) -> list[str]:
    return [c["name"] for c in checks if not c["ok"]]


def groupnorm_mean(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.group_norm(x, 4).mean(dim=(1, 2))


def test_a_near_zero_reference_is_judged_by_the_baselines_own_error() -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 16, 512, generator=gen)
    ref = groupnorm_mean(x.double())
    base = groupnorm_mean(x)
    honest = torch.nn.functional.group_norm(x.reshape(64, 4, -1).transpose(1, 2).contiguous().transpose(1, 2), 4)
    honest = honest.reshape(64, 16, 512).sum(dim=(1, 2)) / (16 * 512)
    tol = tolerances("fp32", {})
    assert float(ref.abs().max()) < 1e-12 and float(base.abs().max()) < 1e-6
    assert "relative_error_norm" in failed(check_outputs(torch, [base], [ref], tol))  # without the baseline's scale
    tol["baseline"] = correctness_baseline_error(torch, [base], [ref])
    assert failed(check_outputs(torch, [base], [ref], tol)) == []
    assert failed(check_outputs(torch, [honest], [ref], tol)) == []
    wrong = base + 1e-5 * torch.randn(base.shape, generator=gen)  # within atol, far above the noise
    assert failed(check_outputs(torch, [wrong], [ref], tol)) == ["relative_error_norm"]
    assert "outputs_match_reference" in failed(check_outputs(torch, [base + 1e-3], [ref], tol))


def test_a_zero_reference_is_judged_elementwise() -> None:
    ref = torch.zeros(32, 32, dtype=torch.float64)
    tol = {**tolerances("fp32", {}), "baseline": correctness_baseline_error(torch, [torch.zeros(32, 32)], [ref])}
    assert failed(check_outputs(torch, [torch.zeros(32, 32)], [ref], tol)) == []
    assert failed(check_outputs(torch, [torch.full((32, 32), 0.5)], [ref], tol)) == ["outputs_match_reference"]


def test_the_baseline_error_does_not_loosen_an_ordinary_output() -> None:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(64, 8192, generator=gen).bfloat16()
    ref = torch.softmax(x.double(), dim=-1)
    base = torch.softmax(x.float(), dim=-1).bfloat16()
    tol = {**tolerances("bf16", {}), "baseline": correctness_baseline_error(torch, [base], [ref])}
    assert failed(check_outputs(torch, [base], [ref], tol)) == []
    fp8 = torch.softmax(x.to(torch.float8_e4m3fn).float(), dim=-1).bfloat16()
    assert "relative_error_norm" in failed(check_outputs(torch, [fp8], [ref], tol))
    assert "relative_error_norm" in failed(check_outputs(torch, [torch.zeros_like(base)], [ref], tol))
