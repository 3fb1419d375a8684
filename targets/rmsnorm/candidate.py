"""rmsnorm candidate: one program per row, the whole row in registers (the naive Triton kernel).

Hypothesis: rmsnorm 4096x8192 bf16 must move 2 x 64 MiB (read x, write y) + 16 KiB (w). One program per row
loads its 8192 elements once (8 warps x 32 lanes x 4 x 16-byte vectors), reduces sum(x^2) in fp32 across the
block, and writes y once: exactly the compulsory bytes, with 4096 programs over 132 SMs (about 31 programs per
SM, several resident at a time). This is the reference point of the other variants (h200.md measured the same
design at 91% of the copy ceiling with the eager timer).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

WHO = "Claude (Anthropic): Triton kernel, speedrun/rmsnorm/row.py variant row_per_program"

NUM_WARPS = 8


@triton.jit
def _rmsnorm_row_kernel(x_ptr, w_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, eps,
                        BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * out_row_stride + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def kernel(x: torch.Tensor, w: torch.Tensor, *, eps: float) -> torch.Tensor:
    """RMS-normalise x over its last dimension and scale by w (same result as F.rms_norm)."""
    n_cols = x.shape[-1]
    assert w.shape == (n_cols,), f"rmsnorm: w must have shape ({n_cols},), got {tuple(w.shape)}"
    block = triton.next_power_of_2(n_cols)
    assert block <= 65536, f"rmsnorm: rows of {n_cols} elements do not fit one program; use a looped variant"
    x2 = x.reshape(-1, n_cols)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    w = w.contiguous()
    out = torch.empty((x2.shape[0], n_cols), dtype=x.dtype, device=x.device)
    _rmsnorm_row_kernel[(x2.shape[0],)](x2, w, out, n_cols, x2.stride(0), out.stride(0), eps,
                                        BLOCK=block, num_warps=NUM_WARPS)
    return out.view(x.shape)


if __name__ == "__main__":  # python targets/<name>/candidate.py: one run under the workspace's contract
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import hk_contract

    hk_contract.main(__file__)
