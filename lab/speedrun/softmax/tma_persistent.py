"""softmax, persistent grid fed by the Hopper TMA engine: a ring of rows in shared memory, so the bytes in flight do
not live in registers.

`rmsnorm/tma_persistent.py` applied to softmax; read that module first. x is read through a host tensor descriptor
([rows, cols], block [1, BLOCK]) inside `tl.range(..., num_stages)`: the pipeliner turns each row into bulk TMA
copies (32 boxes of [1, 256]) into a ring of `num_stages - 1` shared-memory buffers tracked by mbarriers, refilled
at the end of the iteration that read them, so `num_stages - 2` rows per program are requested while a row is
computed and `num_stages - 1` while the program waits. y leaves through one shared-memory buffer and a bulk TMA
store. The grid is balanced (rows per program = ceil(rows / (programs_per_sm x SMs)), programs = ceil(rows / that)).
Columns past the row (zeros from TMA) are masked to -inf before the max; the arithmetic is `row.py`'s (fp32 max,
exp2 of the scaled difference, one reciprocal of the sum, cast). Rows must be 16-byte rows (cols a multiple of 8 for
bf16); views with other row strides are copied first. Parameters: `programs_per_sm`, `num_stages`, `num_warps`.

Evidence against: for softmax the earlier persistent variants lost far more than for rmsnorm. `persistent_pipelined`
(4 programs per SM, all co-resident at 48 registers, a cp.async ring of 2 buffers each, so 4-8 rows requested per
SM) and `persistent_prefetch` triaged 13-19% behind `row_per_program`, where rmsnorm's lost 2-5% (both files:
`lab/benchmarks/evidence/speedrun/h200_20261130_batch_a.jsonl`, `lab/benchmarks/evidence/speedrun/h200_c1/triage.jsonl`). So
rows requested per SM are not all of it here. What these kernels change against `persistent_pipelined`: one elected
thread per warp issues the copies (no 16-byte cp.async and address arithmetic from every thread), y goes out by TMA,
the grid is balanced (its 528 programs did 7 or 8 rows), and, in all but `tma_p4_s3`, the ring is deeper.

sm_90 compile at the headline (8 warps, BLOCK 8192, descriptor arguments typed `tensordesc<bf16[1, 8192]>`;
`compile_sm90.py`, `lab/benchmarks/evidence/speedrun/compile_sm90_20261201.txt`): 54 registers; shared memory per program
49,200 bytes at 3 stages, 65,592 at 4, 82,080 at 5, 98,464 at 6, so 4, 3, 2 and 2 programs fit an SM; no spills;
`UTMALDG.2D` loads, `UTMASTG.2D` stores.

Variants:
- `tma_p2_s5` (2 programs per SM, 5 stages, 8 warps): 256 programs of 16 rows, 6-8 rows (96-128 KiB) requested per
  SM, as `rmsnorm`'s `tma_p2_s5`; the reference of this module.
- `tma_p2_s6` (2 programs per SM, 6 stages, 8 warps): one row deeper, 8-10 rows per SM; tells whether depth still
  pays.
- `tma_p3_s4` (3 programs per SM, 4 stages, 8 warps): 373 programs of 11 rows, 6-9 rows per SM, with three programs
  whose max/exp2/sum interleave; softmax has more work per row than rmsnorm (an exp2 per element on the quarter-rate
  MUFU unit, two dependent block reductions), so if one program's per-row work is what limits `tma_p2_*`, more
  programs at less depth should win.
- `tma_p4_s3` (4 programs per SM, 3 stages, 8 warps): 512 programs of 8 rows, the geometry and ring of
  `persistent_pipelined` (4 per SM, 2 buffers each) with TMA in place of cp.async, the TMA store and the balanced
  grid. Against `persistent_pipelined` it isolates those; if it loses as much, the persistent structure itself is
  what softmax loses, and the ring variants above will not fix it.
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
    "tma_p2_s5": {"programs_per_sm": 2, "num_stages": 5, "num_warps": 8},
    "tma_p2_s6": {"programs_per_sm": 2, "num_stages": 6, "num_warps": 8},
    "tma_p3_s4": {"programs_per_sm": 3, "num_stages": 4, "num_warps": 8},
    "tma_p4_s3": {"programs_per_sm": 4, "num_stages": 3, "num_warps": 8},
}

SMEM_PER_PROGRAM = 227 * 1024  # the most shared memory one Hopper program may use


@functools.cache
def _num_sms(device_type: str, index: int | None) -> int:
    if device_type == "cuda":
        return torch.cuda.get_device_properties(index).multi_processor_count
    return 4


@triton.jit
def _softmax_tma_kernel(x_desc, out_desc, n_rows, n_cols, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid = tl.program_id(0)
    n_programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK)
    col_mask = cols < n_cols
    for row in tl.range(pid, n_rows, n_programs, num_stages=NUM_STAGES):
        # columns past n_cols are outside the descriptor: TMA fills them with zeros, masked to -inf here
        x = tl.reshape(x_desc.load([row, 0]), [BLOCK]).to(tl.float32)
        x = tl.where(col_mask, x, float("-inf"))
        e = tl.exp2((x - tl.max(x, axis=0)) * 1.4426950408889634)
        y = (e * (1.0 / tl.sum(e, axis=0))).to(out_desc.dtype)
        out_desc.store([row, 0], tl.reshape(y, [1, BLOCK]))  # columns past n_cols are dropped by the TMA store


def _tma_rows(t: torch.Tensor) -> torch.Tensor:
    """t [rows, cols] as is if TMA can describe it (unit column stride, 16-byte aligned base and row stride)."""
    if t.stride(-1) != 1 or t.stride(0) * t.element_size() % 16 or t.data_ptr() % 16:
        t = t.contiguous()
    return t


def balanced_grid(n_rows: int, programs: int) -> int:
    """At most `programs` programs, each with the same number of rows (the last possibly fewer)."""
    rows_per_program = max(1, triton.cdiv(n_rows, max(1, programs)))
    return max(1, triton.cdiv(n_rows, rows_per_program))


def make_kernel(*, programs_per_sm: int, num_stages: int, num_warps: int) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(x, *, dim)` at one parameter set."""

    def kernel(x: torch.Tensor, *, dim: int) -> torch.Tensor:
        """Softmax of x along its last dimension (same result as torch.softmax(x, dim))."""
        assert dim in (-1, x.ndim - 1), f"softmax: only the last dimension is supported, got dim={dim}"
        n_cols = x.shape[-1]
        assert n_cols * x.element_size() % 16 == 0, f"softmax: rows of {n_cols} elements are not 16-byte rows (TMA)"
        block = max(triton.next_power_of_2(n_cols), 16 // x.element_size())
        smem = num_stages * block * x.element_size()  # a ring of num_stages - 1 rows and the store buffer
        assert smem <= SMEM_PER_PROGRAM, f"softmax: {num_stages} staged rows of {n_cols} elements exceed shared memory"
        x2 = _tma_rows(x.reshape(-1, n_cols))
        n_rows = x2.shape[0]
        out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
        if n_rows == 0:
            return out.view(x.shape)
        x_desc = TensorDescriptor(x2, list(x2.shape), list(x2.stride()), [1, block])
        out_desc = TensorDescriptor(out, list(out.shape), list(out.stride()), [1, block])
        grid = balanced_grid(n_rows, _num_sms(x.device.type, x.device.index) * programs_per_sm)
        _softmax_tma_kernel[(grid,)](x_desc, out_desc, n_rows, n_cols, BLOCK=block, NUM_STAGES=num_stages,
                                     num_warps=num_warps)
        return out.view(x.shape)

    return kernel
