"""int4 GEMV, [BLOCK_N rows, GROUPS_PER_ITER groups x 16 words] tiles of tinygemm's packed layout per iteration.

Each nibble is decoded with the magic-number trick and one FMA with x; the per-group dot is scaled once per
group. Parameters: `block_n`, `groups_per_iter`, `num_warps` and `num_stages` (None: a plain loop; a number:
the word loads software-pipelined that deep by `tl.range`).

Layout (CUDA `_convert_weight_to_int4pack`, inner_k_tiles = IKT): int32 [N/8, K/(16 IKT), 32, IKT/2]; the word at [n
// 8, ko, (n % 8) * 4 + qq, j] holds, in nibble p (bits 4p..4p+3), weight k = 16 IKT ko + 32 j + 2 qq + 8 (p % 4) +
p // 4 of row n.

Variants:
- `tile_bn32_g4` (32 rows x 4 groups, 4 warps, 256 programs): tinygemm (`_weight_int4pack_mm`) runs a 16-row MMA tile
  for a 1-row activation and reaches only 39% of the copy ceiling on the 34 MiB it must read (32 MiB of packed weight, 2
  MiB of scales and zeros). A GEMV needs no tensor cores: each program streams a [32 rows, 4 groups x 16 words] int32
  tile (8 KiB; the 8 rows of one tinygemm n-tile are 512 contiguous bytes) and decodes each nibble with the magic-number
  trick (`(word >> 4p) & 0xF | 0x4B000000`, reinterpreted as fp32, minus 2^23 + 8 gives q - 8 exactly: one shift, one
  logic op and one add per nibble instead of a quarter-rate int-to-float convert), then one FMA with x. The per-group
  dot is scaled once per group: y += s * sum(x (q - 8)) + z * sum(x), with scale and zero read as one int32 (bf16 pair).
  256 programs (about 2 per SM). Arithmetic stays in fp32 (no bf16 rounding of the weight).
- `tile_bn16_g8` (16 rows x 8 groups, 512 programs): the same 8 KiB word tile per iteration, cut as 16 rows x 8 groups:
  twice the programs (512, about 4 per SM, one resident wave at ~4 warps each) for more independent loads in flight
  across the SM, and half as many iterations per program (8 instead of 16) so loop overhead and the per-iteration
  scale/zero loads shrink relative to the bytes. Cost: each x value gathered per iteration is reused by 16 rows instead
  of 32.
- `tile_bn32_g4_pipelined` (`tile_bn32_g4` pipelined 3 deep): a program of `tile_bn32_g4` issues its 8 KiB tile load,
  then spends the decode (8 shift/logic/ add/FMA per word) before the next load issues; with only ~2 programs per SM the
  DRAM queue drains during the arithmetic. `tl.range(..., num_stages=3)` lets Triton prefetch the next two tiles into
  shared memory (cp.async) while the current one is decoded, keeping ~24 KiB per program in flight. Risk: the pipeliner
  may not take a loop without a dot (the TTGIR shows `async_copy_global_to_local` if it did).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "tile_bn32_g4": {"block_n": 32, "groups_per_iter": 4, "num_warps": 4, "num_stages": None},
    "tile_bn16_g8": {"block_n": 16, "groups_per_iter": 8, "num_warps": 4, "num_stages": None},
    "tile_bn32_g4_pipelined": {"block_n": 32, "groups_per_iter": 4, "num_warps": 4, "num_stages": 3},
}


# fp32 bit pattern of 2^23: OR-ing a nibble into the low mantissa bits gives 2^23 + q
MAGIC = tl.constexpr(0x4B000000)


@triton.jit
def _int4_gemv_kernel(x_ptr, w_ptr, sz_ptr, out_ptr, n_out, n_k_outer, x_row_stride, out_row_stride,
                      GROUP: tl.constexpr, IKT: tl.constexpr, BLOCK_N: tl.constexpr,
                      GROUPS_PER_ITER: tl.constexpr, N_GROUPS: tl.constexpr, NUM_STAGES: tl.constexpr):
    WORDS_PER_KO: tl.constexpr = 2 * IKT  # words of one row in one k-outer tile (16 * IKT k values)
    KO_PER_GROUP: tl.constexpr = GROUP // (16 * IKT)
    WORDS_PER_GROUP: tl.constexpr = KO_PER_GROUP * WORDS_PER_KO
    row_m = tl.program_id(1)
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    g = tl.arange(0, GROUPS_PER_ITER)
    c = tl.arange(0, WORDS_PER_GROUP)
    # word offsets: row part, group part and in-group part of the packed address
    row_off = tl.cast(rows // 8, tl.int64) * n_k_outer * (32 * IKT // 2) + (rows % 8) * WORDS_PER_KO
    ko_in_group = c // WORDS_PER_KO
    word_in_ko = c % WORDS_PER_KO
    col_off = ko_in_group * (32 * IKT // 2) + word_in_ko
    # the k index (within its group) of nibble p of in-group word c, before adding 8 (p % 4) + p // 4
    qq = word_in_ko // (IKT // 2)
    jj = word_in_ko % (IKT // 2)
    k_in_group = ko_in_group * (16 * IKT) + 32 * jj + 2 * qq
    w_ptrs = w_ptr + row_off[:, None, None] + (g * KO_PER_GROUP * (32 * IKT // 2))[None, :, None] \
        + col_off[None, None, :]
    x_row = x_ptr + row_m * x_row_stride
    acc = tl.zeros([BLOCK_N, GROUPS_PER_ITER], dtype=tl.float32)
    row_mask = rows < n_out
    for g0 in tl.range(0, N_GROUPS, GROUPS_PER_ITER, num_stages=NUM_STAGES):
        words = tl.load(w_ptrs + g0 * KO_PER_GROUP * (32 * IKT // 2), mask=row_mask[:, None, None], other=0,
                        eviction_policy="evict_first")
        k_base = (g0 + g)[:, None] * GROUP + k_in_group[None, :]
        dot = tl.zeros([BLOCK_N, GROUPS_PER_ITER, WORDS_PER_GROUP], dtype=tl.float32)
        x_sum = tl.zeros([GROUPS_PER_ITER, WORDS_PER_GROUP], dtype=tl.float32)
        for p in tl.static_range(8):
            xp = tl.load(x_row + k_base + (8 * (p % 4) + p // 4)).to(tl.float32)
            nib = ((words >> (4 * p)) & 0xF) | MAGIC
            dot += (nib.to(tl.float32, bitcast=True) - 8388616.0) * xp[None, :, :]
            x_sum += xp
        sz = tl.load(sz_ptr + (g0 + g)[None, :] * n_out + rows[:, None], mask=row_mask[:, None], other=0)
        scale = (sz << 16).to(tl.float32, bitcast=True)
        zero = (sz & -65536).to(tl.float32, bitcast=True)
        acc += scale * tl.sum(dot, axis=2) + zero * tl.sum(x_sum, axis=1)[None, :]
    tl.store(out_ptr + row_m * out_row_stride + rows, tl.sum(acc, axis=1).to(out_ptr.dtype.element_ty),
             mask=row_mask)


def make_kernel(
    *,
    block_n: int,
    groups_per_iter: int,
    num_warps: int,
    num_stages: int | None,
) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(x, w_int4, scales_and_zeros, *, group_size=128)` at one parameter set."""

    def kernel(x: torch.Tensor, w_int4: torch.Tensor, scales_and_zeros: torch.Tensor, *,
               group_size: int = 128) -> torch.Tensor:
        """x [M, K] times the packed int4 weight [N, K] transposed: [M, N] bf16, as _weight_int4pack_mm."""
        assert w_int4.dtype == torch.int32 and w_int4.ndim == 4 and w_int4.shape[2] == 32, (
            "int4_gemv: w_int4 must be CUDA tinygemm's int32 [N/8, K/(16*IKT), 32, IKT/2] layout "
            "(torch.ops.aten._convert_weight_to_int4pack)")
        ikt = w_int4.shape[3] * 2
        n_out, n_k = w_int4.shape[0] * 8, w_int4.shape[1] * 16 * ikt
        assert x.ndim == 2 and x.shape[1] == n_k, f"int4_gemv: x must be [M, {n_k}], got {tuple(x.shape)}"
        assert group_size % (16 * ikt) == 0, (
            f"int4_gemv: group_size {group_size} must be a multiple of 16 * inner_k_tiles = {16 * ikt}")
        n_groups = n_k // group_size
        assert scales_and_zeros.shape == (n_groups, n_out, 2), "int4_gemv: scales_and_zeros must be [K/g, N, 2]"
        assert scales_and_zeros.dtype == torch.bfloat16, "int4_gemv: scales_and_zeros must be bf16"
        iter_groups = groups_per_iter
        while n_groups % iter_groups:  # the largest power of two <= groups_per_iter dividing K/group_size
            iter_groups //= 2
        w_int4 = w_int4.contiguous()
        sz = scales_and_zeros.contiguous().view(torch.int32).view(n_groups, n_out)  # scale: low half, zero: high
        x = x.contiguous()
        out = torch.empty((x.shape[0], n_out), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(n_out, block_n), x.shape[0])
        _int4_gemv_kernel[grid](x, w_int4, sz, out, n_out, w_int4.shape[1], x.stride(0), out.stride(0),
                                GROUP=group_size, IKT=ikt, BLOCK_N=block_n, GROUPS_PER_ITER=iter_groups,
                                N_GROUPS=n_groups, NUM_STAGES=num_stages,
                                num_warps=num_warps)
        return out

    return kernel
