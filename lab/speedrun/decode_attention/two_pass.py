"""decode attention, flash-decoding in two launches: context splits per KV head, then a combine kernel.

Grid: (batch x KV heads) x `splits` of the context. The query heads of one KV head are one [16, 128] tile
(rows 4..15 masked), so K and V are read once for all of them and QK^T and PV run on tensor cores
(`tl.dot`); K/V loads are evict-first, softmax runs online in base 2. Split results (normalised output +
log-sum-exp) are combined by a second kernel, one program per query head. Parameters: `splits`,
`block_n` (tokens per tile), `num_warps` and `num_stages`.

Variants:
- `split64_two_pass` (64 splits, 64-token tiles, 3 stages): one query token against a 32K-token cache is pure streaming:
  K and V (2 x 8 heads x 32768 x 128 x 2 B = 128 MiB) must be read once; q, the output and the partials are < 1.5 MiB.
  The grid is (batch x KV heads) x 64 splits = 512 programs (about 4 per SM, one resident wave), each streaming 512
  tokens of K and V in 64-token tiles staged through shared memory 3 deep (num_stages=3, 32 KiB per stage). GQA is
  exploited: the 4 query heads that share a KV head are one [16, 128] tile (rows 4..15 padded), so each K/V byte is read
  once for all 4 heads and the scores and P@V use tensor cores (tl.dot). Split results (normalised output + log-sum-exp)
  are combined by a second tiny kernel (one program per query head).
- `split32_two_pass` (32 splits, 64-token tiles, 4 stages): as `split64_two_pass`, but 8 x 32 = 256 programs, which fit
  one resident wave on 132 SMs (2 per SM at ~96-128 KiB of shared memory each) so there is no second partial wave, and
  each program streams 1024 tokens (512 KiB of K/V) with the pipeliner holding 3 tiles (96 KiB) in flight
  (num_stages=4). Fewer splits also halve the partials written and re-read by the combine kernel. Risk: 8 of 132 SMs run
  only one program.
- `split64_bn128_st3` (64 splits, 128-token tiles, 3 stages): `split32_two_pass` (64-token tiles, 4 stages) is the best
  Triton kernel, about 1% behind SDPA. A 128-token tile halves the loop iterations and the per-tile softmax bookkeeping
  (max, exp2 rescale of the [16, 128] accumulator) per byte, and each cp.async stage moves 64 KiB of K and V;
  num_stages=3 keeps two tiles (128 KiB) in flight per program. 64 splits per KV head (512 programs of 512 tokens, 4
  tiles each) balance the SMs better than 256 programs with one program per SM. The 4 query heads of a KV head share one
  program (K/V read once), K/V loads are evict-first. Risk: 128 KiB of shared memory allows one program per SM, so
  latency hiding rests on the two tiles in flight; 4 tiles per program is a short pipeline.
- `split64_bn128_st2` (64 splits, 128-token tiles, 2 stages): with 128-token tiles, 3 stages take 128 KiB of shared
  memory and allow one program per SM. Two stages take 64 KiB, so three programs share an SM (512 programs: about 1.3
  resident waves instead of 3.9), and the latency hiding comes from the other programs on the SM instead of a deeper
  per-program pipeline. The rest is `split32_two_pass`: 4 query heads per program, evict-first K/V loads, a separate
  combine kernel.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

VARIANTS: dict[str, dict[str, Any]] = {
    "split64_two_pass": {"splits": 64, "block_n": 64, "num_warps": 4, "num_stages": 3},
    "split32_two_pass": {"splits": 32, "block_n": 64, "num_warps": 4, "num_stages": 4},
    "split64_bn128_st3": {"splits": 64, "block_n": 128, "num_warps": 4, "num_stages": 3},
    "split64_bn128_st2": {"splits": 64, "block_n": 128, "num_warps": 4, "num_stages": 2},
}


LOG2E = 1.4426950408889634
# Triton 3.9's CPU interpreter multiplies bf16 tl.dot operands as raw uint16 bits; under the interpreter the
# operands are widened to fp32 first (compiled code keeps bf16 tensor-core dots).
DOT_IN_FP32 = os.environ.get("TRITON_INTERPRET") == "1"


@triton.jit
def _decode_split_kernel(q_ptr, k_ptr, v_ptr, o_part_ptr, lse_part_ptr, seq_len, tokens_per_split, qk_scale,
                         n_kv_heads, n_splits, stride_qb, stride_qh, stride_kb, stride_kh, stride_kn,
                         stride_vb, stride_vh, stride_vn, GROUP: tl.constexpr, GROUP_PAD: tl.constexpr,
                         HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr,
                         DOT_IN_FP32: tl.constexpr):
    bh = tl.program_id(0)
    split = tl.program_id(1)
    batch = bh // n_kv_heads
    kv_head = bh % n_kv_heads
    g = tl.arange(0, GROUP_PAD)
    d = tl.arange(0, HEAD_DIM)
    q_heads = kv_head * GROUP + g
    q = tl.load(q_ptr + batch * stride_qb + q_heads[:, None] * stride_qh + d[None, :],
                mask=(g < GROUP)[:, None], other=0.0)
    if DOT_IN_FP32:
        q = q.to(tl.float32)
    k_base = k_ptr + batch.to(tl.int64) * stride_kb + kv_head.to(tl.int64) * stride_kh
    v_base = v_ptr + batch.to(tl.int64) * stride_vb + kv_head.to(tl.int64) * stride_vh
    start = split * tokens_per_split
    end = tl.minimum(start + tokens_per_split, seq_len)
    m_i = tl.full([GROUP_PAD], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([GROUP_PAD], dtype=tl.float32)
    acc = tl.zeros([GROUP_PAD, HEAD_DIM], dtype=tl.float32)
    n = tl.arange(0, BLOCK_N)
    for n0 in tl.range(start, end, BLOCK_N, num_stages=NUM_STAGES):
        tokens = n0 + n
        valid = tokens < end
        k = tl.load(k_base + tl.cast(tokens, tl.int64)[:, None] * stride_kn + d[None, :], mask=valid[:, None],
                    other=0.0, eviction_policy="evict_first")
        v = tl.load(v_base + tl.cast(tokens, tl.int64)[:, None] * stride_vn + d[None, :], mask=valid[:, None],
                    other=0.0, eviction_policy="evict_first")
        if DOT_IN_FP32:
            k, v = k.to(tl.float32), v.to(tl.float32)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(valid[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v_ptr.dtype.element_ty).to(v.dtype), v)
        m_i = m_new
    part = (batch * n_kv_heads * GROUP + q_heads) * n_splits + split
    head_mask = g < GROUP
    tl.store(o_part_ptr + part[:, None] * HEAD_DIM + d[None, :], acc / l_i[:, None], mask=head_mask[:, None])
    tl.store(lse_part_ptr + part, m_i + tl.log2(l_i), mask=head_mask)


@triton.jit
def _decode_combine_kernel(o_part_ptr, lse_part_ptr, out_ptr, n_q_heads, n_splits, stride_ob, stride_oh,
                           HEAD_DIM: tl.constexpr, SPLITS_PAD: tl.constexpr):
    bq = tl.program_id(0)
    batch = bq // n_q_heads
    q_head = bq % n_q_heads
    s = tl.arange(0, SPLITS_PAD)
    d = tl.arange(0, HEAD_DIM)
    lse = tl.load(lse_part_ptr + bq * n_splits + s, mask=s < n_splits, other=float("-inf"))
    weight = tl.exp2(lse - tl.max(lse, axis=0))
    o = tl.load(o_part_ptr + (bq * n_splits + s)[:, None] * HEAD_DIM + d[None, :],
                mask=(s < n_splits)[:, None], other=0.0)
    out = tl.sum(o * weight[:, None], axis=0) / tl.sum(weight, axis=0)
    tl.store(out_ptr + batch * stride_ob + q_head * stride_oh + d, out.to(out_ptr.dtype.element_ty))


def make_kernel(
    *,
    splits: int,
    block_n: int,
    num_warps: int,
    num_stages: int,
) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(q, k, v, *, enable_gqa=True, scale=None, is_causal=False)` at one parameter set."""

    def kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, enable_gqa: bool = True,
               scale: float | None = None, is_causal: bool = False) -> torch.Tensor:
        """SDPA for one query token per head over a KV cache (same result as SDPA with enable_gqa=True)."""
        batch, n_q_heads, q_len, head_dim = q.shape
        _, n_kv_heads, seq_len, _ = k.shape
        assert q_len == 1 and not is_causal, "decode attention: one query token, non-causal, only"
        assert k.shape == v.shape == (batch, n_kv_heads, seq_len, head_dim), "decode attention: k/v shapes differ"
        assert n_q_heads % n_kv_heads == 0, "decode attention: query heads must be a multiple of KV heads"
        assert enable_gqa or n_q_heads == n_kv_heads, "decode attention: grouped heads need enable_gqa=True"
        assert head_dim == triton.next_power_of_2(head_dim) >= 16, "decode attention: head_dim must be 2^n >= 16"
        group = n_q_heads // n_kv_heads
        if k.stride(-1) != 1:
            k = k.contiguous()
        if v.stride(-1) != 1:
            v = v.contiguous()
        if q.stride(-1) != 1:
            q = q.contiguous()
        sm_scale = scale if scale is not None else 1.0 / math.sqrt(head_dim)
        tokens_per_split = triton.cdiv(triton.cdiv(seq_len, splits), block_n) * block_n
        n_splits = triton.cdiv(seq_len, tokens_per_split)  # every split holds at least one token
        o_part = torch.empty((batch * n_q_heads, n_splits, head_dim), dtype=torch.float32, device=q.device)
        lse_part = torch.empty((batch * n_q_heads, n_splits), dtype=torch.float32, device=q.device)
        out = torch.empty((batch, n_q_heads, 1, head_dim), dtype=q.dtype, device=q.device)
        _decode_split_kernel[(batch * n_kv_heads, n_splits)](
            q, k, v, o_part, lse_part, seq_len, tokens_per_split, sm_scale * LOG2E, n_kv_heads, n_splits,
            q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1),
            v.stride(2), GROUP=group, GROUP_PAD=max(16, triton.next_power_of_2(group)), HEAD_DIM=head_dim,
            BLOCK_N=block_n, NUM_STAGES=num_stages, DOT_IN_FP32=DOT_IN_FP32, num_warps=num_warps)
        _decode_combine_kernel[(batch * n_q_heads,)](o_part, lse_part, out, n_q_heads, n_splits, out.stride(0),
                                                     out.stride(1), HEAD_DIM=head_dim,
                                                     SPLITS_PAD=triton.next_power_of_2(n_splits), num_warps=4)
        return out

    return kernel
