"""softmax candidate: one program per row, x loaded evict-first and y stored streaming (`.cs`), 16 warps.

Hypothesis: same compulsory bytes as `row_per_program`; 16 warps give each program twice the loads in flight
(each thread holds 16 instead of 32 elements, so fewer registers and more resident warps per SM), and the
cache hints keep dead x/y lines from displacing anything useful in the 60 MiB L2 so the write-back drains
without stalling the following reads. Two changes at once against `row_per_program`: if it wins, split them.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

NUM_WARPS = 16


@triton.jit
def _softmax_row_hint_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=float("-inf"),
                eviction_policy="evict_first").to(tl.float32)
    e = tl.exp2((x - tl.max(x, axis=0)) * 1.4426950408889634)
    y = e * (1.0 / tl.sum(e, axis=0))
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask,
             cache_modifier=".cs")


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
    _softmax_row_hint_kernel[(x2.shape[0],)](x2, out, n_cols, x2.stride(0), out.stride(0), BLOCK=block,
                                             num_warps=NUM_WARPS)
    return out.view(x.shape)
