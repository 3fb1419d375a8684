"""rmsnorm candidate: one program per row, with cache hints (x evict-first, w evict-last, y streaming store).

Hypothesis: the row kernel already moves only the compulsory bytes (128 MiB + 16 KiB), but x and y are touched
once while w (16 KiB) is re-read by all 4096 programs. Marking x loads evict-first and y stores streaming
(`.cs`) keeps the 60 MiB L2 from holding dead lines, so w stays resident and write-back does not compete with
the next rows' reads. Same grid and vector width as `row_per_program`; any difference isolates the hints.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

NUM_WARPS = 8


@triton.jit
def _rmsnorm_row_hint_kernel(x_ptr, w_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, eps,
                             BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0,
                eviction_policy="evict_first").to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * out_row_stride + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask,
             cache_modifier=".cs")


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
    _rmsnorm_row_hint_kernel[(x2.shape[0],)](x2, w, out, n_cols, x2.stride(0), out.stride(0), eps,
                                             BLOCK=block, num_warps=NUM_WARPS)
    return out.view(x.shape)
