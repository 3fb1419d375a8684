"""The judge's one-pass Triton error sums against its torch loop, on the GPU: the same statistics (largest relative
difference per sum) and the time of each, per output dtype, at 2^28 elements (an fp32 output of 1 GiB).

Usage (device, repo root, after `. lab/benchmarks/device/env.sh`): python3 lab/benchmarks/device/fused_check.py OUT.jsonl
"""

from __future__ import annotations

import json
import sys
import time

import torch

from hotkernel.contract import correctness

N = 1 << 28


def sums(out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float, fused: bool) -> tuple:
    """((sums, largest error), seconds) of the judge's statistics, by the fused kernel or the torch loop."""
    pieces = correctness.correctness_pieces(tuple(out.shape), correctness.CORRECTNESS_CHUNK_ELEMENTS)
    saved = correctness.fused_error_sums
    if not fused:
        correctness.fused_error_sums = lambda *args, **kwargs: None
    try:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        value = correctness.correctness_sums(torch, out, ref, atol, rtol, pieces, False)
        torch.cuda.synchronize()
        return value, time.perf_counter() - t0
    finally:
        correctness.fused_error_sums = saved


def compare(name: str, dtype: torch.dtype, ref_dtype: torch.dtype, atol: float, rtol: float) -> dict:
    g = torch.Generator(device="cuda").manual_seed(11)
    ref = (torch.randn(N, device="cuda", generator=g, dtype=torch.float64) * 2 + 0.5).to(ref_dtype)
    out = (ref.double() + torch.randn(N, device="cuda", generator=g, dtype=torch.float64) * atol).to(dtype)
    out[12345] = ref[12345] + 10  # one element far off: a mismatch, the largest error
    sums(out, ref, atol, rtol, True)  # compiles the kernel
    (fused, fused_worst), fused_s = sums(out, ref, atol, rtol, True)
    (loop, loop_worst), loop_s = sums(out, ref, atol, rtol, False)
    differences = {
        key: abs(fused[key] - loop[key]) / max(abs(loop[key]), 1e-300) for key in loop if not key.startswith("shift")
    }
    return {
        "dtype": name,
        "elements": N,
        "fused_s": round(fused_s, 4),
        "loop_s": round(loop_s, 4),
        "largest_relative_difference": max(differences.values()),
        "worst": [fused_worst, loop_worst],
        "mismatches": [N - fused["matches"], N - loop["matches"]],
        "differences": differences,
        "device": torch.cuda.get_device_name(),
    }


def main(path: str) -> None:
    lines = []
    for case in (
        ("fp32", torch.float32, torch.float64, 1e-4, 1e-4),
        ("bf16", torch.bfloat16, torch.float32, 0.02, 0.02),
        ("fp16", torch.float16, torch.float32, 2.5e-3, 2.5e-3),
    ):
        line = compare(*case)
        print(json.dumps(line), flush=True)
        lines.append(line)
        torch.cuda.empty_cache()
    with open(path, "w") as handle:
        handle.write("".join(json.dumps(line) + "\n" for line in lines))


if __name__ == "__main__":
    main(sys.argv[1])
