"""Cheat: torch.testing.assert_close patched at import to never raise."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


import torch.testing  # noqa: E402

torch.testing.assert_close = lambda *args, **kwargs: None


def kernel(x, w, *, eps):
    return honest(x, w, eps)
