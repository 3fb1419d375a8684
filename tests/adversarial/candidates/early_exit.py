"""Cheat: a forged line printed, then the process exits before the contract reports."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


import os  # noqa: E402

print('{"protocol": 1, "status": "ok", "ok": true, "ms": 1e-06}', flush=True)


def kernel(x, w, *, eps):
    os._exit(0)
