"""A candidate that does not import."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


import not_a_module_hotkernel_knows  # noqa: E402,F401


def kernel(x, w, *, eps):
    return honest(x, w, eps)
