"""decode attention, flash-decoding with K and V streamed by the Hopper TMA engine, then a small combine kernel.

Grid: (batch x KV heads) x splits of the context, the 4 query heads of a KV head as one [16, D] tile (rows 4..15
masked), so K and V are read once for all of them and QK^T and PV run on tensor cores (`tl.dot`). K and V are read
through host tensor descriptors over their [batch x KV heads x tokens, D] view with [block_n, D] boxes: the
pipeliner (`tl.range(num_stages=...)`) turns each tile into one bulk TMA copy into shared memory tracked by an
mbarrier, instead of 16-byte cp.async instructions from every thread (2 x block_n x D x 2 B / 16 per tile) and
their address arithmetic and predicates. Tokens past the context of a head are masked in the scores; past the end
of the tensor TMA fills zeros. Each split writes its unnormalised fp32 accumulator, running max and sum; the
combine kernel, (batch x query heads) x (D / 32) programs, reduces a [splits, 32] tile each with one load. With
`pdl`, every split program calls `griddepcontrol.launch_dependents` at its start and the combine is launched with
`launch_pdl=True`, so it is resident and waiting (`griddepcontrol.wait`) before the split kernel drains. Splits are
tile-balanced (split s covers tiles [s T / S, (s + 1) T / S)); their number is `splits`, or programs_per_sm x SMs /
KV heads when `splits` is 0. Parameters: `splits`, `programs_per_sm`, `block_n`, `num_warps`, `num_stages`, `pdl`.
Contiguous (batch, head, token) rows with 16-byte aligned strides are required (other layouts are copied first).

Variants:
- `tma_s32_bn64_st4` (32 splits, 64-token tiles, 4 warps, 4 stages, plain second launch): the grid, tile and depth of
  `split32_two_pass` (256 programs of 1024 tokens, 2 per SM), with TMA in place of cp.async and the same kind of
  second launch. Against `split32_two_pass` this isolates the load path: ncu had that split kernel at 75.9% of DRAM
  peak, where the recorded gemv kernel streams much closer to the copy ceiling; if the per-thread cp.async issue,
  its address math and the per-iteration wait/barrier limit how much is in flight, one TMA copy per tile should
  raise DRAM throughput.
- `tma_s32_bn64_st4_pdl` (32 splits, 64-token tiles, 4 warps, 4 stages, PDL combine): `tma_s32_bn64_st4` with the
  combine launched early and parked, so both the load path and the launch gap change; against `pdl_s32_bn64_st4`
  it isolates TMA, against `tma_s32_bn64_st4` it isolates PDL.
- `tma_2wave_bn64_st4_pdl` (2 programs per SM, 64-token tiles, 4 warps, 4 stages, PDL combine): 33 splits at the
  headline, 264 programs, exactly 2 per SM on 132 SMs (32 splits leave 8 SMs with one program).
- `tma_3wave_bn128_st3_pdl` (3 programs per SM, 128-token tiles, 4 warps, 3 stages, PDL combine): TMA makes a large
  tile as cheap to issue as a small one (two copies of 32 KiB per tile), so 128-token tiles halve the per-tile
  softmax bookkeeping and barrier waits. 49 splits (392 programs, about 5.2 tiles each); 3 stages hold 2 tiles
  (128 KiB) per program, which fits only one program per SM: the grid is then 3 waves of 132, and the later waves
  start as soon as the earlier programs retire, which balances the SMs dynamically instead of relying on every
  program streaming at the same rate.
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
from triton.tools.tensor_descriptor import TensorDescriptor

VARIANTS: dict[str, dict[str, Any]] = {
    "tma_s32_bn64_st4": {"splits": 32, "programs_per_sm": 2, "block_n": 64, "num_warps": 4, "num_stages": 4,
                         "pdl": False},
    "tma_s32_bn64_st4_pdl": {"splits": 32, "programs_per_sm": 2, "block_n": 64, "num_warps": 4, "num_stages": 4,
                             "pdl": True},
    "tma_2wave_bn64_st4_pdl": {"splits": 0, "programs_per_sm": 2, "block_n": 64, "num_warps": 4, "num_stages": 4,
                               "pdl": True},
    "tma_3wave_bn128_st3_pdl": {"splits": 0, "programs_per_sm": 3, "block_n": 128, "num_warps": 4, "num_stages": 3,
                                "pdl": True},
}


LOG2E = 1.4426950408889634
COMBINE_BLOCK_D = 32
# Triton 3.9's CPU interpreter multiplies bf16 tl.dot operands as raw uint16 bits; under the interpreter the
# operands are widened to fp32 first (compiled code keeps bf16 tensor-core dots). It has no griddepcontrol either.
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DOT_IN_FP32 = INTERPRET


@functools.cache
def _num_sms(device_type: str, index: int | None) -> int:
    if device_type == "cuda":
        return torch.cuda.get_device_properties(index).multi_processor_count
    return 4


@triton.jit
def _tma_split_kernel(q_ptr, k_desc, v_desc, acc_ptr, m_ptr, l_ptr, seq_len, n_tiles, qk_scale, n_kv_heads,
                      n_splits, stride_qb, stride_qh, GROUP: tl.constexpr, GROUP_PAD: tl.constexpr,
                      HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr,
                      USE_PDL: tl.constexpr, DOT_IN_FP32: tl.constexpr):
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
    row0 = bh * seq_len  # first row of this (batch, KV head) in the [batch x heads x tokens, D] view
    start = (split * n_tiles // n_splits) * BLOCK_N
    end = ((split + 1) * n_tiles // n_splits) * BLOCK_N
    m_i = tl.full([GROUP_PAD], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([GROUP_PAD], dtype=tl.float32)
    acc = tl.zeros([GROUP_PAD, HEAD_DIM], dtype=tl.float32)
    n = tl.arange(0, BLOCK_N)
    for n0 in tl.range(start, end, BLOCK_N, num_stages=NUM_STAGES):
        k = k_desc.load([row0 + n0, 0])
        v = v_desc.load([row0 + n0, 0])
        if DOT_IN_FP32:
            k, v = k.to(tl.float32), v.to(tl.float32)
        valid = n0 + n < seq_len  # the last tile of a head may reach into the next head's rows
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(valid[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(q_ptr.dtype.element_ty).to(v.dtype), v)
        m_i = m_new
    part = (batch * n_kv_heads * GROUP + q_heads) * n_splits + split
    tl.store(acc_ptr + part[:, None] * HEAD_DIM + d[None, :], acc, mask=head_mask[:, None])
    tl.store(m_ptr + part, m_i, mask=head_mask)
    tl.store(l_ptr + part, l_i, mask=head_mask)


@triton.jit
def _tma_combine_kernel(acc_ptr, m_ptr, l_ptr, out_ptr, n_q_heads, n_splits, stride_ob, stride_oh,
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


def _rows(t: torch.Tensor) -> torch.Tensor:
    """t [B, H, S, D] as its [B x H x S, D] view, copied first if the rows are not evenly strided or aligned."""
    b, h, s, d = t.shape
    row = t.stride(2)
    if (t.stride(3) != 1 or t.stride(1) != s * row or t.stride(0) != h * s * row
            or row * t.element_size() % 16 or t.data_ptr() % 16):
        t = t.contiguous()
        row = d
    return t.as_strided((b * h * s, d), (row, 1))


def make_kernel(
    *,
    splits: int,
    programs_per_sm: int,
    block_n: int,
    num_warps: int,
    num_stages: int,
    pdl: bool,
) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(q, k, v, *, enable_gqa=True, scale=None, is_causal=False)` at one parameter set."""
    use_pdl = pdl and not INTERPRET

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
        if q.stride(-1) != 1:
            q = q.contiguous()
        sm_scale = scale if scale is not None else 1.0 / math.sqrt(head_dim)
        heads = batch * n_kv_heads
        n_tiles = triton.cdiv(seq_len, block_n)
        wanted = splits or max(1, _num_sms(q.device.type, q.device.index) * programs_per_sm // heads)
        n_splits = min(wanted, n_tiles)  # every split holds at least one tile
        k_rows, v_rows = _rows(k), _rows(v)
        k_desc = TensorDescriptor(k_rows, list(k_rows.shape), list(k_rows.stride()), [block_n, head_dim])
        v_desc = TensorDescriptor(v_rows, list(v_rows.shape), list(v_rows.stride()), [block_n, head_dim])
        acc_part = torch.empty((batch * n_q_heads, n_splits, head_dim), dtype=torch.float32, device=q.device)
        m_part = torch.empty((batch * n_q_heads, n_splits), dtype=torch.float32, device=q.device)
        l_part = torch.empty((batch * n_q_heads, n_splits), dtype=torch.float32, device=q.device)
        out = torch.empty((batch, n_q_heads, 1, head_dim), dtype=q.dtype, device=q.device)
        _tma_split_kernel[(heads, n_splits)](
            q, k_desc, v_desc, acc_part, m_part, l_part, seq_len, n_tiles, sm_scale * LOG2E, n_kv_heads, n_splits,
            q.stride(0), q.stride(1), GROUP=group, GROUP_PAD=max(16, triton.next_power_of_2(group)),
            HEAD_DIM=head_dim, BLOCK_N=block_n, NUM_STAGES=num_stages, USE_PDL=use_pdl, DOT_IN_FP32=DOT_IN_FP32,
            num_warps=num_warps)
        d_block = min(COMBINE_BLOCK_D, head_dim)
        _tma_combine_kernel[(batch * n_q_heads, head_dim // d_block)](
            acc_part, m_part, l_part, out, n_q_heads, n_splits, out.stride(0), out.stride(1), HEAD_DIM=head_dim,
            BLOCK_D=d_block, SPLITS_PAD=triton.next_power_of_2(n_splits), USE_PDL=use_pdl, num_warps=2,
            launch_pdl=use_pdl)
        return out

    return kernel
