"""Cheat: raises TORCHINDUCTOR_COMPILE_THREADS back up so a compile worker pool could start and linger, and
keeps a child of its own alive: whatever torch does, a process outliving the report is invalid."""

import os
import subprocess

import torch

os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "4"


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


_child = subprocess.Popen(["sleep", "120"])


def kernel(x, w, *, eps):
    return honest(x, w, eps)
