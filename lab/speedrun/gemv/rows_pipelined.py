"""gemv, row tiles staged through shared memory by Triton's software pipeliner (`tl.range(num_stages)`).

Parameters: `block_m`, `block_k`, `num_warps` and `num_stages`.

Variants:
- `rows_pipelined` (32 rows, 256-column tiles, 8 warps, 4 stages): instead of relying on registers to hold the loads in
  flight, `tl.range(..., num_stages=4)` lets Triton issue asynchronous copies (cp.async on Hopper) three tiles ahead
  into shared memory: 3 x 16 KiB in flight per program with 256 programs (about 2 per SM), i.e. ~96 KiB per SM, more
  than the register-resident variants can hold. Risk: the pipeliner may decline a loop without a dot (check the TTGIR
  for `async_copy_global_to_local`), and 256 programs on 132 SMs leaves some SMs with one program.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "rows_pipelined": {"block_m": 32, "block_k": 256, "num_warps": 8, "num_stages": 4},
}


@triton.jit
def _gemv_pipelined_kernel(w_ptr, x_ptr, out_ptr, n_rows, n_cols, w_row_stride, BLOCK_M: tl.constexpr,
                           BLOCK_K: tl.constexpr, NUM_STAGES: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_K)
    row_mask = rows < n_rows
    w_ptrs = w_ptr + tl.cast(rows, tl.int64)[:, None] * w_row_stride + cols[None, :]
    acc = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
    for k0 in tl.range(0, n_cols, BLOCK_K, num_stages=NUM_STAGES):
        col_mask = k0 + cols < n_cols
        w = tl.load(w_ptrs + k0, mask=row_mask[:, None] & col_mask[None, :], other=0.0,
                    eviction_policy="evict_first")
        x = tl.load(x_ptr + k0 + cols, mask=col_mask, other=0.0)
        acc += w.to(tl.float32) * x.to(tl.float32)[None, :]
    tl.store(out_ptr + rows, tl.sum(acc, axis=1).to(out_ptr.dtype.element_ty), mask=row_mask)


def make_kernel(*, block_m: int, block_k: int, num_warps: int, num_stages: int) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(w, x)` at one parameter set."""

    def kernel(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Matrix-vector product w @ x (same result as torch.mv(w, x))."""
        assert w.ndim == 2 and x.ndim == 1 and w.shape[1] == x.shape[0], (
            f"gemv: expected w [M, K] and x [K], got {tuple(w.shape)} and {tuple(x.shape)}")
        if w.stride(1) != 1:
            w = w.contiguous()
        x = x.contiguous()
        n_rows, n_cols = w.shape
        out = torch.empty(n_rows, dtype=w.dtype, device=w.device)
        _gemv_pipelined_kernel[(triton.cdiv(n_rows, block_m),)](w, x, out, n_rows, n_cols, w.stride(0),
                                                               BLOCK_M=block_m, BLOCK_K=block_k,
                                                               NUM_STAGES=num_stages, num_warps=num_warps)
        return out

    return kernel
