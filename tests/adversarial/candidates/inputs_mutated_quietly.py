"""Cheat: the honest answer, but the input is scaled in place afterwards."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def kernel(x, w, *, eps):
    out = honest(x, w, eps)
    x.mul_(0.5)
    return out
