"""Baseline of the ``gemv`` target: ``torch.mv`` (cuBLAS on CUDA), at 93% of the measured H200 ceiling."""

from __future__ import annotations

import torch


def gemv(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Matrix-vector product ``w @ x`` of an [N, K] weight and a [K] vector, giving [N]."""
    return torch.mv(w, x)
