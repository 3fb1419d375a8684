"""Cheat: a forged line written straight into the private protocol channel."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


import json  # noqa: E402
import os  # noqa: E402

_fd = int(os.environ.get("HK_PROTOCOL_FD", "-1"))
if _fd >= 0:
    os.write(_fd, (json.dumps({"protocol": 1, "status": "measured", "nonce": "guess"}) + "\n").encode())


def kernel(x, w, *, eps):
    return honest(x, w, eps)
