"""gemv candidate: `rows_bm4_bk2048` (tied with cuBLAS in the first triage) at 4 warps instead of 8.

Hypothesis: the same tiles with 128 threads: 64 bf16 weights (8 vectors of 16 bytes) in flight per thread per
iteration instead of 32, and up to twice the programs resident per SM; each program's final reduction
crosses 4 warps instead of 8.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

WHO = "Claude (Anthropic): Triton kernel, speedrun/gemv/rows.py variant rows_bm4_bk2048_w4"

BLOCK_M = 4
BLOCK_K = 2048
NUM_WARPS = 4


@triton.jit
def _gemv_rows_kernel(w_ptr, x_ptr, out_ptr, n_rows, n_cols, w_row_stride, BLOCK_M: tl.constexpr,
                      BLOCK_K: tl.constexpr, EVEN: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_K)
    row_mask = rows < n_rows
    w_ptrs = w_ptr + tl.cast(rows, tl.int64)[:, None] * w_row_stride + cols[None, :]
    acc = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
    for k0 in range(0, n_cols, BLOCK_K):
        if EVEN:
            w = tl.load(w_ptrs + k0, eviction_policy="evict_first")
            x = tl.load(x_ptr + k0 + cols)
        else:
            col_mask = k0 + cols < n_cols
            w = tl.load(w_ptrs + k0, mask=row_mask[:, None] & col_mask[None, :], other=0.0,
                        eviction_policy="evict_first")
            x = tl.load(x_ptr + k0 + cols, mask=col_mask, other=0.0)
        acc += w.to(tl.float32) * x.to(tl.float32)[None, :]
    tl.store(out_ptr + rows, tl.sum(acc, axis=1).to(out_ptr.dtype.element_ty), mask=row_mask)


def kernel(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Matrix-vector product w @ x (same result as torch.mv(w, x))."""
    assert w.ndim == 2 and x.ndim == 1 and w.shape[1] == x.shape[0], (
        f"gemv: expected w [M, K] and x [K], got {tuple(w.shape)} and {tuple(x.shape)}")
    if w.stride(1) != 1:
        w = w.contiguous()
    x = x.contiguous()
    n_rows, n_cols = w.shape
    out = torch.empty(n_rows, dtype=w.dtype, device=w.device)
    even = n_rows % BLOCK_M == 0 and n_cols % BLOCK_K == 0
    _gemv_rows_kernel[(triton.cdiv(n_rows, BLOCK_M),)](w, x, out, n_rows, n_cols, w.stride(0),
                                                      BLOCK_M=BLOCK_M, BLOCK_K=BLOCK_K, EVEN=even,
                                                      num_warps=NUM_WARPS)
    return out


if __name__ == "__main__":  # python targets/<name>/candidate.py: one run under the workspace's contract
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import hk_contract

    hk_contract.main(__file__)
