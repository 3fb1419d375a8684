"""gemv, split-K grid sized to the SMs: fp32 partials, the last-arriving split reduces in-kernel.

Parameters: `block_m`, `block_k`, `num_warps` and `programs_per_sm` (the grid's target).

Variants:
- `split_k` (64-row x 128-column tiles, 8 warps, about 4 programs per SM): the row-blocked variants fix the number of
  programs to M / BLOCK_M; split-K decouples it, so the grid can be an exact multiple of the 132 SMs (here 64-row blocks
  x SPLIT_K splits, SPLIT_K chosen so the grid is about 4 programs per SM) and every program streams the same number of
  bytes, with no tail. Partials go to a small fp32 workspace (M x SPLIT_K x 4 B, 0.1% of the W bytes); each row block's
  last-arriving program (an acq_rel atomic counter, reset by that program, so one kernel launch and no memset) sums them
  and writes bf16. Risk: the extra workspace traffic and the atomic; 64-row x 128-column tiles read 256 B runs per row.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "split_k": {"block_m": 64, "block_k": 128, "num_warps": 8, "programs_per_sm": 4},
}


@functools.cache
def _num_sms(device_type: str, index: int | None) -> int:
    if device_type == "cuda":
        return torch.cuda.get_device_properties(index).multi_processor_count
    return 4


_COUNTERS: dict[tuple[str, int | None], torch.Tensor] = {}


def _counters(device: torch.device, n: int) -> torch.Tensor:
    """Zeroed int32 arrival counters, kept between calls (each launch leaves them at zero again)."""
    key = (device.type, device.index)
    buf = _COUNTERS.get(key)
    if buf is None or buf.numel() < n:
        buf = torch.zeros(max(n, 1024), dtype=torch.int32, device=device)
        _COUNTERS[key] = buf
    return buf


@triton.jit
def _gemv_split_k_kernel(w_ptr, x_ptr, out_ptr, partial_ptr, counter_ptr, n_rows, n_cols, w_row_stride,
                         cols_per_split, SPLIT_K: tl.constexpr, BLOCK_M: tl.constexpr,
                         BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    split = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_K)
    row_mask = rows < n_rows
    k_start = split * cols_per_split
    k_end = tl.minimum(k_start + cols_per_split, n_cols)
    w_ptrs = w_ptr + tl.cast(rows, tl.int64)[:, None] * w_row_stride + cols[None, :]
    acc = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        col_mask = k0 + cols < k_end
        w = tl.load(w_ptrs + k0, mask=row_mask[:, None] & col_mask[None, :], other=0.0,
                    eviction_policy="evict_first")
        x = tl.load(x_ptr + k0 + cols, mask=col_mask, other=0.0)
        acc += w.to(tl.float32) * x.to(tl.float32)[None, :]
    tl.store(partial_ptr + split * n_rows + rows, tl.sum(acc, axis=1), mask=row_mask)
    arrived = tl.atomic_add(counter_ptr + pid_m, 1, sem="acq_rel")
    if arrived == SPLIT_K - 1:
        splits = tl.arange(0, SPLIT_K)
        parts = tl.load(partial_ptr + splits[:, None] * n_rows + rows[None, :], mask=row_mask[None, :],
                        other=0.0, cache_modifier=".cg")
        tl.store(out_ptr + rows, tl.sum(parts, axis=0).to(out_ptr.dtype.element_ty), mask=row_mask)
        tl.store(counter_ptr + pid_m, 0)


def make_kernel(*, block_m: int, block_k: int, num_warps: int, programs_per_sm: int) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(w, x)` at one parameter set."""

    def kernel(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Matrix-vector product w @ x (same result as torch.mv(w, x))."""
        assert w.ndim == 2 and x.ndim == 1 and w.shape[1] == x.shape[0], (
            f"gemv: expected w [M, K] and x [K], got {tuple(w.shape)} and {tuple(x.shape)}")
        if w.stride(1) != 1:
            w = w.contiguous()
        x = x.contiguous()
        n_rows, n_cols = w.shape
        row_blocks = triton.cdiv(n_rows, block_m)
        wanted = _num_sms(w.device.type, w.device.index) * programs_per_sm
        split_k = max(1, min(wanted // row_blocks, triton.cdiv(n_cols, block_k)))
        split_k = 1 << (split_k.bit_length() - 1)  # a power of two, for tl.arange over the partials
        cols_per_split = triton.cdiv(triton.cdiv(n_cols, split_k), block_k) * block_k
        out = torch.empty(n_rows, dtype=w.dtype, device=w.device)
        partial = torch.empty((split_k, n_rows), dtype=torch.float32, device=w.device)
        counters = _counters(w.device, row_blocks)
        _gemv_split_k_kernel[(row_blocks, split_k)](w, x, out, partial, counters, n_rows, n_cols, w.stride(0),
                                                   cols_per_split, SPLIT_K=split_k, BLOCK_M=block_m,
                                                   BLOCK_K=block_k, num_warps=num_warps)
        return out

    return kernel
