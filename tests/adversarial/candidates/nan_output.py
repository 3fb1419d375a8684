"""Cheat: honest values but one NaN (a NaN never passes)."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def kernel(x, w, *, eps):
    out = honest(x, w, eps)
    out[0, 0] = float("nan")
    return out
