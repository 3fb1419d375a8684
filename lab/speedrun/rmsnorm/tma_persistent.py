"""rmsnorm, persistent grid fed by the Hopper TMA engine: a ring of rows in shared memory, so the bytes in flight do
not live in registers.

In `row_per_program` every byte in flight has a destination register: 8 warps x 64 registers cap an SM at 4 resident
programs (46% achieved occupancy under ncu), so at most 4 rows (64 KiB) are requested per SM, and only while those
programs are in their load phase. The persistent variants tried so far had fewer: `persistent_prefetch` 2 programs
per SM with one row prefetched each, and `persistent_pipelined` (cp.async, 2 buffers) compiles to 94 registers, so
only 2 of its 4 programs per SM fit and each has 1-2 rows requested. Both triaged 2-5% behind `row_per_program`
(`lab/benchmarks/evidence/speedrun/h200_20261130_batch_a.jsonl`, `h200_c1/triage.jsonl`). Here x is read through a host
tensor descriptor ([rows, cols], block [1, BLOCK]) inside `tl.range(..., num_stages)`: the pipeliner turns each row
into bulk TMA copies (32 boxes of [1, 256]) into a ring of `num_stages - 1` shared-memory buffers tracked by
mbarriers. The copy that refills a buffer is issued at the end of the iteration that read it, so `num_stages - 2`
rows per program are requested while a row is reduced and `num_stages - 1` while the program waits for the next one.
The rows ahead cost shared memory (16 KiB each at the headline), not registers. With `tma_store`, y leaves through
one shared-memory buffer and a bulk TMA store (before rewriting the buffer the program waits only until the previous
store has read it); without it, y is written with plain 16-byte stores (no `.cs`: `row_cache_hints` triaged 2-4%
behind `row_per_program`). w is loaded once per program. The grid is balanced: rows per program = ceil(rows /
(programs_per_sm x SMs)), programs = ceil(rows / that), so every program gets the same number of rows (4096 rows on
132 SMs: 128 x 32 or 256 x 16) instead of the 15 or 16 of `persistent_*`, and it is sized to what the compile says
is co-resident. Same arithmetic as `row.py` (fp32 sum of squares, rsqrt, scale, cast). Rows must be 16-byte rows
(cols a multiple of 8 for bf16); views with other row strides are copied first. Parameters: `programs_per_sm`,
`num_stages`, `num_warps`, `tma_store`.

sm_90 compile at the headline (8 warps, BLOCK 8192, descriptor arguments typed `tensordesc<bf16[1, 8192]>`;
`compile_sm90.py`, `lab/benchmarks/evidence/speedrun/compile_sm90_20261201.txt`): 79 registers with the TMA store, 89
without; shared memory per program 82,080 bytes at 5 stages, 98,464 at 6, 147,616 at 9, 65,696 at 5 without the TMA
store; no spills; `UTMALDG.2D` loads, `UTMASTG.2D` or `STG.E.128` stores.

Variants:
- `tma_p1_s9` (1 program per SM, 9 stages, 8 warps, TMA store): 128 programs of 32 rows; 7-8 rows (112-128 KiB)
  requested per SM at all times, about twice what `row_per_program` has at the peak of its load phase. If the rate
  follows the bytes an SM keeps requested, this keeps the request queue full through every reduction and store;
  risk: one program per SM does its own wait -> reduce -> store in series, and if that per-row work outlasts the
  DRAM time of a row (about 1 us per SM at the ceiling), the ring drains.
- `tma_p2_s5` (2 programs per SM, 5 stages, 8 warps, TMA store): 256 programs of 16 rows, 2 x 80 KiB of shared
  memory per SM, 6-8 rows (96-128 KiB) requested per SM, and two programs, so one's reduction overlaps the other's
  wait; 8 SMs get one program (the same rows per program, so they finish with the rest).
- `tma_p2_s6` (2 programs per SM, 6 stages, 8 warps, TMA store): `tma_p2_s5` one row deeper, 8-10 rows (128-160 KiB)
  per SM in 2 x 96 KiB; with `tma_p1_s9` and `tma_p2_s5`, tells whether the rate still grows with depth.
- `tma_p2_s5_stg` (2 programs per SM, 5 stages, 8 warps, plain stores): `tma_p2_s5` with y written by 16-byte stores
  from registers instead of shared memory + TMA store; isolates the store path (a shared-memory round trip and a
  store wait per row against per-thread store issue).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

VARIANTS: dict[str, dict[str, Any]] = {
    "tma_p1_s9": {"programs_per_sm": 1, "num_stages": 9, "num_warps": 8, "tma_store": True},
    "tma_p2_s5": {"programs_per_sm": 2, "num_stages": 5, "num_warps": 8, "tma_store": True},
    "tma_p2_s6": {"programs_per_sm": 2, "num_stages": 6, "num_warps": 8, "tma_store": True},
    "tma_p2_s5_stg": {"programs_per_sm": 2, "num_stages": 5, "num_warps": 8, "tma_store": False},
}

SMEM_PER_PROGRAM = 227 * 1024  # the most shared memory one Hopper program may use


@functools.cache
def _num_sms(device_type: str, index: int | None) -> int:
    if device_type == "cuda":
        return torch.cuda.get_device_properties(index).multi_processor_count
    return 4


@triton.jit
def _rmsnorm_tma_kernel(x_desc, w_ptr, out_desc, out_ptr, n_rows, n_cols, out_row_stride, eps,
                        BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr, TMA_STORE: tl.constexpr):
    pid = tl.program_id(0)
    n_programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK)
    col_mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    for row in tl.range(pid, n_rows, n_programs, num_stages=NUM_STAGES):
        # columns past n_cols are outside the descriptor: TMA fills them with zeros
        x = tl.reshape(x_desc.load([row, 0]), [BLOCK]).to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        y = (x * rstd * w).to(out_ptr.dtype.element_ty)
        if TMA_STORE:  # columns past n_cols are dropped by the TMA store
            out_desc.store([row, 0], tl.reshape(y, [1, BLOCK]))
        else:
            tl.store(out_ptr + tl.cast(row, tl.int64) * out_row_stride + cols, y, mask=col_mask)


def _tma_rows(t: torch.Tensor) -> torch.Tensor:
    """t [rows, cols] as is if TMA can describe it (unit column stride, 16-byte aligned base and row stride)."""
    if t.stride(-1) != 1 or t.stride(0) * t.element_size() % 16 or t.data_ptr() % 16:
        t = t.contiguous()
    return t


def balanced_grid(n_rows: int, programs: int) -> int:
    """At most `programs` programs, each with the same number of rows (the last possibly fewer)."""
    rows_per_program = max(1, triton.cdiv(n_rows, max(1, programs)))
    return max(1, triton.cdiv(n_rows, rows_per_program))


def make_kernel(*, programs_per_sm: int, num_stages: int, num_warps: int,
                tma_store: bool) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(x, w, *, eps)` at one parameter set."""

    def kernel(x: torch.Tensor, w: torch.Tensor, *, eps: float) -> torch.Tensor:
        """RMS-normalise x over its last dimension and scale by w (same result as F.rms_norm)."""
        n_cols = x.shape[-1]
        assert w.shape == (n_cols,), f"rmsnorm: w must have shape ({n_cols},), got {tuple(w.shape)}"
        assert n_cols * x.element_size() % 16 == 0, f"rmsnorm: rows of {n_cols} elements are not 16-byte rows (TMA)"
        block = max(triton.next_power_of_2(n_cols), 16 // x.element_size())
        smem = (num_stages - 1 + tma_store) * block * x.element_size()  # the ring and the store buffer
        assert smem <= SMEM_PER_PROGRAM, f"rmsnorm: {num_stages} staged rows of {n_cols} elements exceed shared memory"
        x2 = _tma_rows(x.reshape(-1, n_cols))
        w = w.contiguous()
        n_rows = x2.shape[0]
        out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
        if n_rows == 0:
            return out.view(x.shape)
        x_desc = TensorDescriptor(x2, list(x2.shape), list(x2.stride()), [1, block])
        out_desc = TensorDescriptor(out, list(out.shape), list(out.stride()), [1, block])
        grid = balanced_grid(n_rows, _num_sms(x.device.type, x.device.index) * programs_per_sm)
        _rmsnorm_tma_kernel[(grid,)](x_desc, w, out_desc, out, n_rows, n_cols, out.stride(0), eps, BLOCK=block,
                                     NUM_STAGES=num_stages, TMA_STORE=tma_store, num_warps=num_warps)
        return out.view(x.shape)

    return kernel
