"""A kernel that dies of a signal."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


import os  # noqa: E402
import signal  # noqa: E402


def kernel(x, w, *, eps):
    os.kill(os.getpid(), signal.SIGSEGV)
