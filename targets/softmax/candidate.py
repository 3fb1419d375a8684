"""softmax candidate: `row_per_program` at 16 warps instead of 8.

Hypothesis: the other direction from `row_w4`: 512 threads per row, each with 2 vectors of 16 bytes (16
values), about 32 registers, so residency is bounded by warps (4 programs of 16 warps per SM), and each
program finishes its row sooner. Tells whether per-thread bytes in flight or program count limits the rate.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

WHO = "Claude (Anthropic): Triton kernel, speedrun/softmax/row.py variant row_w16"

NUM_WARPS = 16


@triton.jit
def _softmax_row_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=float("-inf")).to(tl.float32)
    e = tl.exp2((x - tl.max(x, axis=0)) * 1.4426950408889634)
    y = e * (1.0 / tl.sum(e, axis=0))
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def kernel(x: torch.Tensor, *, dim: int) -> torch.Tensor:
    """Softmax of x along its last dimension (same result as torch.softmax(x, dim))."""
    assert dim in (-1, x.ndim - 1), f"softmax: only the last dimension is supported, got dim={dim}"
    n_cols = x.shape[-1]
    block = triton.next_power_of_2(n_cols)
    assert block <= 65536, f"softmax: rows of {n_cols} elements do not fit one program; use a looped variant"
    x2 = x.reshape(-1, n_cols)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    out = torch.empty((x2.shape[0], n_cols), dtype=x.dtype, device=x.device)
    _softmax_row_kernel[(x2.shape[0],)](x2, out, n_cols, x2.stride(0), out.stride(0), BLOCK=block,
                                        num_warps=NUM_WARPS)
    return out.view(x.shape)


if __name__ == "__main__":  # python targets/<name>/candidate.py: one run under the workspace's contract
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import hk_contract

    hk_contract.main(__file__)
