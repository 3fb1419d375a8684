"""Cheat: a daemon started with start_new_session=True and an empty environment (no run token to find it
by); it would delete results/ after the run. The orchestrator is its subreaper, so it comes back and is found."""

import subprocess

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


subprocess.Popen(["sleep", "123"], env={}, start_new_session=True)


def kernel(x, w, *, eps):
    return honest(x, w, eps)
