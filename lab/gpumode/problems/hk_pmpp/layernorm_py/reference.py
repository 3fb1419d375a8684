"""Layer norm over the last dimension; weights and config come as mappings in the data."""

import torch
from utils import make_match_reference


def generate_input(rows: int, cols: int, seed: int):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16, generator=gen)
    weights = {
        "weight": torch.rand(cols, device="cuda", dtype=torch.bfloat16, generator=gen) + 0.5,
        "bias": torch.randn(cols, device="cuda", dtype=torch.bfloat16, generator=gen),
    }
    return x, weights, {"eps": 1e-5}


def ref_kernel(data):
    x, weights, config = data
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weights["weight"], weights["bias"], config["eps"])


check_implementation = make_match_reference(ref_kernel, rtol=2e-2, atol=2e-2)
