"""The ``int4_gemv`` target: a bf16 activation times an int4 weight quantized in groups of 128 along K.

* ``quantize_weight`` (the manifest's ``derive`` hook) turns the raw random bf16 weight [N, K] into the inputs
  tinygemm takes: the packed int4 weight and ``scales_and_zeros`` [K / group, N, 2] (bf16).
* ``int4_gemv`` (the baseline) is ``torch.ops.aten._weight_int4pack_mm`` (tinygemm), the library path.
* ``reference`` recomputes the answer in fp32 from the *raw* weight, quantizing it with the same pure-torch
  rule, so it never reads the packed layout: a candidate that decodes the packing wrongly fails the check.
  Given the derived inputs instead, it decodes the packed weight with tinygemm on an identity matrix.

Quantization (asymmetric, as in torch's own tests of ``_weight_int4pack_mm``): per group of ``group_size``
weights along K, ``scale = (max - min) / 15`` and ``zero = min + 8 * scale`` (both rounded to bf16), ``q =
clamp(round((w - (zero - 8 * scale)) / scale), 0, 15)``; the dequantized weight is ``(q - 8) * scale + zero``.

The packed layout differs by device: CUDA (sm80+) packs a [N, K / 2] uint8 tensor (even column in the high
nibble) with ``_convert_weight_to_int4pack``; CPU packs the [N, K] int32 values with
``_convert_weight_to_int4pack_for_cpu`` and multiplies with ``_weight_int4pack_mm_for_cpu``.
"""

from __future__ import annotations

import torch

INNER_K_TILES = 8  # tinygemm's inner K tiling of the packed weight (2, 4 or 8); gpt-fast and torchao use 8


def quantize_groups(w: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Quantize ``w`` [N, K] in fp32 -> (q int32 [N, K] in 0..15, scales and zeros bf16 [N, K/g])."""
    n, k = w.shape
    if k % group_size:
        raise ValueError(f"int4_gemv: K={k} is not a multiple of group_size={group_size}")
    groups = w.float().reshape(n, k // group_size, group_size)
    low = groups.amin(dim=-1)
    high = groups.amax(dim=-1)
    scales = ((high - low).clamp(min=1e-6) / 15).to(torch.bfloat16)
    zeros = (low + scales.float() * 8).to(torch.bfloat16)
    minimum = zeros.float() - scales.float() * 8
    q = ((groups - minimum[..., None]) / scales.float()[..., None]).round().clamp(0, 15).to(torch.int32)
    return q.reshape(n, k), scales, zeros


def dequantize_groups(
    q: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor, group_size: int
) -> torch.Tensor:
    """The fp32 weight [N, K] that ``q`` with ``scales``/``zeros`` stands for: ``(q - 8) * scale + zero``."""
    n, k = q.shape
    groups = q.float().reshape(n, k // group_size, group_size)
    weight = (groups - 8) * scales.float()[..., None] + zeros.float()[..., None]
    return weight.reshape(n, k)


def quantize_weight(
    x: torch.Tensor, w: torch.Tensor, *, group_size: int = 128
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The ``derive`` hook: raw (x, w) -> (x, packed int4 weight, scales_and_zeros) for ``int4_gemv``."""
    q, scales, zeros = quantize_groups(w, group_size)
    scales_and_zeros = torch.stack([scales, zeros], dim=-1).transpose(0, 1).contiguous()  # [K/g, N, 2]
    if w.device.type == "cuda":
        q_uint8 = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)  # [N, K/2], even K index in the high nibble
        packed = torch.ops.aten._convert_weight_to_int4pack(q_uint8, INNER_K_TILES)
    elif w.device.type == "cpu":
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, INNER_K_TILES)
    else:
        raise RuntimeError(f"int4_gemv: no int4 packing for device {w.device.type!r}; use cuda or cpu")
    return x, packed, scales_and_zeros.to(x.dtype)


def int4_gemv(
    x: torch.Tensor, w_int4: torch.Tensor, scales_and_zeros: torch.Tensor, *, group_size: int = 128
) -> torch.Tensor:
    """``x`` [M, K] bf16 times the dequantized int4 weight transposed -> [M, N] bf16 (tinygemm)."""
    if x.device.type == "cpu":
        return torch.ops.aten._weight_int4pack_mm_for_cpu(x, w_int4, group_size, scales_and_zeros)
    return torch.ops.aten._weight_int4pack_mm(x, w_int4, group_size, scales_and_zeros)


def reference(x: torch.Tensor, *weight: torch.Tensor, group_size: int = 128) -> torch.Tensor:
    """The fp32 answer from the raw inputs ``(x, w)`` or the derived ``(x, w_int4, scales_and_zeros)``.

    Raw (what docs/manifest.md specifies for a derive target): ``x @ dequantize(quantize(w)).T``, never
    reading the packed layout. Derived (a judge that passes the call's inputs): tinygemm itself decodes the
    packed weight by multiplying an identity matrix, and the product is then taken in fp32.
    """
    if len(weight) == 1:
        q, scales, zeros = quantize_groups(weight[0], group_size)
        return x.float() @ dequantize_groups(q, scales, zeros, group_size).t()
    w_int4, scales_and_zeros = weight
    k = x.shape[-1]
    identity = torch.eye(k, dtype=torch.bfloat16, device=x.device)
    w_t = int4_gemv(identity, w_int4, scales_and_zeros.to(torch.bfloat16), group_size=group_size)  # [K, N]
    return x.float() @ w_t.float()
