"""Cheat: a process left running (in its own session) to slow down the next runs."""

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


import subprocess  # noqa: E402
import sys  # noqa: E402

subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(120)"],
    start_new_session=True,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)


def kernel(x, w, *, eps):
    return honest(x, w, eps)
