"""rmsnorm candidate: `row_per_program` (the best of the first triage) at 4 warps instead of 8.

Hypothesis: row_per_program reached ~94-95% of the copy ceiling; the rest is partly how many rows an SM keeps
in flight and how long each program's load -> reduce -> store bubble lasts. At 4 warps each thread holds 64
fp32 values (16 vectors of 16 bytes in flight per thread) and up to 16 programs share an SM (64 warps), so
more rows are in different phases at once, and the block reduction spans 4 warps (fewer barrier waits).
Risk: registers (about 100 per thread) cap residency below 16 programs.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

NUM_WARPS = 4


@triton.jit
def _rmsnorm_row_kernel(x_ptr, w_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, eps,
                        BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * out_row_stride + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


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
    _rmsnorm_row_kernel[(x2.shape[0],)](x2, w, out, n_cols, x2.stride(0), out.stride(0), eps,
                                        BLOCK=block, num_warps=NUM_WARPS)
    return out.view(x.shape)
