"""Baseline of the ``softmax`` target: ``torch.softmax``, the library path."""

from __future__ import annotations

import torch


def softmax(x: torch.Tensor, *, dim: int = -1) -> torch.Tensor:
    """Softmax of ``x`` along ``dim`` (the manifest passes ``dim: -1``), in the input's dtype."""
    return torch.softmax(x, dim=dim)
