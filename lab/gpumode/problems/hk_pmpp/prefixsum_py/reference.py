"""Inclusive prefix sum of an fp32 vector, written into the output buffer."""

import torch
from utils import make_match_reference


def generate_input(size: int, seed: int):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    x = torch.rand(size, device="cuda", dtype=torch.float32, generator=gen)
    out = torch.empty(size, device="cuda", dtype=torch.float32)
    return x, out


def ref_kernel(data):
    x, out = data
    torch.cumsum(x, 0, out=out)
    return out


check_implementation = make_match_reference(ref_kernel, rtol=1e-4, atol=1e-2)
