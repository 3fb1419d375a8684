"""gemv, BLOCK_M rows per program, K swept in [BLOCK_M, BLOCK_K] tiles into an fp32 tile accumulator.

y = W @ x must read W once (128 MiB for 8192x8192 bf16); x (16 KiB) stays in L1/L2. Each iteration loads a
[BLOCK_M, BLOCK_K] tile of W (evict-first) as 16-byte vectors before using it; accumulating elementwise into an
fp32 tile defers the cross-lane reduction to one at the end instead of one per iteration. Parameters:
`block_m`, `block_k` and `num_warps`.

Variants:
- `rows_bm16_bk512` (16 rows, 512-column tiles, 8 warps, 512 programs): y = W @ x must read W once (128 MiB for
  8192x8192 bf16); x (16 KiB) stays in L1/L2. 16 rows per program gives 512 programs, about 4 per SM, so the whole grid
  is resident in one wave (no tail). Each iteration loads a 16 KiB tile as 16-byte vectors (4 per thread) before using
  it, so about 64 KiB per SM is in flight; accumulating elementwise into a [16, 512] fp32 tile defers the cross-lane
  reduction to one at the end instead of one per iteration.
- `rows_bm4_bk2048` (4 rows, 2048-column tiles, 8 warps, 2048 programs): the same compulsory 128 MiB as
  `rows_bm16_bk512`, cut differently: 2048 programs (about 15.5 per SM over the run), each iteration reading 4 rows x 4
  KiB, i.e. each warp streams long contiguous runs of one row (32 lanes x 16 B = 512 B per instruction), which favours
  DRAM page locality over the 16-row tile. More programs also even out the per-SM load when programs finish at different
  times. Same bytes in flight per iteration (16 KiB), 4 iterations per program instead of 16.
- `rows_bm2_bk4096` (2 rows, 4096-column tiles, 8 warps, 4096 programs): rows_bm4_bk2048 tied cuBLAS (34.2 us each).
  Halving the rows per program doubles the programs (about 31 per SM over the run: finer load balance at the end of the
  run) and doubles the contiguous run per row per iteration (8 KiB), with the same 16 KiB per iteration in flight and 2
  iterations per program.
- `rows_bm8_bk1024` (8 rows, 1024-column tiles, 8 warps, 1024 programs): between rows_bm16_bk512 (36.5 us) and
  rows_bm4_bk2048 (34.2 us): if the trend is "longer runs per row win", this one lands between them; if it is "fewer
  programs win", below. x is re-read from L1/L2 by fewer programs (1024 x 16 KiB).
- `rows_bm4_bk2048_w4` (`rows_bm4_bk2048` at 4 warps): the same tiles with 128 threads: 64 bf16 weights (8 vectors of 16
  bytes) in flight per thread per iteration instead of 32, and up to twice the programs resident per SM; each program's
  final reduction crosses 4 warps instead of 8.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "rows_bm16_bk512": {"block_m": 16, "block_k": 512, "num_warps": 8},
    "rows_bm4_bk2048": {"block_m": 4, "block_k": 2048, "num_warps": 8},
    "rows_bm2_bk4096": {"block_m": 2, "block_k": 4096, "num_warps": 8},
    "rows_bm8_bk1024": {"block_m": 8, "block_k": 1024, "num_warps": 8},
    "rows_bm4_bk2048_w4": {"block_m": 4, "block_k": 2048, "num_warps": 4},
}


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


def make_kernel(*, block_m: int, block_k: int, num_warps: int) -> Callable[..., torch.Tensor]:
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
        even = n_rows % block_m == 0 and n_cols % block_k == 0
        _gemv_rows_kernel[(triton.cdiv(n_rows, block_m),)](w, x, out, n_rows, n_cols, w.stride(0),
                                                          BLOCK_M=block_m, BLOCK_K=block_k, EVEN=even,
                                                          num_warps=num_warps)
        return out

    return kernel
