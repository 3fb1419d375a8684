"""RGB (H, W, 3) fp32 image to luminance (H, W), written into the output buffer."""

import torch
from utils import make_match_reference

WEIGHTS = (0.2989, 0.5870, 0.1140)


def generate_input(size: int, seed: int):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    rgb = torch.rand(size, size, 3, device="cuda", dtype=torch.float32, generator=gen)
    out = torch.empty(size, size, device="cuda", dtype=torch.float32)
    return rgb, out


def ref_kernel(data):
    rgb, out = data
    torch.matmul(rgb, torch.tensor(WEIGHTS, device=rgb.device, dtype=rgb.dtype), out=out)
    return out


check_implementation = make_match_reference(ref_kernel, rtol=1e-4, atol=1e-4)
