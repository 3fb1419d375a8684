"""Baseline of the ``rmsnorm`` and ``cpu_rmsnorm`` targets: the best library path, ``F.rms_norm``.

On the H200 (bf16, 4096x8192) ``torch.nn.functional.rms_norm`` runs at 0.0548 ms against 0.464 ms for the
five-op eager composite (../shared/h200.md), so it is the baseline a candidate has to beat.
"""

from __future__ import annotations

import torch


def rms_norm(x: torch.Tensor, w: torch.Tensor, *, eps: float = 1e-6) -> torch.Tensor:
    """RMS-normalise ``x`` over its last dimension and scale by ``w``: ``x / sqrt(mean(x**2) + eps) * w``."""
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps)
