"""int4 GEMV, fp16x2 `lop3` decode of one word per call into a per-word fp32 accumulator, split-K, atomic sum.

Idea: three changes to `lop3_f16_bn256_sk16` (108 registers, 4 programs of 4 warps per SM, ncu: latency-bound):
- The group scale is applied per word, one FFMA into a [BLOCK_N, words] fp32 accumulator, and the sum over a row's
  words runs once after the loop. `lop3.py` sums the word dots of every row across the 4 threads that hold its words
  (shuffles and adds every group, for every row a thread holds).
- One shift per word, not three, and the 2^-4 scale moves from x to the weight: pairs 0 and 2 (bits 0-3 and 16-19 of
  w and w >> 8) are lop3 with 0x000F000F | 0x64006400 = 1024 + q, then fma(t, 1/16, -64.5) = (q - 8) / 16; pairs 1 and
  3 are masked in place (0x00F000F0), 1024 + 16 q, then fma(t, 1/256, -4.5) = (q - 8) / 16. Both results are exact, so
  x needs no prescale multiply before its fp16 conversion.
- The splits add their fp32 rows with atomics into a zeroed fp32 buffer that is kept between calls. The last arriver
  reads one row vector (not SPLIT_K of them), stores it as bf16 and zeroes it again (`atomic=False`: per-split
  partials, as `lop3.py`).
Smaller row tiles (8 words per thread) need fewer registers (64 in the sm_90 compile), so more warps per SM keep
more 16-byte cp.async weight tiles in flight (`tl.range(num_stages=...)`).

Precision: as `lop3.py`: (q - 8) / 16 is exact in fp16; x is rounded to fp16 (the 4-product fp16 partial of one word
is at most 2 |x|: no overflow for |x| below about 30000); products and the 4-term partial round to fp16's 11 bits;
everything past one word (scale, zero, the group and split-K sums) is fp32.

In the Triton interpreter (TRITON_INTERPRET=1) inline PTX cannot run, so the kernel takes a pure-Triton twin path
(`USE_PTX=False`) with the same loads, nibble pairing and accumulators, in fp32: the interpreter test checks the
indexing, `lab/tests/speedrun/test_speedrun_int4_lop3xs.py` runs the PTX text through the CPU emulator of
`test_speedrun_lop3_ptx.py`, and the H200 check (`check_variants.py --device cuda`) runs it.

Parameters: `block_n`, `split_k` (the largest split, halved until it divides the groups), `num_warps`, `num_stages`
and `atomic` (True: fp32 atomics into a kept zeroed buffer; False: per-split partials).

Layout (CUDA `_convert_weight_to_int4pack`, inner_k_tiles = IKT): int32 [N/8, K/(16 IKT), 32, IKT/2]; the word at [n
// 8, ko, (n % 8) * 4 + qq, j] holds, in nibble p (bits 4p..4p+3), weight k = 16 IKT ko + 32 j + 2 qq + 8 (p % 4) +
p // 4 of row n.

Variants:
- `lop3acc_bn64_sk8_w4_st4` (64 rows, split-K 8, 4 warps, 4 stages, atomic): 128 x 8 = 1024 programs of 8 groups,
  8 words per thread; at 64 registers 8 programs (32 warps) fit per SM, so the grid is one resident wave with twice
  the warps of `lop3_f16_bn256_sk16`. Each thread gathers and converts the 16 x pairs of its 4 word columns itself;
  this is the control for `lop3xs_bn64_sk8_w4_st4`, which shares that work across the program.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "lop3acc_bn64_sk8_w4_st4": {"block_n": 64, "split_k": 8, "num_warps": 4, "num_stages": 4, "atomic": True},
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
def _x_pair_f16x2(pair_ptrs):
    """Load bf16 pairs (as int32) -> (the pair as fp16x2 in an int32, the pair's fp32 sum)."""
    pair = tl.load(pair_ptrs)
    x_lo = (pair << 16).to(tl.float32, bitcast=True)
    x_hi = (pair & -65536).to(tl.float32, bitcast=True)
    packed = tl.inline_asm_elementwise(_PACK_F16X2_PTX, "=r,f,f", [x_lo, x_hi],
                                       dtype=tl.int32, is_pure=True, pack=1)
    return packed, x_lo + x_hi


@triton.jit
def _int4_gemv_lop3acc_kernel(xpair_ptr, w_ptr, sz_ptr, out_ptr, partial_ptr, counter_ptr, n_out, n_k_outer,
                              xpair_row_stride, out_row_stride, groups_per_split, GROUP: tl.constexpr,
                              IKT: tl.constexpr, BLOCK_N: tl.constexpr, SPLIT_K: tl.constexpr,
                              NUM_STAGES: tl.constexpr, USE_PTX: tl.constexpr,
                              ATOMIC: tl.constexpr):
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
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)  # the zero-point terms
    acc2d = tl.zeros([BLOCK_N, WORDS_PER_GROUP], dtype=tl.float32)  # scale * word dot, reduced after the loop
    g_start = split * groups_per_split
    for gi in tl.range(0, groups_per_split, num_stages=NUM_STAGES):
        g = g_start + gi
        words = tl.load(w_ptrs + g * (KO_PER_GROUP * KO_WORDS), mask=row_mask[:, None], other=0,
                        eviction_policy="evict_first")
        pair_base = x_row + (g * GROUP + k_in_group) // 2
        if USE_PTX:
            x0, s0 = _x_pair_f16x2(pair_base)
            x1, s1 = _x_pair_f16x2(pair_base + 4)
            x2, s2 = _x_pair_f16x2(pair_base + 8)
            x3, s3 = _x_pair_f16x2(pair_base + 12)
            x_sum = (s0 + s1) + (s2 + s3)
            word_dot = tl.inline_asm_elementwise(
                _DECODE_DOT_PTX, "=f,r,r,r,r,r", [words, x0[None, :], x1[None, :], x2[None, :], x3[None, :]],
                dtype=tl.float32, is_pure=True, pack=1)
        else:  # pure-Triton twin (interpreter): the same loads and pairing, in fp32
            x_sum = tl.zeros([WORDS_PER_GROUP], dtype=tl.float32)
            word_dot = tl.zeros([BLOCK_N, WORDS_PER_GROUP], dtype=tl.float32)
            for a in tl.static_range(4):
                pair = tl.load(pair_base + 4 * a)
                x_lo = (pair << 16).to(tl.float32, bitcast=True)
                x_hi = (pair & -65536).to(tl.float32, bitcast=True)
                x_sum += x_lo + x_hi
                q_lo = ((words >> (4 * a)) & 0xF).to(tl.float32) - 8.0
                q_hi = ((words >> (16 + 4 * a)) & 0xF).to(tl.float32) - 8.0
                word_dot += q_lo * x_lo[None, :] + q_hi * x_hi[None, :]
        sz = tl.load(sz_ptr + g * n_out + rows, mask=row_mask, other=0)
        scale = (sz << 16).to(tl.float32, bitcast=True)
        zero = (sz & -65536).to(tl.float32, bitcast=True)
        acc2d += scale[:, None] * word_dot
        acc += zero * tl.sum(x_sum, axis=0)
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
        _int4_gemv_lop3acc_kernel[(n_blocks, n_m, splits)](
            xpair, w_int4, sz, out, partial, _zeroed(_COUNTERS, x.device, n_blocks * n_m, torch.int32), n_out,
            w_int4.shape[1], xpair.stride(0), out.stride(0), n_groups // splits, GROUP=group_size, IKT=ikt,
            BLOCK_N=block_n, SPLIT_K=splits, NUM_STAGES=num_stages, USE_PTX=use_ptx,
            ATOMIC=atomic, num_warps=num_warps)
        return out

    return kernel
