"""Check the example targets' tolerances on a real device: ``python kernels/check_tolerances.py [cuda|cpu]``.

For each target of the root ``hotkernel.yaml`` (inputs ~ N(0, 1)) it runs the baseline, computes the fp32
reference (the baseline on upcast inputs, or the target's ``reference``), and prints one JSON line: the
largest error, the smallest atol that passes with the manifest's rtol, whether the manifest's atol passes,
and whether an all-zero output would (it must not). Needs only torch; no hotkernel install.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import decode_attention  # noqa: E402
import gemv  # noqa: E402
import int4_gemv  # noqa: E402
import rmsnorm  # noqa: E402
import softmax  # noqa: E402

# name -> (baseline, shapes of the raw inputs, kwargs, atol, rtol, derive, reference)
TARGETS = {
    "rmsnorm": (rmsnorm.rms_norm, [(4096, 8192), (8192,)], {"eps": 1e-6}, 0.02, 0.02, None, None),
    "softmax": (softmax.softmax, [(4096, 8192)], {"dim": -1}, 1e-5, 0.02, None, None),
    "gemv": (gemv.gemv, [(8192, 8192), (8192,)], {}, 0.02, 0.02, None, None),
    "decode_attention": (
        decode_attention.decode_attention, [(1, 32, 1, 128), (1, 8, 32768, 128), (1, 8, 32768, 128)],
        {"enable_gqa": True}, 2e-4, 0.02, None, None,
    ),
    "int4_gemv": (
        int4_gemv.int4_gemv, [(1, 8192), (8192, 8192)], {"group_size": 128}, 1.0, 0.02,
        int4_gemv.quantize_weight, int4_gemv.reference,
    ),
}


def check(name: str, device: str) -> dict[str, object]:
    """One target: errors of the baseline against the fp32 reference."""
    baseline, shapes, kwargs, atol, rtol, derive, reference = TARGETS[name]
    generator = torch.Generator(device=device).manual_seed(1234)
    raw = [torch.randn(shape, generator=generator, device=device, dtype=torch.bfloat16) for shape in shapes]
    inputs = derive(*raw, **kwargs) if derive else raw
    out = baseline(*inputs, **kwargs).float()
    upcast = [tensor.float() if tensor.is_floating_point() else tensor for tensor in inputs]
    expected = (reference or baseline)(*upcast, **kwargs).float()  # what the judge computes
    error = (out - expected).abs()
    needed_atol = (error - rtol * expected.abs()).clamp(min=0).max().item()
    zeros_pass = bool((expected.abs() <= atol + rtol * expected.abs()).all().item())
    result = {
        "target": name, "device": device, "max_abs_error": error.max().item(), "output_abs_mean":
        expected.abs().mean().item(), "atol": atol, "rtol": rtol, "atol_needed": needed_atol,
        "passes": needed_atol <= atol, "all_zero_output_would_pass": zeros_pass,
    }
    if derive is not None:  # also against the reference from the raw inputs (never reads the packing)
        from_raw = reference(*[tensor.float() for tensor in raw], **kwargs).float()
        raw_error = ((out - from_raw).abs() - rtol * from_raw.abs()).clamp(min=0).max().item()
        result["atol_needed_vs_raw_reference"] = raw_error
    return result


if __name__ == "__main__":
    chosen = sys.argv[1] if len(sys.argv) > 1 else ("cuda" if torch.cuda.is_available() else "cpu")
    for target in TARGETS:
        if target == "decode_attention" and chosen == "cpu":
            continue  # 32K-token bf16 SDPA on CPU is slow and says nothing about the GPU tolerances
        print(json.dumps(check(target, chosen)), flush=True)
