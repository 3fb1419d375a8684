"""Cheat: the generated baseline edited on disk (made slower) while the candidate runs."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


import os  # noqa: E402

_baseline = os.path.join(os.path.dirname(os.path.abspath(__file__)), "baseline.py")
with open(_baseline, "a") as _handle:
    _handle.write("\nimport time as _t\n_slow = kernel\nkernel = lambda *a, **k: (_t.sleep(1e-3), _slow(*a, **k))[1]\n")


def kernel(x, w, *, eps):
    return honest(x, w, eps)
