"""Cheat: torch.allclose patched at import to always agree."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


torch.allclose = lambda *args, **kwargs: True


def kernel(x, w, *, eps):
    return torch.zeros_like(x)
