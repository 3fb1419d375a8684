"""softmax, one program per row, the row as a [groups, 256] tile: max and exp2 per warp, then one short cross-warp
combine.

In `row.py` the block-wide max (warp shuffles, shared memory, barrier) must finish before any exp2 starts, and the
sum needs a second barrier: every warp waits for the slowest warp's loads before it does its own exp2, so the time
from the last load landing to the store is max -> barrier -> exp2 of 32 values per thread -> sum -> barrier. Here
the row is loaded as a [BLOCK / 256, 256] tile; Triton lays it out as 8 contiguous bf16 (one 16-byte vector) per
thread and 32 lanes along a group row, so each group of 256 columns lies in one warp and its max and sum are warp
shuffles only. Each warp computes its groups' max, exp2(x - group max) and group sums as soon as its own loads land;
the cross-warp work is on GROUPS values (32 at the headline): the row max, weights exp2(group max - row max), and
the row sum of the weighted group sums. The output is e x weight / row sum, one exp2 per element as in `row.py` (the
weights add 32 per row). Masked lanes read -1e30 (finite): a group past the row has max -1e30 and weight 0, so no
NaN. Parameters: `num_warps` and `pair_combine` (one block reduction of (max, sum) pairs with the rescaling in the
combine, instead of a max and then a sum). Same load and store vectors and grid as `row.py`.

sm_90 compile at the headline (GROUPS 32; `compile_sm90.py`, `lab/benchmarks/evidence/speedrun/compile_sm90_20261201.txt`):
8 warps 48 registers (`row_per_program` 47), 16 warps 32 (`row_w16` 30), so the same programs per SM fit as in those
variants; 3 `BAR.SYNC` in the SASS (2 with `pair_combine`); `LDG.E.128` / `STG.E.128`; no spills.

Variants:
- `groups_w8` (8 warps, two block reductions): `row_per_program`'s grid, vectors and residency with the exp2 moved
  ahead of the block barriers. If the per-program latency from the last load to the store matters (a shorter program
  frees its slot for the next row sooner), this finishes each row sooner at the same bytes in flight; against
  `row_per_program` it isolates the reduction order.
- `groups_w16` (16 warps, two block reductions): the same at `row_w16`'s geometry (16 values per thread, 4 programs
  of 16 warps per SM); 2 groups per warp.
- `groups_pair_w16` (16 warps, one pair reduction): one block reduction instead of two (2 barriers in the SASS
  against 3), the rescaling done on 32 pairs inside the combine; tells whether a barrier per row is worth a few exp2
  on the combine tree.

Compiled for the row length (`specialize_cols`, as Inductor compiles for static shapes; the rmsnorm two-pass kernel's
note in `rmsnorm/two_pass_l2.py`): `STATIC_COLS` is the row length and both row strides, so the masks of a row
that fills its tile are known to be true when compiled, and offsets are int32 below 2^31 elements (`INDEX_32`).
- `groups_pair_s16` (as `groups_pair_w16`, compiled for the row length): the kept kernel without its per-element
  masks and int64 row offsets.
- `groups_s8` (as `groups_w8`, compiled for the row length): 8 warps, two block reductions, the triage's fastest
  of round 5 (34.04 us), without masks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "groups_w8": {"num_warps": 8, "pair_combine": False},
    "groups_w16": {"num_warps": 16, "pair_combine": False},
    "groups_pair_w16": {"num_warps": 16, "pair_combine": True},
    "groups_pair_s16": {"num_warps": 16, "pair_combine": True, "specialize_cols": True},
    "groups_s8": {"num_warps": 8, "pair_combine": False, "specialize_cols": True},
}

GROUP_COLS = 256  # one warp's 32 lanes x 8 bf16 (one 16-byte vector each)


@triton.jit
def _max_sum_combine(m1, s1, m2, s2):
    # (max, sum of exp(x - max)) of two groups as one: the sums are rescaled to the larger max
    m = tl.maximum(m1, m2)
    return m, s1 * tl.exp2((m1 - m) * 1.4426950408889634) + s2 * tl.exp2((m2 - m) * 1.4426950408889634)


@triton.jit
def _softmax_groups_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, GROUPS: tl.constexpr,
                           GROUP_COLS: tl.constexpr, PAIR_COMBINE: tl.constexpr, STATIC_COLS: tl.constexpr,
                           INDEX_32: tl.constexpr):
    # masked lanes read -1e30 (finite): a group past the row has max -1e30 and weight exp2(-huge) = 0, no NaN
    if STATIC_COLS:  # the row length and both row strides are STATIC_COLS: masks known when compiled
        n_cols = STATIC_COLS
        x_row_stride = STATIC_COLS
        out_row_stride = STATIC_COLS
    row = tl.program_id(0) if INDEX_32 else tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, GROUPS)[:, None] * GROUP_COLS + tl.arange(0, GROUP_COLS)[None, :]
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-1e30).to(tl.float32)
    group_max = tl.max(x, axis=1)  # each group row lies in one warp: axis 1 is warp shuffles
    e = tl.exp2((x - group_max[:, None]) * 1.4426950408889634)
    group_sum = tl.sum(e, axis=1)
    if PAIR_COMBINE:  # one block reduction of (max, sum) pairs
        row_max, row_sum = tl.reduce((group_max, group_sum), 0, _max_sum_combine)
        weight = tl.exp2((group_max - row_max) * 1.4426950408889634)
    else:  # two block reductions over GROUPS values: the max, then the rescaled sums
        row_max = tl.max(group_max, axis=0)
        weight = tl.exp2((group_max - row_max) * 1.4426950408889634)
        row_sum = tl.sum(group_sum * weight, axis=0)
    scale = weight * (1.0 / row_sum)
    tl.store(out_ptr + row * out_row_stride + cols, (e * scale[:, None]).to(out_ptr.dtype.element_ty), mask=mask)


def make_kernel(*, num_warps: int, pair_combine: bool, specialize_cols: bool = False) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(x, *, dim)` at one parameter set (`specialize_cols`: compiled for the row length)."""

    def kernel(x: torch.Tensor, *, dim: int) -> torch.Tensor:
        """Softmax of x along its last dimension (same result as torch.softmax(x, dim))."""
        assert dim in (-1, x.ndim - 1), f"softmax: only the last dimension is supported, got dim={dim}"
        n_cols = x.shape[-1]
        block = max(triton.next_power_of_2(n_cols), GROUP_COLS)
        assert block <= 65536, f"softmax: rows of {n_cols} elements do not fit one program; use a looped variant"
        x2 = x.reshape(-1, n_cols)
        if x2.stride(-1) != 1:
            x2 = x2.contiguous()
        out = torch.empty((x2.shape[0], n_cols), dtype=x.dtype, device=x.device)
        static = specialize_cols and x2.stride(0) == n_cols  # rows packed back to back, as out's are
        _softmax_groups_kernel[(x2.shape[0],)](x2, out, n_cols, x2.stride(0), out.stride(0),
                                               GROUPS=block // GROUP_COLS, GROUP_COLS=GROUP_COLS,
                                               PAIR_COMBINE=pair_combine, STATIC_COLS=n_cols if static else 0,
                                               INDEX_32=static and x2.numel() < 2**31, num_warps=num_warps)
        return out.view(x.shape)

    return kernel
