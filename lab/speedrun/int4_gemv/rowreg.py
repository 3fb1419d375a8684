"""int4 GEMV, rows in registers per thread: in-place nibble masks, split-K, last-arriver sum.

Parameters: `block_n` (rows per program), `split_k` (the largest split, halved until it divides the groups),
`num_warps` and `num_stages` (the group loop pipelined through cp.async).

Layout (CUDA `_convert_weight_to_int4pack`, inner_k_tiles = IKT): int32 [N/8, K/(16 IKT), 32, IKT/2]; the word at [n
// 8, ko, (n % 8) * 4 + qq, j] holds, in nibble p (bits 4p..4p+3), weight k = 16 IKT ko + 32 j + 2 qq + 8 (p % 4) +
p // 4 of row n.

Variants:
- `rowreg_bn128_sk8` (128 rows, split-K 8, 4 warps, 3 stages): the first triage (split_k_bn64 at 25.2 us, tinygemm 21.3
  us, floor 8.9 us) points at the issue rate, not DRAM: the earlier kernels gather x per nibble per thread (one scalar
  load + convert per nibble) and spend shift + and/or + fsub + ffma on every nibble. Here each group is a [BLOCK_N rows,
  16 words] tile, so a warp reads one whole 8-row n-tile (512 contiguous bytes) per group and each thread holds BLOCK_N
  / (8 * num_warps) rows of the SAME 4 words: every x value it gathers (bf16 -> fp32, once per group) serves all of
  those rows. Nibble p of a word is masked in place, never shifted: `(w & (0xF << 4a)) | 0x4B000000` as fp32 is 2^23 + q
  * 16^a (exact), minus (2^23 + 8 * 16^a) is (q - 8) * 16^a, multiplied by x * 16^-a (scaled once per gathered x).
  Nibbles 4..7 use `w >> 16` (one shift per word). Per nibble: one LOP3, one FADD, one FFMA. 64 row blocks x 8 K-splits
  = 512 programs (~4 per SM), 8 groups each, loads pipelined 3 deep; fp32 partials (256 KiB, L2) are summed by the
  last-arriving split of each row block (acq_rel counter, reset by it).
- `rowreg_bn256_sk16` (256 rows, 8 per thread, split-K 16, 4 warps): in `rowreg_bn128_sk8` the per-group x gathers (32
  scalar loads, converts, scalings and x-sum adds per thread) are shared by 4 rows per thread, about 1 extra instruction
  per 4 nibbles on top of the 3 per nibble (LOP3, FADD, FFMA). With 256 rows per program on 4 warps each thread holds 8
  rows of the same 4 words, halving that overhead; split-K 16 keeps 32 x 16 = 512 programs (4 groups each, 64 KiB of
  weights). Cost: twice the registers for the word tile and accumulators, and a shorter loop (4 groups) for the
  pipeliner.
- `rowreg_bn256_sk8_w8` (256 rows on 8 warps, 4 per thread, split-K 8): the same per-thread work as `rowreg_bn128_sk8`
  (4 rows x 4 words per group), but 8 warps per program and 256 programs (8 groups each, 128 KiB of weights): fewer,
  fatter programs, fewer partial sums (8 x 8192) and fewer arrival tickets. Tells whether the 512-program grid or the
  program size matters.
- `rowreg_bn64_sk4_w2` (64 rows on 2 warps, 4 per thread, split-K 4, 4 stages): small programs (2 warps) let up to 16-32
  programs share an SM, so the scheduler hides the load latency across programs rather than within one; each program
  walks 16 groups (one contiguous 8 KiB run per 8-row n-tile) with the pipeliner 3 groups ahead. 128 row blocks x 4
  splits = 512 programs; the last-arriver sum then reads only 4 partials per row.
- `rowreg_bn256_sk16_w2` (256 rows on 2 warps, 16 per thread, split-K 16): the x overhead (gathers, converts, scalings,
  x-sum adds and their address arithmetic) is shared by the rows a thread holds; going from 4 to 8 rows per thread cut
  the sm_90 loop from 6.0 to 5.4 instructions per nibble. At 16 rows per thread (256 rows on 2 warps) it approaches the
  core 3 per nibble (LOP3, FADD, FFMA). 32 row blocks x 16 splits = 512 programs of 2 warps, 4 groups each. Risk:
  registers (the word tile alone is 64 per thread) limit programs per SM.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "rowreg_bn128_sk8": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3},
    "rowreg_bn256_sk16": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3},
    "rowreg_bn256_sk8_w8": {"block_n": 256, "split_k": 8, "num_warps": 8, "num_stages": 3},
    "rowreg_bn64_sk4_w2": {"block_n": 64, "split_k": 4, "num_warps": 2, "num_stages": 4},
    "rowreg_bn256_sk16_w2": {"block_n": 256, "split_k": 16, "num_warps": 2, "num_stages": 3},
}


# fp32 bit pattern of 2^23: OR-ing bits 4a..4a+3 into the mantissa gives 2^23 + q * 16^a
MAGIC = tl.constexpr(0x4B000000)


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
def _int4_gemv_rowreg_kernel(x_ptr, w_ptr, sz_ptr, out_ptr, partial_ptr, counter_ptr, n_out, n_k_outer,
                             x_row_stride, out_row_stride, groups_per_split, GROUP: tl.constexpr,
                             IKT: tl.constexpr, BLOCK_N: tl.constexpr, SPLIT_K: tl.constexpr,
                             NUM_STAGES: tl.constexpr):
    WORDS_PER_KO: tl.constexpr = 2 * IKT  # words of one row in one k-outer tile (16 * IKT k values)
    KO_PER_GROUP: tl.constexpr = GROUP // (16 * IKT)
    WORDS_PER_GROUP: tl.constexpr = KO_PER_GROUP * WORDS_PER_KO
    KO_WORDS: tl.constexpr = 32 * IKT // 2  # words of one 8-row n-tile in one k-outer tile
    block = tl.program_id(0)
    row_m = tl.program_id(1)
    split = tl.program_id(2)
    rows = block * BLOCK_N + tl.arange(0, BLOCK_N)
    row_mask = rows < n_out
    c = tl.arange(0, WORDS_PER_GROUP)
    row_off = tl.cast(rows // 8, tl.int64) * n_k_outer * KO_WORDS + (rows % 8) * WORDS_PER_KO
    ko_in_group = c // WORDS_PER_KO
    word_in_ko = c % WORDS_PER_KO
    col_off = ko_in_group * KO_WORDS + word_in_ko
    # k (within the group) of nibble p of in-group word c is k_in_group + 8 (p % 4) + p // 4
    k_in_group = ko_in_group * (16 * IKT) + 32 * (word_in_ko % (IKT // 2)) + 2 * (word_in_ko // (IKT // 2))
    w_ptrs = w_ptr + row_off[:, None] + col_off[None, :]
    x_row = x_ptr + row_m * x_row_stride
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    g_start = split * groups_per_split
    for gi in tl.range(0, groups_per_split, num_stages=NUM_STAGES):
        g = g_start + gi
        words = tl.load(w_ptrs + g * (KO_PER_GROUP * KO_WORDS), mask=row_mask[:, None], other=0,
                        eviction_policy="evict_first")
        high = words >> 16
        x_base = x_row + g * GROUP + k_in_group
        dot = tl.zeros([BLOCK_N, WORDS_PER_GROUP], dtype=tl.float32)
        x_sum = tl.zeros([WORDS_PER_GROUP], dtype=tl.float32)
        for p in tl.static_range(8):
            xp = tl.load(x_base + (8 * (p % 4) + p // 4)).to(tl.float32)
            x_sum += xp
            if p < 4:
                src = words
            else:
                src = high
            bits = (src & (0xF << (4 * (p % 4)))) | MAGIC
            value = bits.to(tl.float32, bitcast=True) - (8388608.0 + 8.0 * (1 << (4 * (p % 4))))
            dot += value * (xp * (1.0 / (1 << (4 * (p % 4)))))[None, :]
        sz = tl.load(sz_ptr + g * n_out + rows, mask=row_mask, other=0)
        scale = (sz << 16).to(tl.float32, bitcast=True)
        zero = (sz & -65536).to(tl.float32, bitcast=True)
        acc += scale * tl.sum(dot, axis=1) + zero * tl.sum(x_sum, axis=0)
    if SPLIT_K == 1:
        tl.store(out_ptr + row_m * out_row_stride + rows, acc.to(out_ptr.dtype.element_ty), mask=row_mask)
    else:
        tl.store(partial_ptr + (split * tl.num_programs(1) + row_m) * n_out + rows, acc, mask=row_mask)
        ticket = block * tl.num_programs(1) + row_m
        arrived = tl.atomic_add(counter_ptr + ticket, 1, sem="acq_rel")
        if arrived == SPLIT_K - 1:
            s = tl.arange(0, SPLIT_K)
            parts = tl.load(partial_ptr + (s[:, None] * tl.num_programs(1) + row_m) * n_out + rows[None, :],
                            mask=row_mask[None, :], other=0.0, cache_modifier=".cg")
            tl.store(out_ptr + row_m * out_row_stride + rows,
                     tl.sum(parts, axis=0).to(out_ptr.dtype.element_ty), mask=row_mask)
            tl.store(counter_ptr + ticket, 0)


def make_kernel(
    *,
    block_n: int,
    split_k: int,
    num_warps: int,
    num_stages: int,
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
        splits = split_k
        while n_groups % splits:  # a power of two dividing the groups
            splits //= 2
        n_blocks, n_m = triton.cdiv(n_out, block_n), x.shape[0]
        w_int4 = w_int4.contiguous()
        sz = scales_and_zeros.contiguous().view(torch.int32).view(n_groups, n_out)  # scale: low half, zero: high
        x = x.contiguous()
        out = torch.empty((n_m, n_out), dtype=x.dtype, device=x.device)
        partial = torch.empty((splits, n_m, n_out), dtype=torch.float32, device=x.device)
        _int4_gemv_rowreg_kernel[(n_blocks, n_m, splits)](
            x, w_int4, sz, out, partial, _counters(x.device, n_blocks * n_m), n_out, w_int4.shape[1], x.stride(0),
            out.stride(0), n_groups // splits, GROUP=group_size, IKT=ikt, BLOCK_N=block_n, SPLIT_K=splits,
            NUM_STAGES=num_stages, num_warps=num_warps)
        return out

    return kernel
