"""`split_sum="fixed"` on the GPU: its inline PTX (the atomics, fences and spill path the interpreter cannot run)
against the fp32 reference and the last-arriver kernel kept before it (`KEPT`), at the headline shape.

Usage (device, repo root): python3 lab/benchmarks/device/int4_fixed_sum_check.py OUT.jsonl [VARIANT ...]

Inputs, each for 20 calls in a row: `plain` (x ~ N(0, 1): every partial in fixed point), `big` (the first split's
x times 1e6: that split's partials past 2^18 take the fp32 word, the others fixed point, in the same row sums),
`nan` (one x NaN: every output NaN). Each line: the worst error against the reference (relative to max(|ref|, 1))
and against that kernel (`err_vs_kept`, relative to its largest output), whether the 20 calls gave bit-identical outputs,
whether NaN is exactly where the reference has it, and the row words' non-zero count after the calls (each launch
must leave them at zero).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "lab" / "speedrun")]

import check_variants as cv  # noqa: E402
import torch  # noqa: E402

from kernels.int4_gemv import dequantize_groups, quantize_groups, quantize_weight  # noqa: E402

KEPT = "mma_szb_bn256_sk8_w4_st3"  # the last arriver, kept until round 16
N = K = int(os.environ.get("HK_FIXED_CHECK_SIZE", "8192"))  # smaller for a CPU run under TRITON_INTERPRET=1
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
CALLS = int(os.environ.get("HK_FIXED_CHECK_CALLS", "20"))


def main(out_path: str, variants: list[str]) -> None:
    torch.manual_seed(0)
    w = torch.randn(N, K, device=DEVICE)
    _, packed, sz = quantize_weight(torch.empty(1, K, device=DEVICE, dtype=torch.bfloat16), w, group_size=128)
    q, scales, zeros = quantize_groups(w, 128)
    if DEVICE == "cpu":  # the kernels read CUDA tinygemm's layout, which the CPU packing is not
        packed = cv.pack_tinygemm_reference(q, 8)
    wd = dequantize_groups(q, scales, zeros, 128).t()
    x = torch.randn(1, K, device=DEVICE)
    big = x.clone()
    big[:, : K // 8] *= 1e6
    nan = x.clone()
    nan[0, 5] = float("nan")
    kept = cv.variant_kernel("int4_gemv", KEPT)
    with open(out_path, "w") as out_file:
        for name in variants:
            kernel = cv.variant_kernel("int4_gemv", name)
            module = cv.load_module(cv.variant_index("int4_gemv")[name][0])
            for label, xs in (("plain", x), ("big", big), ("nan", nan)):
                xb = xs.to(torch.bfloat16)
                outs = [kernel(xb, packed, sz, group_size=128) for _ in range(CALLS)]
                if DEVICE == "cuda":
                    torch.cuda.synchronize()
                out = outs[-1].float()
                ref = xb.float() @ wd
                same = kept(xb, packed, sz, group_size=128).float()
                finite = ref.isfinite()
                words = next(buf for key, buf in module._BUFFERS.items() if key[0] == "fixed_sums")
                row = {"variant": name, "inputs": label,
                       "err_vs_ref": ((out - ref).abs() / ref.abs().clamp_min(1.0))[finite].max().item()
                       if finite.any() else 0.0,
                       "err_vs_kept": ((out - same).abs()[finite].max() / same[finite].abs().max()).item()
                       if finite.any() else 0.0,
                       "bit_identical_calls": all(torch.equal(o.view(torch.int16), outs[0].view(torch.int16))
                                                  for o in outs),
                       "nan_where_ref_nan": bool(out.isnan().eq(~finite).all()),
                       "nonzero_words_after": int(words.count_nonzero())}
                print(json.dumps(row), flush=True)
                out_file.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or ["mma_szbfx_bn256_sk8_w4_st3"])
