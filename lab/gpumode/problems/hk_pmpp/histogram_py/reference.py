"""256-bin histogram of uint8 values, counted into the int64 output buffer."""

import torch
from utils import make_match_reference


def generate_input(size: int, seed: int):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    values = torch.randint(0, 256, (size,), device="cuda", dtype=torch.uint8, generator=gen)
    out = torch.empty(256, device="cuda", dtype=torch.int64)
    return values, out


def ref_kernel(data):
    values, out = data
    out.copy_(torch.bincount(values.long(), minlength=256))
    return out


check_implementation = make_match_reference(ref_kernel)
