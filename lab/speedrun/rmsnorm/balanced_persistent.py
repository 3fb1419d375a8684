"""rmsnorm, `persistent_prefetch`'s kernel on a balanced grid: the control that separates the grid from the load
path of `tma_persistent.py`.

`persistent_prefetch` (2 programs per SM of 16 warps; the next row loaded into registers before the current one is
reduced, x evict-first) triaged 2-5% behind `row_per_program`
(`lab/benchmarks/evidence/speedrun/h200_20261130_batch_a.jsonl`, `h200_c1/triage.jsonl`). Its grid is 264 programs
striding over 4096 rows, so 136 programs do 16 rows and 128 do 15: for the last row's time about half the programs
are idle. The kernel here is the same code; only the grid differs: rows per program = ceil(rows / (programs_per_sm x
SMs)), programs = ceil(rows / that), so at the headline 256 programs do exactly 16 rows each (8 SMs hold one
program, at the same rows per program). This is the grid of `tma_persistent.py`'s 2-per-SM variants. Parameters:
`programs_per_sm`, `num_warps`.

sm_90 compile at the headline (BLOCK 8192, 16 warps; `compile_sm90.py`,
`lab/benchmarks/evidence/speedrun/compile_sm90_20261201.txt`): 64 registers (2 programs of 16 warps fill the register file),
no spills, `LDG.E.EF.128` x loads, `STG.E.128` stores.

Variants:
- `balanced_p2_w16` (2 programs per SM, 16 warps): against `persistent_prefetch` it measures what the uneven last
  round cost; against `tma_p2_s5` and `tma_p2_s6` (the same grid, rows staged by TMA, 6-10 rows requested per SM
  instead of about 2) it tells whether a difference of those comes from the ring or from the grid.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "balanced_p2_w16": {"programs_per_sm": 2, "num_warps": 16},
}


@functools.cache
def _num_sms(device_type: str, index: int | None) -> int:
    if device_type == "cuda":
        return torch.cuda.get_device_properties(index).multi_processor_count
    return 4


@triton.jit
def _rmsnorm_balanced_kernel(x_ptr, w_ptr, out_ptr, n_rows, n_cols, x_row_stride, out_row_stride, eps,
                             BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    n_programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK)
    col_mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
    zero_cols = tl.zeros([BLOCK], dtype=tl.int32)  # splat a scalar row index (interpreter-safe masks)
    x_next = tl.load(x_ptr + tl.cast(pid, tl.int64) * x_row_stride + cols,
                     mask=col_mask & (zero_cols + pid < n_rows), other=0.0, eviction_policy="evict_first")
    for row in range(pid, n_rows, n_programs):
        x = x_next.to(tl.float32)
        next_row = row + n_programs
        x_next = tl.load(x_ptr + tl.cast(next_row, tl.int64) * x_row_stride + cols,
                         mask=col_mask & (zero_cols + next_row < n_rows), other=0.0,
                         eviction_policy="evict_first")
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        y = x * rstd * w.to(tl.float32)
        tl.store(out_ptr + tl.cast(row, tl.int64) * out_row_stride + cols, y.to(out_ptr.dtype.element_ty),
                 mask=col_mask)


def balanced_grid(n_rows: int, programs: int) -> int:
    """At most `programs` programs, each with the same number of rows (the last possibly fewer)."""
    rows_per_program = max(1, triton.cdiv(n_rows, max(1, programs)))
    return max(1, triton.cdiv(n_rows, rows_per_program))


def make_kernel(*, programs_per_sm: int, num_warps: int) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(x, w, *, eps)` at one parameter set."""

    def kernel(x: torch.Tensor, w: torch.Tensor, *, eps: float) -> torch.Tensor:
        """RMS-normalise x over its last dimension and scale by w (same result as F.rms_norm)."""
        n_cols = x.shape[-1]
        assert w.shape == (n_cols,), f"rmsnorm: w must have shape ({n_cols},), got {tuple(w.shape)}"
        block = triton.next_power_of_2(n_cols)
        assert block <= 32768, f"rmsnorm: rows of {n_cols} elements do not fit the double buffer"
        x2 = x.reshape(-1, n_cols)
        if x2.stride(-1) != 1:
            x2 = x2.contiguous()
        w = w.contiguous()
        n_rows = x2.shape[0]
        out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
        grid = balanced_grid(n_rows, _num_sms(x.device.type, x.device.index) * programs_per_sm)
        _rmsnorm_balanced_kernel[(grid,)](x2, w, out, n_rows, n_cols, x2.stride(0), out.stride(0), eps,
                                          BLOCK=block, num_warps=num_warps)
        return out.view(x.shape)

    return kernel
