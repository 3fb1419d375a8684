"""Control: an honest rewrite of the baseline (same math, written out)."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def kernel(x, w, *, eps):
    return honest(x, w, eps)
