"""rmsnorm, ROWS rows per program as one [ROWS, BLOCK] tile: more independent loads before the reductions.

Each program issues ROWS x 16 KiB of loads before the first reduction, loads w once per ROWS rows (evict-last;
x evict-first) and the grid shrinks to 4096 / ROWS programs. Parameters: `rows` and `num_warps`.

Variants:
- `multi_row` (4 rows, 16 warps): more bytes are in flight per resident warp (Little's law: ~4 TB/s x ~1 us
  needs ~30 KiB in flight per SM), w is loaded once per 4 rows, and the grid shrinks to 1024 programs (about
  7.8 per SM), which halves the per-program launch/epilogue overhead relative to the bytes moved. Risk: 64 fp32
  values per thread for x raise register pressure and can cut residency.
- `rows2_w8` (2 rows, 8 warps, 2048 programs): `multi_row` lost to one row per program, perhaps from its 64
  fp32 values per thread. Two rows at 8 warps keeps the per-thread footprint of `row_w4` (64 values) but halves
  the programs and the w reads from L2 (w is loaded once per 2 rows), and both rows' loads are issued before
  the reductions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "multi_row": {"rows": 4, "num_warps": 16},
    "rows2_w8": {"rows": 2, "num_warps": 8},
}


@triton.jit
def _rmsnorm_rows_kernel(x_ptr, w_ptr, out_ptr, n_rows, n_cols, x_row_stride, out_row_stride, eps,
                         ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    col_mask = cols < n_cols
    mask = (rows < n_rows)[:, None] & col_mask[None, :]
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=0.0,
                eviction_policy="evict_first").to(tl.float32)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    y = x * rstd[:, None] * w[None, :]
    tl.store(out_ptr + rows[:, None] * out_row_stride + cols[None, :], y.to(out_ptr.dtype.element_ty),
             mask=mask)


def make_kernel(*, rows: int, num_warps: int) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(x, w, *, eps)` at one parameter set."""

    def kernel(x: torch.Tensor, w: torch.Tensor, *, eps: float) -> torch.Tensor:
        """RMS-normalise x over its last dimension and scale by w (same result as F.rms_norm)."""
        n_cols = x.shape[-1]
        assert w.shape == (n_cols,), f"rmsnorm: w must have shape ({n_cols},), got {tuple(w.shape)}"
        block = triton.next_power_of_2(n_cols)
        assert block * rows <= 65536, f"rmsnorm: {rows} rows of {n_cols} elements do not fit one program"
        x2 = x.reshape(-1, n_cols)
        if x2.stride(-1) != 1:
            x2 = x2.contiguous()
        w = w.contiguous()
        n_rows = x2.shape[0]
        out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
        _rmsnorm_rows_kernel[(triton.cdiv(n_rows, rows),)](x2, w, out, n_rows, n_cols, x2.stride(0),
                                                          out.stride(0), eps, ROWS=rows, BLOCK=block,
                                                          num_warps=num_warps)
        return out.view(x.shape)

    return kernel
