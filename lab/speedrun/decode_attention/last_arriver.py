"""decode attention, flash-decoding in ONE launch: the last-arriving split of each KV head combines.

Each (batch, KV head) has an arrival counter: every split writes its normalised partial output and log-sum-exp, then
takes an acq_rel ticket; the program that arrives last for that head reads the partials back (.cg) and writes the
query heads' final output, then resets the counter (kept zeroed between calls, so no memset launch either).
Parameters: `tile_balanced` (True: split s covers tiles [s T / S, (s + 1) T / S), so splits differ by at most one
tile, and the splits per head are `splits`, or programs_per_sm x SMs / KV heads rounded down when `splits` is 0;
False: every split but the last holds the same whole number of tiles, about programs_per_sm x SMs programs rounded
up), `splits`, `programs_per_sm`, `block_n`, `num_warps` and `num_stages`.

Variants:
- `fused_s32_bn64_st4` (32 splits, 64-token tiles, 4 warps, 4 stages): split32_two_pass (38.7 us) and
  sm_split_last_arriver (39.4 us) differ in two things: the second launch (combine) and the pipelining depth (4 stages
  against 3). This variant takes split32's grid (8 x 32 = 256 programs, 1024 tokens each, 64-token tiles, num_stages=4,
  4 warps) with the last-arriver combine of sm_split_last_arriver: if the combine launch costs 1-3 us inside the graph,
  this is the way under SDPA's 37.8 us. Splits are tile-balanced (split s covers tiles [s T / S, (s + 1) T / S)).
- `fused_2wave_bn32_st6` (2 programs per SM, 32-token tiles, 4 warps, 6 stages): with 32 splits per KV head, 256
  programs on 132 SMs leave 8 SMs with one program, and a program is 16 tiles of 64 tokens, so ramp-up and drain (first
  tiles in flight, last tile computed) are a visible part of each program. Here splits = 2 x SMs / KV heads (33 at the
  headline: 264 programs, 2 on every SM), the context is cut tile-balanced into 32-token tiles (splits differ by at most
  one tile), and num_stages=6 keeps 5 tiles (80 KiB) in flight per program, with 96 KiB of shared memory per program.
  Last arriver combines.
- `fused_3wave_bn32_st4` (3 programs per SM, 32-token tiles, 4 warps, 4 stages): more, smaller programs per SM (3 x 132
  / 8 = 49 splits per KV head, 392 programs, ~670 tokens each) with 64 KiB of shared memory each (4 stages of 16 KiB):
  the SM interleaves three independent pipelines, so one program's drain or its combine step overlaps the others'
  streaming. Tile-balanced splits; the last arriver combines (49 partials per query head).
- `fused_1wave_bn64_st5_w8` (1 program per SM, 64-token tiles, 8 warps, 5 stages): the opposite end: 128 programs (one
  per SM, 4 SMs idle), each streaming 2048 tokens (1 MiB of K/V) with 8 warps and 4 tiles of 64 tokens (128 KiB) in
  flight through cp.async. Fewer partials (16 per query head) and one long pipeline per SM; costs the 3% of idle SMs.
  Last arriver combines.
- `sm_split_last_arriver` (token-sized splits, about 2 programs per SM, 64-token tiles, 4 warps, 3 stages): the two-pass
  variants pay a second kernel launch and its dependency gap (about 1-3 us inside a CUDA graph, i.e. 3-8% of a ~34 us
  floor). Here each (batch, KV head) has an arrival counter: every split writes its normalised partial output and
  log-sum-exp, then takes an acq_rel ticket; the program that arrives last for that head reads the partials back
  (L2-resident, bypassing L1 with .cg) and writes the 4 query heads' final output, then resets the counter (kept zeroed
  between calls, so no memset launch either). The number of splits is chosen from the SM count: about 2 programs per SM,
  one resident wave, rounded to whole 64-token tiles. Risk: the combine work lands on the 8 last programs, serialised
  after their own split.
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

VARIANTS: dict[str, dict[str, Any]] = {
    "sm_split_last_arriver": {"tile_balanced": False, "splits": 0, "programs_per_sm": 2, "block_n": 64,
                              "num_warps": 4, "num_stages": 3},
    "fused_s32_bn64_st4": {"tile_balanced": True, "splits": 32, "programs_per_sm": 2, "block_n": 64, "num_warps": 4,
                           "num_stages": 4},
    "fused_2wave_bn32_st6": {"tile_balanced": True, "splits": 0, "programs_per_sm": 2, "block_n": 32, "num_warps": 4,
                             "num_stages": 6},
    "fused_3wave_bn32_st4": {"tile_balanced": True, "splits": 0, "programs_per_sm": 3, "block_n": 32, "num_warps": 4,
                             "num_stages": 4},
    "fused_1wave_bn64_st5_w8": {"tile_balanced": True, "splits": 0, "programs_per_sm": 1, "block_n": 64, "num_warps": 8,
                                "num_stages": 5},
}


LOG2E = 1.4426950408889634
# Triton 3.9's CPU interpreter multiplies bf16 tl.dot operands as raw uint16 bits; under the interpreter the
# operands are widened to fp32 first (compiled code keeps bf16 tensor-core dots).
DOT_IN_FP32 = os.environ.get("TRITON_INTERPRET") == "1"


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
def _decode_fused_kernel(q_ptr, k_ptr, v_ptr, out_ptr, o_part_ptr, lse_part_ptr, counter_ptr, seq_len,
                         split_size, qk_scale, n_kv_heads, n_splits, stride_qb, stride_qh, stride_kb,
                         stride_kh, stride_kn, stride_vb, stride_vh, stride_vn, stride_ob, stride_oh,
                         GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr,
                         BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr, SPLITS_PAD: tl.constexpr,
                         TILE_BALANCED: tl.constexpr, DOT_IN_FP32: tl.constexpr):
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
    if TILE_BALANCED:  # split_size is the number of tiles: splits differ by at most one tile
        start = (split * split_size // n_splits) * BLOCK_N
        end = tl.minimum(((split + 1) * split_size // n_splits) * BLOCK_N, seq_len)
    else:  # split_size is the tokens of each split (whole tiles)
        start = split * split_size
        end = tl.minimum(start + split_size, seq_len)
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
    tl.store(o_part_ptr + part[:, None] * HEAD_DIM + d[None, :], acc / l_i[:, None], mask=head_mask[:, None])
    tl.store(lse_part_ptr + part, m_i + tl.log2(l_i), mask=head_mask)
    arrived = tl.atomic_add(counter_ptr + bh, 1, sem="acq_rel")
    if arrived == n_splits - 1:
        sp = tl.arange(0, SPLITS_PAD)
        sp_mask = sp < n_splits
        for gi in tl.static_range(GROUP):
            row = (batch * n_kv_heads + kv_head) * GROUP + gi
            lse = tl.load(lse_part_ptr + row * n_splits + sp, mask=sp_mask, other=float("-inf"),
                          cache_modifier=".cg")
            weight = tl.exp2(lse - tl.max(lse, axis=0))
            o = tl.load(o_part_ptr + (row * n_splits + sp)[:, None] * HEAD_DIM + d[None, :],
                        mask=sp_mask[:, None], other=0.0, cache_modifier=".cg")
            out = tl.sum(o * weight[:, None], axis=0) / tl.sum(weight, axis=0)
            tl.store(out_ptr + batch * stride_ob + (kv_head * GROUP + gi) * stride_oh + d,
                     out.to(out_ptr.dtype.element_ty))
        tl.store(counter_ptr + bh, 0)


def make_kernel(
    *,
    tile_balanced: bool,
    splits: int,
    programs_per_sm: int,
    block_n: int,
    num_warps: int,
    num_stages: int,
) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(q, k, v, *, enable_gqa=True, scale=None, is_causal=False)` at one parameter set."""
    assert tile_balanced or not splits, "decode attention: a fixed number of splits needs tile_balanced=True"

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
        n_sms = _num_sms(q.device.type, q.device.index)
        if tile_balanced:
            n_tiles = triton.cdiv(seq_len, block_n)
            if splits:
                wanted_splits = splits
            else:  # programs = programs_per_sm x SMs, rounded down to whole splits per head
                wanted_splits = max(1, n_sms * programs_per_sm // heads)
            n_splits = min(wanted_splits, n_tiles)  # every split holds at least one tile
            split_size = n_tiles
        else:  # programs = programs_per_sm x SMs, rounded up to whole splits per head and whole tiles per split
            wanted_splits = max(1, triton.cdiv(n_sms * programs_per_sm, heads))
            split_size = triton.cdiv(triton.cdiv(seq_len, wanted_splits), block_n) * block_n
            n_splits = triton.cdiv(seq_len, split_size)  # every split holds at least one token
        o_part = torch.empty((batch * n_q_heads, n_splits, head_dim), dtype=torch.float32, device=q.device)
        lse_part = torch.empty((batch * n_q_heads, n_splits), dtype=torch.float32, device=q.device)
        out = torch.empty((batch, n_q_heads, 1, head_dim), dtype=q.dtype, device=q.device)
        _decode_fused_kernel[(heads, n_splits)](
            q, k, v, out, o_part, lse_part, _counters(q.device, heads), seq_len, split_size,
            sm_scale * LOG2E, n_kv_heads, n_splits, q.stride(0), q.stride(1), k.stride(0), k.stride(1),
            k.stride(2), v.stride(0), v.stride(1), v.stride(2), out.stride(0), out.stride(1), GROUP=group,
            GROUP_PAD=max(16, triton.next_power_of_2(group)), HEAD_DIM=head_dim, BLOCK_N=block_n,
            NUM_STAGES=num_stages, SPLITS_PAD=triton.next_power_of_2(n_splits), TILE_BALANCED=tile_balanced,
            DOT_IN_FP32=DOT_IN_FP32, num_warps=num_warps)
        return out

    return kernel
