"""int4 GEMV, fp16x2 `lop3` decode (inline PTX) of two words per call, split-K, last-arriver sum.

Nibbles p and p + 4 of a word are adjacent k values (k0 + 8 (p % 4) and + 1), so their x pair is one aligned 32-bit
load of x viewed as int32.

In the Triton interpreter (TRITON_INTERPRET=1) inline PTX cannot run, so the kernel takes a pure-Triton twin path
(`USE_PTX=False`) with the same int64 loads and nibble pairing, in fp32: the interpreter test checks the indexing,
and the H200 check (`check_variants.py --device cuda`) checks the PTX.

Layout (CUDA `_convert_weight_to_int4pack`, inner_k_tiles = IKT): int32 [N/8, K/(16 IKT), 32, IKT/2]; the word at [n
// 8, ko, (n % 8) * 4 + qq, j] holds, in nibble p (bits 4p..4p+3), weight k = 16 IKT ko + 32 j + 2 qq + 8 (p % 4) +
p // 4 of row n.

Parameters: `block_n`, `split_k` (the largest split, halved until it divides the groups), `num_warps`, `num_stages`
and `x_prescale` (x is rounded to fp16 as x * x_prescale; the fp32 sums are divided by it again).

Layout (CUDA `_convert_weight_to_int4pack`, inner_k_tiles = IKT): int32 [N/8, K/(16 IKT), 32, IKT/2]; the word at [n
// 8, ko, (n % 8) * 4 + qq, j] holds, in nibble p (bits 4p..4p+3), weight k = 16 IKT ko + 32 j + 2 qq + 8 (p % 4) +
p // 4 of row n.

Variants:
- `lop3w2_f16_bn256_sk16` (256 rows, split-K 16, 4 warps, x / 64): `lop3_f16_bn256_sk16` spends about 18 SASS
  instructions per word (8 nibbles): 3 shifts, 4 LOP3, 4 bias HADD2, 4 x HFMA2, and 3 to turn the fp16x2 sum into one
  fp32. Here the weights are loaded as int64 (two consecutive words of one row, the same 8-byte-aligned bytes), so one
  asm call decodes 16 nibbles into ONE fp16x2 accumulator and converts once, and it uses one shift per word, not three
  (Marlin's trick): pairs 0 and 2 (bits 0-3 and 16-19 of w and w >> 8) take lop3 with 0x000F000F | 0x64006400 = 1024 + q
  and subtract 1032; pairs 1 and 3 are masked in place (0x00F000F0), 1024 + 16 q, and one fma (x 1/16, - 72) gives q -
  8. About 29 instructions per 16 nibbles (1.8 per nibble) against 2.25. q - 8 is exact in fp16; x is prescaled by 2^-6
  before rounding to fp16 (8-product fp16 partials per half cannot overflow below |x| ~ 60000; the fp32 sums are scaled
  back); products and partials round to fp16's 11 bits (tinygemm rounds each weight to bf16's 8). Everything past the
  16-nibble partial (group dot, scale and zero, split-K last-arriver sum) is fp32.
- `lop3w2_f16_bn128_sk8` (128 rows, split-K 8, 4 warps, x / 64): the two-word decode at `rowreg_bn128_sk8`'s geometry:
  128-row tiles, split-K 8 (64 x 8 = 512 programs, 4 warps).
- `lop3w2_f16_bn256_sk8_w8` (256 rows, split-K 8, 8 warps, x / 64): the two-word decode with split-K 8 and 8 warps (256
  fatter programs, 8 groups each).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "lop3w2_f16_bn256_sk16": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "x_prescale": 0.015625},
    "lop3w2_f16_bn128_sk8": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "x_prescale": 0.015625},
    "lop3w2_f16_bn256_sk8_w8": {"block_n": 256, "split_k": 8, "num_warps": 8, "num_stages": 3, "x_prescale": 0.015625},
}


WORDS_PER_CALL = 2  # one int64 load element: words 2d (low half) and 2d + 1 (high half) of one row


def _decode_dot_ptx(words: int) -> str:
    """PTX: $0 = sum over the nibbles of `words` words (split from the b64 $1) of (q - 8) x, chained in one
    fp16x2 accumulator; then x pairs: $(2 + 4 i + a) is pair a (nibbles a and a + 4) of word i.
    lop3 immLut 0xEA = (a & b) | c."""
    lines = ["{", ".reg .b32 t, v, acc, s, bias, sixteenth, minus72;", f".reg .b32 w<{words}>;",
             ".reg .b16 lo, hi;", ".reg .f32 flo, fhi;", "mov.b32 bias, 0x64086408;",
             "mov.b32 sixteenth, 0x2C002C00;", "mov.b32 minus72, 0xD480D480;"]
    word_regs = ", ".join(f"w{i}" for i in range(words))
    lines.append(f"mov.b64 {{{word_regs}}}, $1;")
    first = True
    for i in range(words):
        for a in range(4):
            x_pair = f"${2 + 4 * i + a}"
            src = f"w{i}" if a < 2 else "s"
            if a == 2:
                lines.append(f"shr.u32 s, w{i}, 8;")
            if a % 2 == 0:
                lines.append(f"lop3.b32 t, {src}, 0x000F000F, 0x64006400, 0xEA;")
                lines.append("sub.rn.f16x2 v, t, bias;")
            else:
                lines.append(f"lop3.b32 t, {src}, 0x00F000F0, 0x64006400, 0xEA;")
                lines.append("fma.rn.f16x2 v, t, sixteenth, minus72;")
            lines.append(f"mul.rn.f16x2 acc, v, {x_pair};" if first else f"fma.rn.f16x2 acc, v, {x_pair}, acc;")
            first = False
    lines += ["mov.b32 {lo, hi}, acc;", "cvt.f32.f16 flo, lo;", "cvt.f32.f16 fhi, hi;", "add.f32 $0, flo, fhi;", "}"]
    return "\n".join(lines)


_DECODE_DOT_PTX = tl.constexpr(_decode_dot_ptx(WORDS_PER_CALL))
_DECODE_DOT_CONSTRAINTS = tl.constexpr("=f,l," + ",".join(["r"] * (4 * WORDS_PER_CALL)))

# Two fp32 -> one fp16x2 word (low half from $1, high half from $2).
_PACK_F16X2_PTX = tl.constexpr("cvt.rn.f16x2.f32 $0, $2, $1;")


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
def _x_pair_f16x2(pair_ptrs, X_PRESCALE: tl.constexpr):
    """Load bf16 pairs (as int32) -> (the pair as prescaled fp16x2 in an int32, the pair's fp32 sum)."""
    pair = tl.load(pair_ptrs)
    x_lo = (pair << 16).to(tl.float32, bitcast=True)
    x_hi = (pair & -65536).to(tl.float32, bitcast=True)
    packed = tl.inline_asm_elementwise(_PACK_F16X2_PTX, "=r,f,f", [x_lo * X_PRESCALE, x_hi * X_PRESCALE],
                                       dtype=tl.int32, is_pure=True, pack=1)
    return packed, x_lo + x_hi


@triton.jit
def _int4_gemv_lop3_kernel(xpair_ptr, w_ptr, sz_ptr, out_ptr, partial_ptr, counter_ptr, n_out, n_k_outer,
                           xpair_row_stride, out_row_stride, groups_per_split, GROUP: tl.constexpr,
                           IKT: tl.constexpr, BLOCK_N: tl.constexpr, SPLIT_K: tl.constexpr,
                           NUM_STAGES: tl.constexpr, USE_PTX: tl.constexpr, X_PRESCALE: tl.constexpr):
    WORDS_PER_KO: tl.constexpr = 2 * IKT  # words of one row in one k-outer tile (16 * IKT k values)
    KO_PER_GROUP: tl.constexpr = GROUP // (16 * IKT)
    WORDS_PER_GROUP: tl.constexpr = KO_PER_GROUP * WORDS_PER_KO
    KO_WORDS: tl.constexpr = 32 * IKT // 2  # words of one 8-row n-tile in one k-outer tile
    block = tl.program_id(0)
    row_m = tl.program_id(1)
    split = tl.program_id(2)
    rows = block * BLOCK_N + tl.arange(0, BLOCK_N)
    row_mask = rows < n_out
    d = tl.arange(0, WORDS_PER_GROUP // 2)  # word pair d: words 2d and 2d + 1 (one k-outer tile)
    row_off = tl.cast(rows // 8, tl.int64) * n_k_outer * KO_WORDS + (rows % 8) * WORDS_PER_KO
    c_even = 2 * d
    ko_in_group = c_even // WORDS_PER_KO
    word_even = c_even % WORDS_PER_KO
    col_off = ko_in_group * KO_WORDS + word_even  # even, as are row_off and the group stride
    # k (within the group) of nibble p of in-group word c is k_in_group + 8 (p % 4) + p // 4; it is even, so
    # nibbles a and a + 4 read the x pair at (k_in_group + 8 a) / 2 of x viewed as int32
    k_even = ko_in_group * (16 * IKT) + 32 * (word_even % (IKT // 2)) + 2 * (word_even // (IKT // 2))
    word_odd = word_even + 1
    k_odd = ko_in_group * (16 * IKT) + 32 * (word_odd % (IKT // 2)) + 2 * (word_odd // (IKT // 2))
    w64_ptrs = w_ptr.to(tl.pointer_type(tl.int64)) + (row_off // 2)[:, None] + (col_off // 2)[None, :]
    x_row = xpair_ptr + row_m * xpair_row_stride
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)  # the zero-point terms
    # scale * partial per (row, word pair), reduced over the pairs once after the loop
    acc2d = tl.zeros([BLOCK_N, WORDS_PER_GROUP // 2], dtype=tl.float32)
    g_start = split * groups_per_split
    for gi in tl.range(0, groups_per_split, num_stages=NUM_STAGES):
        g = g_start + gi
        pairs = tl.load(w64_ptrs + g * (KO_PER_GROUP * KO_WORDS // 2), mask=row_mask[:, None], other=0,
                        eviction_policy="evict_first")
        even_base = x_row + (g * GROUP + k_even) // 2
        odd_base = x_row + (g * GROUP + k_odd) // 2
        if USE_PTX:
            e0, s0 = _x_pair_f16x2(even_base, X_PRESCALE)
            e1, s1 = _x_pair_f16x2(even_base + 4, X_PRESCALE)
            e2, s2 = _x_pair_f16x2(even_base + 8, X_PRESCALE)
            e3, s3 = _x_pair_f16x2(even_base + 12, X_PRESCALE)
            o0, t0 = _x_pair_f16x2(odd_base, X_PRESCALE)
            o1, t1 = _x_pair_f16x2(odd_base + 4, X_PRESCALE)
            o2, t2 = _x_pair_f16x2(odd_base + 8, X_PRESCALE)
            o3, t3 = _x_pair_f16x2(odd_base + 12, X_PRESCALE)
            x_sum = ((s0 + s1) + (s2 + s3)) + ((t0 + t1) + (t2 + t3))
            pair_dot = tl.inline_asm_elementwise(
                _DECODE_DOT_PTX, _DECODE_DOT_CONSTRAINTS,
                [pairs, e0[None, :], e1[None, :], e2[None, :], e3[None, :], o0[None, :], o1[None, :],
                 o2[None, :], o3[None, :]], dtype=tl.float32, is_pure=True, pack=1)
        else:  # pure-Triton twin (interpreter): the same loads and pairing, in fp32
            x_sum = tl.zeros([WORDS_PER_GROUP // 2], dtype=tl.float32)
            pair_dot = tl.zeros([BLOCK_N, WORDS_PER_GROUP // 2], dtype=tl.float32)
            w_even = pairs.to(tl.int32)  # the low half of the little-endian int64
            w_odd = (pairs >> 32).to(tl.int32)
            for a in tl.static_range(4):
                for half in tl.static_range(2):
                    if half == 0:
                        pair = tl.load(even_base + 4 * a)
                        word = w_even
                    else:
                        pair = tl.load(odd_base + 4 * a)
                        word = w_odd
                    x_lo = (pair << 16).to(tl.float32, bitcast=True)
                    x_hi = (pair & -65536).to(tl.float32, bitcast=True)
                    x_sum += x_lo + x_hi
                    q_lo = ((word >> (4 * a)) & 0xF).to(tl.float32) - 8.0
                    q_hi = ((word >> (16 + 4 * a)) & 0xF).to(tl.float32) - 8.0
                    pair_dot += q_lo * x_lo[None, :] + q_hi * x_hi[None, :]
        sz = tl.load(sz_ptr + g * n_out + rows, mask=row_mask, other=0)
        scale = (sz << 16).to(tl.float32, bitcast=True)
        zero = (sz & -65536).to(tl.float32, bitcast=True)
        acc2d += scale[:, None] * pair_dot
        acc += zero * tl.sum(x_sum, axis=0)
    if USE_PTX:  # undo the x prescale once
        acc2d = acc2d * (1.0 / X_PRESCALE)
    acc += tl.sum(acc2d, axis=1)
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
    x_prescale: float,
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
        partial = torch.empty((splits, n_m, n_out), dtype=torch.float32, device=x.device)
        use_ptx = os.environ.get("TRITON_INTERPRET", "0") != "1"
        _int4_gemv_lop3_kernel[(n_blocks, n_m, splits)](
            xpair, w_int4, sz, out, partial, _counters(x.device, n_blocks * n_m), n_out, w_int4.shape[1],
            xpair.stride(0), out.stride(0), n_groups // splits, GROUP=group_size, IKT=ikt, BLOCK_N=block_n,
            SPLIT_K=splits, NUM_STAGES=num_stages, USE_PTX=use_ptx, X_PRESCALE=x_prescale, num_warps=num_warps)
        return out

    return kernel
