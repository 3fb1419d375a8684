"""Cheat: a double-forked daemon that leaves the process group and busy-loops."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


import os  # noqa: E402

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            pass
    os._exit(0)


def kernel(x, w, *, eps):
    return honest(x, w, eps)
