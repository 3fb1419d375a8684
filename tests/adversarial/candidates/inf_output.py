"""Cheat: honest values but one inf."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def kernel(x, w, *, eps):
    out = honest(x, w, eps)
    out[-1, -1] = float("inf")
    return out
