"""decode attention, flash-decoding in two launches, the combine launched early (programmatic dependent launch).

The split kernel is `split32_two_pass`'s (the one whose time alone matched cuDNN's under ncu): grid (batch x KV
heads) x splits, the 4 query heads of a KV head as one [16, D] tile (rows 4..15 masked, K/V read once for all 4),
64-token tiles through cp.async, evict-first K/V, online softmax in base 2. What changes is everything after the
loop. Each split writes its unnormalised fp32 accumulator with its running max and sum (no division). Every split
program calls `griddepcontrol.launch_dependents` at its start, and the combine kernel is launched with
`launch_pdl=True`: its programs are resident and parked in `griddepcontrol.wait` while the split kernel streams, so
the launch gap and the combine's own start-up leave the critical path. What remains after the last split is one
L2 read of the partials and one store. The combine runs as (batch x query heads) x (D / `block_d`) programs, each
reducing a [splits, block_d] fp32 tile with one vectorised load. Splits are tile-balanced (split s covers tiles
[s T / S, (s + 1) T / S)); their number is `splits`, or programs_per_sm x SMs / KV heads when `splits` is 0.
Parameters: `splits`, `programs_per_sm`, `block_n`, `num_warps`, `num_stages`, `block_d`, `interleave` (split s
takes tiles s, s + S, s + 2S, ... instead of one contiguous range; default off). In the interpreter
(no griddepcontrol there) both kernels run as a plain two-pass pair.

Variants:
- `pdl_s32_bn64_st4` (32 splits, 64-token tiles, 4 warps, 4 stages, combine block_d 32): the same split grid and
  pipeline as `split32_two_pass` (256 programs of 1024 tokens, 2 per SM, 3 tiles in flight each), so the comparison
  isolates the combine: if the second launch and its start-up are what `split32_two_pass` loses against cuDNN, a
  combine already resident when the split kernel drains should bring the pair to within about 1 us of the split
  kernel alone. 128 combine programs (4 per query head, 32 splits x 32 dims each) keep the combine's own latency
  to one L2 round trip.
- `pdl_2wave_bn64_st4` (2 programs per SM, 64-token tiles, 4 warps, 4 stages, block_d 32): 2 x SMs / 8 splits (33 at
  the headline: 264 programs, exactly 2 per SM on 132 SMs, where 32 splits leave 8 SMs with one program), about 15.5
  tiles per split. Every SM streams with two pipelines, so no SM idles at half its share of the bandwidth. 96 KiB of
  shared memory per program (3 tiles of K and V), as `pdl_s32_bn64_st4`.
- `pdl_3wave_bn64_st3` (3 programs per SM, 64-token tiles, 4 warps, 3 stages, block_d 32): 3 x SMs / 8 = 49 splits (392
  programs, 3 resident per SM at about 64 KiB of shared memory each, 2 tiles in flight per program, about 10.4
  tiles each). Three interleaved pipelines per SM hide one program's ramp-up and drain behind the others; with the
  combine parked early, 49 partials per query head cost one slightly larger vectorised load.
- `pdl_2wave_il_bn64_st4` (`pdl_2wave_bn64_st4` with `interleave`): under the contract's placement pad the kept
  pair runs at two speeds, about 37.95 and 38.1-38.4 us, in stretches of rounds, while cuDNN does not move
  (lab/speedrun.md, "Reproducibility with the placement pad"). Its 33 splits of a KV head each stream their own
  254 KB range, 33 streams 254 KB apart in K and in V; which DRAM channels those concurrent streams hit depends on
  the physical pages under them. Interleaved, the 33 splits of a head read 33 adjacent 16 KB tiles at a time, one
  528 KB window moving through K and V, so the channels see the same spread whatever the pages: the slow
  placements should go, and the kernel run at its fast speed in every round.
- `pdl_3wave_il_bn64_st3` (`pdl_3wave_bn64_st3` with `interleave`): the same with 49 splits, a window of 49 tiles.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

VARIANTS: dict[str, dict[str, Any]] = {
    "pdl_s32_bn64_st4": {"splits": 32, "programs_per_sm": 2, "block_n": 64, "num_warps": 4, "num_stages": 4,
                         "block_d": 32},
    "pdl_2wave_bn64_st4": {"splits": 0, "programs_per_sm": 2, "block_n": 64, "num_warps": 4, "num_stages": 4,
                           "block_d": 32},
    "pdl_3wave_bn64_st3": {"splits": 0, "programs_per_sm": 3, "block_n": 64, "num_warps": 4, "num_stages": 3,
                           "block_d": 32},
    "pdl_2wave_il_bn64_st4": {"splits": 0, "programs_per_sm": 2, "block_n": 64, "num_warps": 4, "num_stages": 4,
                              "block_d": 32, "interleave": True},
    "pdl_3wave_il_bn64_st3": {"splits": 0, "programs_per_sm": 3, "block_n": 64, "num_warps": 4, "num_stages": 3,
                              "block_d": 32, "interleave": True},
}


LOG2E = 1.4426950408889634
# Triton 3.9's CPU interpreter multiplies bf16 tl.dot operands as raw uint16 bits; under the interpreter the
# operands are widened to fp32 first (compiled code keeps bf16 tensor-core dots). It has no griddepcontrol either.
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DOT_IN_FP32 = INTERPRET
USE_PDL = not INTERPRET


@functools.cache
def _num_sms(device_type: str, index: int | None) -> int:
    if device_type == "cuda":
        return torch.cuda.get_device_properties(index).multi_processor_count
    return 4


@triton.jit
def _pdl_split_kernel(q_ptr, k_ptr, v_ptr, acc_ptr, m_ptr, l_ptr, seq_len, n_tiles, qk_scale, n_kv_heads,
                      n_splits, stride_qb, stride_qh, stride_kb, stride_kh, stride_kn, stride_vb, stride_vh,
                      stride_vn, GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr,
                      BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr, USE_PDL: tl.constexpr,
                      DOT_IN_FP32: tl.constexpr, INTERLEAVE: tl.constexpr = False):
    if USE_PDL:  # the combine grid may launch now; it waits for this grid's completion itself
        gdc_launch_dependents()
    bh = tl.program_id(0)
    split = tl.program_id(1)
    batch = bh // n_kv_heads
    kv_head = bh % n_kv_heads
    g = tl.arange(0, GROUP_PAD)
    d = tl.arange(0, HEAD_DIM)
    head_mask = g < GROUP
    q_heads = kv_head * GROUP + g
    q = tl.load(q_ptr + batch * stride_qb + q_heads[:, None] * stride_qh + d[None, :],
                mask=head_mask[:, None], other=0.0)
    if DOT_IN_FP32:
        q = q.to(tl.float32)
    k_base = k_ptr + batch.to(tl.int64) * stride_kb + kv_head.to(tl.int64) * stride_kh
    v_base = v_ptr + batch.to(tl.int64) * stride_vb + kv_head.to(tl.int64) * stride_vh
    if INTERLEAVE:  # split s takes tiles s, s + S, s + 2S, ...: the splits of a head read one contiguous window
        start = split * BLOCK_N
        end = seq_len
        step = n_splits * BLOCK_N
    else:
        start = (split * n_tiles // n_splits) * BLOCK_N
        end = tl.minimum(((split + 1) * n_tiles // n_splits) * BLOCK_N, seq_len)
        step = BLOCK_N
    m_i = tl.full([GROUP_PAD], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([GROUP_PAD], dtype=tl.float32)
    acc = tl.zeros([GROUP_PAD, HEAD_DIM], dtype=tl.float32)
    n = tl.arange(0, BLOCK_N)
    for n0 in tl.range(start, end, step, num_stages=NUM_STAGES):
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
    tl.store(acc_ptr + part[:, None] * HEAD_DIM + d[None, :], acc, mask=head_mask[:, None])
    tl.store(m_ptr + part, m_i, mask=head_mask)
    tl.store(l_ptr + part, l_i, mask=head_mask)


@triton.jit
def _pdl_combine_kernel(acc_ptr, m_ptr, l_ptr, out_ptr, n_q_heads, n_splits, stride_ob, stride_oh,
                        HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, SPLITS_PAD: tl.constexpr,
                        USE_PDL: tl.constexpr):
    bq = tl.program_id(0)
    d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    s = tl.arange(0, SPLITS_PAD)
    s_mask = s < n_splits
    batch = bq // n_q_heads
    q_head = bq % n_q_heads
    if USE_PDL:  # returns once the split grid has completed and its stores are visible
        gdc_wait()
    m = tl.load(m_ptr + bq * n_splits + s, mask=s_mask, other=float("-inf"))
    l_s = tl.load(l_ptr + bq * n_splits + s, mask=s_mask, other=0.0)
    acc = tl.load(acc_ptr + (bq * n_splits + s)[:, None] * HEAD_DIM + d[None, :], mask=s_mask[:, None], other=0.0)
    weight = tl.exp2(m - tl.max(m, axis=0))
    out = tl.sum(acc * weight[:, None], axis=0) / tl.sum(l_s * weight, axis=0)
    tl.store(out_ptr + batch * stride_ob + q_head * stride_oh + d, out.to(out_ptr.dtype.element_ty))


def make_kernel(
    *,
    splits: int,
    programs_per_sm: int,
    block_n: int,
    num_warps: int,
    num_stages: int,
    block_d: int,
    interleave: bool = False,
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
        heads = batch * n_kv_heads
        n_tiles = triton.cdiv(seq_len, block_n)
        wanted = splits or max(1, _num_sms(q.device.type, q.device.index) * programs_per_sm // heads)
        n_splits = min(wanted, n_tiles)  # every split holds at least one tile
        acc_part = torch.empty((batch * n_q_heads, n_splits, head_dim), dtype=torch.float32, device=q.device)
        m_part = torch.empty((batch * n_q_heads, n_splits), dtype=torch.float32, device=q.device)
        l_part = torch.empty((batch * n_q_heads, n_splits), dtype=torch.float32, device=q.device)
        out = torch.empty((batch, n_q_heads, 1, head_dim), dtype=q.dtype, device=q.device)
        _pdl_split_kernel[(heads, n_splits)](
            q, k, v, acc_part, m_part, l_part, seq_len, n_tiles, sm_scale * LOG2E, n_kv_heads, n_splits,
            q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1),
            v.stride(2), GROUP=group, GROUP_PAD=max(16, triton.next_power_of_2(group)), HEAD_DIM=head_dim,
            BLOCK_N=block_n, NUM_STAGES=num_stages, USE_PDL=USE_PDL, DOT_IN_FP32=DOT_IN_FP32, INTERLEAVE=interleave,
            num_warps=num_warps)
        d_block = min(block_d, head_dim)
        _pdl_combine_kernel[(batch * n_q_heads, head_dim // d_block)](
            acc_part, m_part, l_part, out, n_q_heads, n_splits, out.stride(0), out.stride(1), HEAD_DIM=head_dim,
            BLOCK_D=d_block, SPLITS_PAD=triton.next_power_of_2(n_splits), USE_PDL=USE_PDL, num_warps=2,
            launch_pdl=USE_PDL)
        return out

    return kernel
