"""fp32 matrix product (no TF32), written into the output buffer the data carries."""

import torch
from utils import make_match_reference


def generate_input(m: int, n: int, k: int, seed: int):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    a = torch.randn(m, k, device="cuda", dtype=torch.float32, generator=gen)
    b = torch.randn(k, n, device="cuda", dtype=torch.float32, generator=gen)
    out = torch.empty(m, n, device="cuda", dtype=torch.float32)
    return a, b, out


def ref_kernel(data):
    a, b, out = data
    torch.matmul(a, b, out=out)
    return out


check_implementation = make_match_reference(ref_kernel, rtol=1e-3, atol=1e-3)
