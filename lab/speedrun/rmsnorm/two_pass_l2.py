"""rmsnorm as torch.compile writes it: two passes over the row in chunks, the second read served by L2.

torch.compile's rmsnorm beats every register-resident row kernel of this folder (1.564x against 1.506x for
`row_per_program` in the same syncs). Its Inductor kernel (lab/benchmarks/evidence/speedrun/inductor_rmsnorm_20261201/)
is a looped reduction: a first loop reads the row in chunks with `evict_last` and sums x^2 into an elementwise
fp32 accumulator, reduced once; a second loop reads the row again with `evict_first`, w with `evict_last`, and
writes y. A 16 KiB row read once from DRAM and kept in the 60 MiB L2 costs the second read little, while a
program holds only one chunk in registers: more programs per SM, and a program's loads of the next chunk are in
flight while it adds up the last. The same kernel here, at chunk sizes and warps Inductor's autotuner may pick
(it did not print its choice). Parameters: `block` (chunk, elements), `num_warps`.

Variants:
- `two_pass_r1024_w4` (chunks of 1024, 4 warps): 8 values per thread per chunk, 8 chunks a row; many programs
  per SM.
- `two_pass_r2048_w8` (chunks of 2048, 8 warps): 8 values per thread, 4 chunks a row, as many threads as
  `row_per_program`.
- `two_pass_r2048_w4` (chunks of 2048, 4 warps): 16 values (two 16-byte loads) per thread per chunk.
- `two_pass_r4096_w8` (chunks of 4096, 8 warps): 2 chunks a row, 16 values per thread: the fewest loop trips.
- `two_pass_r1024_w2` (chunks of 1024, 2 warps): 16 values per thread, the most programs per SM.

Inductor's own choice, read on the card (`lab/benchmarks/device/inductor_configs.py`,
lab/benchmarks/evidence/speedrun/inductor_configs_20261201/): XBLOCK 1, R0_BLOCK 8192, 16 warps, 1 stage. So each loop
runs once over the whole row; the second read of x comes from L1/L2, and with one stage the pipeliner stages
nothing through shared memory (a 16 KiB row per stage would cap the programs per SM). Parameter `num_stages`
(launch option, default Triton's).
- `two_pass_r8192_w16_s1` (the whole row, 16 warps, 1 stage): Inductor's config exactly: 16 values per thread,
  and between the two reads only the fp32 sum of squares is live.
- `two_pass_r8192_w8_s1` (the whole row, 8 warps, 1 stage): the warps of `row_per_program` with Inductor's two
  reads, 32 values per thread.
- `two_pass_r4096_w16_s1` (chunks of 4096, 16 warps, 1 stage): two trips per loop, 8 values per thread per trip.
- `two_pass_r8192_w32_s1` (the whole row, 32 warps, 1 stage): 1024 threads, 8 values each, 2 programs per SM.

`two_pass_r4096_w16_s1` won (h200_c12: 35.02 us in triage against 35.32 us for `row_per_program`, verified at
1.527x against 1.505x in the same call); Inductor's whole-row setting ran 40.27 us. Around the winner:
- `two_pass_r2048_w16_s1` (chunks of 2048, 16 warps, 1 stage): four trips per loop, 4 values per thread per trip.
- `two_pass_r4096_w8_s1` (chunks of 4096, 8 warps, 1 stage): the winner's chunks with half the threads, 16 values
  each.
- `two_pass_r4096_w32_s1` (chunks of 4096, 32 warps, 1 stage): 1024 threads, 4 values each per trip, one
  program per SM at a time.
- `two_pass_r2048_w8_s1` (chunks of 2048, 8 warps, 1 stage): 8 values per thread, four trips per loop.

Inductor's kernel also differs in what it is compiled for: its generated source sets `xnumel = 4096` and
`r0_numel = 8192` and indexes `8192 * x0` in int32, so at R0_BLOCK 8192 both loops are straight-line code (224
SASS instructions with Triton 3.6, no loop; `lab/benchmarks/inductor_kernel_sass.py`), where `two_pass_r8192_w16_s1`
keeps a runtime loop (336 instructions,
a 140-instruction loop) and int64 row offsets. With `specialize_cols` the kernel is compiled for the row length
(`STATIC_COLS`, the strides of packed rows too; one kernel per length, as Inductor compiles per static shape) and
indexes in int32 when the tensor has fewer than 2^31 elements (`INDEX_32`).
- `two_pass_s8192_w16_s1` (the whole row, 16 warps, 1 stage, compiled for the row length): Inductor's config
  and specialization: one straight-line pass of loads, a block sum, and a second straight-line pass.
- `two_pass_s4096_w16_s1` (chunks of 4096, 16 warps, 1 stage, compiled for the row length): the kept chunking
  with both loops' two trips unrolled and no masks.
- `two_pass_s8192_w8_s1` (the whole row, 8 warps, 1 stage, compiled for the row length): 32 values per thread in
  straight-line code, `row_per_program`'s thread count.

`two_pass_s4096_w16_s1` won (h200_c36: triage 34.36 us against 35.07 us for `two_pass_r4096_w16_s1`, verified
1.568x [1.564, 1.572], above torch.compile's 1.564x of the last syncs): kept. Around it, compiled the same way:
- `two_pass_s4096_w8_s1` (chunks of 4096, 8 warps, 1 stage, compiled for the row length): 16 values per thread
  per trip, twice the programs per SM at the same registers a thread.
- `two_pass_s2048_w8_s1` (chunks of 2048, 8 warps, 1 stage, compiled for the row length): four unrolled trips of
  8 values per thread: more loads in flight per thread before the first add.
- `two_pass_s4096_w32_s1` (chunks of 4096, 32 warps, 1 stage, compiled for the row length): 1024 threads, 4
  values per thread per trip, two programs per SM.

None of them beat it (h200_c37: 34.18-44.26 us against 34.07 us in triage; `two_pass_s8192_w16_s1` verified
1.554x against 1.559x for the kept variant on that card).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "two_pass_r1024_w4": {"block": 1024, "num_warps": 4},
    "two_pass_r2048_w8": {"block": 2048, "num_warps": 8},
    "two_pass_r2048_w4": {"block": 2048, "num_warps": 4},
    "two_pass_r4096_w8": {"block": 4096, "num_warps": 8},
    "two_pass_r1024_w2": {"block": 1024, "num_warps": 2},
    "two_pass_r8192_w16_s1": {"block": 8192, "num_warps": 16, "num_stages": 1},
    "two_pass_r8192_w8_s1": {"block": 8192, "num_warps": 8, "num_stages": 1},
    "two_pass_r4096_w16_s1": {"block": 4096, "num_warps": 16, "num_stages": 1},
    "two_pass_r8192_w32_s1": {"block": 8192, "num_warps": 32, "num_stages": 1},
    "two_pass_r2048_w16_s1": {"block": 2048, "num_warps": 16, "num_stages": 1},
    "two_pass_r4096_w8_s1": {"block": 4096, "num_warps": 8, "num_stages": 1},
    "two_pass_r4096_w32_s1": {"block": 4096, "num_warps": 32, "num_stages": 1},
    "two_pass_r2048_w8_s1": {"block": 2048, "num_warps": 8, "num_stages": 1},
    "two_pass_s8192_w16_s1": {"block": 8192, "num_warps": 16, "num_stages": 1, "specialize_cols": True},
    "two_pass_s4096_w16_s1": {"block": 4096, "num_warps": 16, "num_stages": 1, "specialize_cols": True},
    "two_pass_s8192_w8_s1": {"block": 8192, "num_warps": 8, "num_stages": 1, "specialize_cols": True},
    "two_pass_s4096_w8_s1": {"block": 4096, "num_warps": 8, "num_stages": 1, "specialize_cols": True},
    "two_pass_s2048_w8_s1": {"block": 2048, "num_warps": 8, "num_stages": 1, "specialize_cols": True},
    "two_pass_s4096_w32_s1": {"block": 4096, "num_warps": 32, "num_stages": 1, "specialize_cols": True},
}


@triton.jit
def _rmsnorm_two_pass_kernel(x_ptr, w_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, eps,
                             BLOCK: tl.constexpr, STATIC_COLS: tl.constexpr, INDEX_32: tl.constexpr):
    if STATIC_COLS:  # the row length and both row strides are STATIC_COLS: constant trip counts and masks
        n_cols = STATIC_COLS
        x_row_stride = STATIC_COLS
        out_row_stride = STATIC_COLS
    row = tl.program_id(0) if INDEX_32 else tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x_row = x_ptr + row * x_row_stride
    sum_sq = tl.zeros([BLOCK], dtype=tl.float32)
    for start in tl.range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        sum_sq += x * x
    rstd = tl.rsqrt(tl.sum(sum_sq, axis=0) / n_cols + eps)
    out_row = out_ptr + row * out_row_stride
    for start in tl.range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        w = tl.load(w_ptr + start + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        tl.store(out_row + start + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def make_kernel(*, block: int, num_warps: int, num_stages: int | None = None,
                specialize_cols: bool = False) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(x, w, *, eps)` at one parameter set (`specialize_cols`: compiled for the row length, one
    kernel per length, as Inductor compiles for static shapes)."""

    def kernel(x: torch.Tensor, w: torch.Tensor, *, eps: float) -> torch.Tensor:
        """RMS-normalise x over its last dimension and scale by w (same result as F.rms_norm)."""
        n_cols = x.shape[-1]
        assert w.shape == (n_cols,), f"rmsnorm: w must have shape ({n_cols},), got {tuple(w.shape)}"
        x2 = x.reshape(-1, n_cols)
        if x2.stride(-1) != 1:
            x2 = x2.contiguous()
        w = w.contiguous()
        out = torch.empty((x2.shape[0], n_cols), dtype=x.dtype, device=x.device)
        stages = {} if num_stages is None else {"num_stages": num_stages}
        static = specialize_cols and x2.stride(0) == n_cols  # rows packed back to back, as out's are
        _rmsnorm_two_pass_kernel[(x2.shape[0],)](x2, w, out, n_cols, x2.stride(0), out.stride(0), eps, BLOCK=block,
                                                 STATIC_COLS=n_cols if static else 0,
                                                 INDEX_32=static and x2.numel() < 2**31, num_warps=num_warps,
                                                 **stages)
        return out.view(x.shape)

    return kernel
