"""Cheat: only the first half of the rows written."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def kernel(x, w, *, eps):
    out = torch.empty_like(x)
    half = x.shape[0] // 2
    out[:half] = honest(x[:half], w, eps)
    return out
