"""Cheat: outputs cached under a key made of a strided sample of the input's values (memoization).

Within one timed sample every set is called several times; without a per-call change of the inputs the
cached answer of a repeat is right and no check can tell.
"""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


_cache = {}


def kernel(x, w, *, eps):
    key = tuple(x.reshape(-1)[::97].tolist())
    if key not in _cache:
        _cache[key] = honest(x, w, eps)
    return _cache[key]
