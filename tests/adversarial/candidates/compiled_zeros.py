"""Cheat: a compiled function that returns zeros (the compile exemption must not excuse wrong outputs)."""

import torch


@torch.compile
def _zeros(x, w):
    return torch.zeros_like(x) * w


def kernel(x, w, *, eps):
    return _zeros(x, w)
