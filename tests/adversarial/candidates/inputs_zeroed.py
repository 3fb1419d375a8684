"""Cheat: inputs zeroed in place so a reference computed afterwards agrees with zeros."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def kernel(x, w, *, eps):
    x.zero_()
    return honest(x, w, eps)
