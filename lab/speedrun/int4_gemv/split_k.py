"""int4 GEMV, split-K over the groups on tinygemm's packed layout; the last-arriving split reduces in-kernel.

Parameters: `block_n`, `groups_per_iter`, `num_warps` and `programs_per_sm` (the split-K target).

Layout (CUDA `_convert_weight_to_int4pack`, inner_k_tiles = IKT): int32 [N/8, K/(16 IKT), 32, IKT/2]; the word at [n
// 8, ko, (n % 8) * 4 + qq, j] holds, in nibble p (bits 4p..4p+3), weight k = 16 IKT ko + 32 j + 2 qq + 8 (p % 4) +
p // 4 of row n.

Variants:
- `split_k_bn64` (64-row tiles, 2 groups per iteration, about 4 programs per SM): the floor for 34 MiB at 4.02 TB/s is
  ~8.9 us, so the kernel is short and its ramp-up and tail matter: with 256 row programs each SM gets ~2 programs
  streaming 128 KiB each. Splitting K into SPLIT_K parts (chosen from the SM count: ~4 programs per SM) lets 64-row
  tiles (each x value gathered per iteration is reused by 64 rows, halving the x-gather instructions per word against 32
  rows) still fill the machine. fp32 partials (SPLIT_K x N x 4 B = 128 KiB, L2-resident) are summed by the last-arriving
  program of each row block (acq_rel counter, reset by that program: one launch, no memset).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "split_k_bn64": {"block_n": 64, "groups_per_iter": 2, "num_warps": 4, "programs_per_sm": 4},
}


# fp32 bit pattern of 2^23: OR-ing a nibble into the low mantissa bits gives 2^23 + q
MAGIC = tl.constexpr(0x4B000000)


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
def _int4_gemv_split_kernel(x_ptr, w_ptr, sz_ptr, out_ptr, partial_ptr, counter_ptr, n_out, n_k_outer,
                            x_row_stride, out_row_stride, groups_per_split, GROUP: tl.constexpr,
                            IKT: tl.constexpr, BLOCK_N: tl.constexpr, GROUPS_PER_ITER: tl.constexpr,
                            SPLIT_K: tl.constexpr):
    WORDS_PER_KO: tl.constexpr = 2 * IKT  # words of one row in one k-outer tile (16 * IKT k values)
    KO_PER_GROUP: tl.constexpr = GROUP // (16 * IKT)
    WORDS_PER_GROUP: tl.constexpr = KO_PER_GROUP * WORDS_PER_KO
    block = tl.program_id(0)
    row_m = tl.program_id(1)
    split = tl.program_id(2)
    rows = block * BLOCK_N + tl.arange(0, BLOCK_N)
    g = tl.arange(0, GROUPS_PER_ITER)
    c = tl.arange(0, WORDS_PER_GROUP)
    row_off = tl.cast(rows // 8, tl.int64) * n_k_outer * (32 * IKT // 2) + (rows % 8) * WORDS_PER_KO
    ko_in_group = c // WORDS_PER_KO
    word_in_ko = c % WORDS_PER_KO
    col_off = ko_in_group * (32 * IKT // 2) + word_in_ko
    qq = word_in_ko // (IKT // 2)
    jj = word_in_ko % (IKT // 2)
    k_in_group = ko_in_group * (16 * IKT) + 32 * jj + 2 * qq
    w_ptrs = w_ptr + row_off[:, None, None] + (g * KO_PER_GROUP * (32 * IKT // 2))[None, :, None] \
        + col_off[None, None, :]
    x_row = x_ptr + row_m * x_row_stride
    acc = tl.zeros([BLOCK_N, GROUPS_PER_ITER], dtype=tl.float32)
    row_mask = rows < n_out
    g_start = split * groups_per_split
    for g0 in range(g_start, g_start + groups_per_split, GROUPS_PER_ITER):
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
    part_rows = (split * tl.num_programs(1) + row_m) * n_out + rows
    tl.store(partial_ptr + part_rows, tl.sum(acc, axis=1), mask=row_mask)
    ticket = block * tl.num_programs(1) + row_m
    arrived = tl.atomic_add(counter_ptr + ticket, 1, sem="acq_rel")
    if arrived == SPLIT_K - 1:
        s = tl.arange(0, SPLIT_K)
        parts = tl.load(partial_ptr + (s[:, None] * tl.num_programs(1) + row_m) * n_out + rows[None, :],
                        mask=row_mask[None, :], other=0.0, cache_modifier=".cg")
        tl.store(out_ptr + row_m * out_row_stride + rows, tl.sum(parts, axis=0).to(out_ptr.dtype.element_ty),
                 mask=row_mask)
        tl.store(counter_ptr + ticket, 0)


def make_kernel(
    *,
    block_n: int,
    groups_per_iter: int,
    num_warps: int,
    programs_per_sm: int,
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
        n_blocks, n_m = triton.cdiv(n_out, block_n), x.shape[0]
        wanted = _num_sms(x.device.type, x.device.index) * programs_per_sm // (n_blocks * n_m)
        split_k = 1 << (max(1, min(wanted, n_groups)).bit_length() - 1)
        while n_groups % split_k:  # a power of two dividing the groups
            split_k //= 2
        groups_per_split = n_groups // split_k
        iter_groups = groups_per_iter
        while groups_per_split % iter_groups:
            iter_groups //= 2
        w_int4 = w_int4.contiguous()
        sz = scales_and_zeros.contiguous().view(torch.int32).view(n_groups, n_out)  # scale: low half, zero: high
        x = x.contiguous()
        out = torch.empty((n_m, n_out), dtype=x.dtype, device=x.device)
        partial = torch.empty((split_k, n_m, n_out), dtype=torch.float32, device=x.device)
        _int4_gemv_split_kernel[(n_blocks, n_m, split_k)](
            x, w_int4, sz, out, partial, _counters(x.device, n_blocks * n_m), n_out, w_int4.shape[1], x.stride(0),
            out.stride(0), groups_per_split, GROUP=group_size, IKT=ikt, BLOCK_N=block_n,
            GROUPS_PER_ITER=iter_groups, SPLIT_K=split_k, num_warps=num_warps)
        return out

    return kernel
