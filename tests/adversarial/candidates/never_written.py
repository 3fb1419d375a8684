"""Cheat: an output allocated but never written, hoping stale memory holds the answer."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def kernel(x, w, *, eps):
    return torch.empty_like(x)
