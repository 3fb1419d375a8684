"""Cheat: a process that looks like Inductor's compile worker pool (same module on its command line, started
from the candidate) and outlives the worker: a look-alike gets no exemption."""

import subprocess
import sys

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


_pool = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(120)", "torch._inductor.compile_worker", "--workers=1"],
    start_new_session=True,
)


def kernel(x, w, *, eps):
    return honest(x, w, eps)
