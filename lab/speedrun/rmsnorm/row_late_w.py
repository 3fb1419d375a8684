"""rmsnorm, one program per row with w loaded after the reduction: fewer live registers, more rows per SM.

`row.py` loads x and w together, so both rows (x as fp32, w) are live across the block reduction: 64 registers at 8
warps, 124 at 4, 38 at 16 (sm_90 compile). Registers are what caps the programs, and so the rows, an SM has in
flight (4 at 8 warps, 4 at 4 warps, 3 at 16 warps). Here w is loaded only once rstd is known; the compiler keeps
that order (the w loads follow the block barrier in the SASS), so w is not live during the reduction. w is 16 KiB,
read by every program, so the late load should be an L1 or L2 hit, not a DRAM round trip; it adds that hit's latency
to each program's life. Optionally `maxnreg` caps the registers ptxas may use. Same grid, 16-byte vectors and
arithmetic as `row.py` (fp32 sum of squares, rsqrt, x * rstd * w, cast). Parameters: `num_warps`, `maxnreg`.

sm_90 compile at the headline (BLOCK 8192; `compile_sm90.py`, `lab/benchmarks/evidence/speedrun/compile_sm90_20261201.txt`),
and the programs per SM that the register file allows (65,536 registers; per-thread counts rounded up to 8):
| variant | registers | stack | programs per SM | `row.py` at the same warps |
|---|---|---|---|---|
| `late_w_w4` | 96 | 0 | 5 (20 warps) | 124 registers: 4 |
| `late_w_w16` | 32 | 0 | 4 (64 warps, the SM's limit) | 38 registers: 3 |
| `late_w_w8_r48` | 48 | 8 bytes (4 local loads/stores) | 5 (40 warps) | 64 registers: 4 |

Variants:
- `late_w_w4` (4 warps, no cap): 5 rows in flight per SM instead of `row_w4`'s 4, with each thread's 16 x loads of
  16 bytes issued at once. If the rate follows the rows an SM has requested, this gains on `row_w4` and on
  `row_per_program` (4); risk: the late w hit lengthens every program.
- `late_w_w16` (16 warps, no cap): 4 programs of 16 warps, the full 64 warps, where `row_w16` fits 3; the same 4
  rows per SM as `row_per_program` with twice the threads per row. Against `row_w16` it tells whether the fourth
  program pays; against `row_per_program`, whether more warps for the same rows do.
- `late_w_w8_r48` (8 warps, maxnreg 48): `row_per_program`'s geometry at 5 programs per SM instead of 4; ptxas
  spills 8 bytes per thread (local memory, normally served from L1) to fit 48 registers. Risk: the spill traffic and
  the cap's longer instruction schedule; compare with `late_w_w4`, which reaches 5 programs per SM without a spill.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "late_w_w4": {"num_warps": 4, "maxnreg": None},
    "late_w_w16": {"num_warps": 16, "maxnreg": None},
    "late_w_w8_r48": {"num_warps": 8, "maxnreg": 48},
}


@triton.jit
def _rmsnorm_late_w_kernel(x_ptr, w_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)  # after the reduction: not live across it
    tl.store(out_ptr + row * out_row_stride + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def make_kernel(*, num_warps: int, maxnreg: int | None) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(x, w, *, eps)` at one parameter set."""

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
        _rmsnorm_late_w_kernel[(x2.shape[0],)](x2, w, out, n_cols, x2.stride(0), out.stride(0), eps, BLOCK=block,
                                               num_warps=num_warps, maxnreg=maxnreg)
        return out.view(x.shape)

    return kernel
