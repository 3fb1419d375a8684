"""int4 GEMV, fp16x2 `lop3` decode (inline PTX) of one word per call, split-K, last-arriver sum.

Precision: q - 8 is exact in fp16; x is rounded to fp16 after a 2^-4 prescale (so |x| up to ~30000 cannot overflow
the 4-product fp16 partials; the result is scaled back by 16); products and the 4-term partial are rounded to fp16's
11 bits (tinygemm rounds every dequantized weight to bf16's 8 bits).

In the Triton interpreter (TRITON_INTERPRET=1) inline PTX cannot run, so the kernel takes a pure-Triton twin path
(`USE_PTX=False`) with the same loads and nibble pairing, in fp32: the interpreter test checks the indexing, and the
H200 check (`check_variants.py --device cuda`) checks the PTX.

Parameters: `block_n`, `split_k` (the largest split, halved until it divides the groups), `num_warps`, `num_stages`
and `x_prescale` (x is rounded to fp16 as x * x_prescale; the fp32 word sums are divided by it again).

Layout (CUDA `_convert_weight_to_int4pack`, inner_k_tiles = IKT): int32 [N/8, K/(16 IKT), 32, IKT/2]; the word at [n
// 8, ko, (n % 8) * 4 + qq, j] holds, in nibble p (bits 4p..4p+3), weight k = 16 IKT ko + 32 j + 2 qq + 8 (p % 4) +
p // 4 of row n.

Variants:
- `lop3_f16_bn256_sk16` (`rowreg_bn256_sk16`'s geometry: 256 rows, split-K 16, 4 warps, x / 16): the `rowreg_*` kernels
  are issue-bound on the nibble decode (LOP3, FADD, FFMA per nibble, about 5.4 SASS instructions per nibble in the
  loop). Nibbles p and p + 4 of a tinygemm word are adjacent k values (k0 + 8 (p % 4) and k0 + 8 (p % 4) + 1), at bits
  4a and 16 + 4a. So for a = 0..3 one `lop3` of `w >> 4a` with 0x000F000F and 0x64006400 makes the fp16x2 pair (1024 +
  q_a, 1024 + q_(a+4)); one `sub.f16x2` of 1032 makes both `q - 8` exactly; one `fma.f16x2` multiplies by the x pair
  (x[k0 + 8a], x[k0 + 8a + 1]), which is one aligned 32-bit load of x (the k of nibble a is even). The four pairs of a
  word are summed in fp16x2 and the word's sum converted to fp32: about 19 instructions per 8 nibbles (3 SHF, 4 LOP3, 4
  HADD2, 4 HFMA2, 2 cvt, 2 FADD), against about 24 plus x handling. Everything beyond one word (the dot over the group,
  the scale and zero, the split-K sum) stays fp32.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "lop3_f16_bn256_sk16": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "x_prescale": 0.0625},
}


# One word (8 nibbles) times its 4 x pairs (fp16x2), summed: $0 = sum_p (q_p - 8) x_p as fp32.
# lop3 immLut 0xEA = (a & b) | c.
_DECODE_DOT_PTX = tl.constexpr("""
{
.reg .b32 t, v, acc, s, bias;
.reg .b16 lo, hi;
.reg .f32 flo, fhi;
mov.b32 bias, 0x64086408;
lop3.b32 t, $1, 0x000F000F, 0x64006400, 0xEA;
sub.rn.f16x2 v, t, bias;
mul.rn.f16x2 acc, v, $2;
shr.u32 s, $1, 4;
lop3.b32 t, s, 0x000F000F, 0x64006400, 0xEA;
sub.rn.f16x2 v, t, bias;
fma.rn.f16x2 acc, v, $3, acc;
shr.u32 s, $1, 8;
lop3.b32 t, s, 0x000F000F, 0x64006400, 0xEA;
sub.rn.f16x2 v, t, bias;
fma.rn.f16x2 acc, v, $4, acc;
shr.u32 s, $1, 12;
lop3.b32 t, s, 0x000F000F, 0x64006400, 0xEA;
sub.rn.f16x2 v, t, bias;
fma.rn.f16x2 acc, v, $5, acc;
mov.b32 {lo, hi}, acc;
cvt.f32.f16 flo, lo;
cvt.f32.f16 fhi, hi;
add.f32 $0, flo, fhi;
}
""")

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
    c = tl.arange(0, WORDS_PER_GROUP)
    row_off = tl.cast(rows // 8, tl.int64) * n_k_outer * KO_WORDS + (rows % 8) * WORDS_PER_KO
    ko_in_group = c // WORDS_PER_KO
    word_in_ko = c % WORDS_PER_KO
    col_off = ko_in_group * KO_WORDS + word_in_ko
    # k (within the group) of nibble p of in-group word c is k_in_group + 8 (p % 4) + p // 4; it is even, so
    # nibbles a and a + 4 read the x pair at (k_in_group + 8 a) / 2 of x viewed as int32
    k_in_group = ko_in_group * (16 * IKT) + 32 * (word_in_ko % (IKT // 2)) + 2 * (word_in_ko // (IKT // 2))
    w_ptrs = w_ptr + row_off[:, None] + col_off[None, :]
    x_row = xpair_ptr + row_m * xpair_row_stride
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    g_start = split * groups_per_split
    for gi in tl.range(0, groups_per_split, num_stages=NUM_STAGES):
        g = g_start + gi
        words = tl.load(w_ptrs + g * (KO_PER_GROUP * KO_WORDS), mask=row_mask[:, None], other=0,
                        eviction_policy="evict_first")
        pair_base = x_row + (g * GROUP + k_in_group) // 2
        x_sum = tl.zeros([WORDS_PER_GROUP], dtype=tl.float32)
        if USE_PTX:
            x0, s0 = _x_pair_f16x2(pair_base, X_PRESCALE)
            x1, s1 = _x_pair_f16x2(pair_base + 4, X_PRESCALE)
            x2, s2 = _x_pair_f16x2(pair_base + 8, X_PRESCALE)
            x3, s3 = _x_pair_f16x2(pair_base + 12, X_PRESCALE)
            x_sum = (s0 + s1) + (s2 + s3)
            word_dot = tl.inline_asm_elementwise(
                _DECODE_DOT_PTX, "=f,r,r,r,r,r", [words, x0[None, :], x1[None, :], x2[None, :], x3[None, :]],
                dtype=tl.float32, is_pure=True, pack=1)
            dot = tl.sum(word_dot, axis=1) * (1.0 / X_PRESCALE)
        else:  # pure-Triton twin (interpreter): the same loads and pairing, in fp32
            word_dot = tl.zeros([BLOCK_N, WORDS_PER_GROUP], dtype=tl.float32)
            for a in tl.static_range(4):
                pair = tl.load(pair_base + 4 * a)
                x_lo = (pair << 16).to(tl.float32, bitcast=True)
                x_hi = (pair & -65536).to(tl.float32, bitcast=True)
                x_sum += x_lo + x_hi
                q_lo = ((words >> (4 * a)) & 0xF).to(tl.float32) - 8.0
                q_hi = ((words >> (16 + 4 * a)) & 0xF).to(tl.float32) - 8.0
                word_dot += q_lo * x_lo[None, :] + q_hi * x_hi[None, :]
            dot = tl.sum(word_dot, axis=1)
        sz = tl.load(sz_ptr + g * n_out + rows, mask=row_mask, other=0)
        scale = (sz << 16).to(tl.float32, bitcast=True)
        zero = (sz & -65536).to(tl.float32, bitcast=True)
        acc += scale * dot + zero * tl.sum(x_sum, axis=0)
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
