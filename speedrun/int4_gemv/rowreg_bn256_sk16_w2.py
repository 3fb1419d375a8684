"""int4 GEMV candidate: `rowreg_bn256_sk16` on 2 warps: 16 rows per thread, split-K 16.

Hypothesis: the x overhead (gathers, converts, scalings, x-sum adds and their address arithmetic) is shared
by the rows a thread holds; going from 4 to 8 rows per thread cut the sm_90 loop from 6.0 to 5.4 instructions
per nibble. At 16 rows per thread (256 rows on 2 warps) it approaches the core 3 per nibble (LOP3, FADD,
FFMA). 32 row blocks x 16 splits = 512 programs of 2 warps, 4 groups each. Risk: registers (the word tile
alone is 64 per thread) limit programs per SM.

Layout (CUDA `_convert_weight_to_int4pack`, inner_k_tiles = IKT): int32 [N/8, K/(16 IKT), 32, IKT/2]; the word
at [n // 8, ko, (n % 8) * 4 + qq, j] holds, in nibble p (bits 4p..4p+3), weight k = 16 IKT ko + 32 j + 2 qq +
8 (p % 4) + p // 4 of row n.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK_N = 256
SPLIT_K = 16
NUM_WARPS = 2
NUM_STAGES = 3
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
    split_k = SPLIT_K
    while n_groups % split_k:  # a power of two dividing the groups
        split_k //= 2
    n_blocks, n_m = triton.cdiv(n_out, BLOCK_N), x.shape[0]
    w_int4 = w_int4.contiguous()
    sz = scales_and_zeros.contiguous().view(torch.int32).view(n_groups, n_out)  # scale: low half, zero: high
    x = x.contiguous()
    out = torch.empty((n_m, n_out), dtype=x.dtype, device=x.device)
    partial = torch.empty((split_k, n_m, n_out), dtype=torch.float32, device=x.device)
    _int4_gemv_rowreg_kernel[(n_blocks, n_m, split_k)](
        x, w_int4, sz, out, partial, _counters(x.device, n_blocks * n_m), n_out, w_int4.shape[1], x.stride(0),
        out.stride(0), n_groups // split_k, GROUP=group_size, IKT=ikt, BLOCK_N=BLOCK_N, SPLIT_K=split_k,
        NUM_STAGES=NUM_STAGES, num_warps=NUM_WARPS)
    return out
