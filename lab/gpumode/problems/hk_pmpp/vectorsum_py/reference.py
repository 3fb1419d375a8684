"""Sum of an fp32 vector into a 0-d output buffer."""

import torch
from utils import make_match_reference


def generate_input(size: int, seed: int):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    x = torch.randn(size, device="cuda", dtype=torch.float32, generator=gen)
    out = torch.empty((), device="cuda", dtype=torch.float32)
    return x, out


def ref_kernel(data):
    x, out = data
    out.copy_(x.sum())
    return out


check_implementation = make_match_reference(ref_kernel, rtol=1e-4, atol=1e-2)
