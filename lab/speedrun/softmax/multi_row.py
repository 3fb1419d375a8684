"""softmax, ROWS rows per program as one [ROWS, BLOCK] tile: both rows' loads in flight before the reductions.

Masked lanes read -1e30 (finite), so a masked tail row makes no NaN; x loads are evict-first. Parameters:
`rows` and `num_warps`.

Variants:
- `multi_row` (2 rows, 16 warps): 2 rows per program put 32 KiB of independent loads in flight before the
  first reduction and halve the number of programs (2048, about 15.5 per SM), amortising per-program
  prologue/epilogue and the two block-wide reductions' barriers over twice the bytes. Risk: 32 fp32 values per
  thread per row raise register pressure and can cut residency; measured against `row_per_program`.
- `rows2_w8` (2 rows, 8 warps, 2048 programs): `multi_row` (2 rows, 16 warps) lost to one row per program;
  this keeps 2 rows but at 8 warps (64 fp32 values per thread, as `row_w4`), so both rows' loads are in flight
  before the two reductions, with half the programs of row_per_program and the same per-thread footprint as
  row_w4.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "multi_row": {"rows": 2, "num_warps": 16},
    "rows2_w8": {"rows": 2, "num_warps": 8},
}


@triton.jit
def _softmax_rows_kernel(x_ptr, out_ptr, n_rows, n_cols, x_row_stride, out_row_stride, ROWS: tl.constexpr,
                         BLOCK: tl.constexpr):
    # masked lanes read -1e30 (finite), so a masked tail row gives no NaN
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=-1e30,
                eviction_policy="evict_first").to(tl.float32)
    e = tl.exp2((x - tl.max(x, axis=1)[:, None]) * 1.4426950408889634)
    y = e * (1.0 / tl.sum(e, axis=1))[:, None]
    tl.store(out_ptr + rows[:, None] * out_row_stride + cols[None, :], y.to(out_ptr.dtype.element_ty),
             mask=mask)


def make_kernel(*, rows: int, num_warps: int) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(x, *, dim)` at one parameter set."""

    def kernel(x: torch.Tensor, *, dim: int) -> torch.Tensor:
        """Softmax of x along its last dimension (same result as torch.softmax(x, dim))."""
        assert dim in (-1, x.ndim - 1), f"softmax: only the last dimension is supported, got dim={dim}"
        n_cols = x.shape[-1]
        block = triton.next_power_of_2(n_cols)
        assert block * rows <= 65536, f"softmax: {rows} rows of {n_cols} elements do not fit one program"
        x2 = x.reshape(-1, n_cols)
        if x2.stride(-1) != 1:
            x2 = x2.contiguous()
        n_rows = x2.shape[0]
        out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
        _softmax_rows_kernel[(triton.cdiv(n_rows, rows),)](x2, out, n_rows, n_cols, x2.stride(0),
                                                          out.stride(0), ROWS=rows, BLOCK=block,
                                                          num_warps=num_warps)
        return out.view(x.shape)

    return kernel
