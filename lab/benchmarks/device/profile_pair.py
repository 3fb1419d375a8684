"""Launch a target's baseline and one speedrun candidate a few times each, for Nsight Compute (H200).

Usage (device): hotkernel profile --tool ncu -c 40 --json -- python3 lab/benchmarks/device/profile_pair.py TARGET VARIANT

Builds the headline inputs the way lab/speedrun/check_variants.py does (same shapes, same int4 packing), then calls
the manifest's baseline and the speedrun variant VARIANT (a parameter set of a lab/speedrun/<TARGET>/ module) three
times each, so ncu's summary puts the two side by side (duration, DRAM throughput %, achieved occupancy): the
profiler evidence behind lab/speedrun.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "lab" / "speedrun")]

import check_variants as cv  # noqa: E402
import torch  # noqa: E402

BASELINES = {
    "decode_attention": ("kernels.decode_attention", "decode_attention"),
    "int4_gemv": ("kernels.int4_gemv", "int4_gemv"),
    "rmsnorm": ("kernels.rmsnorm", "rms_norm"),
    "softmax": ("kernels.softmax", "softmax"),
    "gemv": ("kernels.gemv", "gemv"),
}


def main() -> None:
    target, variant = sys.argv[1], sys.argv[2]
    (_, inputs, kwargs, _), *_ = cv.make_cases(target, "headline", "cuda")
    module, name = BASELINES[target]
    baseline = getattr(__import__(module, fromlist=[name]), name)
    candidate = cv.variant_kernel(target, variant)
    for fn in (baseline, candidate):
        for _ in range(3):
            fn(*inputs, **kwargs)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
