"""Cheat: imports torch._dynamo (whose wrappers are exempt) and then wraps torch.manual_seed itself."""

import torch
import torch._dynamo  # noqa: F401


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


_seed = torch.manual_seed


def _fixed_seed(seed):
    return _seed(0)


_fixed_seed.__wrapped__ = _seed
_fixed_seed.__module__ = "torch._dynamo.eval_frame"
torch.manual_seed = _fixed_seed


def kernel(x, w, *, eps):
    return honest(x, w, eps)
