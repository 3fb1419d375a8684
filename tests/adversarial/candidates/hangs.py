"""A kernel that never returns (the run times out; its process group is killed)."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


import time  # noqa: E402


def kernel(x, w, *, eps):
    time.sleep(3600)
