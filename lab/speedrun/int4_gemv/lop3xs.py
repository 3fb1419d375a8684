"""int4 GEMV, fp16x2 `lop3` decode with x converted once per program, per-word fp32 accumulator, split-K.

Idea: `lop3acc.py` (per-word scale FFMA into a [BLOCK_N, words] fp32 accumulator summed once after the loop, one
shift per word with the 2^-4 scale on the weight, atomic split-K sum, small row tiles for more warps per SM), and x
is handled once per program per group instead of once per thread:
- In `lop3.py` and `lop3acc.py`, every thread loads and converts (bf16 pair to fp16x2) the 16 x pairs of its 4 word
  columns, and sums them for the zero-point term: with 8 words per thread that is as many x instructions as decode
  instructions. Here the group's 64 pairs are loaded one per thread, converted to fp16x2 there (the asm is marked
  impure so that the compiler does not move the conversion after the redistribution), and redistributed to the
  word layout by a reshape, a permute and two splits (shared memory, `stmatrix`/`ldmatrix` in the sm_90 compile):
  pair 8 IKT ko + 16 j + 4 a + qq is pair a of in-group word (ko, qq, j).
- The x sums of all groups of the split are computed once before the loop, in fp32; each group picks its own.
In the sm_90 compile the loop body is 225 SASS instructions for 64 nibbles per thread (3.5 per nibble) at 64
registers with 8 words per thread, and 385 for 128 (3.0) at 72 registers with 16; `lop3_f16_bn256_sk16` has 876
for 256 (3.4) at 108 registers.

Precision: as `lop3.py`: (q - 8) / 16 is exact in fp16; x is rounded to fp16 (the 4-product fp16 partial of one word
is at most 2 |x|: no overflow for |x| below about 30000); products and the 4-term partial round to fp16's 11 bits;
everything past one word (scale, zero, x sums, the group and split-K sums) is fp32.

In the Triton interpreter (TRITON_INTERPRET=1) inline PTX cannot run, so the kernel takes a pure-Triton twin path
(`USE_PTX=False`) with the same loads, redistribution and nibble pairing, in fp32 on the bf16 pairs: the interpreter
test checks the indexing, `lab/tests/speedrun/test_speedrun_int4_lop3xs.py` runs the PTX text through the CPU emulator
of `test_speedrun_lop3_ptx.py`, and the H200 check (`check_variants.py --device cuda`) runs it.

Parameters: `block_n`, `split_k` (the largest split, halved until it divides the groups), `num_warps`, `num_stages`
and `atomic` (True: fp32 atomics into a kept zeroed buffer, zeroed again by the last arriver; False: per-split
partials, summed by the last arriver, as `lop3.py`).

Layout (CUDA `_convert_weight_to_int4pack`, inner_k_tiles = IKT): int32 [N/8, K/(16 IKT), 32, IKT/2]; the word at [n
// 8, ko, (n % 8) * 4 + qq, j] holds, in nibble p (bits 4p..4p+3), weight k = 16 IKT ko + 32 j + 2 qq + 8 (p % 4) +
p // 4 of row n.

Variants (grids at the headline, 132 SMs; programs per SM from the sm_90 compile's registers):
- `lop3xs_bn64_sk8_w4_st4` (64 rows, split-K 8, 4 warps, 4 stages, atomic): 1024 programs of 8 groups, 8 words per
  thread, 64 registers: 8 programs (32 warps) per SM, one resident wave, three weight tiles in flight per program.
  The main candidate: more than twice the warps of `lop3_f16_bn256_sk16` with about as many instructions per nibble.
- `lop3xs_bn64_sk8_w4_st4_partials` (as above, per-split partials): isolates the atomic split-K sum against the
  last arriver reading 8 partial rows.
- `lop3xs_bn128_sk8_w8_st4` (128 rows, split-K 8, 8 warps, 4 stages, atomic): the same 8 words per thread and 32
  warps per SM in 512 programs of 8 warps (4 per SM): half the programs, the x conversion shared by twice the rows.
- `lop3xs_bn32_sk8_w2_st4` (32 rows, split-K 8, 2 warps, 4 stages, atomic): 2048 programs of 2 warps (16 per SM):
  many small independent cp.async streams per SM and a finer tail.
- `lop3xs_bn128_sk8_w4_st4` (128 rows, split-K 8, 4 warps, 4 stages, atomic): 16 words per thread, 3.0 instructions
  per nibble at 72 registers: 512 programs (about 4 per SM, 16 warps) all resident. Fewer instructions than today's
  kernel at the same occupancy: tells whether instruction count or warps in flight limits.
- `lop3xs_bn64_sk16_w4_st3` (64 rows, split-K 16, 4 warps, 3 stages, atomic): 2048 programs of 4 groups, two full
  waves of 8 per SM: shorter programs, whose pipeline ramp and tail overlap other programs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "lop3xs_bn64_sk8_w4_st4": {"block_n": 64, "split_k": 8, "num_warps": 4, "num_stages": 4, "atomic": True},
    "lop3xs_bn64_sk8_w4_st4_partials": {"block_n": 64, "split_k": 8, "num_warps": 4, "num_stages": 4,
                                        "atomic": False},
    "lop3xs_bn128_sk8_w8_st4": {"block_n": 128, "split_k": 8, "num_warps": 8, "num_stages": 4, "atomic": True},
    "lop3xs_bn32_sk8_w2_st4": {"block_n": 32, "split_k": 8, "num_warps": 2, "num_stages": 4, "atomic": True},
    "lop3xs_bn128_sk8_w4_st4": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 4, "atomic": True},
    "lop3xs_bn64_sk16_w4_st3": {"block_n": 64, "split_k": 16, "num_warps": 4, "num_stages": 3, "atomic": True},
}


def _decode_dot_ptx() -> str:
    """PTX: $0 = sum over the 8 nibbles of word $1 of (q - 8) / 16 x, in one fp16x2 accumulator, as fp32; $(2 + a)
    is x pair a (nibbles a and a + 4). One shift per word: pairs 0 and 2 (bits 0-3 and 16-19 of w and w >> 8) are
    lop3 with 0x000F000F | 0x64006400 = 1024 + q, and fma(t, 1/16, -64.5) = (q - 8) / 16; pairs 1 and 3 are masked
    in place (0x00F000F0), 1024 + 16 q, and fma(t, 1/256, -4.5) = (q - 8) / 16. Both are exact (one rounding of an
    fp16 value). lop3 immLut 0xEA = (a & b) | c."""
    lines = ["{", ".reg .b32 t, v, acc, s, sixteenth, bias_even, scale_odd, bias_odd;", ".reg .b16 lo, hi;",
             ".reg .f32 flo, fhi;", "mov.b32 sixteenth, 0x2C002C00;", "mov.b32 bias_even, 0xD408D408;",
             "mov.b32 scale_odd, 0x1C001C00;", "mov.b32 bias_odd, 0xC480C480;"]
    for a in range(4):
        src = "$1" if a < 2 else "s"
        if a == 2:
            lines.append("shr.u32 s, $1, 8;")
        if a % 2 == 0:
            lines.append(f"lop3.b32 t, {src}, 0x000F000F, 0x64006400, 0xEA;")
            lines.append("fma.rn.f16x2 v, t, sixteenth, bias_even;")
        else:
            lines.append(f"lop3.b32 t, {src}, 0x00F000F0, 0x64006400, 0xEA;")
            lines.append("fma.rn.f16x2 v, t, scale_odd, bias_odd;")
        lines.append(f"mul.rn.f16x2 acc, v, ${2 + a};" if a == 0 else f"fma.rn.f16x2 acc, v, ${2 + a}, acc;")
    lines += ["mov.b32 {lo, hi}, acc;", "cvt.f32.f16 flo, lo;", "cvt.f32.f16 fhi, hi;", "add.f32 $0, flo, fhi;", "}"]
    return "\n".join(lines)


_DECODE_DOT_PTX = tl.constexpr(_decode_dot_ptx())

# Two fp32 -> one fp16x2 word (low half from $1, high half from $2).
_PACK_F16X2_PTX = tl.constexpr("cvt.rn.f16x2.f32 $0, $2, $1;")


_COUNTERS: dict[tuple[str, int | None], torch.Tensor] = {}
_SUMS: dict[tuple[str, int | None], torch.Tensor] = {}


def _zeroed(cache: dict[tuple[str, int | None], torch.Tensor], device: torch.device, n: int,
            dtype: torch.dtype) -> torch.Tensor:
    """A zeroed buffer of at least n elements, kept between calls (each launch leaves it at zero again)."""
    key = (device.type, device.index)
    buf = cache.get(key)
    if buf is None or buf.numel() < n:
        buf = torch.zeros(max(n, 1024), dtype=dtype, device=device)
        cache[key] = buf
    return buf


@triton.jit
def _int4_gemv_lop3xs_kernel(xpair_ptr, w_ptr, sz_ptr, out_ptr, partial_ptr, counter_ptr, n_out, n_k_outer,
                              xpair_row_stride, out_row_stride, groups_per_split, GROUP: tl.constexpr,
                              IKT: tl.constexpr, BLOCK_N: tl.constexpr, SPLIT_K: tl.constexpr,
                              NUM_STAGES: tl.constexpr, USE_PTX: tl.constexpr,
                              ATOMIC: tl.constexpr, GPS_PAD: tl.constexpr):
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
    w_ptrs = w_ptr + row_off[:, None] + col_off[None, :]
    x_row = xpair_ptr + row_m * xpair_row_stride
    PAIRS: tl.constexpr = GROUP // 2  # x pairs of one group
    p = tl.arange(0, PAIRS)
    g_start = split * groups_per_split
    # the sum of x over each group of this split (for the zero-point terms), once before the loop
    gs = tl.arange(0, GPS_PAD)
    xs = tl.load(x_row + (g_start + gs)[:, None] * PAIRS + p[None, :], mask=(gs < groups_per_split)[:, None], other=0)
    x_sums = tl.sum((xs << 16).to(tl.float32, bitcast=True) + (xs & -65536).to(tl.float32, bitcast=True), axis=1)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)  # the zero-point terms
    acc2d = tl.zeros([BLOCK_N, WORDS_PER_GROUP], dtype=tl.float32)  # scale * word dot, reduced after the loop
    for gi in tl.range(0, groups_per_split, num_stages=NUM_STAGES):
        g = g_start + gi
        words = tl.load(w_ptrs + g * (KO_PER_GROUP * KO_WORDS), mask=row_mask[:, None], other=0,
                        eviction_policy="evict_first")
        # the group's x pairs, one per thread, converted once and redistributed: pair 8 IKT ko + 16 jj + 4 a + qq
        # is pair a (nibbles a, a + 4) of in-group word (ko, qq, jj)
        pairs = tl.load(x_row + g * PAIRS + p)
        if USE_PTX:
            pairs = tl.inline_asm_elementwise(
                _PACK_F16X2_PTX, "=r,f,f",
                [(pairs << 16).to(tl.float32, bitcast=True), (pairs & -65536).to(tl.float32, bitcast=True)],
                dtype=tl.int32, is_pure=False, pack=1)  # not pure: converted where loaded, not after
        per_word = tl.permute(tl.reshape(pairs, [KO_PER_GROUP, IKT // 2, 4, 4]), (0, 3, 1, 2))
        even, odd = tl.split(tl.reshape(per_word, [WORDS_PER_GROUP, 2, 2]))  # a = 2 i + (0 or 1)
        x0, x2 = tl.split(even)
        x1, x3 = tl.split(odd)
        if USE_PTX:
            word_dot = tl.inline_asm_elementwise(
                _DECODE_DOT_PTX, "=f,r,r,r,r,r", [words, x0[None, :], x1[None, :], x2[None, :], x3[None, :]],
                dtype=tl.float32, is_pure=True, pack=1)
        else:  # pure-Triton twin (interpreter): the same loads and pairing, in fp32 (x as bf16 pairs)
            word_dot = tl.zeros([BLOCK_N, WORDS_PER_GROUP], dtype=tl.float32)
            for a in tl.static_range(4):
                if a == 0:
                    pair = x0
                elif a == 1:
                    pair = x1
                elif a == 2:
                    pair = x2
                else:
                    pair = x3
                x_lo = (pair << 16).to(tl.float32, bitcast=True)
                x_hi = (pair & -65536).to(tl.float32, bitcast=True)
                q_lo = ((words >> (4 * a)) & 0xF).to(tl.float32) - 8.0
                q_hi = ((words >> (16 + 4 * a)) & 0xF).to(tl.float32) - 8.0
                word_dot += q_lo * x_lo[None, :] + q_hi * x_hi[None, :]
        sz = tl.load(sz_ptr + g * n_out + rows, mask=row_mask, other=0)
        scale = (sz << 16).to(tl.float32, bitcast=True)
        zero = (sz & -65536).to(tl.float32, bitcast=True)
        acc2d += scale[:, None] * word_dot
        acc += zero * tl.sum(tl.where(gs == gi, x_sums, 0.0), axis=0)
    if USE_PTX:  # the decode gives (q - 8) / 16
        acc2d = acc2d * 16.0
    acc += tl.sum(acc2d, axis=1)
    out_ptrs = out_ptr + row_m * out_row_stride + rows
    if SPLIT_K == 1:
        tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=row_mask)
    elif ATOMIC:  # partial_ptr: a zeroed fp32 [M, N] buffer that the last arriver zeroes again
        sum_ptrs = partial_ptr + row_m * n_out + rows
        tl.atomic_add(sum_ptrs, acc, mask=row_mask, sem="relaxed")
        tl.debug_barrier()  # every thread's atomics before the one counter release
        ticket = block * tl.num_programs(1) + row_m
        arrived = tl.atomic_add(counter_ptr + ticket, 1, sem="acq_rel")
        if arrived == SPLIT_K - 1:
            total = tl.load(sum_ptrs, mask=row_mask, other=0.0, cache_modifier=".cg")
            tl.store(out_ptrs, total.to(out_ptr.dtype.element_ty), mask=row_mask)
            tl.store(sum_ptrs, tl.zeros([BLOCK_N], dtype=tl.float32), mask=row_mask)
            tl.store(counter_ptr + ticket, 0)
    else:
        tl.store(partial_ptr + (split * tl.num_programs(1) + row_m) * n_out + rows, acc, mask=row_mask)
        tl.debug_barrier()  # every thread's partial before the one counter release
        ticket = block * tl.num_programs(1) + row_m
        arrived = tl.atomic_add(counter_ptr + ticket, 1, sem="acq_rel")
        if arrived == SPLIT_K - 1:
            s = tl.arange(0, SPLIT_K)
            parts = tl.load(partial_ptr + (s[:, None] * tl.num_programs(1) + row_m) * n_out + rows[None, :],
                            mask=row_mask[None, :], other=0.0, cache_modifier=".cg")
            tl.store(out_ptrs, tl.sum(parts, axis=0).to(out_ptr.dtype.element_ty), mask=row_mask)
            tl.store(counter_ptr + ticket, 0)


def make_kernel(
    *,
    block_n: int,
    split_k: int,
    num_warps: int,
    num_stages: int,
    atomic: bool,
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
        assert x.dtype == torch.bfloat16, "int4_gemv: x must be bf16 (read as bf16 pairs)"
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
        xpair = x.contiguous().view(torch.int32)  # [M, K / 2]: (x[2i], x[2i + 1]) in the low and high halves
        out = torch.empty((n_m, n_out), dtype=x.dtype, device=x.device)
        if atomic and splits > 1:
            partial = _zeroed(_SUMS, x.device, n_m * n_out, torch.float32)
        else:
            partial = torch.empty((splits, n_m, n_out), dtype=torch.float32, device=x.device)
        use_ptx = os.environ.get("TRITON_INTERPRET", "0") != "1"
        _int4_gemv_lop3xs_kernel[(n_blocks, n_m, splits)](
            xpair, w_int4, sz, out, partial, _zeroed(_COUNTERS, x.device, n_blocks * n_m, torch.int32), n_out,
            w_int4.shape[1], xpair.stride(0), out.stride(0), n_groups // splits, GROUP=group_size, IKT=ikt,
            BLOCK_N=block_n, SPLIT_K=splits, NUM_STAGES=num_stages, USE_PTX=use_ptx,
            ATOMIC=atomic, GPS_PAD=triton.next_power_of_2(n_groups // splits), num_warps=num_warps)
        return out

    return kernel
