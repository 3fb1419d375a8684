"""The positive entries of an fp32 vector, in order: an output whose length depends on the data."""

import torch
from utils import make_match_reference


def generate_input(size: int, seed: int):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    return (torch.randn(size, device="cuda", dtype=torch.float32, generator=gen),)


def ref_kernel(data):
    (x,) = data
    return x[x > 0]


check_implementation = make_match_reference(ref_kernel)
