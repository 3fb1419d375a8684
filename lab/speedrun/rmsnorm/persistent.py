"""rmsnorm, persistent grid: resident programs stride over the rows and keep the next rows' loads in flight.

Parameters: `prefetch` ("registers": the next row is loaded into registers before the current one is reduced,
a manual double buffer; "pipeliner": `tl.range(..., num_stages)` stages the row loads, on Hopper through shared
memory with cp.async), `programs_per_sm`, `num_warps` and `num_stages` (pipeliner only).

Variants:
- `persistent_prefetch` (registers, 2 programs per SM, 16 warps): a one-row-per-program kernel only has the loads of the
  resident programs in flight, and every program pays its launch, w load and epilogue. Here 2 x 132 programs stay
  resident and stride over the rows; each issues the load of its next row before reducing the current one (software
  double buffering in registers), so two rows (32 KiB) per program, 64 KiB per SM, are in flight at all times, and w is
  loaded once per program instead of once per row. Risk: 4096 rows over 264 programs is 15.5 rows each, so the last
  round is half empty (a few % of tail); the register double buffer can also cost residency.
- `persistent_pipelined` (pipeliner, 4 programs per SM, 8 warps, 3 stages): the same idea as `persistent_prefetch`
  (resident programs that stride over rows and keep the next rows' loads in flight), but the prefetch is left to
  `tl.range(..., num_stages=3)`, which on Hopper can stage the row loads through shared memory asynchronously
  (cp.async), two rows ahead, without holding them in registers. If the pipeliner declines these loads (no dot in the
  loop), the kernel degrades to a plain persistent loop: the measurement tells which, and the TTGIR
  (`async_copy_global_to_local`) shows it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "persistent_prefetch": {"prefetch": "registers", "programs_per_sm": 2, "num_warps": 16, "num_stages": None},
    "persistent_pipelined": {"prefetch": "pipeliner", "programs_per_sm": 4, "num_warps": 8, "num_stages": 3},
}


@functools.cache
def _num_sms(device_type: str, index: int | None) -> int:
    if device_type == "cuda":
        return torch.cuda.get_device_properties(index).multi_processor_count
    return 4


@triton.jit
def _rmsnorm_persistent_kernel(x_ptr, w_ptr, out_ptr, n_rows, n_cols, x_row_stride, out_row_stride, eps,
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


@triton.jit
def _rmsnorm_pipelined_kernel(x_ptr, w_ptr, out_ptr, n_rows, n_cols, x_row_stride, out_row_stride, eps,
                              BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid = tl.program_id(0)
    n_programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK)
    col_mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    for row in tl.range(pid, n_rows, n_programs, num_stages=NUM_STAGES):
        row64 = tl.cast(row, tl.int64)
        x = tl.load(x_ptr + row64 * x_row_stride + cols, mask=col_mask, other=0.0,
                    eviction_policy="evict_first").to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        tl.store(out_ptr + row64 * out_row_stride + cols, (x * rstd * w).to(out_ptr.dtype.element_ty),
                 mask=col_mask)


def make_kernel(*, prefetch: str, programs_per_sm: int, num_warps: int,
                num_stages: int | None) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(x, w, *, eps)` at one parameter set."""
    assert prefetch in ("registers", "pipeliner"), "rmsnorm: prefetch is 'registers' or 'pipeliner'"
    assert (num_stages is None) == (prefetch == "registers"), "rmsnorm: num_stages goes with the pipeliner only"

    def kernel(x: torch.Tensor, w: torch.Tensor, *, eps: float) -> torch.Tensor:
        """RMS-normalise x over its last dimension and scale by w (same result as F.rms_norm)."""
        n_cols = x.shape[-1]
        assert w.shape == (n_cols,), f"rmsnorm: w must have shape ({n_cols},), got {tuple(w.shape)}"
        block = triton.next_power_of_2(n_cols)
        if prefetch == "registers":
            assert block <= 32768, f"rmsnorm: rows of {n_cols} elements do not fit the double buffer"
        else:
            assert block <= 16384, f"rmsnorm: {num_stages} staged rows of {n_cols} elements exceed shared memory"
        x2 = x.reshape(-1, n_cols)
        if x2.stride(-1) != 1:
            x2 = x2.contiguous()
        w = w.contiguous()
        n_rows = x2.shape[0]
        out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
        grid = max(1, min(n_rows, _num_sms(x.device.type, x.device.index) * programs_per_sm))
        if prefetch == "registers":
            _rmsnorm_persistent_kernel[(grid,)](x2, w, out, n_rows, n_cols, x2.stride(0), out.stride(0), eps,
                                            BLOCK=block, num_warps=num_warps)
        else:
            _rmsnorm_pipelined_kernel[(grid,)](x2, w, out, n_rows, n_cols, x2.stride(0), out.stride(0), eps,
                                           BLOCK=block, NUM_STAGES=num_stages, num_warps=num_warps)
        return out.view(x.shape)

    return kernel
