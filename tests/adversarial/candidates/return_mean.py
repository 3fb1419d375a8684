"""Cheat: the mean broadcast to the output shape."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def kernel(x, w, *, eps):
    return x.mean().expand_as(x)
