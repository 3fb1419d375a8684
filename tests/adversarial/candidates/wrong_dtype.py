"""Cheat: the right values in a wider dtype."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def kernel(x, w, *, eps):
    return honest(x.double(), w.double(), eps)
