"""Baseline of the ``decode_attention`` target: ``scaled_dot_product_attention`` with grouped-query heads.

One query token attends over a 32K-token KV cache; 32 query heads share 8 KV heads (``enable_gqa=True``).
SDPA's default backend choice was the fastest library path on the H200 (0.0401 ms, against 0.0609 ms forced
cuDNN, 0.0658 ms forced flash, 1.595 ms math: ../shared/h200.md).
"""

from __future__ import annotations

import torch


def decode_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, enable_gqa: bool = True
) -> torch.Tensor:
    """Attention of ``q`` [B, Hq, 1, D] over ``k``, ``v`` [B, Hkv, S, D] (Hkv divides Hq): [B, Hq, 1, D]."""
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=enable_gqa)
