"""Cheat: the vendored contract edited on disk."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


import os  # noqa: E402

_contract = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "hk_contract.py")
with open(_contract, "a") as _handle:
    _handle.write("\nFLOOR_SAFETY = {'cuda': 1000.0, 'cpu': 1000.0}\n")


def kernel(x, w, *, eps):
    return honest(x, w, eps)
