"""rmsnorm, one program per row: the whole row in registers, reduced in fp32, written once.

rmsnorm 4096x8192 bf16 must move 2 x 64 MiB (read x, write y) + 16 KiB (w). One program per row loads its
8192 elements once as 16-byte vectors, reduces sum(x^2) in fp32 across the block and writes y once: exactly
the compulsory bytes, 4096 programs over 132 SMs. Parameters: `num_warps` and `cache_hints` (x evict-first,
w evict-last, y streaming `.cs` stores).

Variants:
- `row_per_program` (8 warps): the naive Triton kernel, about 31 programs per SM with several resident at a
  time; the reference point of the other variants (h200.md measured the same design at 91% of the copy
  ceiling with the eager timer).
- `row_w4` (4 warps): row_per_program reached ~94-95% of the copy ceiling; the rest is partly how many rows an
  SM keeps in flight and how long each program's load -> reduce -> store bubble lasts. At 4 warps each thread
  holds 64 fp32 values (16 vectors of 16 bytes in flight per thread) and up to 16 programs share an SM (64
  warps), so more rows are in different phases at once, and the block reduction spans 4 warps (fewer barrier
  waits). Risk: registers (about 100 per thread) cap residency below 16 programs.
- `row_w16` (16 warps): the other direction from `row_w4`: 512 threads per row, each with 2 vectors of 16
  bytes (16 values), about 32 registers, so residency is bounded by warps (4 programs of 16 warps per SM), and
  each program finishes its row sooner. Tells whether per-thread bytes in flight or program count limits the
  rate.
- `row_cache_hints` (8 warps, hints): the row kernel already moves only the compulsory bytes (128 MiB +
  16 KiB), but x and y are touched once while w (16 KiB) is re-read by all 4096 programs. Marking x loads
  evict-first and y stores streaming (`.cs`) keeps the 60 MiB L2 from holding dead lines, so w stays resident
  and write-back does not compete with the next rows' reads. Same grid and vector width as `row_per_program`;
  any difference isolates the hints.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "row_per_program": {"num_warps": 8, "cache_hints": False},
    "row_w4": {"num_warps": 4, "cache_hints": False},
    "row_w16": {"num_warps": 16, "cache_hints": False},
    "row_cache_hints": {"num_warps": 8, "cache_hints": True},
}


@triton.jit
def _rmsnorm_row_kernel(x_ptr, w_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, eps,
                        BLOCK: tl.constexpr, CACHE_HINTS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    if CACHE_HINTS:
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0,
                    eviction_policy="evict_first").to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    else:
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    y = (x * rstd * w).to(out_ptr.dtype.element_ty)
    if CACHE_HINTS:
        tl.store(out_ptr + row * out_row_stride + cols, y, mask=mask, cache_modifier=".cs")
    else:
        tl.store(out_ptr + row * out_row_stride + cols, y, mask=mask)


def make_kernel(*, num_warps: int, cache_hints: bool) -> Callable[..., torch.Tensor]:
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
        _rmsnorm_row_kernel[(x2.shape[0],)](x2, w, out, n_cols, x2.stride(0), out.stride(0), eps, BLOCK=block,
                                            CACHE_HINTS=cache_hints, num_warps=num_warps)
        return out.view(x.shape)

    return kernel
