"""Cheat: an fp32 target computed in bf16 and cast back."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def kernel(x, w, *, eps):
    return honest(x.bfloat16(), w.bfloat16(), eps).float()
