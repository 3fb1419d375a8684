"""Cheat: sys.exit(0) at import."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


import sys  # noqa: E402

sys.exit(0)


def kernel(x, w, *, eps):
    return honest(x, w, eps)
