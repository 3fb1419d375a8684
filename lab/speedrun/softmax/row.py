"""softmax, one program per row: the whole row in registers, max/exp2/sum in fp32, written once.

torch.softmax on 4096x8192 bf16 runs at about a quarter of the copy ceiling; the compulsory traffic is one read
and one write of 64 MiB each. One program per row loads its 8192 elements once as 16-byte vectors, computes
max, exp2 and sum in fp32 in registers, and writes once: exactly the compulsory bytes, 4096 programs over 132
SMs. Parameters: `num_warps` and `cache_hints` (x evict-first, y streaming `.cs` stores).

Variants:
- `row_per_program` (8 warps): the naive Triton kernel; reference point for the other variants (h200.md
  measured this design at 92% of the copy ceiling with the eager timer).
- `row_w4` (4 warps): row_per_program reached ~94-95% of the copy ceiling; the rest is partly how many rows an
  SM keeps in flight and how long each program's load -> reduce -> store bubble lasts. At 4 warps each thread
  holds 64 fp32 values (16 vectors of 16 bytes in flight per thread) and up to 16 programs share an SM (64
  warps), so more rows are in different phases at once, and the block reduction spans 4 warps (fewer barrier
  waits). Risk: registers (about 100 per thread) cap residency below 16 programs.
- `row_w16` (16 warps): the other direction from `row_w4`: 512 threads per row, each with 2 vectors of 16
  bytes (16 values), about 32 registers, so residency is bounded by warps (4 programs of 16 warps per SM), and
  each program finishes its row sooner. Tells whether per-thread bytes in flight or program count limits the
  rate.
- `row_cache_hints` (16 warps, hints): same compulsory bytes as `row_per_program`; 16 warps give each program
  twice the loads in flight (each thread holds 16 instead of 32 elements, so fewer registers and more resident
  warps per SM), and the cache hints keep dead x/y lines from displacing anything useful in the 60 MiB L2 so
  the write-back drains without stalling the following reads. Two changes at once against `row_per_program`:
  if it wins, split them.
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
    "row_cache_hints": {"num_warps": 16, "cache_hints": True},
}


@triton.jit
def _softmax_row_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr,
                        CACHE_HINTS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    if CACHE_HINTS:
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=float("-inf"),
                    eviction_policy="evict_first").to(tl.float32)
    else:
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=float("-inf")).to(tl.float32)
    e = tl.exp2((x - tl.max(x, axis=0)) * 1.4426950408889634)
    y = e * (1.0 / tl.sum(e, axis=0))
    if CACHE_HINTS:
        tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask,
                 cache_modifier=".cs")
    else:
        tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def make_kernel(*, num_warps: int, cache_hints: bool) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(x, *, dim)` at one parameter set."""

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
                                            CACHE_HINTS=cache_hints, num_warps=num_warps)
        return out.view(x.shape)

    return kernel
