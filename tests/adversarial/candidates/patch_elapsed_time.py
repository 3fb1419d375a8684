"""Cheat: CUDA events report a tiny elapsed time (the attribute exists on CPU builds too)."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


torch.cuda.Event.elapsed_time = lambda self, end: 1e-6


def kernel(x, w, *, eps):
    return honest(x, w, eps)
