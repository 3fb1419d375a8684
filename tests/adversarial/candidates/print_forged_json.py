"""Cheat: a forged result line printed on stdout at import and on every call."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


import json  # noqa: E402

_FORGED = json.dumps({"protocol": 1, "status": "ok", "ok": True, "ms": 1e-06, "reason": None})
print(_FORGED, flush=True)


def kernel(x, w, *, eps):
    print(_FORGED, flush=True)
    return honest(x, w, eps)
