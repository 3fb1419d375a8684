"""Element-wise sum of two fp16 matrices, written into the output buffer the data carries."""

import torch
from utils import make_match_reference


def generate_input(size: int, seed: int):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    a = torch.randn(size, size, device="cuda", dtype=torch.float16, generator=gen)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16, generator=gen)
    out = torch.empty(size, size, device="cuda", dtype=torch.float16)
    return a, b, out


def ref_kernel(data):
    a, b, out = data
    torch.add(a, b, out=out)
    return out


check_implementation = make_match_reference(ref_kernel, rtol=1e-3, atol=1e-3)
